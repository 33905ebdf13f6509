# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""mask_credentials filter; documentation in mask_credentials.yml next to this file.

Each filter imports its module_utils when it runs: to find one filter of the collection, Ansible loads every filter
file of it, in every worker."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError


def mask_credentials(text, secrets=None):
    """Text in, the same text with its credentials replaced by ***."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import mask_credentials as _mask
    if secrets is None:
        secrets = []
    elif isinstance(secrets, str):
        secrets = [secrets]
    elif not isinstance(secrets, (list, tuple)):
        raise AnsibleFilterError("mask_credentials: secrets must be a list of strings")
    return _mask(text, secrets)


class FilterModule(object):
    def filters(self):
        return {"mask_credentials": mask_credentials}
