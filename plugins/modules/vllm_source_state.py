#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: vllm_source_state
short_description: Plan vLLM's install on a host and judge what the install's steps observed
version_added: "0.1.0"
description:
  - The decisions of role C(gpufleet.llm_stack.vllm_source), as an action plugin that runs in the controller's
    worker. The role calls it at each step where a decision is due and acts on the fields it returns.
  - With O(inputs), the plan of this host. Where neither preflight's report (C(ansible_facts['llm_stack_host'])) nor
    the GPU facts are in the play, and the host is no CPU-only test host (C(cpu_only_test_host) of O(inputs)),
    M(gpufleet.llm_stack.gpu_facts) reads the host's GPUs first, and they are returned as the GPU facts. The method
    C(auto) is resolved with the driver of those GPUs, the same one the gate judges (RV(driver_version)).
  - With O(probe) too, the plan says what to install into the venv as read; with O(ls_remote), the commit the tag
    points to goes into the build key of the methods C(source) and C(precompiled), and RV(commit_problem) says what
    is wrong with it.
  - Where the plan has a build key, it carries what the role needs before it includes
    C(gpufleet.llm_stack.wheel_build) (the source tree is prepared only where the venv lacks the key's build),
    C(key_state), the part of wheel_build's own plan of the plan's C(wheel_build_request) that says whether the
    venv has the key's build, and C(jobs_request), the build's jobs request the role hands to wheel_build as
    C(wheel_build_jobs).
  - With O(plan) (a plan this action returned) and what the role observed later, the judgement of it - O(head)
    (with O(ls_remote)) the checkout against the tag's commit, O(dry_run) pip's dry run of the install, O(after)
    the checks after the install and the record the role writes into the venv.
  - The decisions are in C(plugins/module_utils/vllm.py) and C(plugins/module_utils/wheel_build.py). It changes
    nothing on the host.
author:
  - gpufleet maintainers (@gpufleet)
options:
  inputs:
    description:
      - The role's variables, the keys of C(INPUTS) in C(plugins/module_utils/vllm.py) (the role's
        C(vllm_source_inputs)). The action makes this host's plan.
      - Exactly one of O(inputs) and O(plan).
    type: dict
  probe:
    description:
      - The reading of the venv before any change, a M(gpufleet.llm_stack.vllm_info) result.
      - With O(inputs), the plan for the venv as read; with O(after), what the checks compare torch with.
    type: dict
  ls_remote:
    description:
      - The output of C(git ls-remote) for the tag (the plan's C(ls_remote_argv)).
      - With O(inputs), the tag's commit is taken from it into the plan, and RV(commit_problem) is set for the
        methods C(source) and C(precompiled); with O(head), the checkout is judged against it.
    type: str
  plan:
    description:
      - A plan this action returned (RV(plan)), to judge what was observed later (O(head), O(dry_run), O(after)).
      - Exactly one of O(inputs) and O(plan).
    type: dict
  head:
    description: The commit checked out of the tag (C(git rev-parse HEAD)). Needs O(plan) and O(ls_remote).
    type: str
  dry_run:
    description: The registered result of pip's dry run of the install (a M(gpufleet.llm_stack.run_logged) result).
      Needs O(plan).
    type: dict
  dry_run_report:
    description: The registered result of M(ansible.builtin.slurp) of pip's report file of the dry run (the plan's
      C(dry_run_report)); a skipped one reads as no report. Needs O(dry_run).
    type: dict
  after:
    description: The M(gpufleet.llm_stack.vllm_info) result of the checks after the install. Needs O(plan).
    type: dict
  collect:
    description:
      - Given, with O(plan) and O(probe) (the gate's reading of the venv), RV(gate) is returned, what the role's
        gate, M(gpufleet.llm_stack.stack_compat)'s part C(vllm), takes from them.
      - C(true) for preflight, which collects every role's gate into one report (the role passes
        C(llm_stack_gate_collect)).
    type: bool
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.read_only
  - gpufleet.llm_stack.attributes.facts
notes:
  - The facts it returns are the GPU facts, where it read the GPUs.
  - The role's inputs are checked by the plan, which lists every problem with its fix in C(errors) (the role's gate,
    M(gpufleet.llm_stack.stack_compat), stops the host with them); a caller's bug (an unknown key in O(inputs)) fails
    the task.
  - The plan holds the index and git URLs as given, for pip and git; where they carry credentials the role hides the
    task's output (C(no_log)). A failure's message is then shown all the same, as an error line with the credentials
    masked.
  - The role keeps RV(plan) as the fact C(vllm_source_plan), and RV(verdict) as the fact C(vllm_source_result), with
    C(set_fact) tasks.
seealso:
  - module: gpufleet.llm_stack.vllm_info
  - module: gpufleet.llm_stack.gpu_facts
  - module: gpufleet.llm_stack.stack_compat
"""

EXAMPLES = r"""
- name: Check the vLLM install's inputs
  gpufleet.llm_stack.vllm_source_state:
    inputs: "{{ vllm_source_inputs }}"
  register: vllm_source_state

- name: Work out what this host installs
  gpufleet.llm_stack.vllm_source_state:
    inputs: "{{ vllm_source_inputs }}"
    probe: "{{ vllm_source_before }}"
    ls_remote: "{{ vllm_source_ls_remote.stdout | default('') }}"
  register: vllm_source_state

- name: Judge pip's dry run
  gpufleet.llm_stack.vllm_source_state:
    plan: "{{ vllm_source_plan }}"
    dry_run: "{{ vllm_source_dry_run }}"
    dry_run_report: "{{ vllm_source_dry_run_report }}"
  register: vllm_source_dry_run_verdict

- name: Judge the checks
  gpufleet.llm_stack.vllm_source_state:
    plan: "{{ vllm_source_plan }}"
    probe: "{{ vllm_source_before }}"
    after: "{{ vllm_source_after }}"
  register: vllm_source_checks
"""

RETURN = r"""
plan:
  description:
    - This host's plan (C(ok), C(errors), C(method), C(method_requested), C(method_reason), C(install), C(reason),
      C(install_argv), C(dry_run_argv), C(requirements_argv), C(key), C(label), C(environment),
      C(wheel_build_request), C(verify_on_install), C(verify_without_install), ...; C(plan) of
      C(plugins/module_utils/vllm.py)).
    - C(key_state) - where the plan has a build key, C(installed) (the venv has the key's build), C(needs_build) (it
      is neither installed nor in the controller cache) and C(summary) (what happens to the key here) of wheel_build's
      plan of C(wheel_build_request); else null.
    - C(jobs_request) - where the plan has a build key, the build's jobs request for wheel_build (C(jobs_request) of
      C(plugins/module_utils/vllm.py)); else null.
    - C(probe_venv) - the venv M(gpufleet.llm_stack.vllm_info) reads, C(venv) where it is an absolute path, else
      C(/nonexistent) (an error of the inputs; the reading finds no venv).
    - C(probe_architectures) - the architectures the checks look up in vLLM's registry, C(model_architecture) where
      it is set, else none. The checks' C(cuda_home) is the plan's C(cuda_home) (null unless C(target_device) is
      C(cuda)) and their C(cli) the plan's C(cli) (null unless the distribution is C(vllm)).
    - C(torch_pin) - the stack's torch pin, the venv's torch for preflight's gate.
  returned: with O(inputs)
  type: dict
commit_problem:
  description:
    - Empty, or what is wrong with the tag's commit (the tag is missing, points to another commit than the pinned
      one, or, with O(head), the checkout is another commit), with the fix.
    - With O(inputs), empty where O(ls_remote) is not given or the method is C(wheel).
  returned: with O(inputs), or with O(head)
  type: str
driver_version:
  description: The host's NVIDIA driver as the plan read it (preflight's report, else the GPU facts); null when
    unknown. The role's gate is given it.
  returned: with O(inputs)
  type: str
dry_run:
  description: The judgement of pip's dry run, C(ok) (nothing of torch's family would change) and C(msg) (the
    message to stop with, else what pip keeps).
  returned: with O(dry_run)
  type: dict
gate:
  description:
    - What the role's gate (M(gpufleet.llm_stack.stack_compat), part C(vllm)) takes from the plan and the reading.
    - C(vllm_venv_torch) - the torch the venv holds when vLLM goes in, with O(collect) the plan's C(torch_pin)
      (site.yml's torch play installs it first, so a torch upgrade passes), else the venv's torch as O(probe) read
      it (empty for none).
    - C(fail_as) - empty with O(collect) (the verdict is only returned), else C(vllm_source on <host>) (any error
      stops the host, every problem listed).
    - C(show_warnings) - whether the gate's warnings show, not O(collect).
  returned: with O(collect)
  type: dict
verdict:
  description: The checks after the install, C(ok), C(problems), C(checks), C(summary) and C(record) (the record
    written into the venv), judged with the host's GPU compute capabilities from the play's facts.
  returned: with O(after)
  type: dict
ansible_facts:
  description: The GPU facts of M(gpufleet.llm_stack.gpu_facts), where it read the GPUs.
  returned: where it read the GPUs
  type: dict
"""
