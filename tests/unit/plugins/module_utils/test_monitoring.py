# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""_monitoring: what Prometheus scrapes from the serving hosts' contracts and the inventory, its config (parsed back as
YAML), the TTFT targets' rules (the fixture promtool's rule tests load), the settings' problems, the exporter's plan,
and the reading of Prometheus's targets API (a real answer of Prometheus 2.42, tests/fixtures/gpu_metrics)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _monitoring as M
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._serve_services import contract

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.join(HERE, "..", "..", "..", "..")
FIXTURES = os.path.join(REPO, "tests", "fixtures", "gpu_metrics")

SETTINGS = {"port": 9090, "listen_address": "0.0.0.0", "scrape_interval": "15s", "evaluation_interval": "15s",
            "retention": "15d", "ttft_p95_target": 2.0, "ttft_p95_targets": {}, "rules_dir": "/etc/prometheus/llm-stack",
            "host": "mon-1", "host_address": "10.0.0.9"}


def service(name, port, model="qwen3-chat", bind="127.0.0.1"):
    return contract({"name": name, "served_model_name": model, "model": "Qwen/Qwen3-tiny", "port": port,
                     "host": bind}, "fleet-a")


HOSTS = {
    "fleet-a": {"services": [service("chat", 28201), service("extra", 28202, "qwen3-extra")], "router": None,
                "exporter": {"address": "127.0.0.1", "port": 29100, "ansible_host": "fleet-a"}},
    "gpu-1": {"services": [contract({"name": "main", "served_model_name": "qwen", "port": 8000}, "gpu-1",
                                    ansible_host="10.0.1.5")],
              "router": None, "exporter": {"address": "", "port": 9100, "ansible_host": "10.0.1.5"}},
    "lb-1": {"services": [], "router": {"bind": "0.0.0.0", "metrics_port": 8405, "ansible_host": "10.0.0.7"},
             "exporter": None},
}


def test_targets_and_labels():
    found = M.targets(HOSTS)
    chat = {"host": "fleet-a", "service": "chat", "served_model": "qwen3-chat", "unit": "vllm-chat"}
    extra = {"host": "fleet-a", "service": "extra", "served_model": "qwen3-extra", "unit": "vllm-extra"}
    main = {"host": "gpu-1", "service": "main", "served_model": "qwen", "unit": "vllm-main"}
    assert found["vllm"] == [{"targets": ["127.0.0.1:28201"], "labels": chat},
                             {"targets": ["127.0.0.1:28202"], "labels": extra},
                             {"targets": ["10.0.1.5:8000"], "labels": main}]
    assert found["vllm-health"] == found["vllm"]
    assert found["llm-router"] == [{"targets": ["10.0.0.7:8405"], "labels": {"host": "lb-1"}}]
    assert found["node"] == [{"targets": ["127.0.0.1:29100"], "labels": {"host": "fleet-a"}},
                             {"targets": ["10.0.1.5:9100"], "labels": {"host": "gpu-1"}}]


def test_the_config_is_prometheus_yaml_with_every_job():
    planned = M.plan(HOSTS, SETTINGS)
    assert planned["errors"] == []
    config = yaml.safe_load(planned["config"])
    assert config["global"] == {"scrape_interval": "15s", "evaluation_interval": "15s"}
    assert config["rule_files"] == ["/etc/prometheus/llm-stack/llm-stack.rules.yml",
                                    "/etc/prometheus/llm-stack/llm-stack-targets.rules.yml"]
    jobs = dict((job["job_name"], job) for job in config["scrape_configs"])
    assert sorted(jobs) == ["llm-router", "node", "prometheus", "vllm", "vllm-health"]
    assert jobs["vllm-health"]["metrics_path"] == "/health" and "metrics_path" not in jobs["vllm"]
    assert jobs["prometheus"]["static_configs"] == [{"targets": ["127.0.0.1:9090"], "labels": {"host": "mon-1"}}]
    assert jobs["vllm"]["static_configs"] == M.targets(HOSTS)["vllm"]
    assert planned["url"] == "http://10.0.0.9:9090" and planned["local_url"] == "http://127.0.0.1:9090"
    assert planned["listen"] == "0.0.0.0:9090"
    assert planned["summary"]["vllm"] == ["10.0.1.5:8000", "127.0.0.1:28201", "127.0.0.1:28202"]
    # The same inventory gives the same text.
    assert M.plan(dict(reversed(list(HOSTS.items()))), SETTINGS)["config"] == planned["config"]


def test_a_job_without_targets_is_left_out():
    config = yaml.safe_load(M.plan({}, SETTINGS)["config"])
    assert [job["job_name"] for job in config["scrape_configs"]] == ["prometheus"]
    assert yaml.safe_load(M.plan({}, SETTINGS)["targets_rules"])["groups"][0]["rules"] == []


def test_the_targets_rules_are_the_fixture_promtool_tests():
    hosts = {"fleet-a": {"services": [service("chat", 28201)]}}
    text = M.targets_rules(M.targets(hosts), 2.0, {"chat": 0.5})
    with open(os.path.join(REPO, "tests", "monitoring", "targets.rules.yml"), encoding="utf-8") as handle:
        assert text == handle.read()
    rules = yaml.safe_load(M.targets_rules(M.targets(HOSTS), 2.0, {"main": 1.25}))["groups"][0]["rules"]
    assert [(rule["labels"]["service"], rule["expr"]) for rule in rules] == [
        ("chat", "vector(2.0)"), ("extra", "vector(2.0)"), ("main", "vector(1.25)")]


@pytest.mark.parametrize("change, message", [
    ({"port": 0}, "llm_monitoring_port=0 is not a whole number from 1 to 65535"),
    ({"port": True}, "llm_monitoring_port=True"),
    ({"listen_address": "1.2.3.4 5.6.7.8"}, "llm_monitoring_listen_address='1.2.3.4 5.6.7.8' is not one address"),
    ({"scrape_interval": "15"}, "llm_monitoring_scrape_interval='15' is not a Prometheus duration"),
    ({"retention": "two weeks"}, "llm_monitoring_retention='two weeks' is not a Prometheus duration. Fix: set it such"
                                 " as 15d"),
    ({"ttft_p95_target": 0}, "llm_monitoring_ttft_p95_target=0 is not a number of seconds above 0"),
    ({"ttft_p95_targets": {"chat": "fast"}}, "llm_monitoring_ttft_p95_targets['chat']='fast'"),
    ({"ttft_p95_targets": ["chat"]}, "llm_monitoring_ttft_p95_targets must be a mapping"),
])
def test_problems_name_the_variable_and_the_fix(change, message):
    errors = M.plan(HOSTS, dict(SETTINGS, **change))["errors"]
    assert len(errors) == 1 and errors[0].startswith(message) and "Fix:" in errors[0], errors


EXPORTER = {"node_exporter_address": "", "node_exporter_port": 9100, "textfile_dir": "/var/lib/prometheus/node-exporter",
            "gpu_collector": "auto", "gpu_collector_interval": 30, "gpu_collector_timeout": 20, "gpu_count": "8",
            "service_mgr": "systemd"}


def test_the_exporter_plan():
    planned = M.exporter_plan(EXPORTER)
    assert planned == {"errors": [], "collector": True, "listen": ":9100",
                       "args": "--web.listen-address=:9100 --collector.textfile.directory=/var/lib/prometheus/node-exporter"}
    assert M.exporter_plan(dict(EXPORTER, gpu_count=0))["collector"] is False
    assert M.exporter_plan(dict(EXPORTER, gpu_count=0, gpu_collector=True))["collector"] is True
    assert M.exporter_plan(dict(EXPORTER, gpu_collector="no"))["collector"] is False
    assert M.exporter_plan(dict(EXPORTER, node_exporter_address="::1"))["listen"] == "[::1]:9100"


@pytest.mark.parametrize("change, message", [
    ({"gpu_collector": "maybe"}, "llm_monitoring_gpu_collector='maybe' is not auto, true or false"),
    ({"node_exporter_port": "x"}, "llm_monitoring_node_exporter_port='x'"),
    ({"textfile_dir": "relative"}, "llm_monitoring_textfile_dir='relative' is not an absolute path"),
    ({"gpu_collector_interval": 2}, "llm_monitoring_gpu_collector_interval=2"),
    ({"gpu_collector_timeout": 60, "gpu_collector_interval": 30}, "llm_monitoring_gpu_collector_timeout=60 is too long"),
    ({"service_mgr": "sysvinit"}, "the host runs sysvinit, not systemd"),
])
def test_the_exporter_problems(change, message):
    errors = M.exporter_plan(dict(EXPORTER, **change))["errors"]
    assert len(errors) == 1 and errors[0].startswith(message) and "Fix:" in errors[0], errors


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return handle.read()


def test_read_targets_of_a_real_answer():
    found = M.read_targets(fixture("prometheus-targets.json"))
    jobs = sorted(set(item["job"] for item in found))
    assert jobs == ["node", "prometheus"]
    down = [item for item in found if item["health"] != "up"]
    assert len(down) == 1 and down[0]["job"] == "node" and "connection refused" in down[0]["last_error"]
    expected = {"node": [item["instance"] for item in found if item["job"] == "node"]}
    ok, problems = M.targets_verdict(found, expected)
    assert not ok and problems == ["node %s: down (%s)" % (down[0]["instance"], down[0]["last_error"])]
    up_only = dict(expected, node=[item["instance"] for item in found if item["job"] == "node" and item["health"] == "up"])
    assert M.targets_verdict(found, up_only) == (True, [])
    assert M.targets_verdict(found, {"vllm": ["127.0.0.1:1"]}) == (
        False, ["vllm 127.0.0.1:1: not a target of Prometheus yet"])


@pytest.mark.parametrize("body", ["", "<html>", '{"status": "error"}', "[]", '{"status": "success", "data": []}'])
def test_read_targets_refuses_what_is_not_the_api(body):
    with pytest.raises(ValueError):
        M.read_targets(body)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["port", "listen_address", "scrape_interval", "retention", "ttft_p95_target",
                                        "ttft_p95_targets"]),
                       st.one_of(st.none(), st.booleans(), st.integers(-5, 70000), st.text(max_size=20),
                                 st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2))))
def test_any_settings_give_a_plan_or_problems(change):
    planned = M.plan(HOSTS, dict(SETTINGS, **change))
    if planned["errors"]:
        assert planned["config"] == "" and all("Fix:" in error for error in planned["errors"])
    else:
        yaml.safe_load(planned["config"])
        yaml.safe_load(planned["targets_rules"])
