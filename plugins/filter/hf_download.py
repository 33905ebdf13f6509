# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hf_download_command, hf_seed_host and hf_fetch_problems filters; documentation in hf_download_command.yml,
hf_seed_host.yml and hf_fetch_problems.yml next to this file. The code is module_utils/hf_download.py, which the
hf_download module uses too.

Each filter imports its module_utils when it runs: to find one filter of the collection, Ansible loads every filter
file of it, in every worker."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError


def hf_download_command(params, progress_bars=True):
    """argv and environment of ``hf download`` for run_logged (the token only in the environment)."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import hf_download
    if not isinstance(params, dict):
        raise AnsibleFilterError("hf_download_command: the input must be a dict of hf_download's options")
    try:
        result = hf_download.command(dict(params), progress_bars=bool(progress_bars))
    except hf_download.InputError as exc:
        raise AnsibleFilterError("hf_download_command: %s" % exc)
    result.pop("secrets")
    return result


def hf_seed_host(play_hosts, complete, chosen=""):
    """The host that downloads first: the one chosen, else the first of the play whose copy is not complete."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import hf_download
    if not isinstance(play_hosts, (list, tuple)) or not all(isinstance(host, str) for host in play_hosts):
        raise AnsibleFilterError("hf_seed_host: the input must be the list of host names (ansible_play_batch)")
    if not isinstance(complete, (list, tuple)):
        raise AnsibleFilterError("hf_seed_host: complete must be a list, one flag per host")
    if chosen is not None and not isinstance(chosen, str):
        raise AnsibleFilterError("hf_seed_host: the chosen host (qwen_model_fetch_seed_host) must be a host name, "
                                 "got %s" % type(chosen).__name__)
    try:
        return hf_download.seed_host(play_hosts, complete, chosen or "")
    except hf_download.InputError as exc:
        raise AnsibleFilterError("hf_seed_host: %s" % exc)


def hf_fetch_problems(settings, play_hosts=None):
    """What is wrong with qwen_model_fetch's variables ([] when nothing)."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import hf_download
    if play_hosts is not None and not isinstance(play_hosts, (list, tuple)):
        raise AnsibleFilterError("hf_fetch_problems: play_hosts must be a list (ansible_play_hosts_all)")
    try:
        return hf_download.fetch_problems(settings, play_hosts)
    except hf_download.InputError as exc:
        raise AnsibleFilterError("hf_fetch_problems: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {"hf_download_command": hf_download_command, "hf_seed_host": hf_seed_host,
                "hf_fetch_problems": hf_fetch_problems}
