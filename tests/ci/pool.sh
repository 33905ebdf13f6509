#!/usr/bin/env bash
# Run steps of `make test` side by side, CI_JOBS at a time (default: 2, or 1
# on a one-core machine), longest first as given; while a `fixtures` step of
# the same call is queued or running, the scenarios and the AWX test wait and
# the next other step starts instead. A step is a name that
# step.sh records in the timing table:
#   fixtures lint sanity unit build awx core-latest    tests/ci/<name>.sh
#   molecule/<scenario>                                one molecule scenario
#   molecule         every other scenario of molecule/, but those of
#                    CORE_LATEST_SCENARIOS (core-latest runs them), in the
#                    order of MOLECULE_ORDER, then by name
# Each step writes build/ci/logs/<name>.log; the log is printed whole when
# the step ends, and a line names the steps still running once a minute.
# Every step runs even when one fails; the pool fails at the end if any did.
# Usage: pool.sh STEP...
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${CI_ROOT}" || exit 1

[[ "$#" -gt 0 ]] || die "usage: pool.sh STEP..."
jobs="${CI_JOBS:-}"
if [[ -z "${jobs}" ]]; then
    jobs=2
    [[ "$(nproc)" -ge 2 ]] || jobs=1
fi
[[ "${jobs}" =~ ^[1-9][0-9]*$ ]] || die "CI_JOBS=${jobs}: give a number of steps to run at once (1, 2, ...)"

here="$(dirname "${BASH_SOURCE[0]}")"
logs="${CI_OUT}/logs"
mkdir -p "${logs}"

# step_command NAME: the command line of a step, one word per line.
step_command() {
    case "$1" in
    molecule/*)
        [[ -f "molecule/${1#molecule/}/molecule.yml" ]] || return 1
        printf '%s\n' env "SCENARIOS=${1#molecule/}" "${here}/molecule.sh"
        ;;
    core-latest) printf '%s\n' "${here}/core_latest.sh" ;;
    fixtures | lint | sanity | unit | build | awx) printf '%s\n' "${here}/$1.sh" ;;
    *) return 1 ;;
    esac
}

# "molecule" -> the scenarios not named otherwise, longest first.
core_latest=" ${CORE_LATEST_SCENARIOS-preflight} "
order="${MOLECULE_ORDER:-default serving_fleet vllm multi_node fleet_cache qwen_model_fetch torch_flash_attn cuda_toolkit}"
steps=()
for name in "$@"; do
    if [[ "${name}" != molecule ]]; then
        steps+=("${name}")
        continue
    fi
    for scenario in ${order} $(find molecule -mindepth 2 -maxdepth 2 -name molecule.yml -printf '%h\n' | xargs -r -n1 basename | sort); do
        [[ -f "molecule/${scenario}/molecule.yml" && "${core_latest}" != *" ${scenario} "* ]] || continue
        [[ " $* ${steps[*]} " != *" molecule/${scenario} "* ]] || continue
        steps+=("molecule/${scenario}")
    done
done
set -- "${steps[@]}"

for name in "$@"; do
    step_command "${name}" >/dev/null || die "pool.sh: unknown step ${name}"
done

# needs_fixtures NAME: whether a step reads the fixtures under .cache.
needs_fixtures() {
    [[ "$1" == molecule/* || "$1" == awx ]]
}

declare -A running=()
failed=()
queue=("$@")
last_beat="$(date +%s)"

finish() {
    local pid="$1" rc=0 name
    name="${running[${pid}]}"
    wait "${pid}" || rc=$?
    unset "running[${pid}]"
    printf '\n######## %s (log %s) ########\n' "${name}" "${logs}/${name//\//_}.log"
    cat "${logs}/${name//\//_}.log"
    if [[ "${rc}" -ne 0 ]]; then
        failed+=("${name}")
    fi
}

log "running ${#queue[@]} steps, ${jobs} at a time: ${queue[*]}"
while [[ "${#queue[@]}" -gt 0 || "${#running[@]}" -gt 0 ]]; do
    while [[ "${#queue[@]}" -gt 0 && "${#running[@]}" -lt "${jobs}" ]]; do
        # The first step in the queue that may start: a scenario or the AWX
        # test waits while the fixtures step of this pool is queued or runs
        # (it would wait on a fixture's lock, holding a slot).
        fixtures_pending=0
        [[ " ${queue[*]} ${running[*]} " != *" fixtures "* ]] || fixtures_pending=1
        pick=-1
        for i in "${!queue[@]}"; do
            if [[ "${fixtures_pending}" -eq 0 ]] || ! needs_fixtures "${queue[${i}]}"; then
                pick="${i}"
                break
            fi
        done
        [[ "${pick}" -ge 0 ]] || break
        name="${queue[${pick}]}"
        queue=("${queue[@]:0:${pick}}" "${queue[@]:$((pick + 1))}")
        mapfile -t command < <(step_command "${name}")
        "${here}/step.sh" "${name}" "${command[@]}" >"${logs}/${name//\//_}.log" 2>&1 </dev/null &
        running[$!]="${name}"
        log "started ${name}"
    done
    sleep 5
    for pid in "${!running[@]}"; do
        kill -0 "${pid}" 2>/dev/null || finish "${pid}"
    done
    now="$(date +%s)"
    if [[ "${#running[@]}" -gt 0 && $((now - last_beat)) -ge 60 ]]; then
        log "still running: ${running[*]} (last lines: $(for pid in "${!running[@]}"; do
            n="${running[${pid}]}"
            printf '[%s] %s ' "${n}" "$(tail -n 20 "${logs}/${n//\//_}.log" | filter_pip_noise | tail -n 1 | cut -c1-100)"
        done))"
        last_beat="${now}"
    fi
done

# The end of each failed step's log once more, last: a reader of the
# output's tail sees why.
for name in "${failed[@]}"; do
    printf '\n######## the end of %s ########\n' "${logs}/${name//\//_}.log"
    filter_pip_noise <"${logs}/${name//\//_}.log" | tail -n 40
done
[[ "${#failed[@]}" -eq 0 ]] || die "steps failed: ${failed[*]} (logs under ${logs})"
