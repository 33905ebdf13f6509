# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of gpufleet.llm_stack.vllm_serve_state (documented in plugins/modules/vllm_serve_state.py).

vllm_serve's plan, in the controller's worker, in up to three calls of the
role: before the reading of the host (the service's name and paths, what
gpufleet.llm_stack.vllm_serve_info is to read, whether the play has read
the host's GPUs), after it (O(info): the plan the role acts on, and the
errors its gate judges: the plan's own and, outside preflight, the refusal
of a vLLM whose record says it failed its checks), and for the 0600
environment file (O(env_file): its text, which holds the secrets, and
supervisor's pip environment, which may hold an index's credentials). Every
decision is a function of module_utils/vllm_serve.py (with vllm.py's
record_refusal and host_gpus.py's gpus_known); this file only runs them in
order. It changes nothing on the host and sends nothing there.

Where the task hides its result (no_log: the environment file's call), a
failure's message is shown all the same; it names the variable, never a
secret.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _serve_nodes, _serve_services
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm_serve
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.host_gpus import gpus_known
from ansible_collections.gpufleet.llm_stack.plugins.plugin_utils._role_action import RoleAction


OPTIONS = dict(
    inputs=dict(type="dict", required=True),
    info=dict(type="dict"),
    api_key=dict(type="str", no_log=True),
    hf_token=dict(type="str", no_log=True),
    collect=dict(type="bool", default=False),
    env_file=dict(type="bool", default=False),
    supervisor_index_url=dict(type="str", no_log=True),
    services=dict(type="raw"),
    list_services=dict(type="bool", default=False),
    router_address=dict(type="str", default=""),
    manifest=dict(type="dict"),
    service_label=dict(type="str", default=""),
    gates=dict(type="list", elements="dict"),
    listed=dict(type="dict"),
    across=dict(type="bool", default=False),
)


class ActionModule(RoleAction):
    OPTIONS = OPTIONS
    HIDDEN = "secrets"

    def decide(self, result, args, task_vars):
        facts = dict(task_vars.get("ansible_facts") or {})
        if args["list_services"]:
            return self.host_services(result, args, facts, task_vars)
        if args["manifest"] is not None:
            return self.manifest(result, args["manifest"])
        if args["gates"] is not None:
            # The host's gate as the role registers it (vllm_serve_gate): the keys of a stack_compat result; with
            # across, the checks over every node of each deployment across hosts (their gates of this run).
            listed = dict(args["listed"] or {})
            if args["across"]:
                listed["errors"] = list(listed.get("errors") or []) + self.across(listed, task_vars)
            result.update(_serve_services.host_gate(listed, args["gates"]), changed=False)
            return result
        info = args["info"]
        if args["env_file"] and args["api_key"] is None:
            return self.stop(result, "env_file: the environment file needs api_key (vllm_serve_api_key)")
        try:
            plan = vllm_serve.plan(args["inputs"], facts=facts, info=info, api_key=args["api_key"],
                                   hf_token=args["hf_token"])
        except vllm_serve.VllmServeError as exc:
            return self.stop(result, "inputs: %s" % exc)
        result["changed"] = False
        if args["env_file"]:
            # The only result that holds the secrets: the task that asks for it is no_log.
            try:
                result["env_file"] = vllm_serve.env_file_text(plan, args["api_key"], args["hf_token"] or "")
            except vllm_serve.VllmServeError as exc:
                return self.stop(result, "env_file: %s" % exc)
            if args["supervisor_index_url"] is not None:
                # An index URL may hold credentials: only in this hidden result, never in the plan.
                result["supervisor_pip_environment"] = vllm_serve.supervisor_pip_environment(args["supervisor_index_url"])
            return result
        result["plan"] = plan
        if info is None:
            # Before the reading: what vllm_serve_info reads, and whether the host's GPUs are still to be read.
            result.update(reading=vllm_serve.reading_options(plan, args["inputs"]), read_gpus=not gpus_known(facts))
            return result
        errors = list(plan["errors"])
        if not args["collect"]:
            # Outside preflight (which runs before vllm_source checks again): a vLLM whose record says it failed.
            seen = info.get("vllm")
            if seen is not None and not isinstance(seen, dict):
                return self.stop(result, "info: the vllm reading of vllm_serve_info must be a dict, got %s"
                                 % type(seen).__name__)
            errors.extend(vllm.record_refusal(seen, plan["venv"]))
        result["errors"] = errors
        # How the gate (stack_compat) stops the host: named outside preflight, which only collects.
        result["fail_as"] = vllm_serve.gate_fail_as(task_vars.get("inventory_hostname", ""), args["collect"])
        if result["fail_as"] and args["service_label"]:
            result["fail_as"] += ", service %s" % args["service_label"]
        return result

    def host_services(self, result, args, facts, task_vars):
        """The host's services (vllm_serve_services, else the single service): each one's variables and contract,
        and the problems of the list on the host's GPUs once they are read (read_gpus says they are not yet)."""
        listed = args["services"]
        read_gpus = not gpus_known(facts) and isinstance(listed, (list, tuple)) and any(
            isinstance(item, dict) and item.get("gpus") for item in listed)
        found = _serve_services.host_services(
            listed, args["inputs"], facts, task_vars.get("inventory_hostname", ""), address=args["router_address"],
            ansible_host=task_vars.get("ansible_host"), check_gpus=not read_gpus,
            nodes=self.nodes_view(listed, task_vars))
        # A deployment across hosts needs the host's interfaces (the one that holds its node address).
        items = listed if isinstance(listed, (list, tuple)) else []
        read_network = "interfaces" not in facts and any(isinstance(item, dict) and item.get("nodes") for item in items)
        result.update(found, changed=False, read_gpus=read_gpus, read_network=read_network)
        return result

    @staticmethod
    def across(listed, task_vars):
        """_serve_nodes.across for each service of the host that is a node of a deployment: every node's
        vllm_serve_checked of this run (the role's own record of its gate, on each host of the group)."""
        hostvars = task_vars.get("hostvars") or {}
        batch = task_vars.get("ansible_play_batch")
        batch = list(batch) if isinstance(batch, (list, tuple)) else None
        play_hosts = task_vars.get("ansible_play_hosts_all")
        play_hosts = list(play_hosts) if isinstance(play_hosts, (list, tuple)) else None
        found = []
        for service in listed.get("services") or []:
            node = ((service or {}).get("vars") or {}).get("vllm_serve_node")
            if not node:
                continue
            members = dict((host, (hostvars.get(host) or {}).get("vllm_serve_checked")) for host in node["hosts"])
            found.extend(_serve_nodes.across(service["unit"], node, members, batch, play_hosts))
        return found

    @staticmethod
    def nodes_view(listed, task_vars):
        """The inventory as a deployment across hosts needs it: the hosts of each group a service's nodes names, and
        each one's address (its vllm_serve_node_address, else the default IPv4 address of its facts)."""
        wanted = set()
        for item in listed if isinstance(listed, (list, tuple)) else []:
            nodes = item.get("nodes") if isinstance(item, dict) else None
            if isinstance(nodes, dict) and isinstance(nodes.get("group"), str):
                wanted.add(nodes["group"])
        groups = task_vars.get("groups") or {}
        hostvars = task_vars.get("hostvars") or {}
        view = {"groups": {}, "addresses": {}}
        for group in sorted(wanted):
            view["groups"][group] = list(groups.get(group) or [])
            for host in view["groups"][group]:
                seen = hostvars.get(host) or {}
                view["addresses"][host] = seen.get(_serve_nodes.ADDRESS_VARIABLE) or _serve_nodes.default_address(
                    seen.get("ansible_facts"))
        return view

    def manifest(self, result, manifest):
        """The manifest of the services just served (plans, contracts) and the recorded ones to remove (recorded)."""
        unknown = sorted(set(manifest) - set(["plans", "contracts", "recorded"]))
        if unknown:
            return self.stop(result, "manifest: unknown key(s) %s; give plans, contracts and recorded"
                             % ", ".join(unknown))
        plans = manifest.get("plans") or []
        text = _serve_services.manifest(plans, manifest.get("contracts"))
        recorded = _serve_services.read_manifest(manifest.get("recorded"))
        result.update(changed=False, manifest=text,
                      removals=_serve_services.removal_records(sorted(text["units"]), recorded))
        return result
