# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rollout_setting and rollout_problems filters; documentation in the .yml files next to this file. The code is
module_utils/rollout.py.

Each filter imports its module_utils when it runs: to find one filter of the collection, Ansible loads every filter
file of it, in every worker."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError


def _hosts(hosts, name):
    if not isinstance(hosts, (list, tuple)) or not all(isinstance(host, str) for host in hosts):
        raise AnsibleFilterError("%s: the hosts must be a list of host names (ansible_play_hosts_all), got %r"
                                 % (name, hosts))
    return list(hosts)


def _listing():
    """True for --syntax-check and the --list-* options: plays are read, not run, so there is no hostvars yet."""
    from ansible import context
    args = context.CLIARGS
    return bool(args.get("syntax") or args.get("listhosts") or args.get("listtasks") or args.get("listtags"))


def rollout_setting(hostvars, hosts, name, default=None):
    """hostvars, the play's hosts and a variable name in; the play keyword's value out."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import rollout
    try:
        if hostvars is None:
            if _listing():
                return rollout.normalize(name, rollout.DEFAULTS[name] if default is None else default)
            raise AnsibleFilterError(
                "rollout_setting: hostvars is undefined: a play keyword sees it only after a first play of the"
                " playbook has run. Fix: start the playbook with the collection's rollout plays"
                " (ansible.builtin.import_playbook: gpufleet.llm_stack.rollout)")
        return rollout.setting(hostvars, _hosts(hosts, "rollout_setting"), name, default)
    except rollout.RolloutError as exc:
        raise AnsibleFilterError(str(exc))


def rollout_problems(hostvars, hosts):
    """hostvars and the play's hosts in; every problem of their rollout settings out."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import rollout
    return rollout.problems(hostvars, _hosts(hosts, "rollout_problems"))


class FilterModule(object):
    def filters(self):
        return {"rollout_setting": rollout_setting, "rollout_problems": rollout_problems}
