#!/usr/bin/env bash
# make lint: ansible-lint over the whole repository with the production
# profile (.ansible-lint; yamllint settings from .yamllint). The changelog
# fragments are checked by changelog.sh, which `make lint` runs as well.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
use_venv
cd "${CI_ROOT}" || exit 1

ansible-lint --version
ansible-lint --profile production --offline
