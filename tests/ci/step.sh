#!/usr/bin/env bash
# Run one step of `make test` (a script of this folder) and record its wall
# time in build/ci/timings.tsv; summary.sh prints the table.
# Usage: step.sh NAME COMMAND [ARGS...]
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

name="$1"
shift
printf '\n======== %s ========\n' "${name}"
start="$(date +%s)"
rc=0
"$@" || rc=$?
end="$(date +%s)"
printf '%s\t%s\t%s\n' "${name}" "$((end - start))" "${rc}" >>"${CI_TIMINGS}"
if [[ "${rc}" -ne 0 ]]; then
    printf '\nstep %s FAILED (exit %s) after %ss\n' "${name}" "${rc}" "$((end - start))" >&2
    "$(dirname "${BASH_SOURCE[0]}")/summary.sh" >&2 || true
fi
exit "${rc}"
