# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""wheel_build filters; documentation in wheel_build_plan.yml, wheel_build_builder.yml,
wheel_build_cache_problem.yml and wheel_build_push_missing.yml next to this file. The decisions are in module_utils/wheel_build.py.

Each filter imports its module_utils when it runs: to find one filter of the collection, Ansible loads every filter
file of it, in every worker."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError


def wheel_build_plan(inputs):
    """The wheel_build_* variables (without the prefix) in, this host's plan for its key out."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_build
    if not isinstance(inputs, dict):
        raise AnsibleFilterError("wheel_build_plan: the input must be a dict of the wheel_build_* variables")
    try:
        return wheel_build.plan(dict(inputs))
    except wheel_build.WheelBuildError as exc:
        raise AnsibleFilterError(str(exc))


def wheel_build_builder(batch, hostvars, entry):
    """The host of batch that builds entry ('' when none needs it), from each host's wheel_build_state."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_build
    if not isinstance(batch, (list, tuple)) or not all(isinstance(host, str) for host in batch):
        raise AnsibleFilterError("wheel_build_builder: the input must be the list of host names (ansible_play_batch)")
    if not hasattr(hostvars, "get") or not isinstance(entry, str):
        raise AnsibleFilterError("wheel_build_builder: expects hostvars and the key's cache entry (a string), got %s "
                                 "and %s" % (type(hostvars).__name__, type(entry).__name__))
    states = {}
    for host in batch:
        try:
            states[host] = hostvars[host].get("wheel_build_state")
        except (KeyError, AttributeError, TypeError):
            states[host] = None
    return wheel_build.builder(list(batch), states, entry)


def wheel_build_cache_problem(state, wheels, name, builder="", log=""):
    """'' when the key's cache entry holds one wheel, else the message to stop with."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_build
    if not isinstance(state, dict) or not isinstance(state.get("cache_entry"), str) or not isinstance(wheels, (list, tuple)):
        raise AnsibleFilterError("wheel_build_cache_problem: expects a wheel_build_plan (with its cache_entry) and a "
                                 "list of wheels")
    if not all(isinstance(value, str) for value in (name, builder or "", log or "")):
        raise AnsibleFilterError("wheel_build_cache_problem: name, builder and log must be strings")
    return wheel_build.cache_problem(state, list(wheels), name, builder, log)


def wheel_build_push_missing(local_files, remote_files):
    """The controller files (find results) that the host's directory lacks (same name and size)."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_build
    if not isinstance(local_files, (list, tuple)) or not isinstance(remote_files, (list, tuple)):
        raise AnsibleFilterError("wheel_build_push_missing: expects two lists of find results")
    try:
        return wheel_build.files_to_push(list(local_files), list(remote_files))
    except wheel_build.WheelBuildError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return {
            "wheel_build_plan": wheel_build_plan,
            "wheel_build_builder": wheel_build_builder,
            "wheel_build_cache_problem": wheel_build_cache_problem,
            "wheel_build_push_missing": wheel_build_push_missing,
        }
