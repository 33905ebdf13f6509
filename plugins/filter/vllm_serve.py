# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vllm_serve filters; documentation in vllm_serve_plan.yml and vllm_serve_env_file.yml next to this file.
The decisions are in module_utils/vllm_serve.py.

Each filter imports its module_utils when it runs: to find one filter of the collection, Ansible loads every filter
file of it, in every worker."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError


def vllm_serve_plan(inputs, facts=None, info=None, api_key=None, hf_token=None):
    """The role's variables in, the serving plan of this host out (no secrets in it)."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm_serve
    try:
        return vllm_serve.plan(inputs, facts=facts, info=info, api_key=api_key, hf_token=hf_token)
    except vllm_serve.VllmServeError as exc:
        raise AnsibleFilterError("vllm_serve_plan: %s" % exc)


def vllm_serve_env_file(plan, api_key, hf_token=""):
    """A plan and the secrets in, the text of the 0600 environment file out."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm_serve
    try:
        return vllm_serve.env_file_text(plan, api_key, hf_token)
    except vllm_serve.VllmServeError as exc:
        raise AnsibleFilterError("vllm_serve_env_file: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {"vllm_serve_plan": vllm_serve_plan, "vllm_serve_env_file": vllm_serve_env_file}
