# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roles that include wheel_build keep to its contract.

- The include hands wheel_build the same wheel directory and installed URL the caller's plan decided on.
  flash_attn_build and vllm_source decide "the key's wheel is installed" from their own plan (the plan's wheel
  directory and pip's record of the installed file, wheel_build.installed_wheel); wheel_build decides it again from
  wheel_build_wheel_dir and wheel_build_installed_url. When the two differ, a re-run that should change nothing
  reinstalls the wheel: the vllm scenario's idempotence step caught a caller that passed the key's directory
  instead of the installed file.
- The build's environment and log header are worked out on the builder, once its vCPUs and memory are known, from
  the caller's jobs request (wheel_build_jobs, plain data of the caller's plan): the caller passes that, never an
  environment or a header of its own (wheel_build_environment, wheel_build_log_header are gone).
- Of wheel_build's facts the caller reads only its result, wheel_build_result.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import pytest
import yaml

ROLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "roles")
CALLERS = ("flash_attn_build", "vllm_source")
REFERENCE = re.compile(r"^\{\{ *([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z_][A-Za-z0-9_]*)+) *\}\}$")
# A variable, not an attribute of the caller's own plan (vllm_source_plan.wheel_build_request).
WHEEL_BUILD_VARIABLE = re.compile(r"(?<![.\w])wheel_build_[a-z0-9_]+")
# The entry point push_dir's own inputs, and the main entry point's inputs the caller sets in the include's vars.
PUSH_DIR_INPUTS = {"wheel_build_push_src", "wheel_build_push_dest"}
RESULT = "wheel_build_result"
# The includes of wheel_build's main entry point per caller: flash_attn_build's own key, and on a build host
# (flash_attn_build_for_fleet) the other hosts' keys, one include per key (tasks/fleet_build.yml).
INCLUDES = {"flash_attn_build": 2, "vllm_source": 1}


def walk(tasks):
    for task in tasks or []:
        if not isinstance(task, dict):
            continue
        yield task
        for key in ("block", "rescue", "always"):
            yield from walk(task.get(key))


def task_files(role):
    folder = os.path.join(ROLES, role, "tasks")
    for name in sorted(os.listdir(folder)):
        if name.endswith((".yml", ".yaml")):
            with open(os.path.join(folder, name)) as handle:
                yield name, list(walk(yaml.safe_load(handle)))


def includes_of_wheel_build(role):
    return [task for dummy, tasks in task_files(role) for task in tasks
            if (task.get("ansible.builtin.include_role") or {}).get("name") == "gpufleet.llm_stack.wheel_build"
            and "tasks_from" not in task["ansible.builtin.include_role"]]


def strings(node):
    if isinstance(node, dict):
        for value in node.values():
            yield from strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from strings(value)
    elif isinstance(node, str):
        yield node


@pytest.mark.parametrize("role", CALLERS)
def test_the_include_passes_the_plans_directory_and_installed_file(role):
    found = includes_of_wheel_build(role)
    assert len(found) == INCLUDES[role]
    for include in found:
        passed = include["vars"]
        wheel_dir = REFERENCE.match(passed["wheel_build_wheel_dir"].strip())
        installed_url = REFERENCE.match(passed["wheel_build_installed_url"].strip())
        assert wheel_dir and installed_url, passed
        # One plan decides both: the plan's wheel_dir, and the installed file pip recorded as that plan read it.
        assert wheel_dir.group(2) == ".wheel_dir"
        assert installed_url.group(2).endswith(".installed_url")
        assert wheel_dir.group(1) == installed_url.group(1)


@pytest.mark.parametrize("role", CALLERS)
def test_the_include_passes_the_plans_jobs_request_and_no_environment(role):
    for include in includes_of_wheel_build(role):
        passed = include["vars"]
        assert "wheel_build_jobs" in passed
        assert not {"wheel_build_environment", "wheel_build_log_header"} & set(passed)
        # Plain data of the caller's plan: one reference (a fact or a plan's field), no filter.
        assert re.match(r"^\{\{ *[A-Za-z_][A-Za-z0-9_.]* *\}\}$", passed["wheel_build_jobs"].strip()), \
            passed["wheel_build_jobs"]


def test_a_build_hosts_includes_install_nothing_and_keep_the_result():
    """flash_attn_build's builds for the other hosts install nothing here, and keep wheel_build's result per key."""
    found = [include for include in includes_of_wheel_build("flash_attn_build")
             if include["vars"].get("wheel_build_install") is False]
    assert len(found) == 1
    tasks = dict(task_files("flash_attn_build"))["fleet_build.yml"]
    kept = [task for task in tasks if "ansible.builtin.set_fact" in task]
    assert kept and RESULT in kept[0]["ansible.builtin.set_fact"]["flash_attn_build_fleet_built"]


@pytest.mark.parametrize("role", CALLERS)
def test_the_caller_reads_only_wheel_build_result(role):
    read = {}
    for name, tasks in task_files(role):
        for task in tasks:
            include = task.get("ansible.builtin.include_role") or {}
            body = dict(task)
            if include.get("name") == "gpufleet.llm_stack.wheel_build":
                # The include's vars are wheel_build's inputs (names), set from the caller's own plan (values).
                body.pop("vars", None)
                values = list(strings((task.get("vars") or {})))
            else:
                values = []
            for text in list(strings(body)) + values:
                for variable in WHEEL_BUILD_VARIABLE.findall(text):
                    read.setdefault(variable, set()).add(name)
    assert set(read) - PUSH_DIR_INPUTS - {RESULT} == set(), read
