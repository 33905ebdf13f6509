# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vllm_source filters; documentation in vllm_source_plan.yml, vllm_source_jobs.yml, vllm_source_dry_run.yml and
vllm_source_verdict.yml, vllm_source_tag_commit.yml, vllm_source_commit_problem.yml and vllm_source_record_refusal.yml
next to this file. The decisions are in module_utils/vllm.py.

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


def vllm_source_plan(inputs, facts=None, probe=None, commit=None):
    """The role's variables in, this host's plan out."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm
    _mapping("vllm_source_plan: the input (the role's variables)", inputs, allow_none=False)
    _mapping("vllm_source_plan: facts", facts)
    _mapping("vllm_source_plan: probe (a vllm_info result)", probe)
    if commit is not None and not isinstance(commit, str):
        raise AnsibleFilterError("vllm_source_plan: commit must be a string, got %s" % type(commit).__name__)
    try:
        return vllm.plan(inputs, facts=facts, probe=probe, commit=commit or None)
    except vllm.VllmError as exc:
        raise AnsibleFilterError("vllm_source_plan: %s" % exc)


def vllm_source_jobs(plan, facts=None):
    """A source/precompiled plan in, the build's environment with MAX_JOBS and NVCC_THREADS out."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm
    _mapping("vllm_source_jobs: facts", facts)
    try:
        return vllm.with_jobs(plan, facts)
    except vllm.VllmError as exc:
        raise AnsibleFilterError("vllm_source_jobs: %s" % exc)


def vllm_source_dry_run(result, plan, report=None):
    """The registered dry run of the install (and the text of its report file) in, {ok, msg} out."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm
    _mapping("vllm_source_dry_run: the input (a registered result)", result, allow_none=False)
    _mapping("vllm_source_dry_run: plan", plan, allow_none=False)
    if report is not None and not isinstance(report, str):
        raise AnsibleFilterError("vllm_source_dry_run: report must be the text of pip's report file")
    return vllm.dry_run_verdict(plan, result, report)


def vllm_source_verdict(after, plan, before=None, host_caps=None, facts=None):
    """vllm_info after the install in, the checks, their verdict and the record out.

    The host's compute capabilities: host_caps when given, else from facts (preflight's llm_stack_host, else
    gpu_facts' facts; the one reading of module_utils/host_gpus).
    """
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils.host_gpus import host_gpus
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm
    _mapping("vllm_source_verdict: the input (a vllm_info result)", after, allow_none=False)
    _mapping("vllm_source_verdict: plan", plan, allow_none=False)
    _mapping("vllm_source_verdict: before (a vllm_info result)", before)
    _mapping("vllm_source_verdict: facts (ansible_facts)", facts)
    if host_caps is not None and not isinstance(host_caps, (list, tuple)):
        raise AnsibleFilterError("vllm_source_verdict: host_caps must be a list, got %s" % type(host_caps).__name__)
    if host_caps is None:
        host_caps = host_gpus(facts)["compute_caps"]
    return vllm.verdict(plan, before, after, list(host_caps or []))


def vllm_source_tag_commit(ls_remote, ref):
    """`git ls-remote` output in, the commit the tag points to out ('' when it has none)."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm
    return vllm.tag_commit(ls_remote or "", ref)


def vllm_source_commit_problem(plan, ls_remote, head=None):
    """A plan and `git ls-remote` output in, '' or what is wrong with the tag's commit out."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm
    _mapping("vllm_source_commit_problem: the input (a plan)", plan, allow_none=False)
    return vllm.commit_problem(plan, ls_remote or "", head)


def vllm_source_record_refusal(seen, venv):
    """vllm_serve_info's reading of the venv's vLLM in, [] or the refusal of a vLLM whose record failed out."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm
    _mapping("vllm_source_record_refusal: the input (vllm_serve_info's vllm)", seen)
    return vllm.record_refusal(seen, venv)


class FilterModule(object):
    def filters(self):
        return {
            "vllm_source_plan": vllm_source_plan,
            "vllm_source_jobs": vllm_source_jobs,
            "vllm_source_dry_run": vllm_source_dry_run,
            "vllm_source_verdict": vllm_source_verdict,
            "vllm_source_tag_commit": vllm_source_tag_commit,
            "vllm_source_commit_problem": vllm_source_commit_problem,
            "vllm_source_record_refusal": vllm_source_record_refusal,
        }
