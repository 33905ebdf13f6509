# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of gpufleet.llm_stack.stack_compat (documented in plugins/modules/stack_compat.py).

The gate is a pure function of the task's options (the host's facts come
in as options), so it runs here, in the controller's worker, with the same
option validation and the same code as the module
(module_utils/gate_options.py): no module is sent to a host or to
localhost, which keeps each role's gate and preflight's cheap on large
fleets.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.gate_options import OPTIONS, gate_result


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        validation, params = self.validate_argument_spec(argument_spec=OPTIONS)
        del validation
        gate, failure = gate_result(params)
        if failure:
            raise AnsibleActionFail(failure["msg"], result={"option": failure["option"]})
        result.update(gate)
        return result
