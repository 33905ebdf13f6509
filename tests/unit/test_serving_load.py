# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bounded load of the serving scenarios (tests/serving/load.py), against a STAND-IN OpenAI server (http.server
on 127.0.0.1, a free port) that answers POST /v1/completions, fails every fifth request with 503 and names one of two
backends in X-Served-By."""
from __future__ import absolute_import, division, print_function

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
SCRIPT = os.path.join(REPO, "tests", "serving", "load.py")
sys.path.insert(0, os.path.dirname(SCRIPT))
import load as L  # noqa: E402  pylint: disable=wrong-import-position

KEY = "sk-load-stand-in-0123"


class StandIn(BaseHTTPRequestHandler):
    """POST /v1/completions: 401 without the key; every fifth request (by arrival) 503; X-Served-By be-a / be-b.
    `stop_after` creates `stop_file` once that many requests arrived; `delay` slows every answer."""

    lock = threading.Lock()
    count = 0
    bodies = []
    stop_after = 0
    stop_file = None
    delay = 0.0
    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        with self.lock:
            StandIn.count += 1
            number = StandIn.count
            StandIn.bodies.append((self.path, body, self.headers.get("Authorization")))
            if self.stop_after and number == self.stop_after:
                open(self.stop_file, "w").close()
        if self.delay:
            time.sleep(self.delay)
        if self.headers.get("Authorization") != "Bearer %s" % KEY:
            return self._send(401, {"error": "Unauthorized"}, None)
        if number % 5 == 0:
            return self._send(503, {"error": "no server available"}, None)
        return self._send(200, {"choices": [{"text": " hi"}]}, "be-a" if number % 2 else "be-b")

    def _send(self, status, body, backend):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if backend:
            self.send_header("X-Served-By", backend)
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def stand_in(tmp_path):
    StandIn.count, StandIn.bodies, StandIn.stop_after, StandIn.delay = 0, [], 0, 0.0
    StandIn.stop_file = str(tmp_path / "stop")
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever)
    thread.daemon = True
    thread.start()
    yield "http://127.0.0.1:%d" % server.server_address[1], StandIn
    server.shutdown()
    server.server_close()


@pytest.fixture
def files(tmp_path, monkeypatch):
    """The key file (an environment file, as the role writes), the stop file and the counts file."""
    key = tmp_path / "client.env"
    key.write_text("HF_HUB_OFFLINE='1'\nVLLM_API_KEY='%s'\n" % KEY)
    # main() in this process: pytest's own signal handlers stay.
    monkeypatch.setattr(L.signal, "signal", lambda *args: None)
    return {"key": str(key), "stop": str(tmp_path / "stop"), "out": str(tmp_path / "out" / "load.json"),
            "pid": str(tmp_path / "load.pid"), "dir": tmp_path}


def argv(url, files, *more):
    (files["dir"] / "out").mkdir(exist_ok=True)
    return ["--url", url, "--model", "tiny", "--key-file", files["key"], "--out", files["out"],
            "--stop-file", files["stop"]] + list(more)


def counts(files):
    with open(files["out"]) as handle:
        return json.load(handle)


def test_max_requests_and_the_counts(stand_in, files, capsys):
    url, server = stand_in
    assert L.main(argv(url, files, "--max-requests", "40", "--min-requests", "0")) == 0
    found = counts(files)
    assert (found["total"], found["ok"], found["failed"]) == (40, 32, 8)
    assert found["statuses"] == {"200": 32, "503": 8} and found["stopped_by"] == "max-requests"
    assert [failure["status"] for failure in found["first_failures"]] == [503] * 8
    assert all(failure["error"] == '{"error": "no server available"}' for failure in found["first_failures"])
    assert found["by_backend"] == {"be-a": {"total": 16, "ok": 16, "failed": 0},
                                   "be-b": {"total": 16, "ok": 16, "failed": 0}}
    assert found["latency"]["ok"]["count"] == 32 and found["latency"]["all"]["count"] == 40
    assert 0 <= found["latency"]["ok"]["p50"] <= found["latency"]["ok"]["p95"] <= found["latency"]["ok"]["max"]
    assert found["in_flight"] == 0 and found["workers"] == 4 and found["stop_seen_after"] is None
    # Every request: the completion body, the key from the env file.
    assert server.count == 40
    assert all(path == "/v1/completions" and auth == "Bearer %s" % KEY and
               body == {"model": "tiny", "prompt": L.parse(["--url", "u", "--model", "m", "--out", "o"]).prompt,
                        "max_tokens": 8}
               for path, body, auth in server.bodies)
    out = capsys.readouterr().out
    assert out.startswith("load: 40 requests, 32 ok, 8 failed, statuses {\"200\": 32, \"503\": 8}")
    assert KEY not in out and KEY not in json.dumps(found)
    assert os.listdir(os.path.dirname(files["out"])) == ["load.json"]


def test_min_requests_are_honoured_after_the_stop_file(stand_in, files):
    url, dummy = stand_in
    open(files["stop"], "w").close()  # there from the start
    L.main(argv(url, files, "--min-requests", "30", "--workers", "3"))
    found = counts(files)
    assert found["total"] == 30 and found["stopped_by"] == "stop-file"
    assert found["stop_seen_after"] is not None and found["total_at_stop"] == 0
    assert found["failed"] == 6 and found["statuses"] == {"200": 24, "503": 6}


def test_the_stop_file_ends_the_run_once_min_requests_completed(stand_in, files):
    url, server = stand_in
    server.stop_after = 50
    L.main(argv(url, files, "--min-requests", "10", "--workers", "4"))
    found = counts(files)
    assert found["stopped_by"] == "stop-file"
    # Those already on their way when the stop file appeared complete too: at most one more per worker.
    assert 50 <= found["total"] <= 50 + 4 and found["total_at_stop"] <= found["total"]


def test_max_requests_bounds_min_requests(stand_in, files):
    url, dummy = stand_in
    open(files["stop"], "w").close()
    L.main(argv(url, files, "--min-requests", "500", "--max-requests", "12"))
    found = counts(files)
    assert found["total"] == 12 and found["stopped_by"] == "max-requests"


def test_max_seconds(stand_in, files):
    url, server = stand_in
    server.delay = 0.05
    began = time.monotonic()
    L.main(argv(url, files, "--max-seconds", "0.5", "--workers", "2"))
    found = counts(files)
    assert found["stopped_by"] == "max-seconds" and 2 <= found["total"] < 200
    assert time.monotonic() - began < 5


def test_no_answer_counts_as_failed(files):
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    L.main(argv("http://127.0.0.1:%d" % port, files, "--max-requests", "25", "--min-requests", "0", "--api", "chat"))
    found = counts(files)
    assert (found["total"], found["ok"], found["failed"]) == (25, 0, 25)
    assert found["statuses"] == {"error": 25} and len(found["first_failures"]) == 20
    assert found["first_failures"][0]["status"] is None
    assert "Connection refused" in found["first_failures"][0]["error"]
    assert "by_backend" not in found and found["latency"]["ok"] == {"count": 0, "p50": None, "p95": None, "max": None}
    assert found["url"] == "http://127.0.0.1:%d/v1/chat/completions" % port


def test_chat_body_and_a_key_that_is_the_whole_file(stand_in, files):
    url, server = stand_in
    with open(files["key"], "w") as handle:
        handle.write(KEY + "\n")
    L.main(argv(url + "/v1/chat/completions", files, "--api", "chat", "--max-requests", "3", "--min-requests", "0",
                "--max-tokens", "2"))
    assert counts(files)["ok"] == 3
    path, body, auth = server.bodies[0]
    assert path == "/v1/chat/completions" and auth == "Bearer %s" % KEY
    assert body["messages"][0]["role"] == "user" and body["max_tokens"] == 2


def test_an_unreadable_key_file(files, tmp_path):
    assert L.main(argv("http://127.0.0.1:9", files, "--key-file", str(tmp_path / "none"))) == 2
    found = counts(files)
    assert "cannot read the key file" in found["error"] and found["total"] == 0


def test_percentile():
    assert L.percentile([], 0.5) is None
    assert L.percentile([3, 1, 2, 4], 0.5) == 2 and L.percentile([3, 1, 2, 4], 0.95) == 4
    assert L.percentile(list(range(1, 101)), 0.95) == 95


def wait_for(path, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if os.path.exists(path):
            return True
        time.sleep(0.05)
    return False


def test_daemon_runs_detached_and_stops_on_the_stop_file(stand_in, files):
    url, server = stand_in
    server.delay = 0.01
    log = str(files["dir"] / "load.log")
    command = [sys.executable, SCRIPT] + argv(url, files, "--min-requests", "20", "--daemon", "--pid-file",
                                              files["pid"], "--log", log)
    done = subprocess.run(command, stdout=subprocess.PIPE, timeout=60, check=True)
    with open(files["pid"]) as handle:
        pid = int(handle.read())
    assert done.stdout.decode().strip() == "load: running in the background, pid %d" % pid
    assert pid != os.getpid() and not os.path.exists(files["out"])
    open(files["stop"], "w").close()
    assert wait_for(files["out"])
    found = counts(files)
    assert found["stopped_by"] == "stop-file" and found["total"] >= 20
    assert wait_for_gone(files["pid"])
    with open(log) as handle:
        assert handle.read().startswith("load: %d requests" % found["total"])


def wait_for_gone(path, seconds=10):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and os.path.exists(path):
        time.sleep(0.05)
    return not os.path.exists(path)


def test_sigterm_writes_the_counts(stand_in, files):
    url, server = stand_in
    server.delay = 0.2
    child = subprocess.Popen([sys.executable, SCRIPT] + argv(url, files, "--pid-file", files["pid"]),
                             stdout=subprocess.PIPE)
    try:
        assert wait_for(files["pid"])
        deadline = time.monotonic() + 20
        while server.count < 8 and time.monotonic() < deadline:
            time.sleep(0.05)
        child.send_signal(signal.SIGTERM)
        out = child.communicate(timeout=20)[0].decode()
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0
    found = counts(files)
    assert found["stopped_by"] == "signal" and found["total"] <= server.count and 0 <= found["in_flight"] <= 4
    assert out.startswith("load: ") and not os.path.exists(files["pid"])
