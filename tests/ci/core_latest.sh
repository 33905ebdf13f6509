#!/usr/bin/env bash
# make core-latest: the same checks on the current ansible-core (2.21, with a
# Python 3.12 controller) as on the pinned one: ansible-test sanity, the unit
# tests and the molecule scenarios in CORE_LATEST_SCENARIOS (default:
# preflight). Its own venv, .venv-core-latest, from
# tests/ci/requirements-core-latest.txt; the other steps keep .venv.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${CI_ROOT}" || exit 1

export CI_VENV="${CI_ROOT}/.venv-core-latest"
export CI_REQUIREMENTS="tests/ci/requirements-core-latest.txt"

# ansible-core 2.21 needs Python 3.12 or newer: the first interpreter that
# runs and is 3.12 or 3.13 (a pyenv shim on PATH may name a version that is
# not selected, so each candidate is run, not just looked up).
find_python312() {
    local candidate
    for candidate in "${CORE_LATEST_PYTHON:-}" python3.13 python3.12 \
        "$(pyenv root 2>/dev/null || echo /nonexistent)"/versions/3.1[23]*/bin/python3; do
        [[ -n "${candidate}" ]] || continue
        if "${candidate}" -c 'import sys, venv; sys.exit(not (3, 12) <= sys.version_info[:2] <= (3, 13))' >/dev/null 2>&1; then
            "${candidate}" -c 'import sys; print(sys.executable)'
            return 0
        fi
    done
    return 1
}
PYTHON="$(find_python312)" || die "no Python 3.12 or 3.13 found (tried \$CORE_LATEST_PYTHON, python3.13, python3.12, pyenv's versions): set CORE_LATEST_PYTHON"
export PYTHON

here="$(dirname "${BASH_SOURCE[0]}")"
"${here}/venv.sh"
"${CI_VENV}/bin/ansible" --version | head -n 1
"${here}/sanity.sh"
"${here}/unit.sh"
SCENARIOS="${CORE_LATEST_SCENARIOS:-preflight}" "${here}/molecule.sh"
