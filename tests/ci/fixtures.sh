#!/usr/bin/env bash
# make fixtures: the controller-side fixtures that several scenarios and the
# AWX test share, built once, one after the other, before they run side by
# side (pool.sh): each builder keeps its result under .cache/ with a stamp of
# its inputs and returns at once when it is up to date, so the scenarios'
# own calls are then no-ops and never build the same directory twice at
# the same time. TEST ONLY: stand-ins for what an air-gapped fleet brings
# (NVIDIA's runfile, a wheelhouse, vLLM's mirror, a hub).
#   .cache/cuda-runfile       tests/runfile/build.sh (cuda_toolkit, awx)
#   .cache/wheelhouse         tests/wheelhouse/build (torch_flash_attn,
#                             fleet_cache, vllm, awx)
#   .cache/qwen_model_fetch   tests/model/testbed.sh with the wheelhouse of
#                             qwen_model_fetch's scenario (qwen_model_fetch, vllm)
#   .cache/vllm               tests/vllm/build (vllm)
#   .cache/awx-model          tests/model/testbed.sh with the AWX test's
#                             wheelhouse (awx)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
use_venv
cd "${CI_ROOT}" || exit 1

# default_of ROLE VARIABLE: a role default, read from its defaults/main.yml.
default_of() {
    python - "roles/$1/defaults/main.yml" "$2" <<'EOF'
import sys
import yaml
with open(sys.argv[1], encoding="utf-8") as handle:
    print(yaml.safe_load(handle)[sys.argv[2]])
EOF
}

olah="olah==$(default_of hf_mirror hf_mirror_olah_version)"
hub="huggingface_hub==$(default_of qwen_model_fetch qwen_model_fetch_huggingface_hub_version)"

log "stand-in CUDA runfile (.cache/cuda-runfile)"
bash tests/runfile/build.sh "${CI_ROOT}/.cache/cuda-runfile"
log "wheelhouse (.cache/wheelhouse)"
tests/wheelhouse/build "${CI_ROOT}/.cache/wheelhouse"
log "tiny Qwen3.5 stand-in and its hub venv (.cache/qwen_model_fetch)"
QWEN_MODEL_FETCH_FIXTURE="${CI_ROOT}/.cache/qwen_model_fetch" bash tests/model/testbed.sh "${olah}" "${hub}"
log "vLLM wheelhouse, git mirror and tiny Qwen3 (.cache/vllm)"
tests/vllm/build "${CI_ROOT}/.cache/vllm"
chmod 0755 "${CI_ROOT}/.cache/wheelhouse"
log "the AWX test's model repository (.cache/awx-model)"
QWEN_MODEL_FETCH_FIXTURE="${CI_ROOT}/.cache/awx-model" bash tests/model/testbed.sh "${olah}" "${hub}"
