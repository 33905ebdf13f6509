# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of gpufleet.llm_stack.vllm_source_state (documented in plugins/modules/vllm_source_state.py).

Every decision of the role vllm_source, at the step of the role where it is due; the role's YAML only acts on the
fields returned. With ``inputs`` (the role's variables) it makes this host's plan: where the play has not read the
host's GPUs yet (no preflight report, no GPU facts) and the host is no CPU-only test host, the module gpu_facts reads
them first; with ``probe`` (the role's vllm_info reading of the venv) the plan says what to install; with
``ls_remote`` (the output of git ls-remote for the tag) the tag's commit goes into the build key, and
``commit_problem`` says what is wrong with it. Where the plan has a build key, it carries what the role needs before
it includes wheel_build: ``key_state`` (whether the venv has the key's build, from wheel_build's own plan) and
``jobs_request`` (the build's jobs request, handed to wheel_build as wheel_build_jobs).

With ``plan`` (a plan this action returned) and what the role observed later: ``head`` (the commit checked out) gives
``commit_problem`` again, ``dry_run`` (pip's dry run, with its report) gives ``dry_run`` {ok, msg}, ``after``
(vllm_info after the install) gives ``verdict``, the checks and the record; ``collect`` (with ``probe``, the gate's
reading: preflight or the role's own run) gives ``gate``, what stack_compat's part vllm takes from them.

The decisions are functions of module_utils/vllm.py and wheel_build.py; this file only runs them in order, in the
controller's worker. Where the task hides its result (no_log: an index or git URL with credentials, which the plan
holds for pip and git), a failure's message is shown all the same, with the credentials masked.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64

from ansible.module_utils.common.text.converters import to_bytes, to_text
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_build
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.host_gpus import gpus_known, host_gpus
from ansible_collections.gpufleet.llm_stack.plugins.plugin_utils._role_action import RoleAction


READER = "gpufleet.llm_stack.gpu_facts"
# What the role reads of wheel_build's plan of the key, before it includes wheel_build.
KEY_STATE = ("installed", "needs_build", "summary")

OPTIONS = dict(
    inputs=dict(type="dict"),
    probe=dict(type="dict"),
    ls_remote=dict(type="str"),
    plan=dict(type="dict"),
    head=dict(type="str"),
    dry_run=dict(type="dict"),
    dry_run_report=dict(type="dict"),
    after=dict(type="dict"),
    collect=dict(type="bool"),
)
EXCLUSIVE = [("inputs", "plan")]
ONE_OF = [("inputs", "plan")]
NEEDS = {"head": ("plan", "ls_remote"), "dry_run": ("plan",), "dry_run_report": ("dry_run",), "after": ("plan",),
         "collect": ("plan", "probe")}


def report_text(slurped):
    """The text of a file as the slurp module returned it (base64), None where it was not read (skipped)."""
    content = (slurped or {}).get("content")
    if content is None:
        return None
    return to_text(base64.b64decode(to_bytes(content, errors="surrogate_or_strict")), encoding="utf-8")


class ActionModule(RoleAction):
    OPTIONS = OPTIONS
    ARGSPEC = dict(mutually_exclusive=EXCLUSIVE, required_one_of=ONE_OF, required_by=NEEDS)

    def decide(self, result, args, task_vars):
        result["changed"] = False
        facts = dict(task_vars.get("ansible_facts") or {})
        if args["inputs"] is not None:
            return self._plan(result, args, facts, task_vars)
        return self._judge(result, args, facts)

    def _read_gpus(self, result, task_vars):
        """gpu_facts on the host: (its facts, its message where it failed, else None)."""
        reading = dict(self._execute_module(module_name=READER, module_args={}, task_vars=task_vars))
        reading.pop("invocation", None)
        warnings = list(reading.pop("warnings", None) or [])
        if warnings:
            result["warnings"] = warnings
        if reading.get("failed"):
            return {}, reading.get("msg", "")
        return dict(reading.pop("ansible_facts", None) or {}), None

    def _plan(self, result, args, facts, task_vars):
        try:
            first = vllm.plan(args["inputs"], facts=facts)
        except vllm.VllmError as exc:
            return self.stop(result, "vllm_source_plan: %s" % exc)
        if not gpus_known(facts) and not first["cpu_only_test_host"]:
            read_facts, failure = self._read_gpus(result, task_vars)
            if failure is not None:
                return self.stop(result, failure)
            result["ansible_facts"] = read_facts
            facts.update(read_facts)
        ls_remote = args["ls_remote"]
        # The commit the tag points to: the tag ls_remote_argv asked for.
        commit = vllm.tag_commit(ls_remote, first["git_ref"]) if ls_remote is not None else None
        plan = vllm.plan(args["inputs"], facts=facts, probe=args["probe"], commit=commit or None)
        problem = ""
        if ls_remote is not None and plan["method"] != "wheel":
            problem = vllm.commit_problem(plan, ls_remote)
        plan.update(key_state=None, jobs_request=None)
        if plan["key"] is not None:
            # Needed before wheel_build is included: the role prepares the source tree only where the venv lacks
            # the key's build. wheel_build's own plan of the same request (wheel_build_request) decides it, so the
            # role and the wheel_build it includes agree.
            try:
                state = wheel_build.plan(dict(plan["wheel_build_request"]))
            except wheel_build.WheelBuildError as exc:
                return self.stop(result, str(exc))
            try:
                jobs = vllm.jobs_request(plan)
            except vllm.VllmError as exc:
                return self.stop(result, "vllm_source_jobs: %s" % exc)
            plan.update(key_state=dict((name, state[name]) for name in KEY_STATE), jobs_request=jobs)
        result.update(plan=plan, commit_problem=problem, driver_version=host_gpus(facts)["driver_version"])
        return result

    def _judge(self, result, args, facts):
        plan = args["plan"]
        if args["head"] is not None:
            result["commit_problem"] = vllm.commit_problem(plan, args["ls_remote"], args["head"])
        if args["dry_run"] is not None:
            result["dry_run"] = vllm.dry_run_verdict(plan, args["dry_run"], report_text(args["dry_run_report"]))
        if args["collect"] is not None:
            # stack_compat's part vllm: the venv's torch (preflight: the pin), and whether it stops the host.
            result["gate"] = vllm.gate_options(plan, args["probe"], args["collect"])
        if args["after"] is not None:
            result["verdict"] = vllm.verdict(plan, args["probe"], args["after"], list(host_gpus(facts)["compute_caps"]))
        return result
