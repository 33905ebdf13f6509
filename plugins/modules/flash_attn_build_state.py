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
    cache, the venv, the git source, O(index_problems)). With O(fail_as) any error stops the host, every problem
    listed; the warnings show.
  - Last the plan with the build key, which says whether the key's wheel is installed already (C(work) of RV(plan)),
    and the host's result for the fleet report where nothing is left to do (RV(result)).
  - The decisions are in C(plugins/module_utils/flash_attn.py) (the plan, the reading's options, the gate's
    options) and C(plugins/module_utils/gate.py) (the gate).
author:
  - gpufleet maintainers (@gpufleet)
options:
  inputs:
    description:
      - The role's variables, as the C(gpufleet.llm_stack.flash_attn_build_plan) filter takes them (the role's
        C(flash_attn_build_inputs)).
    type: dict
    required: true
  torch_version:
    description: The stack's torch pin (C(llm_stack_torch_version)), which the gate judges flash-attn against.
    type: str
    required: true
  index_problems:
    description: The problems of the fleet's package index settings (the C(gpufleet.llm_stack.wheel_index_problems)
      filter), judged as errors of the gate.
    type: list
    elements: str
    default: []
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
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.read_only
  - gpufleet.llm_stack.attributes.facts
notes:
  - The facts it returns are the GPU facts, where the reading read the GPUs.
  - A failed reading fails the task with the module's message, before the gate.
  - The plan holds the index and git URLs as given, for pip; where they carry credentials the role hides the task's
    output (C(no_log)). A failure's message is then shown all the same, as an error line with the credentials
    masked.
  - The role keeps RV(plan) and RV(result) as the facts C(flash_attn_build_plan) and C(flash_attn_build_result)
    with a C(set_fact) task.
seealso:
  - module: gpufleet.llm_stack.torch_info
  - module: gpufleet.llm_stack.stack_compat
"""

EXAMPLES = r"""
- name: Read the venv, check flash-attn's part of the stack and plan the build
  gpufleet.llm_stack.flash_attn_build_state:
    inputs: "{{ flash_attn_build_inputs }}"
    torch_version: "{{ llm_stack_torch_version }}"
    fail_as: "flash_attn_build on {{ inventory_hostname }}"
  register: flash_attn_build_state

- name: Only the gate, for preflight's report
  gpufleet.llm_stack.flash_attn_build_state:
    inputs: "{{ flash_attn_build_inputs }}"
    torch_version: "{{ llm_stack_torch_version }}"
    read_venv: false
  delegate_to: localhost
  register: flash_attn_build_gate
"""

RETURN = r"""
ok:
  description: Whether the gate found no error. The other keys of M(gpufleet.llm_stack.stack_compat)'s result
    (C(errors), C(problems), C(compat_warnings), C(inputs), C(suggested), ...) are returned as well.
  returned: always
  type: bool
plan:
  description:
    - The build plan of this host (the C(gpufleet.llm_stack.flash_attn_build_plan) filter's result).
    - After a gate without errors, the plan with the build key (C(key), C(label), C(entry), C(installed), C(work));
      after a gate with errors, the plan made from the inputs and the GPUs alone.
  returned: with O(read_venv), after the reading
  type: dict
result:
  description: This host's flash-attn for the fleet report (the C(gpufleet.llm_stack.flash_attn_build_result)
    filter's result); null where C(work) of RV(plan) says the build tasks still run, or the gate failed.
  returned: with O(read_venv), after the reading
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
