#!/usr/bin/env bash
# make lint: ansible-lint over the whole repository with the production
# profile (.ansible-lint; yamllint settings from .yamllint), then the role
# READMEs against their argument specs (docs.sh --check: a README whose
# generated variables section differs from what `make docs` writes fails,
# with the role named and the diff shown). The changelog fragments are
# checked by changelog.sh, which `make lint` runs as well.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
use_venv
cd "${CI_ROOT}" || exit 1

ansible-lint --version
rc=0
ansible-lint --profile production --offline || rc=$?

# Run even when ansible-lint failed, so that one run shows both.
log "role READMEs against meta/argument_specs.yml (make docs regenerates them)"
"${CI_ROOT}/tests/ci/docs.sh" --check || rc=$?
exit "${rc}"
