#!/usr/bin/env bash
# make changelog-lint: the changelog fragments and changelogs/changelog.yaml
# are valid for antsibull-changelog.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
use_venv
cd "${CI_ROOT}" || exit 1

antsibull-changelog lint
antsibull-changelog lint-changelog-yaml changelogs/changelog.yaml
count="$(find changelogs/fragments -maxdepth 1 -name '*.yml' -o -maxdepth 1 -name '*.yaml' | wc -l)"
log "changelog: config, changelog.yaml and ${count} fragment(s) are valid"
