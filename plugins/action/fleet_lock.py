# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of gpufleet.llm_stack.fleet_lock (documented in plugins/modules/fleet_lock.py).

It adds to I(owner) the controller that runs the play and the process id
of its ansible-playbook (the parent of this worker), then runs the module
on the cache host (the task's C(delegate_to)); a lock's owner.json then
says which process on which controller holds it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import socket

from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        owner = dict(args.get("owner") or {})
        owner.setdefault("controller", socket.gethostname())
        owner.setdefault("pid", os.getppid())
        args["owner"] = owner
        result.update(self._execute_module(module_name="gpufleet.llm_stack.fleet_lock", module_args=args,
                                           task_vars=task_vars))
        return result
