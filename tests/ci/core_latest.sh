#!/usr/bin/env bash
# make core-latest: the same checks on the current ansible-core (2.21, with a
# Python 3.12 controller) as on the pinned one: ansible-lint with the
# production profile, ansible-test sanity, the unit tests and the molecule
# scenarios in CORE_LATEST_SCENARIOS (default: preflight, which `make test`
# runs here only). Its own venv, .venv-core-latest, from
# tests/ci/requirements-core-latest.txt; the other steps keep .venv.
# TEST ONLY: awx/configure.yml needs the awx.awx collection (ansible-lint
# resolves its modules, a unit test reads their specs). The ansible 14
# package no longer bundles it and no Galaxy server is reachable here, so
# the copy that the pinned venv's ansible 12 package brought is put where
# the ansible package keeps its collections. Users install it with
# `ansible-galaxy collection install awx.awx` (docs/awx.md).
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
"${CI_VENV}/bin/ansible" --version | sed -n 1p

awx_src="$(compgen -G "${CI_ROOT}/.venv/lib/python3*/site-packages/ansible_collections/awx/awx" | head -n 1)" ||
    die "awx.awx is not in ${CI_ROOT}/.venv (the pinned venv's ansible package): run 'make venv' first"
awx_dest="$("${CI_VENV}/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/ansible_collections/awx/awx"
if ! cmp -s "${awx_src}/MANIFEST.json" "${awx_dest}/MANIFEST.json"; then
    rm -rf "${awx_dest}"
    mkdir -p "$(dirname "${awx_dest}")"
    cp -a "${awx_src}" "${awx_dest}"
    log "awx.awx copied into ${CI_VENV} (test only)"
fi
(
    cd "${CI_ROOT}" || exit 1
    export PATH="${CI_VENV}/bin:${PATH}" ANSIBLE_COLLECTIONS_PATH="${CI_ROOT}/.collections" NO_COLOR=1
    ansible-lint --version
    ansible-lint --profile production --offline
)
"${here}/sanity.sh"
"${here}/unit.sh"
# CORE_LATEST_SCENARIOS="" runs none.
if [[ -n "${CORE_LATEST_SCENARIOS-preflight}" ]]; then
    SCENARIOS="${CORE_LATEST_SCENARIOS-preflight}" "${here}/molecule.sh"
fi
