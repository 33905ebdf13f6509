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

Where the task hides its result (no_log: an index or git URL with
credentials, which the plan holds for pip), a failure's message is shown
all the same, with the credentials masked.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import flash_attn
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.gate_options import gate_from_options
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import mask_credentials
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.torch_state import split_reading

display = Display()

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

    def _stop(self, result, msg):
        result.update(failed=True, msg=msg)
        if self._task.no_log:
            display.error("%s (the task's output is hidden: credentials)" % mask_credentials(msg), wrap_text=False)
        return result

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        validation, args = self.validate_argument_spec(argument_spec=OPTIONS)
        del validation
        if args["read_venv"] and self._task.delegate_to:
            return self._stop(result, "flash_attn_build_state reads the inventory host's venv: it cannot run with"
                                      " delegate_to (%s) unless read_venv is false" % self._task.delegate_to)
        facts = dict((task_vars or {}).get("ansible_facts") or {})
        try:
            first = flash_attn.plan(args["inputs"], facts=facts)
        except flash_attn.FlashAttnError as exc:
            return self._stop(result, "inputs: %s" % exc)
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
                return self._stop(result, "flash_attn_build on %s: reading %s failed: %s"
                                  % (first["hostname"], first["venv"], probe.get("msg", "")))
            facts.update(read_facts)
        gate_plan = flash_attn.plan(first, facts=facts)
        gate, failure = gate_from_options(flash_attn.gate_options(
            args["inputs"], gate_plan, args["torch_version"], args["index_problems"], args["fail_as"]))
        if failure:
            return self._stop(result, failure["msg"])
        warnings.extend(gate.pop("warnings", None) or [])
        result.update(gate)
        if warnings:
            result["warnings"] = warnings
        if probe is None:
            # The gate alone (preflight): its verdict only, nothing of the plan (which holds the index URL).
            return result
        if result.get("failed"):
            result.update(plan=gate_plan, probe=probe, result=None)
            return self._stop(result, result["msg"])
        build_plan = flash_attn.plan(first, facts=facts, torch=probe, nvcc=probe.get("toolkits"))
        result.update(plan=build_plan, probe=probe,
                      result=None if build_plan["work"] else flash_attn.build_result(build_plan))
        return result
