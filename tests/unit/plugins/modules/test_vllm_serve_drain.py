# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vllm_serve_drain driven through AnsibleModule, against a STAND-IN HTTP server (http.server on 127.0.0.1, a free
port) that answers GET /metrics with the REAL captures of vLLM 0.20.2 on an H200 (tests/fixtures/vllm_serve/README.md:
idle.txt, load.txt), one after the other as a test lists them; it may ask for the API key (401 without it).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import socket
import threading

import pytest

from ansible.module_utils.six.moves.BaseHTTPServer import BaseHTTPRequestHandler, HTTPServer

from ansible_collections.gpufleet.llm_stack.plugins.modules import vllm_serve_drain

KEY = "sk-stand-in-drain-0123456789"
HERE = os.path.dirname(os.path.abspath(__file__))
CAPTURES = os.path.join(HERE, "..", "..", "..", "fixtures", "vllm_serve", "metrics-0.20.2-h200")


def capture(name):
    with open(os.path.join(CAPTURES, name), "rb") as handle:
        return handle.read()


class Metrics(BaseHTTPRequestHandler):
    """GET /metrics: the next capture of `sequence` (the last one again at the end); 401 without the key when
    `need_key` is set; every request's path and Authorization header are recorded in `seen`."""

    sequence = []
    need_key = False
    seen = []

    def log_message(self, *args):
        pass

    def do_GET(self):  # noqa: N802 - http.server's name
        self.seen.append((self.path, self.headers.get("Authorization")))
        if self.path != "/metrics":
            return self._send(404, b"not found")
        if self.need_key and self.headers.get("Authorization") != "Bearer %s" % KEY:
            return self._send(401, b'{"error": "Unauthorized"}')
        served = sum(1 for path, dummy in self.seen if path == "/metrics") - 1
        if self.need_key:
            served = sum(1 for path, auth in self.seen if path == "/metrics" and auth) - 1
        return self._send(200, capture(self.sequence[min(served, len(self.sequence) - 1)]))

    def _send(self, status, body):
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server():
    """A stand-in on 127.0.0.1 (test only); yields (url, handler class)."""
    Metrics.sequence, Metrics.need_key, Metrics.seen = ["idle.txt"], False, []
    httpd = HTTPServer(("127.0.0.1", 0), Metrics)
    thread = threading.Thread(target=httpd.serve_forever)
    thread.daemon = True
    thread.start()
    yield "http://127.0.0.1:%d" % httpd.server_address[1], Metrics
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def key_file(tmp_path):
    path = tmp_path / "vllm-chat.env"
    path.write_text("HF_HUB_OFFLINE='1'\nVLLM_API_KEY='%s'\n" % KEY)
    os.chmod(str(path), 0o600)
    return str(path)


def args(url, **over):
    found = {"url": url, "timeout": 10, "poll": 0.05, "settle": 3}
    found.update(over)
    return found


def test_busy_then_idle_after_settle_polls(run_module, server):
    url, handler = server
    handler.sequence = ["load.txt", "load.txt", "idle.txt", "load.txt", "idle.txt", "idle.txt", "idle.txt"]
    kind, result, warnings = run_module(vllm_serve_drain.main, args(url + "/"))
    assert kind == "exit" and result["idle"] and not result["timed_out"] and not result["changed"]
    assert result["polls"] == 7 and warnings == []
    assert result["last"] == {"running": 0.0, "waiting": 0.0, "problem": ""} and result["note"] == ""
    assert [path for path, dummy in handler.seen] == ["/metrics"] * 7
    # The key is never sent where /metrics did not ask for it.
    assert all(auth is None for dummy, auth in handler.seen)
    assert result["summary"].startswith("%s/ idle after " % url)


def test_still_busy_at_the_timeout_warns_or_fails(run_module, server):
    url, handler = server
    handler.sequence = ["load.txt"]
    kind, result, warnings = run_module(vllm_serve_drain.main, args(url, timeout=0.3, _ansible_check_mode=True))
    assert kind == "exit" and not result["idle"] and result["timed_out"]
    assert result["last"] == {"running": 8.0, "waiting": 4.0, "problem": ""} and result["polls"] >= 2
    assert len(warnings) == 1 and "not idle after" in warnings[0] and "running 8, waiting 4" in warnings[0]
    assert result["waited"] <= 0.3 + 1.0
    kind, result, dummy = run_module(vllm_serve_drain.main, args(url, timeout=0.2, fail_on_timeout=True))
    assert kind == "fail" and result["timed_out"] and "running 8, waiting 4" in result["msg"]


def test_401_then_the_key_from_the_file(run_module, server, key_file):
    url, handler = server
    handler.need_key = True
    handler.sequence = ["load.txt", "idle.txt"]
    kind, result, dummy = run_module(vllm_serve_drain.main, args(url, key_file=key_file, settle=2))
    assert kind == "exit" and result["idle"] and result["polls"] == 3
    # Asked without the key first; with it after the 401, and from then on.
    assert handler.seen == [("/metrics", None)] + [("/metrics", "Bearer %s" % KEY)] * 3
    assert KEY not in json.dumps(result)


def test_401_without_a_key_or_with_a_wrong_one_fails_at_once(run_module, server, tmp_path):
    url, handler = server
    handler.need_key = True
    kind, result, dummy = run_module(vllm_serve_drain.main, args(url, timeout=60))
    assert kind == "fail" and "no key_file is given" in result["msg"] and result["polls"] == 1
    kind, result, dummy = run_module(vllm_serve_drain.main, args(url, timeout=60, key_file=str(tmp_path / "none")))
    assert kind == "fail" and "cannot be read from" in result["msg"] and result["waited"] < 30
    wrong = tmp_path / "wrong.env"
    wrong.write_text("VLLM_API_KEY=sk-not-it\n")
    kind, result, dummy = run_module(vllm_serve_drain.main, args(url, timeout=60, key_file=str(wrong)))
    assert kind == "fail" and "refused the API key of %s (401)" % wrong in result["msg"] and not result["idle"]
    assert "sk-not-it" not in json.dumps(result)


def test_connection_refused_is_idle_with_a_note(run_module):
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    kind, result, warnings = run_module(vllm_serve_drain.main, args("http://127.0.0.1:%d" % port, settle=2))
    assert kind == "exit" and result["idle"] and result["polls"] == 2 and warnings == []
    assert "connection refused" in result["note"] and result["last"]["problem"] == ""


def test_not_vllm_metrics_is_not_idle(run_module, server):
    url, dummy = server
    kind, result, dummy = run_module(vllm_serve_drain.main, args(url + "/nothing", timeout=0.2))
    assert kind == "exit" and not result["idle"] and result["timed_out"]
    assert result["last"]["problem"] == "GET /metrics answered 404: Not Found"


@pytest.mark.parametrize("over,message", [
    ({"poll": 0}, "poll must be more than 0"),
    ({"settle": 0}, "settle at least 1"),
    ({"url": "127.0.0.1:8000"}, "url must be an http"),
])
def test_bad_arguments(run_module, over, message):
    kind, result, dummy = run_module(vllm_serve_drain.main, dict(args("http://127.0.0.1:9"), **over))
    assert kind == "fail" and message in result["msg"]
