# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hf_mirror_problems, hf_mirror_warnings and hf_mirror_cache_size_limit filters; documentation in
hf_mirror_problems.yml, hf_mirror_warnings.yml and hf_mirror_cache_size_limit.yml next to this file. The code is module_utils/hf_mirror.py.

The filter imports its module_utils when it runs: to find one filter of the collection, Ansible loads every
filter file of it, in every worker."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError


def hf_mirror_problems(settings):
    """What is wrong with the hf_mirror role's variables ([] when nothing)."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import hf_mirror
    try:
        return hf_mirror.problems(settings)
    except TypeError as exc:
        raise AnsibleFilterError("hf_mirror_problems: %s" % exc)


def hf_mirror_warnings(settings):
    """What the hf_mirror role's variables allow that the fleet does not need ([] when nothing)."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import hf_mirror
    try:
        return hf_mirror.warnings(settings)
    except TypeError as exc:
        raise AnsibleFilterError("hf_mirror_warnings: %s" % exc)


def hf_mirror_cache_size_limit(setting, mounts, cache_dir, statfs=None):
    """olah's cache-size-limit: '' (none), the size as set, or for auto 80 % of the cache directory's filesystem."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import hf_mirror
    if not isinstance(mounts, (list, tuple)) or not isinstance(cache_dir, str):
        raise AnsibleFilterError("hf_mirror_cache_size_limit: expects ansible_facts.mounts (a list) and the cache "
                                 "directory (hf_mirror_cache_dir)")
    try:
        return hf_mirror.cache_size_limit(setting, list(mounts), cache_dir, statfs)
    except TypeError as exc:
        raise AnsibleFilterError("hf_mirror_cache_size_limit: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {"hf_mirror_problems": hf_mirror_problems, "hf_mirror_warnings": hf_mirror_warnings,
                "hf_mirror_cache_size_limit": hf_mirror_cache_size_limit}
