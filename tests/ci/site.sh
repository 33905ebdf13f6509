#!/usr/bin/env bash
# make site: playbooks/site.yml on the bundled local test fleet
# (inventories/testfleet: CPU-only test hosts in containers, no GPU, no
# internet), end to end, serving included.
#   1. tests/testfleet/prepare.yml: the controller-side fixtures (once per
#      machine, built in parallel), the stand-in hub, the containers
#      (fleet.sh up), libnuma1 and the served model's stand-in on the hosts;
#   2. playbooks/site.yml with the collection's phase_times callback;
#   3. the fleet report (build/report/report.md; report.json for tools) and
#      the per-phase timing table, preparation included.
# A second `make site` changes nothing (changed=0 in the recap).
# SITE_ARGS adds options to the site run (e.g. SITE_ARGS="--tags model").
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
use_venv
cd "${CI_ROOT}" || exit 1

inventory="inventories/testfleet"
report_dir="${CI_ROOT}/build/report"
times="${report_dir}/phase-times.json"
mkdir -p "${report_dir}"
rm -f "${times}"

start="$(date +%s)"
log "preparing the test fleet (tests/testfleet/prepare.yml)"
ansible-playbook -i "${inventory}" tests/testfleet/prepare.yml
prepared="$(date +%s)"

log "running playbooks/site.yml on ${inventory}"
read -r -a extra <<<"${SITE_ARGS:-}"
rc=0
ANSIBLE_CALLBACKS_ENABLED="gpufleet.llm_stack.phase_times${ANSIBLE_CALLBACKS_ENABLED:+,${ANSIBLE_CALLBACKS_ENABLED}}" \
    LLM_STACK_PHASE_TIMES_FILE="${times}" \
    ansible-playbook -i "${inventory}" playbooks/site.yml ${extra[@]+"${extra[@]}"} || rc=$?
end="$(date +%s)"

if [[ -f "${report_dir}/report.md" && "${rc}" -eq 0 ]]; then
    printf '\n'
    cat "${report_dir}/report.md"
    printf '\n(report.json and report.md in %s)\n' "${report_dir}"
fi

printf '\n======== make site: time per phase ========\n'
PYTHONPATH="${CI_ROOT}/.collections" python - "${times}" "$((prepared - start))" "$((end - start))" <<'PY'
import json
import sys

from ansible_collections.gpufleet.llm_stack.plugins.module_utils.fleet_report import phase_table

path, prepare, total = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
rows = [("prepare (tests/testfleet)", prepare)]
try:
    with open(path) as f:
        rows += [(p["phase"], p["seconds"]) for p in json.load(f)["phases"]]
except (IOError, OSError, ValueError):
    pass
print(phase_table(rows))
print("wall clock: %.0f s" % total)
PY
exit "${rc}"
