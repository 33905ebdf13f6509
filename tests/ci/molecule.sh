#!/usr/bin/env bash
# make molecule: `molecule test` for each scenario under molecule/, one
# after the other, with the shared base config (.config/molecule/config.yml)
# and the working tree as the collection (.collections). SCENARIOS="a b"
# runs a subset; the default is every molecule/*/molecule.yml. Every
# scenario runs even when one fails; the step fails at the end if any did.
# Wall times go to build/ci/molecule-times.tsv and are printed.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
use_venv
cd "${CI_ROOT}" || exit 1

engine_up || die "no Docker engine answers: run 'make engine' first"

if [[ -n "${SCENARIOS:-}" ]]; then
    read -r -a scenarios <<<"${SCENARIOS}"
else
    scenarios=()
    for file in molecule/*/molecule.yml; do
        [[ -e "${file}" ]] || continue
        scenarios+=("$(basename "$(dirname "${file}")")")
    done
fi

if [[ "${#scenarios[@]}" -eq 0 ]]; then
    log "WARNING: no molecule scenario found (molecule/*/molecule.yml): nothing to run"
    exit 0
fi
for scenario in "${scenarios[@]}"; do
    [[ -f "molecule/${scenario}/molecule.yml" ]] || die "no scenario molecule/${scenario}/molecule.yml (SCENARIOS=${SCENARIOS:-})"
done

# Appended to: `make` empties it when it starts, and scenarios run by
# pool.sh side by side each add their line.
times="${CI_OUT}/molecule-times.tsv"
failed=()
ran=()
for scenario in "${scenarios[@]}"; do
    printf '\n-------- molecule scenario %s --------\n' "${scenario}"
    start="$(date +%s)"
    rc=0
    molecule --base-config "${CI_ROOT}/.config/molecule/config.yml" \
        test --scenario-name "${scenario}" --no-command-borders || rc=$?
    elapsed="$(($(date +%s) - start))"
    printf '%s\t%s\t%s\n' "${scenario}" "${elapsed}" "${rc}" >>"${times}"
    ran+=("$(printf '  %-24s %6ss  %s' "${scenario}" "${elapsed}" "$([[ "${rc}" -eq 0 ]] && echo ok || echo FAILED)")")
    if [[ "${rc}" -ne 0 ]]; then
        failed+=("${scenario}")
        log "scenario ${scenario} FAILED (exit ${rc}) after ${elapsed}s"
    else
        log "scenario ${scenario} passed in ${elapsed}s"
    fi
done

printf '\nmolecule scenario times:\n'
printf '%s\n' "${ran[@]}"
[[ "${#failed[@]}" -eq 0 ]] || die "molecule scenarios failed: ${failed[*]}"
