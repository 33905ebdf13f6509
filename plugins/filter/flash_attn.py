# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""flash-attn build filters; documentation in flash_attn_build_plan.yml, flash_attn_build_no_log.yml,
flash_attn_build_jobs.yml, flash_attn_build_result.yml and flash_attn_check_result.yml next to this file. The
decisions are in module_utils/flash_attn.py.

Each filter imports its module_utils when it runs: to find one filter of the collection, Ansible loads every filter
file of it, in every worker."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError


def _mapping(name, value, allow_none=True):
    if value is None and allow_none:
        return None
    if not isinstance(value, dict):
        raise AnsibleFilterError("%s must be a dict, got %s" % (name, type(value).__name__))
    return value


def flash_attn_build_plan(inputs, facts=None, torch=None, nvcc=None, group=None):
    """The role's variables in, the build plan of this host out."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import flash_attn
    _mapping("flash_attn_build_plan: the input (the role's variables)", inputs, allow_none=False)
    _mapping("flash_attn_build_plan: facts", facts)
    _mapping("flash_attn_build_plan: torch (a torch_info result)", torch)
    _mapping("flash_attn_build_plan: nvcc (nvcc_facts' ansible_facts)", nvcc)
    if group is not None and not isinstance(group, (list, tuple)):
        raise AnsibleFilterError("flash_attn_build_plan: group must be a list of plans, got %s" % type(group).__name__)
    try:
        return flash_attn.plan(inputs, facts=facts, torch=torch, nvcc=nvcc, group=group)
    except flash_attn.FlashAttnError as exc:
        raise AnsibleFilterError("flash_attn_build_plan: %s" % exc)


def flash_attn_build_no_log(inputs):
    """The role's variables (or a plan) in, whether the tasks that act on them stay out of the logs out."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import flash_attn
    _mapping("flash_attn_build_no_log: the input (the role's variables or a plan)", inputs, allow_none=False)
    return flash_attn.no_log(inputs)


def flash_attn_build_jobs(plan, facts=None):
    """A plan made with the venv's torch in, the build's environment with MAX_JOBS and NVCC_THREADS out."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import flash_attn
    _mapping("flash_attn_build_jobs: facts", facts)
    try:
        return flash_attn.with_jobs(plan, facts)
    except flash_attn.FlashAttnError as exc:
        raise AnsibleFilterError("flash_attn_build_jobs: %s" % exc)


def flash_attn_build_result(plan, outcome=None):
    """The host's last plan and wheel_build's account in, this host's flash-attn for the fleet report out."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import flash_attn
    _mapping("flash_attn_build_result: the input (a plan)", plan, allow_none=False)
    try:
        return flash_attn.build_result(plan, outcome)
    except flash_attn.FlashAttnError as exc:
        raise AnsibleFilterError("flash_attn_build_result: %s" % exc)


def flash_attn_check_result(result):
    """The registered result of files/flash_attn_check.py in, its verdict out."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import flash_attn
    _mapping("flash_attn_check_result: the input (a registered script result)", result, allow_none=False)
    return flash_attn.check_result(result.get("stdout"), result.get("rc"), result.get("stderr") or "")


class FilterModule(object):
    def filters(self):
        return {
            "flash_attn_build_plan": flash_attn_build_plan,
            "flash_attn_build_no_log": flash_attn_build_no_log,
            "flash_attn_build_jobs": flash_attn_build_jobs,
            "flash_attn_build_result": flash_attn_build_result,
            "flash_attn_check_result": flash_attn_check_result,
        }
