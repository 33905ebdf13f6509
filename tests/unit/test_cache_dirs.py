# -*- coding: utf-8 -*-
"""Root never writes into a directory a service user controls: the cache host's roles (fleet_cache, hf_mirror).

fleet_cache: root's run_logged (the pypiserver install job) keeps its log and its .pid/.rc job files in the log
directory, which is root's; the index (fleet-index, network-facing) owns and writes only its subdirectory index/.
A job file the index could replace would make root's job_status/stop_job stop a process group it names.
hf_mirror: the mirror's user owns its cache and log directories, and root writes no file into either.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import posixpath
import re

import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WRITERS = ("ansible.builtin.template", "ansible.builtin.copy", "gpufleet.llm_stack.run_logged")


def _tasks(role):
    found = []
    directory = os.path.join(REPO, "roles", role, "tasks")
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name)) as handle:
            found.extend(_flat(yaml.safe_load(handle) or []))
    return found


def _flat(tasks):
    for task in tasks:
        for inner in task.get("block", []) + task.get("rescue", []) + task.get("always", []):
            yield from _flat([inner])
        yield task


def _norm(path):
    return re.sub(r"\{\{\s*(.*?)\s*\}\}", r"{{ \1 }}", path)


def _owners(role):
    """Each directory the role's file tasks make, with the owners they give it."""
    owned = {}
    for task in _tasks(role):
        args = task.get("ansible.builtin.file")
        if not args or args.get("state") != "directory":
            continue
        items = task.get("loop") if "{{ item" in args["path"] else [{"path": args["path"], "owner": args.get("owner")}]
        for item in items:
            owned.setdefault(_norm(item["path"]), set()).add(_norm(item["owner"]))
    return owned


def _written_by_root(role):
    """The files root writes: template and copy destinations, run_logged's log and its job files next to it."""
    paths = []
    for task in _tasks(role):
        for module in WRITERS:
            args = task.get(module)
            if args:
                paths.append(_norm(args.get("dest") or args["log"]))
    return paths


def _inside(path, directory):
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _user_owned(role, user):
    return sorted(path for path, owners in _owners(role).items() if user in owners)


def test_the_install_job_logs_in_a_directory_of_root_s_only():
    jobs = [_norm(task["gpufleet.llm_stack.run_logged"]["log"]) for task in _tasks("fleet_cache")
            if "gpufleet.llm_stack.run_logged" in task]
    assert jobs == ["{{ fleet_cache_log_dir }}/pypiserver-install.log", "{{ fleet_cache_log_dir }}/devpi-install.log"]
    owned = _owners("fleet_cache")
    for log in jobs:
        assert owned[posixpath.dirname(log)] == {"root"}, "the job files sit next to the log: %s" % log
        assert not any(_inside(log, path) for path in _user_owned("fleet_cache", "{{ fleet_cache_user }}")), log


def test_the_index_s_user_owns_its_log_subdirectory_only():
    assert _user_owned("fleet_cache", "{{ fleet_cache_user }}") == ["{{ fleet_cache_log_dir }}/index"]


def test_root_writes_nothing_into_the_index_s_directory():
    mine = _user_owned("fleet_cache", "{{ fleet_cache_user }}")
    written = _written_by_root("fleet_cache")
    assert "{{ fleet_cache_log_dir }}/pypiserver-install.log" in written
    assert [path for path in written if any(_inside(path, directory) for directory in mine)] == []


def test_the_index_writes_and_logs_in_its_own_subdirectory():
    with open(os.path.join(REPO, "roles", "fleet_cache", "templates", "fleet-index.service.j2")) as handle:
        text = handle.read()
    assert re.findall(r"^ReadWritePaths=(.*)$", text, re.M) == ["{{ fleet_cache_log_dir }}/index"]
    exec_start = re.findall(r"^ExecStart=(.*)$", text, re.M)
    assert len(exec_start) == 1
    assert re.findall(r"--log-file ((?:{{ \w+ }}|\S)+)", exec_start[0]) == ["{{ fleet_cache_log_dir }}/index/index.log"]


def test_root_writes_nothing_into_the_mirror_s_directories():
    mine = _user_owned("hf_mirror", "{{ hf_mirror_user }}")
    assert mine == ["{{ hf_mirror_cache_dir }}", "{{ hf_mirror_log_dir }}"]
    written = _written_by_root("hf_mirror")
    assert "{{ hf_mirror_config_dir }}/olah.toml" in written
    assert [path for path in written if any(_inside(path, directory) for directory in mine)] == []
