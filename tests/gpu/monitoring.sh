#!/usr/bin/env bash
# The llm_monitoring role's GPU path on a real GPU host (see tests/gpu/README.md,
# "Monitoring"). The lent GPU hosts have neither systemd nor Ansible, so the
# role's pieces run by hand, each as the role runs it:
#   - the GPU collector: the collection's module_utils _fs.py, proc.py,
#     nvidia.py and gpu_metrics.py (the role's llm_monitoring_collector_modules) under
#     $STATE/lib, run as the role's llm-gpu-metrics command runs it
#     (gpu_metrics.main --output <textfile dir>/llm_gpu.prom --timeout 20),
#     every 10 s in a loop where the role has a systemd timer;
#   - Debian's prometheus-node-exporter with its textfile collector on that
#     directory (the role's arguments);
#   - Debian's Prometheus with the prometheus.yml that _monitoring.plan
#     writes for this host and the collection's rule files (made by
#     `bundle` on the controller);
#   - after the first scrape, a torch process holding 2 GB of GPU 0: a
#     process that is no service's, which LLMGPUForeignMemory must report
#     after its 2 minutes.
#
#   tests/gpu/monitoring.sh bundle DIR   (controller) DIR gets the two .deb
#                                        files from .cache/monitoring/debs,
#                                        prometheus.yml and the rule files
#   tests/gpu/monitoring.sh run DIR OUT  (GPU host) run it all; OUT gets the
#                                        collector's output, the raw
#                                        nvidia-smi answers and Prometheus's
#                                        answers (summary.json)
# Ports (loopback): Prometheus 19090, node-exporter 19100.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MODULES=(_fs.py proc.py nvidia.py gpu_metrics.py)

bundle() {
    local dir=$1
    mkdir -p "$dir"
    cp "$ROOT"/.cache/monitoring/debs/prometheus_*.deb "$ROOT"/.cache/monitoring/debs/prometheus-node-exporter_*.deb "$dir/"
    cp "$ROOT/roles/llm_monitoring/files/llm-stack.rules.yml" "$dir/"
    PYTHONPATH="$ROOT/.collections" "${CI_PYTHON:-$ROOT/.venv/bin/python}" - "$dir" <<'PY'
import sys
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _monitoring as M
hosts = {"gpu-host": {"services": [], "router": None,
                      "exporter": {"address": "127.0.0.1", "port": 19100, "ansible_host": ""}}}
settings = {"port": 19090, "listen_address": "127.0.0.1", "scrape_interval": "5s", "evaluation_interval": "5s",
            "retention": "1d", "ttft_p95_target": 2.0, "ttft_p95_targets": {}, "rules_dir": "RULES_DIR",
            "host": "gpu-host"}
planned = M.plan(hosts, settings)
assert not planned["errors"], planned["errors"]
open(sys.argv[1] + "/prometheus.yml", "w").write(planned["config"])
open(sys.argv[1] + "/llm-stack-targets.rules.yml", "w").write(planned["targets_rules"])
PY
    ls -la "$dir"
}

run() {
    local dir=$1 out=$2 state=${GPU_STATE:-/var/tmp/gpufleet-monitoring}
    mkdir -p "$out"
    rm -rf "$state" && mkdir -p "$state/root" "$state/textfile" "$state/rules" "$state/lib/ansible_collections/gpufleet/llm_stack/plugins/module_utils"
    for deb in "$dir"/*.deb; do dpkg-deb -x "$deb" "$state/root"; done
    for module in "${MODULES[@]}"; do
        cp "$ROOT/plugins/module_utils/$module" "$state/lib/ansible_collections/gpufleet/llm_stack/plugins/module_utils/"
    done
    cp "$dir"/*.rules.yml "$state/rules/"
    sed "s|RULES_DIR|$state/rules|" "$dir/prometheus.yml" > "$state/prometheus.yml"
    local bin=$state/root/usr/bin
    "$bin/promtool" check config "$state/prometheus.yml" > "$out/promtool-check.txt" 2>&1
    # The raw answers of the collector's queries (parser fixtures).
    local fields=index,uuid,pci.bus_id,name,temperature.gpu,utilization.gpu,memory.used,memory.total,power.draw,ecc.errors.uncorrected.volatile.total,ecc.errors.corrected.volatile.total
    nvidia-smi --query-gpu=$fields --format=csv,noheader,nounits > "$out/metrics-idle.csv"
    nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory --format=csv,noheader,nounits > "$out/compute-apps-idle.csv"
    collect() {
        PYTHONPATH="$state/lib" python3 -c 'import sys
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.gpu_metrics import main
sys.exit(main(sys.argv[1:]))' --output "$state/textfile/llm_gpu.prom" --timeout 20
    }
    collect && cp "$state/textfile/llm_gpu.prom" "$out/llm_gpu-idle.prom"
    (while true; do collect; sleep 10; done) > "$out/collector-loop.log" 2>&1 &
    loop=$!
    "$bin/prometheus-node-exporter" --web.listen-address=127.0.0.1:19100 \
        --collector.textfile.directory="$state/textfile" > "$out/node-exporter.log" 2>&1 &
    exporter=$!
    "$bin/prometheus" --config.file="$state/prometheus.yml" --web.listen-address=127.0.0.1:19090 \
        --storage.tsdb.path="$state/data" > "$out/prometheus.log" 2>&1 &
    prom=$!
    trap 'kill "${loop:-}" "${exporter:-}" "${prom:-}" "${holder:-}" 2>/dev/null || true' EXIT
    local python=${GPU_TORCH_PYTHON:-python3}
    [[ -x /opt/torch/.venv/bin/python ]] && python=${GPU_TORCH_PYTHON:-/opt/torch/.venv/bin/python}
    sleep 15
    "$python" -c 'import time, torch
x = torch.ones(2 * 1024 ** 3, dtype=torch.uint8, device="cuda")
print("holding", x.numel(), flush=True)
time.sleep(600)' > "$out/holder.log" 2>&1 &
    holder=$!
    sleep 20
    nvidia-smi --query-gpu=$fields --format=csv,noheader,nounits > "$out/metrics-busy.csv"
    nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory --format=csv,noheader,nounits > "$out/compute-apps-busy.csv"
    cat "/proc/$holder/cgroup" > "$out/holder-cgroup.txt" 2>&1 || true
    collect && cp "$state/textfile/llm_gpu.prom" "$out/llm_gpu-busy.prom"
    "$bin/promtool" check metrics < "$out/llm_gpu-busy.prom" > "$out/promtool-metrics.txt" 2>&1
    echo "promtool check metrics rc=$?" >> "$out/promtool-metrics.txt"
    # LLMGPUForeignMemory is pending for 2 minutes, then fires.
    local waited=0
    while (( waited < 200 )); do
        if curl -s --noproxy '*' "http://127.0.0.1:19090/api/v1/alerts" | grep -q '"LLMGPUForeignMemory".*"firing"\|"state":"firing"'; then
            break
        fi
        sleep 5; waited=$((waited + 5))
    done
    python3 - "$out" <<'PY'
import json, sys, urllib.parse, urllib.request
out = sys.argv[1]
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
def get(path):
    return json.loads(opener.open("http://127.0.0.1:19090" + path, timeout=10).read().decode())
summary = {"targets": [{k: t.get(k) for k in ("labels", "health", "lastError", "lastScrape")}
                       for t in get("/api/v1/targets")["data"]["activeTargets"]]}
for expr in ("llm_gpu_info", "llm_gpu_collector_up", "llm_gpu_memory_used_bytes", "llm_gpu_memory_total_bytes",
             "llm_gpu_temperature_celsius", "llm_gpu_power_watts", "llm_gpu_utilization_ratio",
             "llm_gpu_ecc_uncorrected_errors", "llm_gpu_process_memory_bytes", "llm_gpu_foreign_memory_bytes",
             "llm_gpu_xid_errors_total", "time() - llm_gpu_collector_last_run_timestamp_seconds"):
    summary[expr] = get("/api/v1/query?query=" + urllib.parse.quote(expr))["data"]["result"]
summary["alerts"] = get("/api/v1/alerts")["data"]["alerts"]
json.dump(summary, open(out + "/summary.json", "w"), indent=1, sort_keys=True)
firing = [a["labels"]["alertname"] for a in summary["alerts"] if a["state"] == "firing"]
print("targets:", [(t["labels"]["job"], t["health"]) for t in summary["targets"]])
print("foreign bytes:", [(r["metric"].get("gpu"), r["value"][1]) for r in summary["llm_gpu_foreign_memory_bytes"]])
print("processes:", [(r["metric"], r["value"][1]) for r in summary["llm_gpu_process_memory_bytes"]])
print("alerts firing:", firing)
PY
    echo "waited for the alert: ${waited}s"
}

case "${1:-}" in
bundle) bundle "${2:?DIR}" ;;
run) run "${2:?DIR}" "${3:?OUT}" ;;
*) echo "usage: $0 bundle DIR | run DIR OUT" >&2; exit 2 ;;
esac
