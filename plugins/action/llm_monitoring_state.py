# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of gpufleet.llm_stack.llm_monitoring_state (documented in plugins/modules/llm_monitoring_state.py).

The llm_monitoring role's check and plan before any change: what Prometheus scrapes, from the serving hosts'
preflight fact (ansible_facts.llm_stack_host: its services), the routers' (group llm_router) llm_router_bind_address
and llm_router_metrics_port and the exporter hosts' llm_monitoring_node_exporter* inventory settings. The decisions
are _monitoring.plan; this file only gathers its inputs from hostvars, in the controller's worker. Nothing on any
host is read or changed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _monitoring as M
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _router_plan
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.host_gpus import host_gpus
from ansible_collections.gpufleet.llm_stack.plugins.plugin_utils._role_action import RoleAction

OPTIONS = dict(
    settings=dict(type="dict", required=True),
    hosts=dict(type="list", elements="str"),
    exporter_hosts=dict(type="list", elements="str"),
    router_group=dict(type="str", default="llm_router"),
    part=dict(type="str", default="prometheus", choices=["prometheus", "exporter"]),
)


def _get(entry, name, default=None):
    value = entry.get(name)
    return default if value is None else value


def gather(hostvars, hosts, exporter_hosts, routers):
    """targets()' input: {host: {services, router, exporter}} as plain dicts (HostVars is lazy and not a dict)."""
    found = {}
    for host in sorted(set(hosts) | set(exporter_hosts) | set(routers)):
        if host not in hostvars:
            continue
        entry = hostvars[host]
        facts = entry.get("ansible_facts") or {}
        fact = dict(facts.get(M.FACT) or {})
        item = {"services": list(fact.get("services") or []) if fact.get("ok") and host in hosts else [],
                "router": None, "exporter": None}
        if host in routers:
            item["router"] = {"bind": _get(entry, "llm_router_bind_address", "0.0.0.0"),
                              "metrics_port": _get(entry, "llm_router_metrics_port", _router_plan.METRICS_PORT),
                              "ansible_host": _get(entry, "ansible_host", "")}
        if host in exporter_hosts and boolean(_get(entry, "llm_monitoring_node_exporter", True), strict=False):
            item["exporter"] = {"address": _get(entry, "llm_monitoring_node_exporter_address", ""),
                                "port": _get(entry, "llm_monitoring_node_exporter_port", M.NODE_EXPORTER_PORT),
                                "ansible_host": _get(entry, "ansible_host", "")}
        found[host] = item
    return found


class ActionModule(RoleAction):
    OPTIONS = OPTIONS

    def decide(self, result, args, task_vars):
        if args["part"] == "exporter":
            facts = task_vars.get("ansible_facts") or {}
            settings = dict(args["settings"])
            settings.setdefault("gpu_count", host_gpus(facts)["count"])
            settings.setdefault("service_mgr", facts.get("service_mgr") or "")
            return self.answer(result, M.exporter_plan(settings), task_vars)
        hostvars = task_vars.get("hostvars") or {}
        groups = task_vars.get("groups") or {}
        every = list(groups.get("all") or [])
        hosts = args.get("hosts") or every
        exporter_hosts = args.get("exporter_hosts") or every
        routers = list(groups.get(args["router_group"]) or [])
        settings = dict(args["settings"])
        settings.setdefault("host", task_vars.get("inventory_hostname", ""))
        settings.setdefault("host_address", task_vars.get("ansible_host") or "")
        return self.answer(result, M.plan(gather(hostvars, hosts, exporter_hosts, routers), settings), task_vars)

    def answer(self, result, planned, task_vars):
        """The plan as the task's result, or the host stopped with every problem."""
        result["changed"] = False
        if planned["errors"]:
            host = task_vars.get("inventory_hostname", "")
            return self.stop(result, "llm_monitoring on %s: %s" % (host, " ".join(planned["errors"])))
        del planned["errors"]
        result.update(planned)
        return result
