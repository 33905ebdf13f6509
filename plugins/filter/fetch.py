# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fetch_command filter; documentation in fetch_command.yml next to this file. The code is in
module_utils/fetch_url.py.

Each filter imports its module_utils when it runs: to find one filter of the collection, Ansible loads every filter
file of it, in every worker."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError


def fetch_command(url, dest, python="python3"):
    """The argv and environment of a run_logged download of url to dest (the URL only in the environment)."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import fetch_url
    try:
        return fetch_url.fetch_command(python, url, dest)
    except fetch_url.FetchError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return {"fetch_command": fetch_command}
