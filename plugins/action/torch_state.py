# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of gpufleet.llm_stack.torch_state (documented in plugins/modules/torch_state.py).

The torch role's reading of the venv and its gate in one step: one run of
the module torch_info on the host, then stack_compat's part torch in the
controller's worker (the same code and options validation as that module),
then, where this reading is the role's last, the role's verdict. The
decisions are in module_utils/torch_state.py, torch_probe.py and gate.py;
this file only runs them in order. The strategy loads this class in the
controller's main process, so the code it imports is compiled once per run.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleActionFail
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import torch_state
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.gate_options import gate_from_options
from ansible_collections.gpufleet.llm_stack.plugins.plugin_utils._role_action import RoleAction

READER = "gpufleet.llm_stack.torch_info"

OPTIONS = dict(
    read=dict(type="dict", required=True),
    gate=dict(type="dict", required=True),
    fail_as=dict(type="str", default=""),
    collect=dict(type="bool", default=False),
    wheelhouse_dest=dict(type="str"),
    after_install=dict(type="bool", default=False),
    package_index_ca_cert=dict(type="str", default=""),
    # The inventory's cache host runs the package proxy (fleet_cache_proxy): in preflight, a proxy that does not
    # answer yet is one this run sets up (the cache host's play comes before torch's), a warning.
    package_index_planned=dict(type="bool", default=False),
)


class ActionModule(RoleAction):
    OPTIONS = OPTIONS

    def decide(self, result, args, task_vars):
        facts = dict(task_vars.get("ansible_facts") or {})
        fail_as = torch_state.fail_as(args["fail_as"], args["collect"])
        try:
            read = torch_state.reading_options(args["read"], facts, args["collect"])
            gate_args = torch_state.caller_options(args["gate"], "gate", torch_state.GATE_SET_HERE)
        except torch_state.TorchStateError as exc:
            raise AnsibleActionFail(str(exc))
        # Where pip installs from, and the wheelhouse the reading names (where the role pushes the controller's).
        result["pip_source"] = torch_state.pip_source(gate_args)
        wheelhouse = torch_state.reading_wheelhouse(gate_args, args["wheelhouse_dest"])
        if wheelhouse is not None:
            read["wheelhouse"] = wheelhouse
        # The proxy's CA, a controller file (the gate judges a missing one): its text goes to the reading.
        read["package_index_ca"] = torch_state.controller_text(args["package_index_ca_cert"])
        reading, warnings, read_facts = torch_state.split_reading(
            self._execute_module(module_name=READER, module_args=read, task_vars=task_vars))
        if read_facts:
            result["ansible_facts"] = read_facts
        if reading.get("failed"):
            result.update(failed=True, reading=reading, warnings=warnings, msg=reading.get("msg", ""))
            return result
        facts.update(read_facts)
        torch_state.mark_planned_proxy(reading, args["collect"] and args["package_index_planned"])
        # After the install the gate only reports (its stop says "nothing was changed"): the verdict decides.
        gate_fail_as = "" if args["after_install"] else fail_as
        options = torch_state.gate_options(args["gate"], facts, reading, gate_fail_as)
        gate, failure = gate_from_options(options)
        if failure:
            result.update(failed=True, reading=reading, msg=failure["msg"])
            return result
        warnings.extend(gate.pop("warnings", None) or [])
        result.update(gate)
        result.update(reading=reading, changed=bool(reading.get("changed")))
        if warnings:
            result["warnings"] = warnings
        if result.get("failed") or not fail_as:
            return result
        if torch_state.last_reading(reading, args["after_install"]):
            failure = torch_state.verdict(reading, task_vars.get("inventory_hostname", ""),
                                          self._task.check_mode)
            if failure:
                result.update(failed=True, msg=failure)
            else:
                result["msg"] = list(reading.get("report") or []) + list(gate.get("compat_warnings") or [])
        return result
