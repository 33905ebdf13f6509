#!/usr/bin/env bash
# TEST-ONLY. Builds, on the controller, what the qwen_model_fetch scenario
# needs and keeps it under .cache/qwen_model_fetch (git-ignored):
#   venv             torch (CPU), transformers and olah (tests/model/requirements.txt):
#                    a symlink to the shared venv.<inputs>/ it was built in (below)
#   repos/           the local git repository of the tiny random-weight
#                    Qwen3.5 stand-in (tests/model/make_tiny_qwen.py)
#   revisions.json   its commit SHAs and file digests
#   wheelhouse/      wheels of the packages given as arguments (the hosts'
#                    pip installs from it, like an air-gapped fleet would)
# Usage: testbed.sh [PACKAGE==VERSION ...]   (the wheelhouse content)
# The directory is QWEN_MODEL_FETCH_FIXTURE (default .cache/qwen_model_fetch):
# each caller sets it for its own call. Each part is rebuilt only when its
# inputs changed; the checks and the builds hold DIR.lock
# (tests/ci/fixture_lock.sh), so a second call for the same directory waits,
# then finds it up to date. No GPU and no internet besides the package index
# are needed.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${QWEN_MODEL_FETCH_FIXTURE:-${root}/.cache/qwen_model_fetch}"
out="${out%/}"
venv="${out}/venv"
requirements="${root}/tests/model/requirements.txt"
generator="${root}/tests/model/make_tiny_qwen.py"
python="${PYTHON:-python3}"

# shellcheck source=../ci/fixture_lock.sh
source "${root}/tests/ci/fixture_lock.sh"
fixture_lock "${out}"
mkdir -p "${out}"
if ! "${python}" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
    echo "testbed.sh: ${python} is not Python 3.11 (the torch 2.13.0 CPU wheel of the test machines is for 3.11); set PYTHON" >&2
    exit 1
fi

# A venv cannot be moved once made (its scripts name its path), so it is
# built in a directory of its own, venv.<inputs>, and venv is a symlink that
# one rename points at it when it is complete: a reader of venv never sees a
# venv half built, and an interrupted build leaves the previous one in use.
# The venv depends on the requirements and the Python alone, so the model
# fixtures (qwen_model_fetch, testfleet-model, awx-model) share one, built
# once under MODEL_FIXTURE_VENVS (default .cache/model-venvs) while its own
# lock is held; each fixture's venv links to it.
venvs="${MODEL_FIXTURE_VENVS:-${root}/.cache/model-venvs}"
venvs="${venvs%/}"
venv_id="$({ cat "${requirements}"; "${python}" -c 'import sys; print(sys.version)'; } | sha256sum | cut -c1-16)"
shared="${venvs}/venv.${venv_id}"
(
    fixture_lock "${venvs}"
    mkdir -p "${venvs}"
    if [[ ! -f "${shared}/.complete" ]]; then
        echo "==> fixture venv ${shared}"
        rm -rf "${shared}"
        "${python}" -m venv "${shared}"
        "${shared}/bin/pip" install --quiet --disable-pip-version-check -r "${requirements}"
        touch "${shared}/.complete"
        for old in "${venvs}"/venv.*; do
            [[ "${old}" == "${shared}" ]] || rm -rf "${old}"
        done
    fi
)
rebuilt=0
if [[ "$(readlink "${venv}" || true)" != "${shared}" ]]; then
    echo "==> fixture venv ${venv} -> ${shared}"
    rm -f "${out}/venv.new"
    ln -s "${shared}" "${out}/venv.new"
    # A venv of the older layouts (a directory, or a link to venv.<inputs>
    # of this fixture) is replaced by the link to the shared one.
    if [[ -d "${venv}" && ! -L "${venv}" ]]; then
        rm -rf "${venv}"
    fi
    mv -T "${out}/venv.new" "${venv}"
    rm -rf "${out}"/venv.[0-9a-f]*
    rebuilt=1
fi
stamp="${out}/revisions.json"
if [[ "${rebuilt}" == 1 || ! -s "${stamp}" || "${generator}" -nt "${stamp}" || "${requirements}" -nt "${stamp}" ]]; then
    echo "==> tiny Qwen3.5 stand-in in ${out}/repos"
    # The generator writes the stamp last: an interrupted run leaves none.
    rm -f "${stamp}"
    "${venv}/bin/python" "${generator}" "${out}"
fi
if [[ $# -gt 0 ]]; then
    wanted="$(printf '%s\n' "$@" | sort)"
    if [[ ! -f "${out}/wheelhouse/.packages" ]] || [[ "$(cat "${out}/wheelhouse/.packages")" != "${wanted}" ]]; then
        echo "==> wheelhouse for: $*"
        rm -rf "${out}/wheelhouse.new"
        # One resolution per package: each is installed into its own
        # virtualenv on the hosts, and their dependencies may differ.
        for package in "$@"; do
            "${venv}/bin/pip" download --quiet --disable-pip-version-check --only-binary=:all: \
                --dest "${out}/wheelhouse.new" "${package}"
        done
        printf '%s\n' "${wanted}" >"${out}/wheelhouse.new/.packages"
        # The directory is bind-mounted into the test containers: keep the
        # directory itself and replace its content.
        mkdir -p "${out}/wheelhouse"
        find "${out}/wheelhouse" -mindepth 1 -delete
        mv "${out}/wheelhouse.new/"* "${out}/wheelhouse.new/.packages" "${out}/wheelhouse/"
        rmdir "${out}/wheelhouse.new"
    fi
fi
echo "==> fixture ready: $(tr -d '\n ' <"${stamp}" | grep -o '"commits":{[^}]*}')"
