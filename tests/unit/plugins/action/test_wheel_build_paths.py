# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""wheel_build's one task path: the plan's backend task files (plan.tasks) and the election's lock steps.

The role runs one sequence for both backends (tasks/run.yml); the steps that differ are the task files the plan
names (build, keep, install) and the election's locks / waits (the fleet's index: the elected host takes the key's
lock, the others wait for its wheel). fleet_lock's common arguments are given once, as main.yml's module_defaults.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

from ansible_collections.gpufleet.llm_stack.plugins.action import wheel_build_state as action_module
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _wheel_build_role as R
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_build as W
from action_task import new_action

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))
TASKS = os.path.join(REPO, "roles", "wheel_build", "tasks")
KEY = {"flash_attn": "2.8.3", "torch": "2.13.0+cpu", "python_abi": "cp311", "cxx11_abi": True, "archs": "80"}
LABEL = "flash-attn-2.8.3-torch2.13.0_cpu-cp311-sm80"
ENTRY = W.entry_name(LABEL, "flash-attn", KEY)
INDEX_URL = "https://cache.example:8443/"
LOCK_ARGS = {"entry", "name", "lock_dir", "ledger", "packages_dir", "index_url", "owner"}


def make_inputs(tmp_path, backend):
    index = backend == R.INDEX
    return {"name": "flash-attn", "key": dict(KEY), "label": LABEL, "requirement": "flash-attn==2.8.3",
            "cache_dir": str(tmp_path / "cache"), "venv": "/opt/llm/venv", "work_dir": "/opt/llm/build",
            "wheel_dir": "/opt/llm/wheels", "log_dir": "/var/log/llm-stack", "installed_url": "",
            "prefer_builder": False, "install": True, "jobs": {}, "index_url": INDEX_URL if index else "",
            "cache_host": "cache" if index else "", "cache_host_vars": {}, "index_ca_cert": ""}


def run(args, check_mode=False, hostname="gpu-a", **task_vars):
    action = new_action(action_module, args, check_mode=check_mode)
    variables = {"inventory_hostname": hostname, "groups": {"all": ["gpu-a", "gpu-b", "cache"]}, "ansible_facts": {}}
    variables.update(task_vars)
    return action.run(task_vars=variables)


def tasks_of(name):
    with open(os.path.join(TASKS, name)) as handle:
        return yaml.safe_load(handle) or []


def walk(tasks):
    for task in tasks or []:
        yield task
        for section in ("block", "rescue", "always"):
            yield from walk(task.get(section))


@pytest.mark.parametrize("backend, files", [
    (R.CONTROLLER_CACHE, {"build": "build.yml", "keep": "cache.yml", "install": "install.yml"}),
    (R.INDEX, {"build": "index_build.yml", "keep": "publish.yml", "install": "install_index.yml"}),
])
@pytest.mark.parametrize("check_mode", [False, True])
def test_the_plan_names_the_task_files_of_its_backend(tmp_path, backend, files, check_mode):
    result = run({"inputs": make_inputs(tmp_path, backend)}, check_mode=check_mode)
    assert not result.get("failed"), result
    plan = result["plan"]
    assert (plan["backend"], plan["tasks"], plan["needs_build"]) == (backend, files, True)
    for name in files.values():
        assert os.path.isfile(os.path.join(TASKS, name)), name


def test_a_plan_with_a_bad_index_setting_fails_as_before(tmp_path):
    inputs = dict(make_inputs(tmp_path, R.INDEX), cache_host="")
    result = run({"inputs": inputs})
    assert result["failed"] and "plan" not in result and result["msg"]


def states(**plans):
    return {host: {"wheel_build_state": plan} for host, plan in plans.items()}


@pytest.mark.parametrize("backend", [R.CONTROLLER_CACHE, R.INDEX])
@pytest.mark.parametrize("check_mode", [False, True])
def test_only_the_index_takes_a_lock_or_waits(tmp_path, backend, check_mode):
    plan = run({"inputs": make_inputs(tmp_path, backend)})["plan"]
    hostvars = states(**{"gpu-a": dict(plan, preferred=False), "gpu-b": dict(plan, preferred=True)})
    batch = ["gpu-a", "gpu-b"]
    index = backend == R.INDEX
    builder = run({"plan": plan, "elect": True}, check_mode=check_mode, hostname="gpu-b",
                  ansible_play_batch=batch, hostvars=hostvars)
    other = run({"plan": plan, "elect": True}, check_mode=check_mode, hostname="gpu-a",
                ansible_play_batch=batch, hostvars=hostvars)
    assert (builder["builder"], builder["builds_here"], builder["locks"], builder["waits"]) == ("gpu-b", True, index, False)
    assert (other["builder"], other["builds_here"], other["locks"], other["waits"]) == ("gpu-b", False, False, index)


def test_a_host_without_a_build_neither_locks_nor_builds():
    elected = R.elected({"needs_build": False, "label": LABEL, "entry": ENTRY}, "gpu-b", "gpu-b", False, True)
    assert (elected["builder"], elected["builds_here"], elected["locks"]) == ("", False, False)


def test_the_yaml_acts_on_the_plans_task_files():
    run_yml = list(walk(tasks_of("run.yml")))
    includes = [t["ansible.builtin.include_tasks"] for t in run_yml if "ansible.builtin.include_tasks" in t]
    assert "{{ wheel_build_state.tasks.build }}" in includes and "{{ wheel_build_state.tasks.install }}" in includes
    keep = [t for t in walk(tasks_of("build.yml")) if "ansible.builtin.include_tasks" in t]
    assert "{{ wheel_build_state.tasks.keep }}" in [t["ansible.builtin.include_tasks"] for t in keep]
    # One path: main.yml includes run.yml once, and no task file of the old fork is left.
    main = [t for t in walk(tasks_of("main.yml")) if "ansible.builtin.include_tasks" in t]
    assert [t["ansible.builtin.include_tasks"] for t in main] == ["run.yml"]
    assert not os.path.exists(os.path.join(TASKS, "index.yml"))


def test_fleet_locks_common_arguments_are_given_once():
    defaults = [t["module_defaults"]["gpufleet.llm_stack.fleet_lock"] for t in walk(tasks_of("main.yml"))
                if "gpufleet.llm_stack.fleet_lock" in (t.get("module_defaults") or {})]
    assert len(defaults) == 1 and set(defaults[0]) == LOCK_ARGS
    assert set(defaults[0]["owner"]) == {"host", "job"}
    calls = []
    for name in sorted(os.listdir(TASKS)):
        calls += [t["gpufleet.llm_stack.fleet_lock"] for t in walk(tasks_of(name)) if "gpufleet.llm_stack.fleet_lock" in t]
    assert sorted(call["state"] for call in calls) == ["acquire", "acquire", "publish", "query", "release", "release"]
    assert [call for call in calls if LOCK_ARGS & set(call)] == []


@pytest.mark.parametrize("backend", [R.CONTROLLER_CACHE, R.INDEX])
def test_without_an_install_the_result_still_says_who_compiled(tmp_path, backend):
    """wheel_build_install false (a build host's builds for the others): nothing is installed, and the result says
    whether this host compiled the key's wheel and names it; the install step's file is included all the same."""
    plan = run({"inputs": dict(make_inputs(tmp_path, backend), install=False)})["plan"]
    assert plan["install"] is False
    wheel = "flash_attn-2.8.3-py3-none-any.whl"
    if backend == R.CONTROLLER_CACHE:
        built = R.cache_outcome(plan, ["/c/%s" % wheel], "gpu-a", "gpu-a", False)
        other = R.cache_outcome(plan, ["/c/%s" % wheel], "gpu-b", "gpu-a", False)
        missing = R.cache_outcome(plan, [], "gpu-b", "gpu-a", True)
        assert missing["result"] == R.result("none", False, None, False) and not missing["install"]
    else:
        built = R.index_outcome([{"filename": wheel}], True, install=False)
        other = R.index_outcome([None, {"filename": wheel}], False, install=False)
        assert R.index_outcome([None], False, install=False)["result"] is None
        # With an install, as before.
        assert R.index_outcome([{"filename": wheel}], False)["result"]["source"] == R.INDEX
    assert built["result"] == R.result("built", True, wheel, False)
    assert other["result"] == R.result("none", False, wheel, False)
    # The install step's task file is included whatever wheel_build_install says: it gives the result.
    include = [t for t in walk(tasks_of("run.yml")) if "{{ wheel_build_state.tasks.install }}" in str(t)]
    assert include and "when" not in include[0]


def test_with_an_install_the_cache_outcome_is_as_before(tmp_path):
    plan = run({"inputs": make_inputs(tmp_path, R.CONTROLLER_CACHE)})["plan"]
    outcome = R.cache_outcome(plan, ["/c/w.whl"], "gpu-b", "gpu-a", False)
    assert outcome["install"] and outcome["result"] == R.result(R.CONTROLLER_CACHE, False, "w.whl", False)
    assert R.cache_outcome(plan, [], "gpu-b", "gpu-a", True)["result"] is None
