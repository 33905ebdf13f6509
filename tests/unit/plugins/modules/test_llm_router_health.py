# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""llm_router_health and llm_router_debs driven through AnsibleModule.

The gate runs against a STAND-IN for the router (http.server on 127.0.0.1, a free port), labelled as such: it
answers /v1/models from one of two "servers" in turn, as HAProxy's be_any does, and completions per model, with the
client key or 401. The real HAProxy was checked by hand and is exercised by the router's molecule scenario.
dpkg-deb and dpkg-query are small scripts on PATH.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import threading

import pytest

from ansible.module_utils.six.moves.BaseHTTPServer import BaseHTTPRequestHandler, HTTPServer

from ansible_collections.gpufleet.llm_stack.plugins.modules import llm_router_debs, llm_router_health

KEY = "sk-router-client-0123"


class StandIn(BaseHTTPRequestHandler):
    """The router: be_any's servers answer /v1/models in turn; a POST goes by its model."""

    turn = [0]
    served = [["qwen3-chat"], ["qwen3-embed"]]
    broken = set()

    def log_message(self, *args):
        pass

    def _send(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.headers.get("Authorization") != "Bearer %s" % KEY:
            return self._send(401, {"error": "Unauthorized"})
        models = self.served[self.turn[0] % len(self.served)]
        self.turn[0] += 1
        return self._send(200, {"object": "list", "data": [{"id": name} for name in models]})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        if self.headers.get("Authorization") != "Bearer %s" % KEY:
            return self._send(401, {"error": "Unauthorized"})
        if body["model"] in self.broken:
            return self._send(503, {"error": "no server"})
        return self._send(200, {"choices": [{"text": "ok"}], "usage": {"completion_tokens": 1}})


@pytest.fixture
def router():
    server = HTTPServer(("127.0.0.1", 0), StandIn)
    thread = threading.Thread(target=server.serve_forever)
    thread.daemon = True
    thread.start()
    StandIn.broken = set()
    yield "http://127.0.0.1:%d" % server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture
def key_file(tmp_path):
    path = tmp_path / "api_keys.lst"
    path.write_text("# managed\nBearer %s\nBearer sk-other\n" % KEY)
    return str(path)


def args(url, key_file, **more):
    found = {"url": url, "models": ["qwen3-chat", "qwen3-embed"], "key_file": key_file, "timeout": 2, "poll": 1,
             "probes": 2}
    found.update(more)
    return found


def test_the_gate_passes_on_the_union_of_the_answers(run_module, router, key_file):
    kind, result, dummy = run_module(llm_router_health.main, args(router, key_file))
    assert kind == "exit" and result["ok"] is True, result
    assert set(result["checks"]) == {"models", "completion qwen3-chat", "completion qwen3-embed", "unauthenticated"}
    assert KEY not in json.dumps(result)


def test_one_probe_sees_one_server_and_fails_naming_the_model(run_module, router, key_file):
    kind, result, dummy = run_module(llm_router_health.main, args(router, key_file, probes=1, timeout=1))
    assert kind == "fail" and "not listed" in result["msg"]


def test_a_model_without_a_server_fails(run_module, router, key_file):
    StandIn.broken = {"qwen3-embed"}
    kind, result, dummy = run_module(llm_router_health.main, args(router, key_file, timeout=1))
    assert kind == "fail" and result["checks"]["completion qwen3-embed"]["detail"].endswith("503")
    assert "completion qwen3-embed" in result["msg"] and KEY not in json.dumps(result)


def test_no_key_in_the_file(run_module, router, tmp_path):
    empty = tmp_path / "keys"
    empty.write_text("# nothing\n")
    kind, result, dummy = run_module(llm_router_health.main, args(router, str(empty)))
    assert kind == "fail" and "llm_router_api_keys" in result["msg"]


@pytest.fixture
def dpkg(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "dpkg-deb").write_text('#!/bin/sh\ncase "$2" in *haproxy*) printf "Package: haproxy\\nVersion: 2.6.12-1\\n";;'
                                     ' *) printf "Package: liblua5.3-0\\nVersion: 5.3.6-2\\n";; esac\n')
    (bindir / "dpkg-query").write_text('#!/bin/sh\n[ -f "%s" ] || exit 1\nprintf "install ok installed|%%s" "$(cat %s)"\n'
                                       % (tmp_path / "installed", tmp_path / "installed"))
    for name in ("dpkg-deb", "dpkg-query"):
        os.chmod(str(bindir / name), 0o755)
    monkeypatch.setenv("PATH", os.pathsep.join([str(bindir), "/usr/bin", "/bin"]))
    return tmp_path


def test_debs_to_install_when_haproxy_is_missing_or_another_version(run_module, dpkg):
    debs = ["/d/haproxy_2.6.12-1_amd64.deb", "/d/liblua5.3-0_5.3.6-2_amd64.deb"]
    kind, result, dummy = run_module(llm_router_debs.main, {"debs": debs, "packages": ["haproxy"]})
    assert kind == "exit" and result["install"] == debs and result["changed"] is False
    (dpkg / "installed").write_text("2.6.12-0")
    kind, result, dummy = run_module(llm_router_debs.main, {"debs": debs, "packages": ["haproxy"]})
    assert result["install"] == debs and result["stale"] == ["haproxy"]
    (dpkg / "installed").write_text("2.6.12-1")
    kind, result, dummy = run_module(llm_router_debs.main, {"debs": debs, "packages": ["haproxy"]})
    assert kind == "exit" and result["install"] == []
    kind, result, dummy = run_module(llm_router_debs.main, {"debs": debs, "packages": ["haproxy", "supervisor"]})
    assert kind == "fail" and "llm_router_debs" in result["msg"]
    kind, result, dummy = run_module(llm_router_debs.main, {"debs": [], "packages": ["haproxy"],
                                                            "_ansible_check_mode": True})
    assert kind == "exit" and result["install"] == []
