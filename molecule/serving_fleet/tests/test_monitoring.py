"""The fleet's monitoring after the model switch (CPU-only test path: Debian's Prometheus and node-exporter on test
containers, the replayed nvidia-smi of an H200 on fleet-monitor): every target scraped up, a completion counted under
its service's labels through Prometheus's HTTP API, the GPU collector's metrics, HAProxy's, and the collection's alert
rules passing promtool's checks and unit tests on the monitoring host."""

import json
import os
import time

import pytest

PROJECT = os.environ.get("MOLECULE_PROJECT_DIRECTORY", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PROM = "http://127.0.0.1:29090"
SERVICE_KEY = "test-only-key-4f1c9e2a7b"  # the scenario's test value (molecule.yml)
EXPORTERS = {"fleet-a": 29100, "fleet-b": 29101, "fleet-router": 29102, "fleet-monitor": 29103}
MIB = 1024 * 1024

ASK = r'''
import json, sys, urllib.request, urllib.error, urllib.parse
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
url, key, body = json.loads(sys.argv[1])
headers = {"Content-Type": "application/json"} if body else {}
if key:
    headers["Authorization"] = "Bearer " + key
req = urllib.request.Request(url, data=body and json.dumps(body).encode(), headers=headers)
try:
    r = opener.open(req, timeout=120)
    print(json.dumps([r.status, r.read().decode()]))
except urllib.error.HTTPError as e:
    print(json.dumps([e.code, e.read().decode()]))
'''


def _quote(text):
    return "'" + text.replace("'", "'\"'\"'") + "'"


def ask(host, url, key=None, body=None):
    return json.loads(host.check_output("python3 -c %s %s" % (_quote(ASK), _quote(json.dumps([url, key, body])))))


def query(host, promql):
    """The result vector of an instant query through Prometheus's HTTP API."""
    from urllib.parse import quote
    status, body = ask(host, "%s/api/v1/query?query=%s" % (PROM, quote(promql)))
    assert status == 200, body
    answer = json.loads(body)
    assert answer["status"] == "success", answer
    return answer["data"]["result"]


def _this(host):
    return host.backend.get_hostname()


def only(host, name):
    if _this(host) != name:
        pytest.skip("checked on %s" % name)


def test_every_host_runs_node_exporter(host):
    name = _this(host)
    assert host.service("prometheus-node-exporter").is_running
    assert host.service("prometheus-node-exporter").is_enabled
    assert host.socket("tcp://127.0.0.1:%d" % EXPORTERS[name]).is_listening
    # The GPU collector runs where there is a GPU: only the monitoring host's replayed H200 here.
    assert host.file("/etc/systemd/system/llm-gpu-metrics.timer").exists == (name == "fleet-monitor")
    if name == "fleet-monitor":
        assert host.service("llm-gpu-metrics.timer").is_enabled
        assert host.service("llm-gpu-metrics.timer").is_running


def test_every_target_is_scraped_up(host):
    only(host, "fleet-monitor")
    found = dict(((item["metric"]["job"], item["metric"]["instance"]), item) for item in query(host, "up"))
    expected = {("vllm", "127.0.0.1:28201"): ("fleet-a", "chat"), ("vllm", "127.0.0.1:28211"): ("fleet-b", "chat"),
                ("vllm-health", "127.0.0.1:28201"): ("fleet-a", "chat"),
                ("vllm-health", "127.0.0.1:28211"): ("fleet-b", "chat"),
                ("llm-router", "127.0.0.1:28290"): ("fleet-router", None),
                ("prometheus", "127.0.0.1:29090"): ("fleet-monitor", None)}
    expected.update((("node", "127.0.0.1:%d" % port), (name, None)) for name, port in EXPORTERS.items())
    assert sorted(found) == sorted(expected), "the switched fleet's targets, and no others (extra is gone)"
    for key, (host_label, service) in expected.items():
        metric = found[key]["metric"]
        assert found[key]["value"][1] == "1", (key, found[key])
        assert metric["host"] == host_label and metric.get("service") == service, metric
    assert found[("vllm", "127.0.0.1:28201")]["metric"]["served_model"] == "qwen3-chat"
    assert found[("vllm", "127.0.0.1:28201")]["metric"]["unit"] == "vllm-chat"


def _prompt_tokens(host):
    result = query(host, 'sum(vllm:prompt_tokens_total{job="vllm", host="fleet-b", service="chat"})')
    return float(result[0]["value"][1]) if result else 0.0


def test_a_completion_is_counted_under_its_services_labels(host):
    only(host, "fleet-monitor")
    before = _prompt_tokens(host)
    other = query(host, 'sum(vllm:prompt_tokens_total{job="vllm", host="fleet-a", service="chat"})')
    assert other, "fleet-a's chat has its counter too"
    status, body = ask(host, "http://127.0.0.1:28211/v1/completions", SERVICE_KEY,
                       {"model": "qwen3-chat", "prompt": "Count these prompt tokens, please", "max_tokens": 2})
    assert status == 200, body
    prompt = json.loads(body)["usage"]["prompt_tokens"]
    deadline = time.time() + 90
    after = before
    while time.time() < deadline and after < before + prompt:
        time.sleep(2)
        after = _prompt_tokens(host)
    assert after >= before + prompt, (before, after, prompt)
    # Counted for fleet-b's chat only: fleet-a's is what it was.
    again = query(host, 'sum(vllm:prompt_tokens_total{job="vllm", host="fleet-a", service="chat"})')
    assert again[0]["value"][1] == other[0]["value"][1]


def test_the_gpu_collectors_metrics(host):
    only(host, "fleet-monitor")
    info = query(host, 'llm_gpu_info{job="node", host="fleet-monitor"}')
    assert [item["metric"]["name"] for item in info] == ["NVIDIA H200"]
    assert info[0]["metric"]["gpu"] == "0" and info[0]["metric"]["uuid"].startswith("GPU-")
    for source in ("nvidia-smi", "compute-apps", "xid"):
        up = query(host, 'llm_gpu_collector_up{host="fleet-monitor", source="%s"}' % source)
        assert up and up[0]["value"][1] == "1", (source, up)
    total = query(host, 'llm_gpu_memory_total_bytes{host="fleet-monitor", gpu="0"}')
    assert float(total[0]["value"][1]) == 143771 * MIB
    assert query(host, 'llm_gpu_xid_errors_total{host="fleet-monitor", xid="none"}')[0]["value"][1] == "0"
    stale = query(host, 'time() - llm_gpu_collector_last_run_timestamp_seconds{host="fleet-monitor"}')
    assert float(stale[0]["value"][1]) < 60
    textfile = host.file("/var/lib/prometheus/node-exporter/llm_gpu.prom")
    assert textfile.exists and textfile.mode == 0o644
    assert host.run("promtool check metrics < /var/lib/prometheus/node-exporter/llm_gpu.prom").rc == 0


def test_the_routers_metrics(host):
    only(host, "fleet-monitor")
    servers = query(host, 'haproxy_server_status{job="llm-router", state="UP"} == 1')
    names = sorted(set(item["metric"]["server"] for item in servers))
    assert "fleet-a_chat" in names and "fleet-b_chat" in names, names


def test_the_rules_are_loaded_and_pass_promtools_tests(host):
    only(host, "fleet-monitor")
    status, body = ask(host, PROM + "/api/v1/rules")
    assert status == 200, body
    alerts = set(rule["name"] for group in json.loads(body)["data"]["groups"] for rule in group["rules"]
                 if rule["type"] == "alerting")
    assert {"LLMServiceDown", "LLMServiceGateFailing", "LLMKVCacheHigh", "LLMRequestsWaiting", "LLMTTFTHigh",
            "LLMGPUXidErrors", "LLMGPUForeignMemory", "LLMHostDown", "LLMRouterDown"} <= alerts
    assert not query(host, 'ALERTS{alertname=~"LLMServiceDown|LLMServiceGateFailing|LLMHostDown|LLMRouterDown"}')
    assert host.run("promtool check config /etc/prometheus/prometheus.yml").rc == 0
    # promtool test rules: the test file and the targets' rules beside the rules the role wrote.
    work = "/tmp/llm-stack-rules-test"
    host.run("rm -rf %s && mkdir -p %s/tests/monitoring %s/roles/llm_monitoring/files" % (work, work, work))
    for name in ("llm-stack.rules.test.yml", "targets.rules.yml"):
        with open(os.path.join(PROJECT, "tests", "monitoring", name), encoding="utf-8") as handle:
            host.run("cat > %s/tests/monitoring/%s <<'EOF'\n%s\nEOF" % (work, name, handle.read()))
    host.run("cp /etc/prometheus/llm-stack/llm-stack.rules.yml %s/roles/llm_monitoring/files/" % work)
    result = host.run("cd %s/tests/monitoring && promtool test rules llm-stack.rules.test.yml" % work)
    assert result.rc == 0 and "SUCCESS" in result.stdout, result.stdout + result.stderr


def test_prometheus_files(host):
    only(host, "fleet-monitor")
    config = host.file("/etc/prometheus/prometheus.yml")
    assert config.user == "root" and config.group == "prometheus" and config.mode == 0o640
    assert SERVICE_KEY not in config.content_string
    assert host.service("prometheus").is_running and host.service("prometheus").is_enabled
    assert host.socket("tcp://127.0.0.1:29090").is_listening
