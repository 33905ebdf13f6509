#!/usr/bin/env bash
# make awx: the AWX door, run by the engine AWX itself uses (ansible-runner).
# On a fresh fleet of CPU-only test hosts in containers (tests/awx/inventory,
# containers testfleet-awx-*, ports 28957-28960), tests/awx/sliced_run.py runs
# the cache host job, then the site job as 3 concurrent slices (one compile
# per build key, one upstream download per model file), then as 2 concurrent
# slices (changed=0 everywhere), each job in a private data dir laid out as
# AWX lays it out. The fleet's containers are removed at the end
# (AWX_KEEP_FLEET=1 keeps them). Output: build/awx/ (report.json, job logs).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
use_venv
cd "${CI_ROOT}" || exit 1

inventory=tests/awx/inventory
out="${CI_ROOT}/build/awx"
fixtures="${CI_ROOT}/.cache"

# The containers of this test's inventory only (never the other fleets').
awx_fleet_names() {
    ansible-inventory -i "${inventory}" --list | python -c '
import json, sys
data = json.load(sys.stdin)
for host in sorted(data.get("_meta", {}).get("hostvars", {})):
    if not host.startswith("testfleet-awx-"):
        sys.exit("host %s of the AWX test fleet must be named testfleet-awx-*" % host)
    print(host)
'
}

awx_fleet_remove() {
    local names
    names="$(awx_fleet_names)" || die "cannot read the hosts of ${inventory}"
    # shellcheck disable=SC2086 # one name per word
    docker rm -f ${names} >/dev/null 2>&1 || true
}

cleanup() {
    if [[ "${AWX_KEEP_FLEET:-0}" != 1 ]]; then
        awx_fleet_remove
        log "removed the AWX test fleet's containers"
    fi
    if [[ -x "${fixtures}/awx-model/venv/bin/python" ]]; then
        "${fixtures}/awx-model/venv/bin/python" tests/model/hub.py stop --fixture "${fixtures}/awx-model" >/dev/null || true
        "${fixtures}/awx-model/venv/bin/python" tests/awx/file_index.py stop --root "${fixtures}/awx-index" >/dev/null || true
    fi
}

engine_up || die "no Docker engine answers: run 'make engine' first"
log "a fresh fleet: ${inventory}"
awx_fleet_remove
trap cleanup EXIT
FLEET_INVENTORY="${inventory}" "${CI_ROOT}/tests/ci/fleet.sh" up

log "the controller side (runfile, wheelhouse, tiny model; stand-in hub on 28957, package index on 28960)"
ansible-playbook tests/awx/prepare.yml

# The collection as a project update installs it: built from the files git
# sees (what the project's checkout holds).
namespace="$(galaxy_field namespace)"
name="$(galaxy_field name)"
scratch="$(mktemp -d "${CI_ROOT}/build/awx-collection.XXXXXX")"
trap 'rm -rf "${scratch}"; cleanup' EXIT
export_tree "${scratch}/src"
(cd "${scratch}/src" && ansible-galaxy collection build --force --output-path "${scratch}" . >/dev/null)
tarball="$(ls "${scratch}/${namespace}-${name}-"*.tar.gz)"
log "collection ${tarball##*/}"

# The fleet cache host: group llm_cache (role fleet_cache, package index and
# mirror), its ledger of compiles under the role's data dir.
python tests/awx/sliced_run.py --tarball "${tarball}" --fixtures "${fixtures}" --out "${out}" \
    --model-fixture "${fixtures}/awx-model" "$@"
