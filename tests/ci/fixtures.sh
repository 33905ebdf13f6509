#!/usr/bin/env bash
# make fixtures: the controller-side test fixtures under .cache/, built side
# by side. The one place that knows every fixture, its directory, its
# builder's arguments and its environment; make test (this step, before the
# scenarios and the AWX test), tests/testfleet/prepare.yml (make site) and
# tests/awx/prepare.yml call it. CI starts from an empty .cache/, so make
# test runs the same concurrent build from nothing that a first make site
# runs. TEST ONLY: stand-ins for what an air-gapped fleet brings (NVIDIA's
# runfile, a wheelhouse, vLLM's mirror, a hub).
#
#   tests/ci/fixtures.sh [FIXTURE...]   build these (default: every fixture)
#   tests/ci/fixtures.sh --list         name, directory and command of each
#
#   cuda-runfile            .cache/cuda-runfile: tests/runfile/build.sh
#                           (cuda_toolkit, awx, make site)
#   wheelhouse              .cache/wheelhouse: tests/wheelhouse/build
#                           (torch_flash_attn, fleet_cache, vllm, awx, make site)
#   qwen_model_fetch        .cache/qwen_model_fetch: tests/model/testbed.sh with
#                           the hub clients' wheels (qwen_model_fetch; its venv
#                           writes vllm's tiny model)
#   vllm                    .cache/vllm: tests/vllm/build, with the model venv
#                           of qwen_model_fetch (vllm, make site)
#   awx-model               .cache/awx-model: testbed.sh, the AWX test's copy
#   testfleet-model         .cache/testfleet-model: testbed.sh, make site's copy
#   router                  .cache/router: tests/router/build, Debian's HAProxy
#                           .debs (serving_fleet)
#   monitoring              .cache/monitoring: tests/monitoring/build, Debian's
#                           Prometheus and node-exporter .debs (serving_fleet)
#   fleet-cache-wheels      .cache/fleet_cache/wheelhouse: pypiserver,
#                           gunicorn and devpi-server for the cache host
#                           (fleet_cache, make site)
#   awx-fleet-cache-wheels  .cache/awx-fleet-cache-wheels: the same for the
#                           AWX test's index
#
# Each build gets its directory and its environment on its own command
# line: nothing is set for all of them, and the builders' directory
# variables of the caller's environment are dropped. Every builder locks its
# directory (DIR.lock, tests/ci/fixture_lock.sh) for its check and its
# build, so a scenario or a second caller that builds the same directory at
# the same time waits for this one, then finds it up to date; each returns
# at once when its stamp is current.
# FIXTURE_JOBS builds run at once (default 3: most of the time goes to
# downloads). Each build's log is build/ci/fixtures/<name>.log, printed when
# the build ends (the last lines when it succeeded, the last 60 when it
# failed); a table of the builds' wall times follows. A failed build is
# queued again, FIXTURE_RETRIES times (default 1): the builds download from
# PyPI and Debian, and a connection that breaks in the middle of a file
# fails pip and apt-get at once. Each builder finds what it completed and
# starts over what it did not, so a second try is safe; the first try's
# log is kept as <name>.log.1 and its end printed. The step fails when a
# build failed on its last try, after all of them ended, and prints the end
# of each such build's log again below the table.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
use_venv
cd "${CI_ROOT}" || exit 1

cache="${CI_ROOT}/.cache"
logs="${CI_OUT}/fixtures"
# Longest first: vllm waits (on its lock) for qwen_model_fetch's venv only
# after its own downloads.
every=(qwen_model_fetch vllm wheelhouse cuda-runfile testfleet-model awx-model
    fleet-cache-wheels awx-fleet-cache-wheels router monitoring)

unset QWEN_MODEL_FETCH_FIXTURE LLM_STACK_TEST_VLLM LLM_STACK_TEST_WHEELHOUSE

# default_of ROLE VARIABLE: a role default, read from its defaults/main.yml.
default_of() {
    python - "roles/$1/defaults/main.yml" "$2" <<'EOF'
import sys
import yaml
with open(sys.argv[1], encoding="utf-8") as handle:
    print(yaml.safe_load(handle)[sys.argv[2]])
EOF
}

# fixture_dir NAME: the directory a fixture's builder owns.
fixture_dir() {
    case "$1" in
    fleet-cache-wheels) printf '%s\n' "${cache}/fleet_cache/wheelhouse" ;;
    cuda-runfile | wheelhouse | qwen_model_fetch | vllm | awx-model | testfleet-model | awx-fleet-cache-wheels | router | monitoring)
        printf '%s\n' "${cache}/$1"
        ;;
    *) return 1 ;;
    esac
}

# fixture_command NAME: its command line, one word per line; an environment
# is given with env, for this build alone.
fixture_command() {
    local dir
    dir="$(fixture_dir "$1")" || return 1
    case "$1" in
    cuda-runfile) printf '%s\n' bash tests/runfile/build.sh "${dir}" ;;
    wheelhouse) printf '%s\n' tests/wheelhouse/build "${dir}" ;;
    qwen_model_fetch | awx-model | testfleet-model)
        printf '%s\n' env "QWEN_MODEL_FETCH_FIXTURE=${dir}" bash tests/model/testbed.sh "${olah}" "${hub}"
        ;;
    vllm) printf '%s\n' tests/vllm/build "${dir}" "$(fixture_dir qwen_model_fetch)" ;;
    router) printf '%s\n' tests/router/build "${dir}" ;;
    monitoring) printf '%s\n' tests/monitoring/build "${dir}" ;;
    fleet-cache-wheels)
        printf '%s\n' tests/wheelhouse/download "${dir}" "${pypiserver}" "${gunicorn}" "${devpi}"
        ;;
    awx-fleet-cache-wheels)
        printf '%s\n' tests/wheelhouse/download "${dir}" "${pypiserver}" "${gunicorn}"
        ;;
    esac
}

olah="olah==$(default_of hf_mirror hf_mirror_olah_version)"
hub="huggingface_hub==$(default_of qwen_model_fetch qwen_model_fetch_huggingface_hub_version)"
pypiserver="pypiserver==$(default_of fleet_cache fleet_cache_pypiserver_version)"
gunicorn="gunicorn==$(default_of fleet_cache fleet_cache_gunicorn_version)"
devpi="devpi-server==$(default_of fleet_cache fleet_cache_proxy_devpi_version)"

if [[ "${1:-}" == --list ]]; then
    for name in "${every[@]}"; do
        mapfile -t command < <(fixture_command "${name}")
        (IFS=$'\t' && printf '%s\n' "${name}"$'\t'"$(fixture_dir "${name}")"$'\t'"${command[*]}")
    done
    exit 0
fi

((BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] >= 501)) || die "bash ${BASH_VERSION}: fixtures.sh needs bash 5.1 or later (wait -n -p)"
jobs="${FIXTURE_JOBS:-3}"
[[ "${jobs}" =~ ^[1-9][0-9]*$ ]] || die "FIXTURE_JOBS=${jobs}: give a number of builds to run at once (1, 2, ...)"
retries="${FIXTURE_RETRIES:-1}"
[[ "${retries}" =~ ^[0-9]+$ ]] || die "FIXTURE_RETRIES=${retries}: give how many times a failed build is tried again (0, 1, ...)"
queue=()
for name in "${@:-${every[@]}}"; do
    fixture_dir "${name}" >/dev/null || die "unknown fixture ${name}: one of ${every[*]}"
    [[ " ${queue[*]} " == *" ${name} "* ]] || queue+=("${name}")
done
mkdir -p "${logs}"

declare -A running=() started=() tries=()
results=()
failed=()

# Each build runs in a process group of its own (setsid), so that a stop
# of this step stops its pip and git processes too.
stop_builds() {
    local pid
    for pid in "${!running[@]}"; do
        kill -TERM -- "-${pid}" 2>/dev/null || true
    done
}
trap stop_builds EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# finish PID STATUS: report the build that ended.
finish() {
    local pid="$1" rc="$2" name seconds log
    name="${running[${pid}]}"
    seconds=$((SECONDS - started[${name}]))
    unset "running[${pid}]"
    log="${logs}/${name}.log"
    mv -f "${log}.$$" "${log}"
    if [[ "${rc}" -eq 0 ]]; then
        log "${name} done in ${seconds} s ($(fixture_dir "${name}")):"
        filter_pip_noise <"${log}" | tail -n 3 | sed "s/^/    /"
        results+=("${name}"$'\t'"${seconds}"$'\t'"ok")
    elif [[ "${tries[${name}]}" -le "${retries}" ]]; then
        mv -f "${log}" "${log}.${tries[${name}]}"
        log "${name} FAILED (exit ${rc}) after ${seconds} s, try ${tries[${name}]}; queued again. The end of ${log}.${tries[${name}]}:"
        filter_pip_noise <"${log}.${tries[${name}]}" | tail -n 60 | sed "s/^/    /"
        results+=("${name}"$'\t'"${seconds}"$'\t'"FAILED (exit ${rc}), tried again")
        queue+=("${name}")
    else
        log "${name} FAILED (exit ${rc}) after ${seconds} s; the end of ${log}:"
        filter_pip_noise <"${log}" | tail -n 60 | sed "s/^/    /"
        results+=("${name}"$'\t'"${seconds}"$'\t'"FAILED (exit ${rc})")
        failed+=("${name}")
    fi
}

log "building ${#queue[@]} fixtures under ${cache}, ${jobs} at a time: ${queue[*]}"
start="${SECONDS}"
while [[ "${#queue[@]}" -gt 0 || "${#running[@]}" -gt 0 ]]; do
    while [[ "${#queue[@]}" -gt 0 && "${#running[@]}" -lt "${jobs}" ]]; do
        name="${queue[0]}"
        queue=("${queue[@]:1}")
        mapfile -t command < <(fixture_command "${name}")
        tries[${name}]=$((${tries[${name}]:-0} + 1))
        # Written under this run's name, then moved to NAME.log: two callers
        # that build side by side (two scenarios) keep their logs apart.
        setsid "${command[@]}" >"${logs}/${name}.log.$$" 2>&1 </dev/null &
        running[$!]="${name}"
        started[${name}]="${SECONDS}"
    done
    done_pid=""
    rc=0
    wait -n -p done_pid "${!running[@]}" || rc=$?
    [[ -z "${done_pid}" ]] || finish "${done_pid}" "${rc}"
done
trap - EXIT

printf '\n%-24s %8s  %s\n' fixture seconds result
for row in "${results[@]}"; do
    IFS=$'\t' read -r name seconds result <<<"${row}"
    printf '%-24s %8s  %s\n' "${name}" "${seconds}" "${result}"
done
printf '%-24s %8s\n' "wall clock" "$((SECONDS - start))"
for name in "${failed[@]}"; do
    printf '\nthe end of %s:\n' "${logs}/${name}.log"
    filter_pip_noise <"${logs}/${name}.log" | tail -n 25 | sed "s/^/    /"
done
[[ "${#failed[@]}" -eq 0 ]] || die "fixture builds failed: ${failed[*]} (logs under ${logs})"
