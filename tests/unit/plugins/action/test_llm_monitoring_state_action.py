# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The llm_monitoring_state action: the role's settings as its vars/main.yml hands them over, the serving hosts read
from hostvars (a lazy mapping, as Ansible's HostVars is) through their preflight fact alone, the routers and exporter
hosts through their inventory settings; and the exporter part, which reads the host's GPUs and service manager from
its facts."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import yaml

from ansible_collections.gpufleet.llm_stack.plugins.action import llm_monitoring_state as action_module
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._serve_services import contract
from action_task import new_action
from test_llm_router_state_action import LazyHostVars, role_settings as router_role_settings


def role_settings(group, **changes):
    """A settings dict of roles/llm_monitoring/vars/main.yml with the role's defaults."""
    return router_role_settings("llm_monitoring", group, **changes)


CHAT = contract({"name": "chat", "served_model_name": "qwen3-chat", "port": 8000}, "gpu-1", ansible_host="10.0.1.5")
HOSTVARS = {
    "gpu-1": {"ansible_host": "10.0.1.5", "ansible_facts": {"llm_stack_host": {"ok": True, "services": [CHAT]}}},
    # A host preflight failed: no service scraped, its node-exporter still.
    "gpu-2": {"ansible_host": "10.0.1.6", "ansible_facts": {"llm_stack_host": {"ok": False, "services": [CHAT]}},
              "llm_monitoring_node_exporter_port": 9200},
    "lb-1": {"ansible_host": "10.0.0.7", "llm_router_metrics_port": 9405},
    "mon-1": {"ansible_host": "10.0.0.9"},
    "lab-1": {"ansible_host": "10.0.0.10", "llm_monitoring_node_exporter": False},
}
GROUPS = {"all": sorted(HOSTVARS), "llm_router": ["lb-1"], "llm_monitoring": ["mon-1"]}


def run(args, facts=None, check_mode=False):
    action = new_action(action_module, args, check_mode=check_mode)
    task_vars = {"hostvars": LazyHostVars(HOSTVARS), "groups": GROUPS, "inventory_hostname": "mon-1",
                 "ansible_host": "10.0.0.9", "ansible_facts": facts or {}}
    return action.run(task_vars=task_vars)


def test_the_role_defaults_plan_the_fleet():
    for check_mode in (False, True):
        result = run({"settings": role_settings("llm_monitoring_settings")}, check_mode=check_mode)
        assert not result.get("failed"), result.get("msg")
        assert result["changed"] is False
        # gpu-2 failed preflight: its service is not scraped; lab-1 has no node-exporter.
        assert result["summary"] == {"vllm": ["10.0.1.5:8000"], "vllm-health": ["10.0.1.5:8000"],
                                     "llm-router": ["10.0.0.7:9405"],
                                     "node": ["10.0.0.7:9100", "10.0.0.9:9100", "10.0.1.5:9100", "10.0.1.6:9200"]}
        config = yaml.safe_load(result["config"])
        assert config["rule_files"][0] == "/etc/prometheus/llm-stack/llm-stack.rules.yml"
        assert result["url"] == "http://10.0.0.9:9090" and result["local_url"] == "http://127.0.0.1:9090"
        assert result["listen"] == "0.0.0.0:9090"


def test_a_bad_setting_stops_the_host_naming_it():
    result = run({"settings": role_settings("llm_monitoring_settings", retention="forever")})
    assert result["failed"] and result["msg"].startswith("llm_monitoring on mon-1: llm_monitoring_retention='forever'")


def test_the_exporter_part_reads_the_hosts_facts():
    settings = role_settings("llm_monitoring_exporter_settings")
    with_gpus = {"service_mgr": "systemd", "gpu_count": 2, "gpu_compute_caps": ["9.0", "9.0"],
                 "gpu_driver_version": "580.159.04", "gpu_devices": []}
    result = run({"part": "exporter", "settings": settings}, facts=with_gpus)
    assert not result.get("failed"), result.get("msg")
    assert result["collector"] is True and result["listen"] == ":9100"
    assert result["args"] == "--web.listen-address=:9100 --collector.textfile.directory=/var/lib/prometheus/node-exporter"
    assert run({"part": "exporter", "settings": settings}, facts={"service_mgr": "systemd"})["collector"] is False
    stopped = run({"part": "exporter", "settings": settings}, facts={"service_mgr": "sysvinit"})
    assert stopped["failed"] and "set llm_monitoring_node_exporter: false for this host" in stopped["msg"]
