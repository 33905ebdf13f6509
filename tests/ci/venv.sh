#!/usr/bin/env bash
# make venv: the project's virtualenv (.venv) with requirements-dev.txt.
# A re-run is a no-op while the requirements files and the interpreter are
# unchanged (stamp file with their hash). Override the interpreter with
# PYTHON=/path/to/python3.x (3.11 to 3.13, what ansible-core 2.19 runs on),
# the venv with CI_VENV and the requirements file with CI_REQUIREMENTS
# (core_latest.sh uses both for the current ansible-core).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${CI_ROOT}" || exit 1

find_python() {
    local candidate
    for candidate in "${PYTHON:-}" python3.11 python3; do
        [[ -n "${candidate}" ]] || continue
        if command -v "${candidate}" >/dev/null 2>&1 &&
            "${candidate}" -c 'import sys, venv; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))' 2>/dev/null; then
            command -v "${candidate}"
            return 0
        fi
    done
    return 1
}

python="$(find_python)" || die "no Python 3.11 to 3.13 with the venv module found (tried \$PYTHON, python3.11, python3); set PYTHON=/path/to/python3.11"
py_version="$("${python}" -c 'import sys; print(".".join(map(str, sys.version_info[:3])))')"
stamp="${CI_VENV}/.requirements.sha256"
requirements="${CI_REQUIREMENTS:-requirements-dev.txt}"
[[ -f "${requirements}" ]] || die "no requirements file ${requirements}"
want="$(cat requirements.txt "${requirements}" | sha256sum | cut -d' ' -f1) python-${py_version}"

venv_version=""
if [[ -x "${CI_VENV}/bin/python" ]]; then
    venv_version="$("${CI_VENV}/bin/python" -c 'import sys; print(".".join(map(str, sys.version_info[:3])))' 2>/dev/null || true)"
fi

if [[ "${venv_version}" == "${py_version}" && -f "${stamp}" && "$(cat "${stamp}")" == "${want}" ]]; then
    log "${CI_VENV} is up to date (Python ${py_version}, requirements unchanged)"
    exit 0
fi

if [[ "${venv_version}" != "${py_version}" ]]; then
    log "creating ${CI_VENV} with ${python} (Python ${py_version})"
    rm -rf "${CI_VENV}"
    "${python}" -m venv "${CI_VENV}"
fi

pip_install() {
    "${CI_VENV}/bin/python" -m pip install --disable-pip-version-check --quiet "$@" 2>&1 | filter_pip_noise
    return "${PIPESTATUS[0]}"
}

rm -f "${stamp}"
log "installing ${requirements} into ${CI_VENV}"
pip_install -r "${requirements}"
"${CI_VENV}/bin/python" -m pip check
printf '%s\n' "${want}" >"${stamp}"
log "installed: $("${CI_VENV}/bin/python" -m pip freeze --disable-pip-version-check | grep -Ei '^(ansible|ansible-core|ansible-lint|molecule|molecule-plugins|pytest|pytest-testinfra|hypothesis|antsibull-changelog)==' | tr '\n' ' ')"
