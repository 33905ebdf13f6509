# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The llm_router_state action: the role's settings as its vars/main.yml hands them over, the serving hosts read
from hostvars (a lazy mapping, as Ansible's HostVars is, not a dict) through their preflight fact alone."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.module_utils.six.moves.collections_abc import Mapping

import yaml

from ansible_collections.gpufleet.llm_stack.plugins.action import llm_router_state as action_module
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _router_plan as P
from action_task import new_action

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
KEYS = ["sk-router-client-1"]


class LazyHostVars(Mapping):
    """Stands in for Ansible's HostVars: a Mapping, not a dict; its entries are Mappings too."""

    def __init__(self, data):
        self.data = data

    def __getitem__(self, key):
        return LazyVars(self.data[key])

    def __iter__(self):
        return iter(self.data)

    def __len__(self):
        return len(self.data)


class LazyVars(LazyHostVars):
    def __getitem__(self, key):
        return self.data[key]


def role_settings(role="llm_router", group="llm_router_settings", **changes):
    """A settings dict of roles/<role>/vars/main.yml (group) with the role's defaults."""
    with open(os.path.join(REPO, "roles", role, "defaults", "main.yml")) as handle:
        defaults = yaml.safe_load(handle)
    with open(os.path.join(REPO, "roles", role, "vars", "main.yml")) as handle:
        names = yaml.safe_load(handle)[group]
    settings = {}
    for key, template in names.items():
        name = str(template).strip("{} ").split(" ", maxsplit=1)[0]
        settings[key] = defaults.get(name, template)
    settings.update(changes)
    return settings


def service(name, served, port, address):
    return {"name": name, "unit": "vllm-" + name, "served_model_name": served, "model": "Qwen/Qwen3-tiny",
            "port": port, "bind": "0.0.0.0", "address": address, "gpus": None, "router": True}


SERVE1 = [service("chat", "qwen3-tiny", 28201, "10.1.0.1")]
SERVE2 = [service("chat", "qwen3-tiny", 28201, "serve2")]
HOSTVARS = {
    "serve1": {"ansible_host": "10.1.0.1", "vllm_serve_api_key": "never-read",
               "ansible_facts": {"llm_stack_host": {"ok": True, "services": SERVE1}}},
    "serve2": {"ansible_facts": {"llm_stack_host": {"ok": True, "services": SERVE2}}},
    "lb": {"ansible_host": "10.1.0.9", "ansible_facts": {"service_mgr": "systemd"}},
}


def run(args, check_mode=False):
    action = new_action(action_module, args, check_mode=check_mode, no_log=True)
    task_vars = {"hostvars": LazyHostVars(HOSTVARS), "groups": {"all": sorted(HOSTVARS)},
                 "inventory_hostname": "lb", "ansible_host": "10.1.0.9", "ansible_facts": {"service_mgr": "sysvinit"}}
    return action.run(task_vars=task_vars)


def test_the_role_defaults_plan_every_ok_host():
    settings = role_settings()
    assert set(settings) == {"port", "bind_address", "socket", "state_file", "config_dir", "request_timeout",
                             "health_check_interval", "health_check_fall", "health_check_rise", "bufsize",
                             "metrics_port", "service_manager", "user"}
    for check_mode in (False, True):
        result = run({"settings": settings, "api_keys": KEYS, "backend_api_key": "sk-vllm-0123456789"}, check_mode)
        assert not result.get("failed"), result.get("msg")
        assert result["changed"] is False
        assert result["hosts"] == ["serve1", "serve2"]
        assert result["summary"] == {"qwen3-tiny": ["serve1_chat", "serve2_chat"]}
        assert result["endpoint"] == "http://10.1.0.9:8080" and result["health_url"] == "http://127.0.0.1:8080"
        assert result["mode"] == "supervisord" and result["packages"] == ["haproxy", "supervisor"]
        assert "    server serve2_chat serve2:28201 check" in result["config"]
        assert "    user haproxy\n" in result["config"]
        # HAProxy's exporter on the default metrics port, for the llm_monitoring role.
        assert "frontend metrics\n    bind 0.0.0.0:8405\n" in result["config"]
        assert result["metrics_url"] == "http://10.1.0.9:8405/metrics"
        assert "sk-" not in repr(result)


def test_the_plan_is_the_pure_functions():
    settings = role_settings()
    result = run({"settings": settings, "hosts": ["serve1"], "api_keys": KEYS, "backend_api_key": "k"})
    expected = P.plan(HOSTVARS, ["serve1"], dict(settings, api_keys=KEYS, backend_api_key="k",
                                                 service_mgr="sysvinit", host_address="10.1.0.9"))
    assert result["config"] == expected["config"] and result["models_map"] == expected["models_map"]


def test_every_problem_in_one_message_naming_the_host():
    result = run({"settings": role_settings(port=0), "hosts": ["lb"], "api_keys": ["two words"],
                  "backend_api_key": ""})
    assert result["failed"] is True and result["msg"].startswith("llm_router on lb: ")
    for words in ("llm_router_api_keys[0] holds whitespace", "llm_router_backend_api_key is empty",
                  "llm_router_port=0", "llm_router has no backend", "lb: no fact ansible_facts.llm_stack_host"):
        assert words in result["msg"]
    assert "two words" not in result["msg"]
