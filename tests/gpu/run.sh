#!/usr/bin/env bash
# Run the collection on a real GPU host against itself and keep what it did.
# See tests/gpu/README.md. Usage:
#
#   tests/gpu/run.sh STEP [STEP...]
#
# Steps, in order (each can be run alone once `setup` has run):
#   setup            install ansible-core (local wheels) and the collection tarball
#   facts            gpu_facts, nvcc_facts, preflight; two stacks that must be refused
#   toolkit          cuda_toolkit on the toolkit already there: check mode, then real
#   torch            torch role against the existing venv: verification facts, no reinstall
#   flash-attn-start flash_attn_build (a real CUDA compile) in the background
#   arch-cost        one flash-attn translation unit for this host's arch vs. flash-attn's default list
#   flash-attn-wait  wait for the background build (GPU_WAIT seconds at most)
#   flash-attn-rerun flash_attn_build again: the cached wheel, nothing compiled
#   vllm-bundle      reassemble the carried wheelhouse (bundle.sh), check its sha256, then setup
#                    with its ansible-core and the collection built from this checkout
#   vllm-preflight   preflight passes for the vLLM stack; a vLLM whose torch pin differs is refused
#   vllm-install     vllm_source (wheel method, the local wheelhouse) into the torch venv; torch
#                    unchanged (version and files); a re-run changes nothing
#   serve            the tiny Qwen3.5 stand-in in qwen_model_fetch's layout; vllm_serve (supervisord),
#                    its health gate and the benchmark; a re-run changes nothing
#   serve-crash      at gpu_memory_utilization 0.85 (GPU_CRASH_UTIL), the API server killed with SIGKILL:
#                    no process of the old server remains, the GPU memory is back, the restarted
#                    service passes its gate; how long each took
#   serve-fault      the server killed: supervisord restarts it and the gate passes again; a broken
#                    flag: the gate fails with the log tail, then the good flags restore the service
#
# Inputs (environment):
#   GPU_OUT        where results go (default build/gpu)
#   GPU_STATE      working directory on the host (default /var/tmp/gpufleet-validate)
#   GPU_WHEELS     wheels of ansible-core and its dependencies for this host's Python
#   GPU_WHEELHOUSE flash-attn sdist and its build tools (ninja, packaging, psutil, setuptools, wheel, einops)
#   GPU_TARBALL    the collection tarball (ansible-galaxy collection build)
#   GPU_WAIT       seconds flash-attn-wait waits at most (default 540)
#   GPU_TORCH_PYTHON, GPU_NVCC  the torch venv's python and the nvcc arch-cost uses
#                  (default /opt/torch/.venv/bin/python, /usr/local/cuda/bin/nvcc)
#   GPU_PARTS      the carried pieces of bundle.sh (default .gpu/parts)
#   GPU_BUNDLE     the lists of those pieces: vllm-requirements.txt,
#                  vllm-requirements-host.txt and vllm-wheelhouse.sha256 as
#                  bundle.sh VERSION DEST wrote them in DEST (default
#                  tests/gpu/vllm-0.20.2, vLLM 0.20.2; tests/gpu/vllm-0.26.0 for 0.26.0);
#                  the vLLM version is that of its vllm== line
#   GPU_CRASH_UTIL the gpu_memory_utilization serve-crash serves at (default 0.85)
#
# What a step needs and does not find (.gpu/ not brought, setup not run, no
# torch venv) stops it before it runs, with what to put where and exit
# status 2; see tests/gpu/README.md, "What to bring".
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${GPU_OUT:-$ROOT/build/gpu}
STATE=${GPU_STATE:-/var/tmp/gpufleet-validate}
WHEELS=${GPU_WHEELS:-$ROOT/.gpu/wheels}
WHEELHOUSE=${GPU_WHEELHOUSE:-$ROOT/.gpu/wheelhouse}
BUNDLE=${GPU_BUNDLE:-$ROOT/tests/gpu/vllm-0.20.2}
TARBALL=${GPU_TARBALL:-}
if [[ -z $TARBALL && -d $ROOT/.gpu ]]; then
  TARBALL=$(find "$ROOT/.gpu" -maxdepth 1 -name 'gpufleet-llm_stack-*.tar.gz' -print -quit)
fi
WAIT=${GPU_WAIT:-540}
# The torch that arch-cost takes its headers from, and the nvcc it runs.
TORCH_PYTHON=${GPU_TORCH_PYTHON:-/opt/torch/.venv/bin/python}
NVCC=${GPU_NVCC:-/usr/local/cuda/bin/nvcc}
COLL=$STATE/collections/ansible_collections/gpufleet/llm_stack
mkdir -p "$OUT" "$STATE"

export PYTHONPATH=$STATE/site${PYTHONPATH:+:$PYTHONPATH}
export PATH=$STATE/site/bin:$PATH
export ANSIBLE_COLLECTIONS_PATH=$STATE/collections
export ANSIBLE_STDOUT_CALLBACK=default ANSIBLE_CALLBACK_RESULT_FORMAT=yaml
export ANSIBLE_NOCOLOR=1 ANSIBLE_LOCALHOST_WARNING=0 ANSIBLE_INVENTORY_UNPARSED_WARNING=0 ANSIBLE_DEPRECATION_WARNINGS=0
export ANSIBLE_LOCAL_TEMP=$STATE/tmp ANSIBLE_REMOTE_TEMP=$STATE/tmp

say() { printf '\n=== %s\n' "$*"; }

# missing WHAT FIX: say what a step needs and lacks, and how to get it; the
# checks of a step all run before it stops (stop_if_missing).
MISSING=0
missing() {
  printf 'run.sh: missing %s.\n  Fix: %s\n' "$1" "$2" >&2
  MISSING=1
}
stop_if_missing() {
  [[ $MISSING -eq 0 ]] || { echo "run.sh: step ${STEP:-} not run (tests/gpu/README.md, \"What to bring\")" >&2; exit 2; }
}

# The inputs of the steps, checked before a step starts.
need_setup() {
  [[ -f $STATE/host.yml && -x $STATE/site/bin/ansible-playbook ]] ||
    missing "the setup of $STATE (ansible-core and the collection)" "run tests/gpu/run.sh setup first (or vllm-bundle)"
}
need_torch() {
  [[ -x $TORCH_PYTHON ]] ||
    missing "the torch venv's python $TORCH_PYTHON" "set GPU_TORCH_PYTHON to the python of the venv that has torch"
}

# ansible-playbook with the validation inventory; output kept in $OUT/NAME.log.
play() {
  local name=$1
  shift
  need_setup
  stop_if_missing
  local rc=0
  ansible-playbook -i "$ROOT/tests/gpu/inventory.yml" -i "$STATE/host.yml" "$@" >"$OUT/$name.log" 2>&1 || rc=$?
  echo "$name: rc=$rc; $(grep -E '^gpu-validate +:' "$OUT/$name.log" | tr -s ' ' || true)"
  return $rc
}

# The recap's changed count of the last play run into $OUT/NAME.log.
changed() { grep -E '^gpu-validate +:' "$OUT/$1.log" | tail -n 1 | sed -E 's/.*changed=([0-9]+).*/\1/'; }

step_setup() {
  if ! compgen -G "$WHEELS/ansible_core-*.whl" >/dev/null; then
    missing "the ansible-core wheels for this host's Python in $WHEELS (GPU_WHEELS)" \
      "on a machine with PyPI: pip download --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 --dest .gpu/wheels ansible-core==2.19.14; copy .gpu/ here"
  fi
  if [[ -z $TARBALL || ! -f $TARBALL ]]; then
    missing "the collection tarball (${TARBALL:-none in $ROOT/.gpu}; GPU_TARBALL)" \
      "ansible-galaxy collection build --output-path .gpu; copy .gpu/ here"
  fi
  stop_if_missing
  say "setup: ansible-core and the collection"
  python3 -m pip install -q --no-index --no-deps --find-links "$WHEELS" --target "$STATE/site" "$WHEELS"/*.whl
  ansible --version | head -n 2
  ansible-galaxy collection install --offline --force -p "$STATE/collections" "$TARBALL" | tail -n 1
  printf 'all:\n  vars:\n    flash_attn_build_wheelhouse: "%s"\n    llm_stack_controller_cache: "%s"\n' \
    "$WHEELHOUSE" "$STATE/cache" >"$STATE/host.yml"
  tee "$OUT/host.yml" <"$STATE/host.yml"
  { uname -a; nproc; free -g; nvidia-smi; nvcc --version; python3 --version; } >"$OUT/host.txt" 2>&1 || true
}

step_facts() {
  need_setup
  stop_if_missing
  say "facts and preflight"
  ansible -i "$ROOT/tests/gpu/inventory.yml" gpu-validate -m gpufleet.llm_stack.gpu_facts >"$OUT/gpu_facts.log" 2>&1
  ansible -i "$ROOT/tests/gpu/inventory.yml" gpu-validate -m gpufleet.llm_stack.nvcc_facts >"$OUT/nvcc_facts.log" 2>&1
  sed -n '1,40p' "$OUT/gpu_facts.log"
  sed -n '1,30p' "$OUT/nvcc_facts.log"
  play preflight "$COLL/playbooks/preflight.yml"
  sed -n '/Show the preflight report/,/^$/p' "$OUT/preflight.log"
  # Stacks that cannot work on this host must be refused, with the reason.
  local rc=0
  play refuse-cuda121 "$COLL/playbooks/preflight.yml" -e llm_stack_cuda_version=12.1.1 || rc=$?
  [[ $rc -ne 0 ]] || { echo "CUDA 12.1 was not refused" >&2; exit 1; }
  grep -E 'ERROR: ' "$OUT/refuse-cuda121.log" | head -n 20
  rc=0
  play refuse-torch231 "$COLL/playbooks/preflight.yml" -e llm_stack_torch_version=2.3.1 -e llm_stack_torch_cuda=cu121 || rc=$?
  [[ $rc -ne 0 ]] || { echo "torch 2.3.1 was not refused" >&2; exit 1; }
  grep -E 'ERROR: ' "$OUT/refuse-torch231.log" | head -n 20
}

step_toolkit() {
  need_setup
  stop_if_missing
  say "cuda_toolkit on the toolkit already installed"
  # The toolkit's setup before the runs, and a stamp to find what they wrote.
  local setup=(/usr/local/cuda /etc/alternatives/cuda /etc/ld.so.conf.d /etc/profile.d)
  { ls -ld "${setup[@]}"; ls /etc/ld.so.conf.d /etc/profile.d; ls -l /usr/local/cuda-13.0/version.json
    echo "login shell nvcc: $(bash -lc 'command -v nvcc' || true)"; } >"$OUT/toolkit-before.txt" 2>&1 || true
  cat "$OUT/toolkit-before.txt"
  touch "$STATE/toolkit.stamp"
  play toolkit-check "$COLL/playbooks/cuda_toolkit.yml" --check --diff
  play toolkit "$COLL/playbooks/cuda_toolkit.yml"
  echo "changed: check mode $(changed toolkit-check), real $(changed toolkit)"
  echo "files written by the runs: $(find /usr/local /etc -xdev -newer "$STATE/toolkit.stamp" ! -type d 2>/dev/null \
    | grep -v "^$STATE" | head -n 20 | tr '\n' ' ')"
  grep -E 'cuda-installer|Install CUDA' "$OUT/toolkit.log" | head -n 5 || true
  grep -A 3 -E 'Report the state of|Report the setup kept|Report CUDA' "$OUT/toolkit.log" | grep -E 'msg|CUDA|Kept' | head -n 12
}

step_torch() {
  say "torch role against the existing venv"
  play torch "$COLL/playbooks/torch.yml"
  echo "changed: $(changed torch)"
  grep -E 'cuda_available|capability|arch_list|torch_version|Would|pip' "$OUT/torch.log" | head -n 30 || true
}

step_flash_attn_start() {
  need_setup
  stop_if_missing
  say "flash_attn_build: real compile, in the background"
  if [[ -f $STATE/fa.pid ]] && kill -0 "$(cat "$STATE/fa.pid")" 2>/dev/null; then
    echo "already running"
    return 0
  fi
  rm -f "$STATE/fa.rc" "$STATE/fa.mem"
  # Memory in use, sampled every 5 s while the build runs (peak reported by flash-attn-wait).
  setsid bash -c "while :; do free -m | awk '/^Mem:/ {print \$3}' >>'$STATE/fa.mem'; sleep 5; done" \
    </dev/null >/dev/null 2>&1 &
  echo $! >"$STATE/sampler.pid"
  setsid bash -c "date +%s >'$STATE/fa.start'; \
    ansible-playbook -i '$ROOT/tests/gpu/inventory.yml' -i '$STATE/host.yml' '$COLL/playbooks/flash_attn.yml' \
      >'$STATE/flash-attn.log' 2>&1; echo \$? >'$STATE/fa.rc'; date +%s >'$STATE/fa.end'" \
    </dev/null >/dev/null 2>&1 &
  echo $! >"$STATE/fa.pid"
  sleep 20
  tail -n 15 "$STATE/flash-attn.log"
}

step_flash_attn_wait() {
  [[ -f $STATE/fa.start ]] || missing "a flash-attn build started by this state ($STATE/fa.start)" \
    "run tests/gpu/run.sh flash-attn-start first"
  stop_if_missing
  say "flash_attn_build: waiting (at most ${WAIT}s)"
  local waited=0
  while [[ ! -f $STATE/fa.rc && $waited -lt $WAIT ]]; do
    sleep 15
    waited=$((waited + 15))
  done
  cp "$STATE/flash-attn.log" "$OUT/flash-attn.log" 2>/dev/null || true
  local objs dirs=("$STATE")
  [[ ! -d /opt/llm-stack/build ]] || dirs+=(/opt/llm-stack/build)
  objs=$(find "${dirs[@]}" -name '*.o' -newer "$STATE/fa.start" | wc -l)
  echo "objects compiled so far: $objs of 73"
  if [[ ! -f $STATE/fa.rc ]]; then
    echo "still running after $(($(date +%s) - $(cat "$STATE/fa.start")))s"
    tail -n 5 "$STATE/flash-attn.log"
    return 0
  fi
  kill "$(cat "$STATE/sampler.pid")" 2>/dev/null || true
  echo "build rc=$(cat "$STATE/fa.rc"), wall $(($(cat "$STATE/fa.end") - $(cat "$STATE/fa.start")))s," \
    "peak memory in use $(sort -n "$STATE/fa.mem" | tail -n 1) MiB (baseline $(head -n 1 "$STATE/fa.mem") MiB)"
  find "$STATE/cache" -name '*.whl' -exec ls -l {} \; | tee "$OUT/wheel.txt"
  grep -E 'MAX_JOBS|NVCC_THREADS|FLASH_ATTN_CUDA_ARCHS|max abs|sm_90|cuobjdump|flash_attn ' "$STATE/flash-attn.log" | head -n 30 || true
  grep -E '^gpu-validate +:' "$STATE/flash-attn.log" || true
}

step_flash_attn_rerun() {
  say "flash_attn_build again: from the cache"
  play flash-attn-rerun "$COLL/playbooks/flash_attn.yml"
  echo "changed: $(changed flash-attn-rerun)"
}

# One translation unit of flash-attn compiled with the flags its setup.py
# uses, for sm_90 alone and for flash-attn's default list (80;90;100;120),
# side by side: CPU time, wall time and peak RSS of each.
step_arch_cost() {
  local src=$STATE/fa-src
  if [[ ! -d $src ]] && ! compgen -G "$WHEELHOUSE/flash_attn-*.tar.gz" >/dev/null; then
    missing "flash-attn's sdist in ${WHEELHOUSE:-GPU_WHEELHOUSE} (GPU_WHEELHOUSE)" \
      "curl -fL -o .gpu/wheelhouse/flash_attn-2.8.3.tar.gz https://files.pythonhosted.org/packages/source/f/flash_attn/flash_attn-2.8.3.tar.gz; copy .gpu/ here"
  fi
  need_torch
  [[ -x $NVCC ]] || missing "nvcc $NVCC" "set GPU_NVCC to the nvcc of the host's toolkit"
  stop_if_missing
  say "arch-cost: one translation unit, this host's arch vs. the default list"
  if [[ ! -d $src ]]; then
    mkdir -p "$src"
    tar -xzf "$WHEELHOUSE"/flash_attn-*.tar.gz -C "$src" --strip-components=1
  fi
  local tu=${GPU_ARCH_COST_TU:-csrc/flash_attn/src/flash_fwd_split_hdim64_bf16_sm80.cu}
  local incs
  incs=$("$TORCH_PYTHON" -c 'from torch.utils.cpp_extension import include_paths; print(" ".join("-I" + p for p in include_paths()))')
  local flags=(-O3 -std=c++17 -U__CUDA_NO_HALF_OPERATORS__ -U__CUDA_NO_HALF_CONVERSIONS__
    -U__CUDA_NO_HALF2_OPERATORS__ -U__CUDA_NO_BFLOAT16_CONVERSIONS__ --expt-relaxed-constexpr
    --expt-extended-lambda --use_fast_math -Xcompiler -fPIC -DTORCH_EXTENSION_NAME=flash_attn_2_cuda
    -I"$src/csrc/flash_attn" -I"$src/csrc/flash_attn/src" -I"$src/csrc/cutlass/include")
  local one=("-gencode=arch=compute_90,code=sm_90")
  local all=("-gencode=arch=compute_80,code=sm_80" "-gencode=arch=compute_90,code=sm_90"
    "-gencode=arch=compute_100,code=sm_100" "-gencode=arch=compute_120,code=sm_120")
  cd "$src"
  # shellcheck disable=SC2086
  python3 "$ROOT/tests/gpu/measure.py" "sm_90 only" -- "$NVCC" "${flags[@]}" $incs "${one[@]}" --threads 1 \
    -c "$tu" -o "$STATE/tu-one.o" >"$OUT/arch-one.json" 2>"$OUT/arch-one.err" &
  # shellcheck disable=SC2086
  python3 "$ROOT/tests/gpu/measure.py" "80;90;100;120" -- "$NVCC" "${flags[@]}" $incs "${all[@]}" --threads 4 \
    -c "$tu" -o "$STATE/tu-all.o" >"$OUT/arch-all.json" 2>"$OUT/arch-all.err" &
  wait
  cd - >/dev/null
  echo "$tu"
  cat "$OUT/arch-one.json" "$OUT/arch-all.json"
  stat -c "%n %s bytes" "$STATE/tu-one.o" "$STATE/tu-all.o" | tee "$OUT/arch-objects.txt"
  python3 - "$OUT/arch-one.json" "$OUT/arch-all.json" <<'EOF'
import json, sys
one, full = (json.load(open(p)) for p in sys.argv[1:3])
print("CPU time ratio (default list / sm_90 only): %.2f" % (full["cpu_s"] / one["cpu_s"]))
EOF
}

# --- vLLM and serving ----------------------------------------------------------

# Version of the venv's torch and a sha256 over every file its RECORD lists.
torch_digest() {
  "$TORCH_PYTHON" - <<'EOF'
import hashlib, importlib.metadata as md, os
dist = md.distribution("torch")
h = hashlib.sha256()
files = 0
for f in sorted(dist.files or [], key=str):
    path = os.path.join(str(dist.locate_file("")), str(f))
    if os.path.isfile(path) and not str(f).endswith(".pyc"):
        with open(path, "rb") as handle:
            h.update(str(f).encode() + b"\0" + handle.read())
        files += 1
print("torch %s, %d files, sha256 %s" % (dist.version, files, h.hexdigest()))
EOF
}

step_vllm_bundle() {
  local parts=${GPU_PARTS:-$ROOT/.gpu/parts} want got
  if ! compgen -G "$parts/wheelhouse.tar.part*" >/dev/null; then
    missing "the pieces of the vLLM wheelhouse in $parts (GPU_PARTS)" \
      "run tests/gpu/bundle.sh on a machine with PyPI and copy .gpu/parts here"
  fi
  need_torch
  stop_if_missing
  say "vllm-bundle: the carried wheelhouse, checked against $BUNDLE/vllm-wheelhouse.sha256"
  want=$(cut -d' ' -f1 "$BUNDLE/vllm-wheelhouse.sha256")
  got=$(cat "$parts"/wheelhouse.tar.part* | tee "$STATE/wheelhouse.tar" | sha256sum | cut -d' ' -f1)
  echo "pieces: $(find "$parts" -name 'wheelhouse.tar.part*' | wc -l), sha256 $got, recorded $want"
  [[ $got == "$want" ]] || { echo "the reassembled wheelhouse is not the recorded one" >&2; exit 1; }
  rm -rf "$STATE/bundle"
  mkdir -p "$STATE/bundle"
  tar -xf "$STATE/wheelhouse.tar" -C "$STATE/bundle"
  rm -f "$STATE/wheelhouse.tar"
  echo "wheels: $(find "$STATE/bundle/wheelhouse" -name '*.whl' | wc -l)"
  WHEELS=$STATE/bundle/ansible
  python3 -m pip install -q --no-index --no-deps --find-links "$WHEELS" --target "$STATE/site" "$WHEELS"/*.whl
  if [[ -z $TARBALL ]]; then
    rm -f "$STATE"/gpufleet-llm_stack-*.tar.gz
    ansible-galaxy collection build --force --output-path "$STATE" "$ROOT" >/dev/null
    TARBALL=$(find "$STATE" -maxdepth 1 -name 'gpufleet-llm_stack-*.tar.gz' -print -quit)
  fi
  # No flash-attn sdist travels with this bundle: flash-attn's gate then
  # reads the index setting, which it cannot check from here.
  WHEELHOUSE=""
  # supervisord's venv needs only its own wheel, not the whole wheelhouse.
  mkdir -p "$STATE/bundle/supervisor"
  cp "$STATE"/bundle/wheelhouse/supervisor-*.whl "$STATE/bundle/supervisor/"
  step_setup
  # What the vLLM steps add: the local wheelhouse, the exact list installed
  # with --no-deps, and the transformers the host has as the pin.
  "$TORCH_PYTHON" - "$BUNDLE" "$STATE" >>"$STATE/host.yml" <<'EOF'
import importlib.metadata as md, json, sys
here, state = sys.argv[1:3]
reqs, version = [], None
for name in ("vllm-requirements.txt", "vllm-requirements-host.txt"):
    with open("%s/%s" % (here, name)) as handle:
        for line in handle:
            if line.startswith("vllm=="):
                version = line.strip().split("==", 1)[1]
            elif line.strip() and not line.startswith("#"):
                reqs.append(line.strip())
print("    llm_stack_vllm_version: %s" % json.dumps(version))
print("    vllm_source_wheelhouse: %s" % json.dumps(state + "/bundle/wheelhouse"))
print("    vllm_serve_supervisor_wheelhouse: %s" % json.dumps(state + "/bundle/supervisor"))
print("    vllm_source_requirements: %s" % json.dumps(reqs))
print("    llm_stack_transformers_version: %s" % json.dumps(md.version("transformers")))
EOF
  tail -n 5 "$STATE/host.yml" | cut -c1-200 | tee -a "$OUT/host.yml"
}

step_vllm_preflight() {
  say "vllm-preflight: the vLLM stack passes; a vLLM that pins another torch is refused"
  play vllm-preflight "$COLL/playbooks/preflight.yml"
  sed -n '/Show the preflight report/,/^$/p' "$OUT/vllm-preflight.log" | head -n 40
  local rc=0
  play refuse-vllm0191 "$COLL/playbooks/preflight.yml" -e llm_stack_vllm_version=0.19.1 || rc=$?
  [[ $rc -ne 0 ]] || { echo "vLLM 0.19.1 (pins torch 2.10.0) was not refused" >&2; exit 1; }
  grep -E 'torch' "$OUT/refuse-vllm0191.log" | grep -E '0\.19\.1' | cut -c1-240 | head -n 8
}

step_vllm_install() {
  need_setup
  need_torch
  stop_if_missing
  say "vllm-install: vllm_source, wheel method, into the torch venv"
  torch_digest | tee "$OUT/torch-before.txt"
  local start=$SECONDS
  play vllm-install "$COLL/playbooks/vllm.yml" || { grep -E 'FAILED|msg' "$OUT/vllm-install.log" | tail -n 30; exit 1; }
  echo "install took $((SECONDS - start))s, changed $(changed vllm-install)"
  torch_digest | tee "$OUT/torch-after.txt"
  if cmp -s "$OUT/torch-before.txt" "$OUT/torch-after.txt"; then echo "torch unchanged"; else echo "torch CHANGED" >&2; exit 1; fi
  grep -E 'progress \[|Verif|registry|kernel|--version' "$OUT/vllm-install.log" | cut -c1-220 | head -n 30
  play vllm-rerun "$COLL/playbooks/vllm.yml"
  echo "re-run changed: $(changed vllm-rerun)"
  "$TORCH_PYTHON" -c 'import vllm, torch; print("vllm", vllm.__version__, "torch", torch.__version__)'
}

step_serve() {
  need_setup
  need_torch
  stop_if_missing
  say "serve: the stand-in model in qwen_model_fetch's layout, vllm_serve, health gate, benchmark"
  "$TORCH_PYTHON" "$ROOT/tests/gpu/make_tiny_qwen35.py" --layout /opt/llm-stack/models Qwen/Qwen3.5-tiny-standin \
    >"$OUT/make-model.log" 2>&1 || { tail -n 20 "$OUT/make-model.log"; exit 1; }
  tail -n 2 "$OUT/make-model.log"
  local start=$SECONDS
  play serve "$COLL/playbooks/serve.yml" || { grep -E 'FAILED|msg' "$OUT/serve.log" | tail -n 30; exit 1; }
  echo "serve took $((SECONDS - start))s, changed $(changed serve)"
  grep -E 'progress \[|health|tensor|/v1/|benchmark|ttft|tpot|throughput|per second' "$OUT/serve.log" | cut -c1-240 | head -n 40
  play serve-rerun "$COLL/playbooks/serve.yml"
  echo "re-run changed: $(changed serve-rerun)"
}

# The processes of the server's process group (its engine core processes
# too), one "pid ppid pgid user comm" line each, zombies left out.
group_of() {
  ps -eo pid=,ppid=,pgid=,stat=,user=,comm= | awk -v g="$1" '$3 == g && $4 !~ /^Z/ {print $1, $2, $3, $5, $6}'
}
gpu_used_mib() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | awk '{s += $1} END {print s + 0}'; }
gpu_total_mib() { nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | awk '{s += $1} END {print s + 0}'; }

step_serve_crash() {
  need_setup
  stop_if_missing
  local util=${GPU_CRASH_UTIL:-0.85}
  say "serve-crash: at gpu_memory_utilization $util, the API server killed with SIGKILL"
  play crash-serve "$COLL/playbooks/serve.yml" -e "vllm_serve_gpu_memory_utilization=$util" ||
    { grep -E 'FAILED|msg' "$OUT/crash-serve.log" | tail -n 30; exit 1; }
  local pid pgid total before t0 gone="" freed="" restarted="" now="" used low elapsed
  pid=$(pgrep -f -o 'vllm.entrypoints|bin/vllm serve')
  pgid=$(ps -o pgid= -p "$pid" | tr -d ' ')
  total=$(gpu_total_mib)
  before=$(gpu_used_mib)
  echo "server pid $pid, process group $pgid; GPU memory used $before of $total MiB"
  group_of "$pgid" | tee "$OUT/crash-group-before.txt"
  low=$((total / 20))
  t0=$(date +%s.%N)
  kill -9 "$pid"
  while :; do
    elapsed=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
    if [[ -z $gone ]] && [[ -z $(group_of "$pgid") ]]; then
      gone=$elapsed
      echo "no process of the old server's group after ${gone}s"
    fi
    used=$(gpu_used_mib)
    if [[ -z $freed && $used -le $low ]]; then
      freed=$elapsed
      echo "GPU memory back after ${freed}s ($used MiB used)"
    fi
    now=$(pgrep -f -o 'vllm.entrypoints|bin/vllm serve' || true)
    if [[ -z $restarted && -n $now && $now != "$pid" ]]; then
      restarted=$elapsed
      echo "new server pid $now after ${restarted}s"
    fi
    [[ -n $gone && -n $freed && -n $restarted ]] && break
    if awk -v e="$elapsed" 'BEGIN {exit !(e > 240)}'; then
      echo "after ${elapsed}s: old group $(group_of "$pgid" | wc -l) processes, $used MiB used, new server ${now:-none}" >&2
      group_of "$pgid" >&2
      exit 1
    fi
    sleep 0.5
  done
  local start=$SECONDS
  play crash-gate "$COLL/playbooks/serve.yml" -e "vllm_serve_gpu_memory_utilization=$util" ||
    { grep -E 'FAILED|msg' "$OUT/crash-gate.log" | tail -n 30; exit 1; }
  echo "the restarted service passed its gate $((SECONDS - start))s later (gate run changed $(changed crash-gate));" \
    "GPU memory used $(gpu_used_mib) MiB; old group: $(group_of "$pgid" | wc -l) processes"
  grep -E 'healthy|/v1/|foreign|held' "$OUT/crash-gate.log" | cut -c1-240 | head -n 12 || true
}

step_serve_fault() {
  need_setup
  stop_if_missing
  say "serve-fault: the server killed, then a broken flag"
  local pid now="" waited=0 rc=0
  pid=$(pgrep -f -o 'vllm.entrypoints|bin/vllm serve' || true)
  echo "killing the server, pid ${pid:-none}"
  [[ -n $pid ]] && kill -9 "$pid"
  while [[ $waited -lt 240 ]]; do
    sleep 5
    waited=$((waited + 5))
    now=$(pgrep -f -o 'vllm.entrypoints|bin/vllm serve' || true)
    [[ -n $now && $now != "$pid" ]] && break
  done
  echo "new server pid ${now:-none} after ${waited}s"
  play serve-after-kill "$COLL/playbooks/serve.yml"
  echo "after the kill: changed $(changed serve-after-kill)"
  play serve-broken "$COLL/playbooks/serve.yml" -e "@$ROOT/tests/gpu/broken-flag.yml" || rc=$?
  [[ $rc -ne 0 ]] || { echo "the broken flag was not caught by the health gate" >&2; exit 1; }
  grep -E 'no-such-flag|unrecognized|previous|healthy' "$OUT/serve-broken.log" | cut -c1-240 | head -n 20
  play serve-restored "$COLL/playbooks/serve.yml"
  echo "restored: changed $(changed serve-restored)"
}

[[ $# -gt 0 ]] || { awk 'NR > 1 && !/^#/ {exit} NR > 1' "$0"; exit 2; }
for step in "$@"; do
  declare -F "step_${step//-/_}" >/dev/null || { echo "run.sh: no step $step (run.sh alone lists them)" >&2; exit 2; }
done
for STEP in "$@"; do
  "step_${STEP//-/_}"
done
