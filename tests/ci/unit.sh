#!/usr/bin/env bash
# make unit: pytest over tests/unit.
#
# Modules and module_utils are imported the way Ansible imports them,
# `ansible_collections.gpufleet.llm_stack.plugins.module_utils.<name>`: the
# collection is reached through .collections (make collection) on
# PYTHONPATH, so a test imports e.g.
#   from ansible_collections.gpufleet.llm_stack.plugins.module_utils import nvidia
# and gets the working tree. Fixtures are read relative to the test files
# (tests/fixtures/...), never from outside the repository.
#
# pytest's exit code 5 (no test collected) is a failure here: the unit
# suite must exist. PYTEST_ARGS adds options (e.g. PYTEST_ARGS="-k nvidia").
#
# The units' hardening is measured with `systemd-analyze security
# --offline=true` (systemd 250 or later); it comes from Debian's systemd
# package, installed here when missing (the tools only, nothing is started).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
use_venv
cd "${CI_ROOT}" || exit 1

if ! command -v systemd-analyze >/dev/null 2>&1; then
    [[ "$(id -u)" -eq 0 ]] || die "systemd-analyze is missing: apt-get install systemd"
    log "installing systemd-analyze (package systemd) from Debian"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends systemd >/dev/null 2>&1 || {
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends systemd >/dev/null
    }
fi

[[ -d tests/unit ]] || die "tests/unit is missing: the unit suite must exist"
export PYTHONPATH="${CI_ROOT}/.collections${PYTHONPATH:+:${PYTHONPATH}}"
export PYTHONDONTWRITEBYTECODE=1

read -r -a extra <<<"${PYTEST_ARGS:-}"
rc=0
python -m pytest -p no:cacheprovider -ra --junitxml="${CI_OUT}/unit-junit.xml" \
    tests/unit ${extra[@]+"${extra[@]}"} || rc=$?
case "${rc}" in
0) ;;
5) die "pytest collected no test under tests/unit (exit 5): the unit suite must not be empty" ;;
*) die "unit tests failed (pytest exit ${rc})" ;;
esac
