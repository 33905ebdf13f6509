# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roles that include wheel_build hand it the same directory and installed URL their plan decided on.

flash_attn_build and vllm_source decide "the key's wheel is installed" from their own plan (the plan's wheel
directory and pip's record of the installed file, wheel_build.installed_wheel); wheel_build decides it again from
wheel_build_wheel_dir and wheel_build_installed_url. When the two differ, a re-run that should change nothing
reinstalls the wheel: the vllm scenario's idempotence step caught a caller that passed the key's directory
instead of the installed file.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

ROLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "roles")


def includes_of_wheel_build(path):
    def walk(tasks):
        for task in tasks or []:
            yield task
            for key in ("block", "rescue", "always"):
                yield from walk(task.get(key))
    with open(path) as handle:
        tasks = list(walk(yaml.safe_load(handle)))
    return [t for t in tasks if (t.get("ansible.builtin.include_role") or {}).get("name") == "gpufleet.llm_stack.wheel_build"
            and "tasks_from" not in t["ansible.builtin.include_role"]]


@pytest.mark.parametrize("role, plan, url", [
    ("flash_attn_build", "flash_attn_build_plan", "flash_attn_build_plan.installed_url"),
    ("vllm_source", "vllm_source_plan", "vllm_source_plan.wheel_build_request.installed_url"),
])
def test_the_include_passes_the_plans_directory_and_installed_file(role, plan, url):
    found = includes_of_wheel_build(os.path.join(ROLES, role, "tasks", "build.yml"))
    assert len(found) == 1
    passed = found[0]["vars"]
    assert passed["wheel_build_wheel_dir"] == "{{ %s.wheel_dir }}" % plan
    assert passed["wheel_build_installed_url"] == "{{ %s }}" % url
