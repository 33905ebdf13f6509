#!/usr/bin/env bash
# Print the wall time of each step recorded by step.sh since `make test`
# started (build/ci/timings.tsv), their sum, the wall time since make
# started (steps run side by side, so it is less than the sum) and the
# molecule scenarios' times.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[[ -s "${CI_TIMINGS}" ]] || exit 0
printf '\n======== timing summary ========\n'
awk -F '\t' '
    { status = ($3 == 0) ? "ok" : "FAILED"; printf "%-26s %6ss  %s\n", $1, $2, status; total += $2 }
    END { printf "%-26s %6ss  (sum of the steps)\n", "total", total }
' "${CI_TIMINGS}"
if [[ -s "${CI_OUT}/started" ]]; then
    printf '%-26s %6ss  (since make started)\n' wall "$(($(date +%s) - $(cat "${CI_OUT}/started")))"
fi
if [[ -s "${CI_OUT}/molecule-times.tsv" ]]; then
    printf '\nmolecule scenarios:\n'
    awk -F '\t' '{ status = ($3 == 0) ? "ok" : "FAILED"; printf "  %-24s %6ss  %s\n", $1, $2, status }' \
        "${CI_OUT}/molecule-times.tsv"
fi
