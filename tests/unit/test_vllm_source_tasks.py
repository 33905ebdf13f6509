# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vllm_source writes its pip constraint into the venv only after making the directory.

Found on the H200 (docs/validation/h200-serving.md): a venv the torch role
did not make has no ``.llm_stack`` directory, and the copy of the constraint
stopped the install. The test fleet's venvs all come from the torch role, so
the order of the tasks is checked here, in every task file that writes the
constraint.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

TASKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "roles", "vllm_source", "tasks")


def flat(tasks):
    for task in tasks or []:
        yield task
        for key in ("block", "rescue", "always"):
            yield from flat(task.get(key))


def writers_of_the_constraint():
    found = []
    for name in sorted(os.listdir(TASKS)):
        with open(os.path.join(TASKS, name)) as handle:
            tasks = list(flat(yaml.safe_load(handle)))
        for index, task in enumerate(tasks):
            copy = task.get("ansible.builtin.copy") or {}
            if "constraints_path" in str(copy.get("dest", "")):
                found.append((name, tasks, index))
    return found


def test_the_constraint_is_written_somewhere():
    assert {name for name, dummy, dummy2 in writers_of_the_constraint()} >= {"wheel.yml", "source_tree.yml"}


@pytest.mark.parametrize("name, tasks, index", writers_of_the_constraint())
def test_its_directory_is_made_first(name, tasks, index):
    made = [task for task in tasks[:index]
            if (task.get("ansible.builtin.file") or {}).get("state") == "directory"
            and "constraints_path | dirname" in str((task.get("ansible.builtin.file") or {}).get("path"))]
    assert made, "%s writes the constraint before it makes its directory" % name
