#!/usr/bin/env bash
# make sanity: `ansible-test sanity` on a copy of the collection, offline.
#
# - ansible-test needs the collection at .../ansible_collections/<ns>/<name>:
#   the files git sees are copied to build/sanity/run.*/ansible_collections/...
# - ansible-test bootstraps pip in the virtual environments it creates with
#   a script from a CI file server that is not reachable here; it takes a
#   local copy from ~/.ansible/test/cache/get_pip_<version>.py instead, and
#   get_pip_offline.py (this folder) is put there. The sanity tests then
#   install their own requirements from PyPI.
# - shellcheck (Debian) is installed when missing, so that the shellcheck
#   test runs instead of being skipped.
# SANITY_TESTS="pep8 pylint" runs a subset (default: all).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
use_venv
cd "${CI_ROOT}" || exit 1

namespace="$(galaxy_field namespace)"
name="$(galaxy_field name)"
python_version="$(python -c 'import sys; print("%d.%d" % sys.version_info[:2])')"

if ! command -v shellcheck >/dev/null 2>&1; then
    [[ "$(id -u)" -eq 0 ]] || die "shellcheck is missing: apt-get install shellcheck"
    log "installing shellcheck from Debian"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq shellcheck >/dev/null 2>&1 || {
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq shellcheck >/dev/null
    }
fi

# The pip version ansible-test bootstraps, from its own source.
ansible_test_dir="$(python -c 'import ansible_test, os; print(os.path.dirname(ansible_test.__file__))')"
pip_version="$(sed -n "s/^ *pip='\([0-9.]*\)',$/\1/p" "${ansible_test_dir}/_internal/python_requirements.py" | head -n1)"
[[ -n "${pip_version}" ]] || die "cannot find the pip version in ${ansible_test_dir}/_internal/python_requirements.py"
get_pip="${HOME}/.ansible/test/cache/get_pip_${pip_version//./_}.py"
mkdir -p "$(dirname "${get_pip}")"
if ! cmp -s "${CI_ROOT}/tests/ci/get_pip_offline.py" "${get_pip}"; then
    if [[ -e "${get_pip}" ]] && ! grep -q 'Offline stand-in for the get-pip' "${get_pip}"; then
        log "keeping the get-pip script already at ${get_pip}"
    else
        cp "${CI_ROOT}/tests/ci/get_pip_offline.py" "${get_pip}"
        log "offline get-pip stand-in for pip ${pip_version} at ${get_pip}"
    fi
fi

# A directory of its own per run: several runs on one checkout never
# pull the tree from under each other. Removed at the end.
mkdir -p "${CI_ROOT}/build/sanity"
run_dir="$(mktemp -d "${CI_ROOT}/build/sanity/run.XXXXXX")"
trap 'rm -rf "${run_dir}"' EXIT
tree="${run_dir}/ansible_collections/${namespace}/${name}"
export_tree "${tree}"
log "collection copied to ${tree} ($(find "${tree}" -type f | wc -l) files)"

cd "${tree}" || exit 1
# ansible-test lists content with git from the nearest .git above the
# collection; from the project's checkout that would be the repo root, where
# build/ is ignored and the copy would look empty. A repository of its own
# (nothing committed) makes it list the copy's files.
git init -q .
read -r -a tests <<<"${SANITY_TESTS:-}"
# pipefail: the exit status is ansible-test's.
ansible-test sanity --local --python "${python_version}" --color no \
    ${tests[@]+"${tests[@]/#/--test=}"} 2>&1 | filter_pip_noise
