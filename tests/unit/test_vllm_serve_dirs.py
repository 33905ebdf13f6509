# -*- coding: utf-8 -*-
"""Root never writes into a directory the service user controls: the vllm_serve role's directories.

Root writes the log directory's files (supervisord's program and own logs, run_logged's logs and job
files); the service user owns only its cache (its home, vLLM's caches).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ROLE = os.path.join(REPO, "roles", "vllm_serve")


def _tasks(name):
    with open(os.path.join(ROLE, "tasks", name)) as handle:
        return yaml.safe_load(handle)


def _file_tasks(tasks):
    for task in tasks:
        for inner in task.get("block", []) + task.get("rescue", []) + task.get("always", []):
            yield from _file_tasks([inner])
        if "ansible.builtin.file" in task:
            yield task


def _paths(task):
    args = task["ansible.builtin.file"]
    return [args["path"]] if "path" in args and "{{ item }}" not in args["path"] else list(task.get("loop", []))


def test_only_the_cache_is_the_service_user_s():
    owned = {}
    for name in sorted(os.listdir(os.path.join(ROLE, "tasks"))):
        for task in _file_tasks(_tasks(name) or []):
            for path in _paths(task):
                owned.setdefault(path.replace(" ", ""), set()).add(task["ansible.builtin.file"].get("owner"))
    assert owned["{{vllm_serve_plan.log_dir}}"] == {"root"}
    assert owned["{{vllm_serve_plan.cache_dir}}"] == {"{{ vllm_serve_plan.user }}"}
    user_owned = sorted(path for path, owners in owned.items() if "{{ vllm_serve_plan.user }}" in owners)
    assert user_owned == ["{{vllm_serve_plan.cache_dir}}"]


def test_the_unit_lets_the_service_write_its_cache_only():
    with open(os.path.join(ROLE, "templates", "vllm.service.j2")) as handle:
        lines = [line for line in handle.read().splitlines() if line.startswith("ReadWritePaths=")]
    assert lines == ["ReadWritePaths={{ vllm_serve_plan.cache_dir }}"]
