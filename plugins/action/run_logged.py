# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of gpufleet.llm_stack.run_logged (documented in plugins/modules/run_logged.py).

Starts the command on the host through the module of the same name, then
asks that module for the run's status every ``poll`` seconds (sooner at
first, so that short commands end quickly), and prints a progress line to
the play output at least every ``progress_interval`` seconds. The module
calls carry the environment; they are made with the target's syslog off,
and their ``invocation`` (which holds the arguments) is never passed on.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import run_logged as R

display = Display()

MODULE = "gpufleet.llm_stack.run_logged"
# How long past its timeout a run may still be reported running before the
# action ends it itself (the host's supervisor normally does it first).
TIMEOUT_GRACE = 60
FIRST_DELAY = 1.0


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = False

    # Replaced in unit tests.
    sleep = staticmethod(time.sleep)
    clock = staticmethod(time.monotonic)

    def _module(self, args, task_vars):
        """One call of the module on the host; the syslog of the target is off (the args hold the environment)."""
        quiet_vars = dict(task_vars, ansible_no_target_syslog=True)
        res = self._execute_module(module_name=MODULE, module_args=args, task_vars=quiet_vars)
        res.pop("invocation", None)
        return res

    def _show(self, host, name, text):
        display.display("progress [%s] %s: %s" % (host, name, text))

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        dummy, args = self.validate_argument_spec(argument_spec=R.OPTIONS)
        problems = R.option_problems(args)
        if problems:
            raise AnsibleActionFail("run_logged: %s" % "; ".join(problems))
        environment = dict((str(k), "" if v is None else str(v)) for k, v in (args["environment"] or {}).items())
        secrets = R.secret_values(environment)
        host = task_vars.get("inventory_hostname", "?")
        name = R.mask(args["name"] or os.path.basename(args["argv"][0] if args["argv"] else "command"), secrets)
        module_args = dict((key, args[key]) for key in R.OPTIONS)

        started = self._module(dict(module_args, operation="start"), task_vars)
        result.update((key, started[key]) for key in ("log", "cmd", "msg") if key in started)
        if started.get("failed"):
            result.update(failed=True, changed=False, msg=started.get("msg", "%s did not start" % name))
            return result
        if not started.get("ran"):
            result["changed"] = bool(started.get("changed"))
            return result
        job = started["job"]
        result["changed"] = True
        final = self._follow(host, name, module_args, job, task_vars)
        return self._finish(result, host, name, args, final)

    def _follow(self, host, name, module_args, job, task_vars):
        """Poll the run until it ends; show progress at least every progress_interval seconds."""
        poll, interval, timeout = module_args["poll"], module_args["progress_interval"], module_args["timeout"]
        status_args = dict(module_args, operation="status", job=job)
        estimators = {"ninja": R.Estimator(), "transfer": R.Estimator()}
        begin = self.clock()
        self._show(host, name, "started, log %s on the host" % module_args["log"])
        last_shown, delay, round_trip = begin, FIRST_DELAY, 0.0
        stopped = False
        while True:
            now = self.clock()
            wait = min(delay, poll, max(last_shown + interval - now - round_trip, 0.0))
            self.sleep(wait)
            delay = min(delay * 2, poll)
            asked = self.clock()
            status = self._module(status_args, task_vars)
            now = self.clock()
            round_trip = now - asked
            if status.get("failed"):
                return dict(status, running=False, error=status.get("msg"))
            progress = status.get("progress") or {}
            eta = self._estimate(estimators, now, progress)
            line = R.describe(progress, status.get("elapsed", now - begin), eta)
            status["progress_line"] = line
            if not status.get("running"):
                return status
            if now - last_shown >= interval - round_trip:
                self._show(host, name, line)
                last_shown = now
            if not stopped and now - begin > timeout + TIMEOUT_GRACE:
                self._module(dict(module_args, operation="stop", job=job), task_vars)
                stopped = True
                delay = FIRST_DELAY

    @staticmethod
    def _estimate(estimators, now, progress):
        ninja, transfer = progress.get("ninja"), progress.get("transfer")
        if ninja:
            return estimators["ninja"].add(now, ninja["total"], ninja["done"], ninja["total"])
        if transfer and transfer.get("total"):
            return estimators["transfer"].add(now, (transfer.get("file"), transfer["total"]), transfer.get("done"),
                                              transfer["total"])
        return None

    def _finish(self, result, host, name, args, status):
        rc, timed_out, error = status.get("rc"), bool(status.get("timed_out")), status.get("error")
        result.update(rc=rc, timed_out=timed_out, elapsed=status.get("elapsed"),
                      progress=status.get("progress_line"))
        elapsed = R.human_seconds(status.get("elapsed") or 0)
        if rc == 0 and not timed_out and not error:
            self._show(host, name, "done after %s (exit status 0)" % elapsed)
            return result
        if timed_out:
            why = "ran past its timeout of %d s and was killed" % args["timeout"]
        elif error:
            why = error
        else:
            why = "exit status %s" % rc
        tail = status.get("tail") or []
        errors = status.get("error_lines") or []
        result.update(failed=True, tail=tail, error_lines=errors)
        parts = ["%s failed on %s after %s (%s). Full log: %s on %s." % (name, host, elapsed, why, args["log"], host)]
        if errors:
            parts.append("Lines that report errors:\n%s" % "\n".join(errors))
        parts.append("Last %d lines:\n%s" % (len(tail), "\n".join(tail)))
        result["msg"] = "\n".join(parts)
        if self._task.no_log:
            # no_log hides the result; the end of the log, credentials masked, still tells what went wrong.
            self._show(host, name, "FAILED (%s); from %s (credentials masked):\n%s" % (
                why, args["log"], "\n".join(errors + tail)))
        return result
