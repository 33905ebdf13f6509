# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the fleet's package index; documentation in wheel_index_filename.yml,
wheel_index_problems.yml, wheel_index_server_problems.yml and wheel_index_server_warnings.yml next to this file. The rules are in
module_utils/wheel_index.py.

Each filter imports its module_utils when it runs: to find one filter of the collection, Ansible loads every filter
file of it, in every worker."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError


def wheel_index_filename(filename, entry):
    """The name of a build's wheel on the index: its own name with the key's build tag."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_index
    if not isinstance(filename, str) or not isinstance(entry, str):
        raise AnsibleFilterError("wheel_index_filename: expects a wheel's file name and a wheel_build cache entry "
                                 "(two strings), got %s and %s" % (type(filename).__name__, type(entry).__name__))
    try:
        return wheel_index.tagged_filename(filename, entry)
    except wheel_index.WheelIndexError as exc:
        raise AnsibleFilterError(str(exc))


def wheel_index_problems(index_url, cache_host, hosts, cache_host_vars=None, ca_cert=None):
    """The problems of the index settings ([] when none)."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_index
    if not isinstance(hosts, (list, tuple)):
        raise AnsibleFilterError("wheel_index_problems: hosts must be the list of inventory hosts (groups['all'])")
    if cache_host_vars is not None and not isinstance(cache_host_vars, dict):
        raise AnsibleFilterError("wheel_index_problems: cache_host_vars (llm_stack_cache_host_vars) must be a dict")
    return wheel_index.config_problems(index_url, cache_host, list(hosts), cache_host_vars, ca_cert)


def wheel_index_server_problems(settings):
    """The problems of the cache host's index settings ([] when none)."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_index
    try:
        return wheel_index.server_problems(settings)
    except wheel_index.WheelIndexError as exc:
        raise AnsibleFilterError("wheel_index_server_problems: %s" % exc)


def wheel_index_server_warnings(settings):
    """The warnings on the cache host's index settings ([] when none): the index listening on every address."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_index
    try:
        return wheel_index.server_warnings(settings)
    except wheel_index.WheelIndexError as exc:
        raise AnsibleFilterError("wheel_index_server_warnings: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {
            "wheel_index_filename": wheel_index_filename,
            "wheel_index_problems": wheel_index_problems,
            "wheel_index_server_problems": wheel_index_server_problems,
            "wheel_index_server_warnings": wheel_index_server_warnings,
        }
