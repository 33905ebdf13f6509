# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of gpufleet.llm_stack.wheel_build_state (documented in plugins/modules/wheel_build_state.py).

Every decision of the wheel_build role, one step of it per call, in the
controller's worker: the plan (the index settings checked, the venv read
with the module torch_info where the caller did not, the key, the backend),
the election of a key's builder over the batch, the controller cache after
the build step, the build's jobs on the builder, the wheel's name on the
fleet's index, the index's wheel to install, and the files push_dir copies.
The decisions are in module_utils/wheel_build.py, _wheel_build_role.py and
wheel_index.py; this file only runs them in order. It changes nothing on a
host, so it runs in check mode too.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _wheel_build_role as R
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_build, wheel_index
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.torch_state import split_reading
from ansible_collections.gpufleet.llm_stack.plugins.plugin_utils._role_action import RoleAction

READER = "gpufleet.llm_stack.torch_info"

OPTIONS = dict(
    inputs=dict(type="dict"),
    plan=dict(type="dict"),
    elect=dict(type="bool", default=False),
    look_in_cache=dict(type="bool", default=False),
    builder=dict(type="str", default=""),
    jobs=dict(type="dict"),
    built_wheel=dict(type="str"),
    index_wheels=dict(type="list", elements="raw"),
    compiled=dict(type="bool", default=False),
    local_files=dict(type="list", elements="dict"),
    remote_files=dict(type="list", elements="dict"),
)

STEPS = ("give inputs (the plan), or plan with elect, look_in_cache, jobs, built_wheel or index_wheels, "
         "or local_files and remote_files (push_dir)")


def _states(batch, hostvars):
    """Each host's wheel_build_state (None where it has none), as the role's set_fact left it."""
    states = {}
    for host in batch:
        try:
            states[host] = hostvars[host].get("wheel_build_state")
        except (KeyError, AttributeError, TypeError):
            states[host] = None
    return states


class ActionModule(RoleAction):
    OPTIONS = OPTIONS

    def decide(self, result, args, task_vars):
        result["changed"] = False
        try:
            if args["local_files"] is not None or args["remote_files"] is not None:
                result["missing"] = wheel_build.files_to_push(args["local_files"] or [], args["remote_files"] or [])
            elif args["inputs"] is not None:
                return self._plan(result, dict(args["inputs"]), task_vars)
            elif args["plan"] is None:
                return dict(result, failed=True, msg="wheel_build_state: " + STEPS)
            else:
                result.update(self._later(args, dict(args["plan"]), task_vars))
        except (wheel_build.WheelBuildError, wheel_index.WheelIndexError) as exc:
            result.update(failed=True, msg=str(exc))
        return result

    def _plan(self, result, inputs, task_vars):
        """The host's plan: the index settings, the venv's installed build of the key, the key and the backend."""
        hosts = list((task_vars.get("groups") or {}).get("all") or [])
        host_vars = inputs.get("cache_host_vars")
        if host_vars is not None and not isinstance(host_vars, dict):
            return dict(result, failed=True,
                        msg="wheel_index_problems: cache_host_vars (llm_stack_cache_host_vars) must be a dict")
        problems = wheel_index.config_problems(inputs.get("index_url"), inputs.get("cache_host"), hosts, host_vars,
                                               inputs.get("index_ca_cert"))
        if problems:
            return dict(result, failed=True, problems=problems, msg=" ".join(problems))
        for name, default in (("prefer_builder", False), ("install", True)):
            inputs[name] = boolean(inputs.get(name, default), strict=False)
        wheel_build.plan(inputs, cached=[])
        if inputs.get("installed_url") is None:
            probe, warnings, dummy = split_reading(self._execute_module(
                module_name=READER, task_vars=task_vars,
                module_args=dict(venv=inputs.get("venv"), import_torch=False, use_record=False,
                                 distributions=[inputs["name"]], set_facts=False)))
            if warnings:
                result["warnings"] = warnings
            if probe.get("failed"):
                return dict(result, failed=True, probe=probe, msg=probe.get("msg", ""))
            inputs["probe"] = probe
        state = R.role_plan(inputs, hosts)
        result.update(plan=state, result=R.first_result(state))
        return result

    def _later(self, args, state, task_vars):
        """A later step of the role, with what the play observed since the plan."""
        hostname = task_vars.get("inventory_hostname", "")
        check_mode = bool(self._task.check_mode)
        if args["elect"]:
            batch = list(task_vars.get("ansible_play_batch") or [])
            builder = wheel_build.builder(batch, _states(batch, task_vars.get("hostvars") or {}), state.get("entry"))
            return R.elected(state, builder, hostname, check_mode, state.get("backend") == R.INDEX)
        if args["look_in_cache"]:
            cached = [path for path in wheel_build.cached_wheels(state["cache_entry"]) if os.path.isfile(path)]
            outcome = R.cache_outcome(state, cached, args["builder"], hostname, check_mode)
            if outcome["problem"] and not check_mode and state.get("install", True):
                outcome.update(failed=True, msg=outcome["problem"])
            return outcome
        if args["jobs"] is not None:
            try:
                return R.build_jobs(state, args["jobs"], task_vars.get("ansible_facts") or {})
            except (KeyError, TypeError, ValueError) as exc:
                raise wheel_build.WheelBuildError("wheel_build_jobs is not the jobs request of a build plan "
                                                  "(_build_env.jobs_request): %s %s" % (type(exc).__name__, exc))
        if args["built_wheel"] is not None:
            return {"index_filename": wheel_index.tagged_filename(os.path.basename(args["built_wheel"]), state["entry"])}
        if args["index_wheels"] is not None:
            return R.index_outcome(args["index_wheels"], args["compiled"], state.get("install", True))
        return {"failed": True, "msg": "wheel_build_state: " + STEPS}
