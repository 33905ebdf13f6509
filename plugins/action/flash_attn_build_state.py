# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of gpufleet.llm_stack.flash_attn_build_state (documented in plugins/modules/flash_attn_build_state.py).

flash_attn_build's one step before any change: the role's variables
checked once (the first plan), one reading of the host (the module
torch_info), the gate (stack_compat's part flash_attn, the same code and
options validation as that module) and the plan with the build key. Every
decision is a function of module_utils/flash_attn.py; this file only runs
them in order, in the controller's worker. The strategy loads this class
in the controller's main process, so the code it imports is compiled once
per run, not once per host.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import flash_attn
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.gate_options import gate_from_options

READER = "gpufleet.llm_stack.torch_info"

OPTIONS = dict(
    inputs=dict(type="dict", required=True),
    torch_version=dict(type="str", required=True),
    index_problems=dict(type="list", elements="str", default=[]),
    read_venv=dict(type="bool", default=True),
    fail_as=dict(type="str", default=""),
)


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        validation, args = self.validate_argument_spec(argument_spec=OPTIONS)
        del validation
        facts = dict((task_vars or {}).get("ansible_facts") or {})
        try:
            first = flash_attn.plan(args["inputs"], facts=facts)
        except flash_attn.FlashAttnError as exc:
            raise AnsibleActionFail("inputs: %s" % exc)
        read_facts, probe, warnings = {}, None, []
        if args["read_venv"]:
            probe = self._execute_module(module_name=READER, module_args=flash_attn.reading_options(first, facts),
                                         task_vars=task_vars)
            probe.pop("invocation", None)
            warnings.extend(probe.pop("warnings", None) or [])
            if probe.get("failed"):
                result.update(failed=True, probe=probe, warnings=warnings,
                              msg="flash_attn_build on %s: reading %s failed: %s"
                                  % (first["hostname"], first["venv"], probe.get("msg", "")))
                return result
            read_facts = dict(probe.pop("ansible_facts", None) or {})
            facts.update(read_facts)
        gate_plan = flash_attn.plan(first, facts=facts)
        gate, failure = gate_from_options(flash_attn.gate_options(
            args["inputs"], gate_plan, args["torch_version"], args["index_problems"], args["fail_as"]))
        if failure:
            raise AnsibleActionFail(failure["msg"])
        warnings.extend(gate.pop("warnings", None) or [])
        result.update(gate)
        if warnings:
            result["warnings"] = warnings
        if read_facts:
            result["ansible_facts"] = dict(read_facts)
        if probe is None or result.get("failed"):
            result.update(plan=gate_plan, probe=probe, result=None)
            return result
        build_plan = flash_attn.plan(first, facts=facts, torch=probe, nvcc=probe.get("toolkits"))
        result.update(plan=build_plan, probe=probe,
                      result=None if build_plan["work"] else flash_attn.build_result(build_plan))
        return result
