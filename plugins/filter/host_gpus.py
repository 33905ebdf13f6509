# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host_gpus filter; documentation in host_gpus.yml next to this file. The code is module_utils/host_gpus.py.

Each filter imports its module_utils when it runs: to find one filter of the collection, Ansible loads every filter
file of it, in every worker."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError


def host_gpus(facts):
    """ansible_facts in, the host's GPUs (count, compute_caps, driver_version) out."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import host_gpus as gpus
    if not isinstance(facts, dict):
        raise AnsibleFilterError("host_gpus: the input must be ansible_facts (a dict), got %s" % type(facts).__name__)
    return gpus.host_gpus(facts)


class FilterModule(object):
    def filters(self):
        return {"host_gpus": host_gpus}
