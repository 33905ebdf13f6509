# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""llm_monitoring_targets driven through AnsibleModule, against a STAND-IN for Prometheus (http.server on 127.0.0.1,
a free port), labelled as such: /-/ready answers as configured, /api/v1/targets with a real answer of Prometheus 2.42
(tests/fixtures/gpu_metrics/prometheus-targets.json: one node-exporter up, one down). The real Prometheus is exercised
by the serving_fleet scenario."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import threading

import pytest

from ansible.module_utils.six.moves.BaseHTTPServer import BaseHTTPRequestHandler, HTTPServer

from ansible_collections.gpufleet.llm_stack.plugins.modules import llm_monitoring_targets

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "fixtures", "gpu_metrics",
                       "prometheus-targets.json")
with open(FIXTURE, encoding="utf-8") as handle:
    TARGETS = handle.read()
UP = "127.0.0.1:39100"
DOWN = "127.0.0.1:39101"


class StandIn(BaseHTTPRequestHandler):
    ready = [True]

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path == "/-/ready":
            status, body = (200, "Prometheus Server is Ready.\n") if self.ready[0] else (503, "Service Unavailable")
        elif self.path.startswith("/api/v1/targets"):
            status, body = 200, TARGETS
        else:
            status, body = 404, "not found"
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def prometheus():
    server = HTTPServer(("127.0.0.1", 0), StandIn)
    thread = threading.Thread(target=server.serve_forever)
    thread.daemon = True
    thread.start()
    StandIn.ready = [True]
    yield "http://127.0.0.1:%d" % server.server_address[1]
    server.shutdown()
    server.server_close()


def test_every_expected_target_up(run_module, prometheus):
    kind, result, dummy = run_module(llm_monitoring_targets.main,
                                     {"url": prometheus + "/", "expected": {"node": [UP]}, "timeout": 2, "poll": 1})
    assert kind == "exit" and result["ok"] is True and result["problems"] == [], result
    assert result["changed"] is False
    assert [(t["job"], t["instance"], t["health"]) for t in result["targets"]] == [
        ("node", UP, "up"), ("node", DOWN, "down"), ("prometheus", "127.0.0.1:39090", "up")]


def test_a_target_down_fails_naming_it_and_why(run_module, prometheus):
    kind, result, dummy = run_module(llm_monitoring_targets.main,
                                     {"url": prometheus, "expected": {"node": [UP, DOWN]}, "timeout": 1, "poll": 1})
    assert kind == "fail" and result["ok"] is False
    assert "node %s: down (Get " % DOWN in result["msg"] and "connection refused" in result["msg"]


def test_a_target_down_is_reported_only_when_not_required(run_module, prometheus):
    kind, result, dummy = run_module(llm_monitoring_targets.main,
                                     {"url": prometheus, "expected": {"node": [DOWN], "vllm": ["10.0.0.1:8000"]},
                                      "require_up": False, "timeout": 1, "poll": 1})
    assert kind == "exit" and result["ok"] is False
    assert result["problems"][1] == "vllm 10.0.0.1:8000: not a target of Prometheus yet"


def test_prometheus_not_ready_fails_even_when_not_required(run_module, prometheus):
    StandIn.ready = [False]
    kind, result, dummy = run_module(llm_monitoring_targets.main,
                                     {"url": prometheus, "expected": {}, "require_up": False, "timeout": 1, "poll": 1})
    assert kind == "fail" and "is not ready: 503" in result["msg"]
    assert json.dumps(result["targets"]) == "[]"
