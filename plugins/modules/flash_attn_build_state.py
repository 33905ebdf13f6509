#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: flash_attn_build_state
short_description: Read a host's venv, check flash-attn's part of the stack and plan its build, in one step
version_added: "0.1.0"
description:
  - The step of role C(gpufleet.llm_stack.flash_attn_build) before any change, as an action plugin that runs in
    the controller's worker.
  - First the role's variables (O(inputs)) are checked once and a first plan says what to read on the host.
  - With O(read_venv), one run of M(gpufleet.llm_stack.torch_info) reads the venv's torch (from the torch role's
    record of its last import, never importing torch), the build tools and flash-attn; where neither preflight's
    report (C(ansible_facts['llm_stack_host'])) nor the GPU facts are in the play, also the GPUs; and, where no
    variable and no preflight report name the CUDA toolkit, the toolkits. It changes nothing on the host.
  - Then the gate, M(gpufleet.llm_stack.stack_compat)'s part C(flash_attn), with the same code and the same
    validation of its options, judges the inputs as the role has them, the arch list in force (the variable,
    else preflight's, else the host's GPUs) and what only this role checks (the build scope, the jobs, the
    cache, the venv, the git source, the fleet's package index settings, O(index_problems)). With O(fail_as) any
    error stops the host, every problem listed; the warnings show.
  - Last the plan with the build key, which says whether the key's wheel is installed already (C(work) of RV(plan)),
    and the host's result for the fleet report where nothing is left to do (RV(result)).
  - The jobs request of the plan with the build key (RV(jobs_request)) is what the role hands to
    C(gpufleet.llm_stack.wheel_build) as C(wheel_build_jobs); wheel_build makes the build's environment and log
    header from it with the builder's CPU and memory facts.
  - Called again with O(plan) instead of O(inputs), the role's later steps, with what the role saw since; nothing
    is read on the host. With O(group) (and O(probe)), the plan again for the archs of every host of the batch that
    shares the rest of the key (C(flash_attn_build_arch_scope=group)) and its jobs request. With O(fleet) (and
    O(probe)), on a build host (C(flash_attn_build_for_fleet)), the plans of the other hosts' keys it compiles
    first (RV(fleet_plans)) and the plan it installs. Else, with O(built)
    (wheel_build's result, or null where the role did not include it), this host's result for the fleet report
    (RV(result)) and whether the checks of the installed flash-attn run (RV(checks)); nothing of the plan, which
    holds the index and git URLs, is returned then.
  - Called with O(check_output) alone, the verdict of the check of the installed flash-attn (RV(check_result)).
  - The decisions are in C(plugins/module_utils/flash_attn.py) (the plan, the reading's options, the gate's
    options, the result, the checks), C(plugins/module_utils/wheel_index.py) (the package index settings) and
    C(plugins/module_utils/gate.py) (the gate).
author:
  - gpufleet maintainers (@gpufleet)
options:
  inputs:
    description:
      - The role's variables (the role's C(flash_attn_build_inputs), the keys of C(INPUTS) in
        C(plugins/module_utils/flash_attn.py)).
      - The first step; exactly one of O(inputs), O(plan) and O(check_output) is given.
    type: dict
  torch_version:
    description:
      - The stack's torch pin (C(llm_stack_torch_version)), which the gate judges flash-attn against.
      - Required with O(inputs).
    type: str
  index_problems:
    description: Problems found elsewhere, judged as errors of the gate with those of the package index settings.
    type: list
    elements: str
    default: []
  wheel_index_url:
    description:
      - The fleet's package index (C(llm_stack_wheel_index_url)); empty for the controller cache.
      - Where it is set, its settings (this option, O(cache_host), O(inventory_hosts), O(cache_host_vars) and
        O(wheel_index_ca_cert)) are checked, and their problems are errors of the gate.
    type: str
    default: ""
  cache_host:
    description: The cache host (C(llm_stack_cache_host)), where the index and the build locks are.
    type: str
    default: ""
  inventory_hosts:
    description: The inventory's host names (C(groups['all'])), which the cache host must be one of.
    type: list
    elements: str
    default: []
  cache_host_vars:
    description: The cache host's connection variables (C(llm_stack_cache_host_vars)), for a job that sees only part
      of the inventory.
    type: dict
    default: {}
  wheel_index_ca_cert:
    description: The CA certificate of the index (C(llm_stack_wheel_index_ca_cert)), a file on the controller.
    type: str
    default: ""
  read_venv:
    description:
      - Read the host and make the plan with the build key.
      - C(false) runs the gate alone, from the facts the play has (preflight's use); nothing is sent to the host.
    type: bool
    default: true
  fail_as:
    description:
      - Who stops when the gate finds an error, as in M(gpufleet.llm_stack.stack_compat)'s O(fail_as). Set, the
        gate's warnings show too.
      - Empty, the verdict is only returned (preflight, which collects every role's gate into one report).
    type: str
    default: ""
  collect:
    description:
      - For preflight, which collects every role's gate into one report (the role passes C(llm_stack_gate_collect)).
      - Set, O(fail_as) is taken as empty, so the verdict is only returned.
    type: bool
    default: false
  plan:
    description:
      - The host's plan (RV(plan) of an earlier step, the role's fact C(flash_attn_build_plan)), for a later step.
      - Exactly one of O(inputs), O(plan) and O(check_output) is given.
    type: dict
  probe:
    description: RV(probe) of the first step (the reading of the venv), for O(group) and O(fleet).
    type: dict
  group:
    description:
      - The plans of the batch's hosts (their C(flash_attn_build_plan)); with O(plan) and O(probe), the plan is made
        again for the union of the archs of the hosts that share the rest of the key.
    type: list
    elements: dict
  fleet:
    description:
      - With O(plan) and O(probe), on a build host (C(flash_attn_build_for_fleet)), one plan per distinct build key of
        the other hosts of the play that share its group (C(group_id)), read from the play's hosts; the hosts of the
        batch (C(ansible_play_batch)) by their plans (C(flash_attn_build_plan)), the hosts of later batches
        (C(ansible_play_hosts_all)) by preflight's fact (C(ansible_facts['llm_stack_host'])) where its stack pins
        and test path are the build host's. Other build hosts are left out.
    type: bool
    default: false
  fleet_built:
    description:
      - On a build host, what it did for each fleet key (C([{entry, outcome}]), the outcome its
        C(wheel_build_result)), for RV(result)'s C(fleet_builds).
    type: list
    elements: dict
    default: []
  built:
    description:
      - wheel_build's result for this host (C(wheel_build_result)), once the role included
        C(gpufleet.llm_stack.wheel_build); null where it did not.
    type: dict
  check_output:
    description:
      - The registered result of the role's C(files/flash_attn_check.py) run by the venv's Python, for its verdict.
      - Exactly one of O(inputs), O(plan) and O(check_output) is given.
    type: dict
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.read_only
  - gpufleet.llm_stack.attributes.facts
notes:
  - The facts it returns are the GPU facts, where the reading read the GPUs.
  - A failed reading fails the task with the module's message, before the gate.
  - The plan holds the index and git URLs as given, for pip; where they carry credentials the role hides the task's
    output (C(no_log)). A failure's message is then shown all the same, as an error line with the credentials
    masked.
  - The role keeps RV(plan), RV(jobs_request) and RV(result) as the facts C(flash_attn_build_plan),
    C(flash_attn_build_jobs_request) and C(flash_attn_build_result) with a C(set_fact) task.
seealso:
  - module: gpufleet.llm_stack.torch_info
  - module: gpufleet.llm_stack.stack_compat
"""

EXAMPLES = r"""
- name: Read the venv, check flash-attn's part of the stack and plan the build
  gpufleet.llm_stack.flash_attn_build_state:
    inputs: "{{ flash_attn_build_inputs }}"
    torch_version: "{{ llm_stack_torch_version }}"
    wheel_index_url: "{{ llm_stack_wheel_index_url }}"
    cache_host: "{{ llm_stack_cache_host }}"
    inventory_hosts: "{{ groups['all'] }}"
    cache_host_vars: "{{ llm_stack_cache_host_vars }}"
    wheel_index_ca_cert: "{{ llm_stack_wheel_index_ca_cert }}"
    fail_as: "flash_attn_build on {{ inventory_hostname }}"
  register: flash_attn_build_state

- name: Only the gate, for preflight's report
  gpufleet.llm_stack.flash_attn_build_state:
    inputs: "{{ flash_attn_build_inputs }}"
    torch_version: "{{ llm_stack_torch_version }}"
    read_venv: false
  delegate_to: localhost
  register: flash_attn_build_gate

- name: This host's flash-attn and whether its checks run, once wheel_build did its part
  gpufleet.llm_stack.flash_attn_build_state:
    plan: "{{ flash_attn_build_plan }}"
    built: "{{ wheel_build_result | default(none) }}"
  register: flash_attn_build_done

- name: The verdict of the check
  gpufleet.llm_stack.flash_attn_build_state:
    check_output: "{{ flash_attn_build_check }}"
  register: flash_attn_build_verdict
"""

RETURN = r"""
ok:
  description: Whether the gate found no error. The other keys of M(gpufleet.llm_stack.stack_compat)'s result
    (C(errors), C(problems), C(compat_warnings), C(inputs), C(suggested), ...) are returned as well.
  returned: with O(inputs)
  type: bool
plan:
  description:
    - The build plan of this host.
    - After a gate without errors, the plan with the build key (C(key), C(label), C(entry), C(installed), C(work));
      after a gate with errors, the plan made from the inputs and the GPUs alone.
    - With O(plan) and O(group), the plan for the group's archs.
    - With O(plan) and O(fleet), the plan the build host installs, its own where its key is among the fleet's keys
      (or there are none), else the first of RV(fleet_plans).
  returned: with O(read_venv), after the reading; with O(plan) and O(group) or O(fleet)
  type: dict
fleet_plans:
  description:
    - With O(plan) and O(fleet), the plans the build host compiles before any host installs, one per distinct build
      key of the other hosts of the play, sorted by their targets; empty where there are none.
  returned: with O(plan) and O(fleet)
  type: list
  elements: dict
fleet_jobs_requests:
  description: The jobs request of each of RV(fleet_plans), in the same order.
  returned: with O(plan) and O(fleet)
  type: list
  elements: dict
jobs_request:
  description:
    - What C(gpufleet.llm_stack.wheel_build) needs to work out the build's jobs (C(MAX_JOBS), C(NVCC_THREADS)) and
      its log header on the builder, as plain data (C(wheel_build_jobs)); null for a plan without a build key.
  returned: with O(read_venv), after a gate without errors; with O(plan) and O(group) or O(fleet)
  type: dict
result:
  description:
    - This host's flash-attn for the fleet report (the role's fact C(flash_attn_build_result)), with C(version),
      C(build_key), C(arch_list), C(wheel), C(source) (C(built), C(index), C(controller_cache), C(present) or
      C(none)), C(compiled) and C(fleet_builds) (on a build host the keys it built for the others, C(build_key),
      C(compiled), C(wheel); empty elsewhere).
    - With O(inputs), null where C(work) of RV(plan) says the build tasks still run, or the gate failed.
    - With O(plan) (without O(group) and O(fleet)), from the plan, O(built) and O(fleet_built).
  returned: with O(read_venv), after the reading; with O(plan) without O(group) and O(fleet)
  type: dict
checks:
  description:
    - When the checks of the installed flash-attn run, from the plan's C(verify_on_install) and
      C(verify_without_install) (C(flash_attn_build_verify)) and O(built).
    - C(run), the checks run (after an install of this run, or on every run with C(flash_attn_build_verify=always));
      C(script), the check script runs (in check mode only where the wheel was installed before).
  returned: with O(plan) without O(group) and O(fleet)
  type: dict
check_result:
  description: The verdict of the check (C(ok), C(summary), C(failure), C(skipped), C(problems), C(version),
    C(elf_archs), C(forward_max_abs_err)).
  returned: with O(check_output)
  type: dict
probe:
  description: What M(gpufleet.llm_stack.torch_info) returned (without its invocation, warnings and facts).
  returned: with O(read_venv)
  type: dict
ansible_facts:
  description: The GPU facts, where the reading read the GPUs.
  returned: where the reading read the GPUs
  type: dict
"""
