# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of gpufleet.llm_stack.fleet_lock (documented in plugins/modules/fleet_lock.py).

It adds to I(owner) the controller that runs the play, the process id of
its ansible-playbook (the parent of this worker) with that process's start
time, the controller's boot id and pid namespace, then runs the module on
the cache host (the task's C(delegate_to)); a lock's owner.json then says
which process on which controller holds it.

When C(acquire) finds the lock held by a holder of this controller that is
provably dead (module_utils/fleet_lock.py, ``holder_is_dead``: its process
is gone or is another process now), it runs the module once more with that
holder's record as I(dead_holder), which moves exactly that lock aside and
takes it: a killed build does not hold its key until the lock is stale.

It returns the module's answer as it is: for C(publish), RV(ledger_outcome)
is the result word (C(built) or C(refused)) of the cache host's ledger line,
computed in module_utils/fleet_lock.py (``ledger_outcome``), which the
builder's own ledger records too.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import socket

from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import fleet_lock as L


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = False

    PROC = "/proc"

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        args.pop("dead_holder", None)
        controller = socket.gethostname()
        owner = dict(args.get("owner") or {})
        for key, value in L.process_identity(os.getppid(), controller, self.PROC).items():
            owner.setdefault(key, value)
        args["owner"] = owner
        answer = self._execute_module(module_name="gpufleet.llm_stack.fleet_lock", module_args=args,
                                      task_vars=task_vars)
        holder = answer.get("holder")
        if (args.get("state") == "acquire" and args.get("may_build") and answer.get("verdict") == "wait"
                and not self._task.check_mode):
            dead, why = L.holder_is_dead(holder, controller, self.PROC)
            if dead:
                answer = self._execute_module(module_name="gpufleet.llm_stack.fleet_lock",
                                              module_args=dict(args, dead_holder=holder), task_vars=task_vars)
                if answer.get("broken"):
                    answer["broken"]["why"] = why
                    answer["msg"] = "took over the lock of %s from %s (job %s): %s. %s" % (
                        args.get("entry"), holder.get("host"), holder.get("job") or "-", why, answer.get("msg", ""))
        result.update(answer)
        return result
