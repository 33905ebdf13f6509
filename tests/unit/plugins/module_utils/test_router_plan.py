# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""_router_plan: the llm_router role's plan from the serving hosts' preflight facts (the llm_router_state action's
decisions), on hostvars shaped as the fleet's are."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

import pytest

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _router_plan as P

SETTINGS = {"port": 8080, "bind_address": "0.0.0.0", "socket": "/run/llm-router/admin.sock",
            "state_file": "/var/lib/llm-router/server-state", "config_dir": "/etc/llm-router",
            "request_timeout": 600, "health_check_interval": "2s", "health_check_fall": 2, "health_check_rise": 2,
            "bufsize": 65536, "api_keys": ["sk-router-1", "sk-router-2"], "backend_api_key": "sk-vllm-0123",
            "host_address": "10.0.0.9"}


def service(name, served, port, address, router=True):
    return {"name": name, "unit": "vllm-" + name, "served_model_name": served, "model": "Qwen/Qwen3-tiny",
            "port": port, "bind": "0.0.0.0", "address": address, "gpus": [0], "router": router}


HOSTVARS = {
    "gpu1": {"ansible_host": "10.0.0.1", "ansible_facts": {"llm_stack_host": {"ok": True, "services": [
        service("chat", "qwen3-chat", 28201, "10.0.0.1"), service("embed", "qwen3-embed", 28202, "10.0.0.1")]}}},
    "gpu2": {"ansible_host": "10.0.0.2", "ansible_facts": {"llm_stack_host": {"ok": True, "services": [
        service("chat", "qwen3-chat", 28201, "10.0.1.2"), service("batch", "qwen3-chat", 28203, "10.0.1.2",
                                                                  router=False)]}}},
    "gpu3": {"ansible_facts": {"llm_stack_host": {"ok": False, "services": [service("chat", "qwen3-chat", 1, "x")]}}},
    "cache": {"ansible_facts": {"llm_stack_host": {"ok": True, "services": []}}},
    "router": {"ansible_facts": {}},
}
EVERY = ["cache", "gpu1", "gpu2", "gpu3", "router"]


def test_default_hosts_are_those_with_an_ok_fact():
    assert P.default_hosts(HOSTVARS, EVERY) == ["cache", "gpu1", "gpu2"]


def test_plan_of_two_hosts():
    hosts = P.default_hosts(HOSTVARS, EVERY)
    plan = P.plan(HOSTVARS, hosts, SETTINGS)
    assert plan["errors"] == []
    assert plan["summary"] == {"qwen3-chat": ["gpu1_chat", "gpu2_chat"], "qwen3-embed": ["gpu1_embed"]}
    assert plan["models"] == ["qwen3-chat", "qwen3-embed"]
    assert plan["servers"] == ["gpu1_chat", "gpu1_embed", "gpu2_chat"]
    assert plan["skipped"] == {"cache": "no service with router true"}
    assert plan["models_map"] == "qwen3-chat be_qwen3_chat\nqwen3-embed be_qwen3_embed\n"
    text = plan["config"]
    # each server at its own service's address (gpu2's from its fact, not ansible_host)
    assert "    server gpu2_chat 10.0.1.2:28201 check" in text
    assert "    server gpu1_embed 10.0.0.1:28202 check" in text
    assert "batch" not in text
    assert "    bind 0.0.0.0:8080" in text
    assert "stats socket /run/llm-router/admin.sock mode 600 level admin" in text
    assert "-f /etc/llm-router/api_keys.lst" in text and "map_str(/etc/llm-router/models.map)" in text
    assert "default-server inter 2s fall 2 rise 2" in text
    # no secret in the config
    assert "sk-" not in text and "${LLM_ROUTER_BACKEND_KEY}" in text
    assert plan["endpoint"] == "http://10.0.0.9:8080" and plan["health_url"] == "http://127.0.0.1:8080"


def test_a_bind_address_is_the_endpoint():
    plan = P.plan(HOSTVARS, ["gpu1"], dict(SETTINGS, bind_address="::1"))
    assert "    bind [::1]:8080" in plan["config"]
    assert plan["endpoint"] == plan["health_url"] == "http://[::1]:8080"


def test_no_backend_is_an_error_naming_the_variable():
    plan = P.plan(HOSTVARS, ["gpu3", "router", "nowhere"], SETTINGS)
    assert len(plan["errors"]) == 1 and plan["config"] == ""
    message = plan["errors"][0]
    assert "llm_router_backend_hosts" in message and "gpu3: preflight's verdict is not ok" in message
    assert "router: no fact" in message
    assert P.plan(HOSTVARS, [], SETTINGS)["errors"][0].startswith("llm_router has no backend: none of the hosts (none)")


def test_a_fact_without_address_uses_ansible_host():
    hostvars = copy.deepcopy(HOSTVARS)
    del hostvars["gpu1"]["ansible_facts"]["llm_stack_host"]["services"][0]["address"]
    plan = P.plan(hostvars, ["gpu1"], SETTINGS)
    assert "    server gpu1_chat 10.0.0.1:28201 check" in plan["config"]


@pytest.mark.parametrize("change, words", [
    ({"api_keys": []}, "llm_router_api_keys is empty"),
    ({"api_keys": None}, "llm_router_api_keys is empty"),
    ({"api_keys": ["ok-key", "two words"]}, "llm_router_api_keys[1] holds whitespace"),
    ({"api_keys": ["ok-key", "tab\there"]}, "llm_router_api_keys[1] holds whitespace"),
    ({"api_keys": [""]}, "llm_router_api_keys[0] is empty"),
    ({"api_keys": [42]}, "llm_router_api_keys[0] is empty or not a string"),
    ({"backend_api_key": ""}, "llm_router_backend_api_key is empty"),
    ({"backend_api_key": "a'b"}, "llm_router_backend_api_key holds whitespace, a quote"),
    ({"backend_api_key": "a\\b"}, "llm_router_backend_api_key holds"),
    ({"backend_api_key": "ab%[src]"}, "llm_router_backend_api_key holds %"),
    ({"port": 0}, "llm_router_port=0 is not a whole number"),
    ({"port": "x"}, "llm_router_port='x'"),
    ({"port": True}, "llm_router_port=True"),
    ({"request_timeout": -1}, "llm_router_request_timeout"),
    ({"health_check_interval": "2 s"}, "llm_router_health_check_interval"),
    ({"health_check_rise": 0}, "llm_router_health_check_rise"),
    ({"bufsize": 100}, "llm_router_bufsize"),
    ({"bind_address": "a, b"}, "llm_router_bind_address"),
    ({"socket": "run/admin.sock"}, "llm_router_socket"),
    ({"state_file": ""}, "llm_router_state_file"),
    ({"config_dir": "/etc/llm router"}, "llm_router_config_dir"),
])
def test_each_problem_names_its_variable_and_a_fix(change, words):
    errors = P.problems(dict(SETTINGS, **change))
    assert len(errors) == 1 and words in errors[0] and "Fix:" in errors[0], errors


def test_the_settings_of_the_role_pass():
    assert P.problems(SETTINGS) == []
    assert P.problems(dict(SETTINGS, port="8080", health_check_interval="500ms")) == []


@pytest.mark.parametrize("setting, fact, mode", [
    ("auto", "systemd", "systemd"), ("auto", "", "systemd"), ("auto", "sysvinit", "supervisord"),
    (None, "docker", "supervisord"), ("supervisord", "systemd", "supervisord"), ("systemd", "sysvinit", "systemd"),
])
def test_service_mode(setting, fact, mode):
    assert P.service_mode(setting, fact) == mode


def test_the_plan_names_the_mode_packages_and_user():
    plan = P.plan(HOSTVARS, ["gpu1"], dict(SETTINGS, service_manager="auto", service_mgr="sysvinit", user="haproxy"))
    assert plan["mode"] == "supervisord" and plan["packages"] == ["haproxy", "supervisor"]
    assert "\nglobal\n    user haproxy\n    group haproxy\n    stats socket" in plan["config"]
    assert P.plan(HOSTVARS, ["gpu1"], SETTINGS)["packages"] == ["haproxy"]
    assert "bad" in P.problems(dict(SETTINGS, service_manager="bad"))[0]
