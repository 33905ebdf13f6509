# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vllm_source writes its pip constraint and its record into the venv only after making the directory, and the
record before a failed check stops the host (the next run checks again, vllm_serve refuses a failed record).

Found on the H200 (docs/validation/h200-serving.md): a venv the torch role
did not make has no ``.llm_stack`` directory, and the copy of the constraint
stopped the install. The test fleet's venvs all come from the torch role, so
the order of the tasks is checked here, in every task file that writes the
constraint.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import pytest
import yaml

TASKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "roles", "vllm_source", "tasks")


def flat(tasks):
    for task in tasks or []:
        yield task
        for key in ("block", "rescue", "always"):
            yield from flat(task.get(key))


def writers_of(path_key):
    found = []
    for name in sorted(os.listdir(TASKS)):
        with open(os.path.join(TASKS, name)) as handle:
            tasks = list(flat(yaml.safe_load(handle)))
        for index, task in enumerate(tasks):
            copy = task.get("ansible.builtin.copy") or {}
            if path_key in str(copy.get("dest", "")):
                found.append((name, tasks, index))
    return found


def writers_of_the_constraint():
    return writers_of("constraints_path")


def test_the_constraint_and_the_record_are_written_somewhere():
    assert {name for name, dummy, dummy2 in writers_of_the_constraint()} >= {"wheel_install.yml", "source_tree.yml"}
    assert {name for name, dummy, dummy2 in writers_of("record_path")} == {"verify.yml"}


@pytest.mark.parametrize("name, tasks, index", writers_of_the_constraint() + writers_of("record_path"))
def test_its_directory_is_made_first(name, tasks, index):
    key = "record_path" if "record_path" in str(tasks[index]) else "constraints_path"
    made = [task for task in tasks[:index]
            if (task.get("ansible.builtin.file") or {}).get("state") == "directory"
            and "%s | dirname" % key in str((task.get("ansible.builtin.file") or {}).get("path"))]
    assert made, "%s writes the file before it makes its directory" % name


def test_the_record_is_written_before_the_checks_fail_the_host():
    with open(os.path.join(TASKS, "verify.yml")) as handle:
        tasks = list(flat(yaml.safe_load(handle)))
    names = [("copy" if "ansible.builtin.copy" in task else "assert" if "ansible.builtin.assert" in task else "")
             for task in tasks]
    assert names.index("copy") < names.index("assert")


# Filters a user may call in their own playbooks; every other decision is the action vllm_source_state's.
PUBLIC_FILTERS = ("cuda_arch_list", "host_gpus", "mask_credentials", "rollout_setting", "rollout_problems",
                  "has_credentials", "proxy_first_fetchers")


def test_every_decision_is_the_actions_no_internal_filter_is_called():
    role = os.path.dirname(TASKS)
    called = []
    for folder in ("tasks", "defaults", "vars", "meta"):
        for name in sorted(os.listdir(os.path.join(role, folder))):
            with open(os.path.join(role, folder, name)) as handle:
                text = handle.read()
            called += [(folder, name, found) for found in re.findall(r"(?:\||\bis)\s*gpufleet\.llm_stack\.([a-z_]+)", text)
                       if found not in PUBLIC_FILTERS]
    assert called == []


def test_the_build_hands_wheel_build_the_plans_jobs_request():
    with open(os.path.join(TASKS, "build.yml")) as handle:
        tasks = list(flat(yaml.safe_load(handle)))
    include = [t for t in tasks if (t.get("ansible.builtin.include_role") or {}).get("name") == "gpufleet.llm_stack.wheel_build"]
    assert len(include) == 1
    passed = include[0]["vars"]
    assert passed["wheel_build_jobs"] == "{{ vllm_source_plan.jobs_request }}"
    assert "wheel_build_environment" not in passed and "wheel_build_log_header" not in passed
