#!/usr/bin/env bash
# TEST-ONLY. Builds, on the controller, what the qwen_model_fetch scenario
# needs and keeps it under .cache/qwen_model_fetch (git-ignored):
#   venv/            torch (CPU), transformers and olah (tests/model/requirements.txt)
#   repos/           the local git repository of the tiny random-weight
#                    Qwen3.5 stand-in (tests/model/make_tiny_qwen.py)
#   revisions.json   its commit SHAs and file digests
#   wheelhouse/      wheels of the packages given as arguments (the hosts'
#                    pip installs from it, like an air-gapped fleet would)
# Usage: testbed.sh [PACKAGE==VERSION ...]   (the wheelhouse content)
# Each part is rebuilt only when its inputs changed. No GPU and no internet
# besides the package index are needed.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${QWEN_MODEL_FETCH_FIXTURE:-${root}/.cache/qwen_model_fetch}"
venv="${out}/venv"
requirements="${root}/tests/model/requirements.txt"
generator="${root}/tests/model/make_tiny_qwen.py"
python="${PYTHON:-python3}"

mkdir -p "${out}"
if ! "${python}" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
    echo "testbed.sh: ${python} is not Python 3.11 (the torch 2.13.0 CPU wheel of the test machines is for 3.11); set PYTHON" >&2
    exit 1
fi

if [[ ! -x "${venv}/bin/python" ]] || ! cmp -s "${requirements}" "${venv}/.requirements"; then
    echo "==> fixture venv ${venv}"
    rm -rf "${venv}"
    "${python}" -m venv "${venv}"
    "${venv}/bin/pip" install --quiet --disable-pip-version-check -r "${requirements}"
    cp "${requirements}" "${venv}/.requirements"
fi

stamp="${out}/revisions.json"
if [[ ! -s "${stamp}" || "${generator}" -nt "${stamp}" || "${requirements}" -nt "${stamp}" ]]; then
    echo "==> tiny Qwen3.5 stand-in in ${out}/repos"
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
