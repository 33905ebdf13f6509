# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of gpufleet.llm_stack.flash_attn_build_state (documented in plugins/modules/flash_attn_build_state.py).

flash_attn_build's one step before any change: the role's variables
checked once (the first plan), one reading of the host (the module
torch_info), the gate (stack_compat's part flash_attn, the same code and
options validation as that module, with the fleet's package index settings
judged by module_utils/wheel_index.py) and the plan with the build key and
the jobs request for wheel_build. Every decision is a function of
module_utils/flash_attn.py; this file only runs them in order, in the
controller's worker. The strategy loads this class in the controller's main
process, so the code it imports is compiled once per run, not once per host.

Called again with the host's plan (option plan) and what the role saw since
(the plans of the batch, or wheel_build's result), it returns what follows:
the plan for the group's archs, or this host's result for the fleet report
and whether the checks run; with the check's output, the check's verdict.

Where the task hides its result (no_log: an index or git URL with
credentials, which the plan holds for pip), a failure's message is shown
all the same, with the credentials masked.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleError
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import flash_attn
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_index
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._readers import as_bool, as_dict as _dict
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.gate_options import gate_from_options
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.torch_state import fail_as, split_reading
from ansible_collections.gpufleet.llm_stack.plugins.plugin_utils._role_action import RoleAction


READER = "gpufleet.llm_stack.torch_info"

OPTIONS = dict(
    # The first step: the role's variables, the gate and the reading.
    inputs=dict(type="dict"),
    torch_version=dict(type="str"),
    index_problems=dict(type="list", elements="str", default=[]),
    wheel_index_url=dict(type="str", default=""),
    cache_host=dict(type="str", default=""),
    inventory_hosts=dict(type="list", elements="str", default=[]),
    cache_host_vars=dict(type="dict", default={}),
    wheel_index_ca_cert=dict(type="str", default=""),
    read_venv=dict(type="bool", default=True),
    fail_as=dict(type="str", default=""),
    collect=dict(type="bool", default=False),
    # The later steps: the host's plan and what the role saw since, or the check's output.
    plan=dict(type="dict"),
    probe=dict(type="dict"),
    group=dict(type="list", elements="dict"),
    # A build host (flash_attn_build_for_fleet): the plans of the other hosts' keys, read from the play's hosts.
    fleet=dict(type="bool", default=False),
    built=dict(type="dict"),
    fleet_built=dict(type="list", elements="dict", default=[]),
    check_output=dict(type="dict"),
)


def jobs_request(build_plan):
    """What wheel_build needs for the build's jobs on the builder; None for a plan without a build key."""
    if build_plan.get("key") is None or not isinstance(build_plan.get("environment"), dict):
        return None
    return flash_attn.jobs_request(build_plan)


class ActionModule(RoleAction):
    OPTIONS = OPTIONS
    ARGSPEC = dict(required_one_of=[["inputs", "plan", "check_output"]],
                   mutually_exclusive=[["inputs", "plan", "check_output"]],
                   required_by={"inputs": ("torch_version",), "group": ("plan", "probe")})

    def decide(self, result, args, task_vars):
        if args["check_output"] is not None:
            # The registered result of files/flash_attn_check.py: its verdict.
            output = args["check_output"]
            result["check_result"] = flash_attn.check_result(output.get("stdout"), output.get("rc"),
                                                             output.get("stderr") or "")
            return result
        facts = dict(task_vars.get("ansible_facts") or {})
        if args["plan"] is not None:
            return self._follow(result, args, facts, task_vars)
        if args["read_venv"] and self._task.delegate_to:
            return self.stop(result, "flash_attn_build_state reads the inventory host's venv: it cannot run with"
                                     " delegate_to (%s) unless read_venv is false" % self._task.delegate_to)
        try:
            first = flash_attn.plan(args["inputs"], facts=facts)
        except flash_attn.FlashAttnError as exc:
            return self.stop(result, "inputs: %s" % exc)
        read_facts, probe, warnings = {}, None, []
        if args["read_venv"]:
            probe, warnings, read_facts = split_reading(self._execute_module(
                module_name=READER, module_args=flash_attn.reading_options(first, facts), task_vars=task_vars))
            if read_facts:
                result["ansible_facts"] = dict(read_facts)
            if warnings:
                result["warnings"] = warnings
            if probe.get("failed"):
                result["probe"] = probe
                return self.stop(result, "flash_attn_build on %s: reading %s failed: %s"
                                 % (first["hostname"], first["venv"], probe.get("msg", "")))
            facts.update(read_facts)
        # The fleet's package index (llm_stack_wheel_index_url), when set: its URL, cache host and CA certificate.
        index_problems = list(args["index_problems"]) + wheel_index.config_problems(
            args["wheel_index_url"], args["cache_host"], args["inventory_hosts"], args["cache_host_vars"],
            args["wheel_index_ca_cert"])
        gate_plan = flash_attn.plan(first, facts=facts)
        gate, failure = gate_from_options(flash_attn.gate_options(
            args["inputs"], gate_plan, args["torch_version"], index_problems, fail_as(args["fail_as"], args["collect"])))
        if failure:
            return self.stop(result, failure["msg"])
        warnings.extend(gate.pop("warnings", None) or [])
        result.update(gate)
        if warnings:
            result["warnings"] = warnings
        if probe is None:
            # The gate alone (preflight): its verdict only, nothing of the plan (which holds the index URL).
            return result
        if result.get("failed"):
            result.update(plan=gate_plan, probe=probe, result=None)
            return self.stop(result, result["msg"])
        build_plan = flash_attn.plan(first, facts=facts, torch=probe, nvcc=probe.get("toolkits"))
        result.update(plan=build_plan, probe=probe, jobs_request=jobs_request(build_plan),
                      result=None if build_plan["work"] else flash_attn.build_result(build_plan))
        return result

    def _follow(self, result, args, facts, task_vars):
        """A later step: the plan for the group's archs, a build host's fleet, or this host's result and checks."""
        build_plan = args["plan"]
        if args["fleet"]:
            return self._fleet(result, args, facts, task_vars)
        if args["group"] is not None:
            # arch_scope=group: the same reading, with the plans of the batch's hosts that share the rest of the key.
            probe = args["probe"]
            try:
                build_plan = flash_attn.plan(build_plan, facts=facts, torch=probe, nvcc=probe.get("toolkits"),
                                             group=args["group"])
            except flash_attn.FlashAttnError as exc:
                return self.stop(result, "flash_attn_build_plan: %s" % exc)
            result.update(plan=build_plan, jobs_request=jobs_request(build_plan))
            return result
        # After wheel_build (built: its result), or without it (built null): nothing of the plan, which holds the
        # index URL, is returned.
        try:
            host_result = flash_attn.build_result(build_plan, args["built"], args["fleet_built"])
        except flash_attn.FlashAttnError as exc:
            return self.stop(result, "flash_attn_build_result: %s" % exc)
        result.update(result=host_result,
                      checks=flash_attn.check_steps(build_plan, args["built"], bool(self._task.check_mode)))
        return result

    def _fleet(self, result, args, facts, task_vars):
        """A build host's plans: one per distinct key of the other hosts of the play, and the plan it installs.

        The hosts of the batch by their plans (flash_attn_build_plan), the hosts of later batches by preflight's
        contract fact (ansible_facts.llm_stack_host); other build hosts (flash_attn_build_for_fleet) are no members.
        """
        if args["probe"] is None:
            return self.stop(result, "flash_attn_build_state: fleet needs the reading (probe) of the build host")
        probe = args["probe"]
        members, preflight_hosts, builders = fleet_hosts(task_vars)
        try:
            fleet = flash_attn.fleet_plans(args["plan"], members, preflight_hosts, builders, facts=facts, torch=probe,
                                           nvcc=probe.get("toolkits"))
            own = flash_attn.fleet_own_plan(args["plan"], fleet)
        except flash_attn.FlashAttnError as exc:
            return self.stop(result, "flash_attn_build_plan: %s" % exc)
        result.update(fleet_plans=fleet, fleet_jobs_requests=[jobs_request(item) for item in fleet],
                      plan=own, jobs_request=jobs_request(own))
        return result


def _hostvar(hostvars, host, name):
    """One variable of another host as hostvars gives it, None where it has none."""
    try:
        return hostvars[host].get(name)
    except (KeyError, AttributeError, TypeError, AnsibleError):
        return None


def fleet_hosts(task_vars):
    """(members, preflight_hosts, builders) of the play for flash_attn.fleet_plans.

    members: the plans (flash_attn_build_plan) of the hosts of the batch; preflight_hosts: {host: llm_stack_host}
    of the hosts of the play outside the batch; builders: the hosts of the play with flash_attn_build_for_fleet true.
    """
    hostvars = task_vars.get("hostvars") or {}
    batch = list(task_vars.get("ansible_play_batch") or [])
    members = [_hostvar(hostvars, host, "flash_attn_build_plan") for host in batch]
    preflight_hosts = {}
    builders = []
    for host in task_vars.get("ansible_play_hosts_all") or []:
        if as_bool(_hostvar(hostvars, host, "flash_attn_build_for_fleet")):
            builders.append(host)
        if host not in batch:
            preflight_hosts[host] = _dict(_hostvar(hostvars, host, "ansible_facts")).get("llm_stack_host")
    return members, preflight_hosts, builders
