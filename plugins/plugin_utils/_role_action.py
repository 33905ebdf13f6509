# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The base of the roles' one step that reads, gates and plans (the <role>_state action plugins). Private.

Each such action runs in the controller's worker, changes nothing on the host (check mode included), checks its
options against its OPTIONS (with ARGSPEC's mutually_exclusive, required_one_of, ...), then hands them to its own
decide(). A failure stops the host with its message; where the task hides its output (no_log: a URL with
credentials, a key), the message is shown all the same, with credentials masked.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import mask_credentials

display = Display()


class RoleAction(ActionBase):
    """An action plugin of a role's decisions: options checked, then decide(result, args, task_vars)."""

    _supports_check_mode = True
    _supports_async = False
    OPTIONS = {}
    ARGSPEC = {}
    # What a hidden output hides, as the failure's note says it.
    HIDDEN = "credentials"

    def run(self, tmp=None, task_vars=None):
        result = super(RoleAction, self).run(tmp, task_vars)
        del tmp
        dummy, args = self.validate_argument_spec(argument_spec=self.OPTIONS, **self.ARGSPEC)
        return self.decide(result, args, task_vars or {})

    def decide(self, result, args, task_vars):
        raise NotImplementedError

    def stop(self, result, msg):
        """The host stops with msg; shown masked where the task's output is hidden."""
        result.update(failed=True, msg=msg)
        if self._task.no_log:
            display.error("%s (the task's output is hidden: %s)" % (mask_credentials(msg), self.HIDDEN), wrap_text=False)
        return result
