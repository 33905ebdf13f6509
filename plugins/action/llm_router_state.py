# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of gpufleet.llm_stack.llm_router_state (documented in plugins/modules/llm_router_state.py).

The llm_router role's check and plan before any change: the backend hosts' services from their preflight fact
(ansible_facts.llm_stack_host, nothing else of theirs), the role's settings checked, and HAProxy's config, the models
map and the summary worked out. The decisions are _router_plan.plan; this file only gathers its inputs from
hostvars, in the controller's worker. Nothing on any host is read or changed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _router_plan as P
from ansible_collections.gpufleet.llm_stack.plugins.plugin_utils._role_action import RoleAction

OPTIONS = dict(
    settings=dict(type="dict", required=True),
    hosts=dict(type="list", elements="str"),
    # The keys are checked here, never returned.
    api_keys=dict(type="list", elements="raw", no_log=True),
    backend_api_key=dict(type="str", no_log=True),
)


def plain_hostvars(hostvars, hosts):
    """{host: {ansible_facts: {llm_stack_host: ...}, ansible_host}} of hosts, as plain dicts (HostVars is lazy and
    not a dict)."""
    found = {}
    for host in hosts:
        if host not in hostvars:
            continue
        entry = hostvars[host]
        facts = entry.get("ansible_facts") or {}
        found[host] = {"ansible_facts": {P.FACT: dict(facts.get(P.FACT) or {})},
                       "ansible_host": entry.get("ansible_host") or ""}
    return found


class ActionModule(RoleAction):
    OPTIONS = OPTIONS
    HIDDEN = "the router's keys"

    def decide(self, result, args, task_vars):
        hostvars = task_vars.get("hostvars") or {}
        hosts = args.get("hosts")
        if not hosts:
            every = list((task_vars.get("groups") or {}).get("all") or [])
            # None found: every host goes to the plan, whose message then says why each is left out.
            hosts = P.default_hosts(plain_hostvars(hostvars, every), every) or every
        settings = dict(args["settings"], api_keys=args.get("api_keys"), backend_api_key=args.get("backend_api_key"))
        # Facts not gathered: no service manager, taken as systemd.
        settings.setdefault("service_mgr", (task_vars.get("ansible_facts") or {}).get("service_mgr", ""))
        settings.setdefault("host_address", task_vars.get("ansible_host") or task_vars.get("inventory_hostname", ""))
        planned = P.plan(plain_hostvars(hostvars, hosts), hosts, settings)
        result["changed"] = False
        if planned["errors"]:
            host = task_vars.get("inventory_hostname", "")
            return self.stop(result, "llm_router on %s: %s" % (host, " ".join(planned["errors"])))
        del planned["errors"]
        result.update(planned)
        result["hosts"] = list(hosts)
        return result
