# shellcheck shell=bash
# Common settings for the scripts behind `make test`. Sourced, not run.

set -euo pipefail

CI_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export CI_ROOT
CI_VENV="${CI_VENV:-${CI_ROOT}/.venv}"
CI_OUT="${CI_ROOT}/build/ci"
# shellcheck disable=SC2034 # used by the scripts that source this file
CI_TIMINGS="${CI_OUT}/timings.tsv"

# Image tags shared by the scenarios, the test fleet and images.sh.
CI_BASE_IMAGE="${CI_BASE_IMAGE:-local/debian-ansible:bookworm}"
CI_SYSTEMD_IMAGE="${CI_SYSTEMD_IMAGE:-local/debian-systemd:bookworm}"
# The host CA bundle, mounted read-only into containers that run pip or apt.
# shellcheck disable=SC2034 # used by the scripts that source this file
CI_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt

mkdir -p "${CI_OUT}"

log() {
    printf '==> %s\n' "$*"
}

die() {
    printf 'ERROR: %s\n' "$*" >&2
    exit 1
}

# Put the project's venv first on PATH (ansible, molecule, pytest, ...).
use_venv() {
    [[ -x "${CI_VENV}/bin/python" ]] || die "${CI_VENV} is missing: run 'make venv' first"
    export VIRTUAL_ENV="${CI_VENV}"
    export PATH="${CI_VENV}/bin:${PATH}"
    export ANSIBLE_COLLECTIONS_PATH="${CI_ROOT}/.collections"
    export ANSIBLE_NOCOLOR=1
    export PY_COLORS=0
    export NO_COLOR=1
}

# True when a Docker engine answers.
engine_up() {
    timeout 20 docker info >/dev/null 2>&1
}

# Collection namespace and name, read from galaxy.yml.
galaxy_field() {
    sed -n "s/^$1:[[:space:]]*['\"]\{0,1\}\([A-Za-z0-9_.-]*\).*/\1/p" "${CI_ROOT}/galaxy.yml" | head -n1
}

# export_tree DEST: copy the files git sees (tracked, and untracked ones not
# ignored) into DEST, so that a build or a sanity run sees what a fresh
# clone holds and nothing of the local environment (.venv, caches, ...).
export_tree() {
    local dest="$1"
    rm -rf "${dest}"
    mkdir -p "${dest}"
    (
        cd "${CI_ROOT}" || exit 1
        git ls-files -z --cached --others --exclude-standard |
            while IFS= read -r -d '' path; do
                # Skip index entries deleted from the working tree.
                if [[ -e "${path}" || -L "${path}" ]]; then
                    printf '%s\0' "${path}"
                fi
            done |
            tar --null --no-recursion -T - -cf - | tar -xf - -C "${dest}"
    )
}

# Drop pip's warnings about index/find-links locations of the host's pip
# configuration that do not exist (harmless, one per package and location).
filter_pip_noise() {
    grep --line-buffered -v "is ignored: it is neither a file nor a directory" || true
}
