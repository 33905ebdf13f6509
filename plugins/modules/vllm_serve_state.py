#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: vllm_serve_state
short_description: Work out a host's vLLM service from the vllm_serve role's variables and the reading of the host
version_added: "0.1.0"
description:
  - The plan of role C(gpufleet.llm_stack.vllm_serve), as an action plugin that runs in the controller's worker. It
    changes nothing on the host and sends nothing there; the role calls it up to three times.
  - Without O(info), before the reading of the host, the plan from the role's variables (O(inputs)) and the facts
    alone, with RV(reading), the options of M(gpufleet.llm_stack.vllm_serve_info), and RV(read_gpus), whether the
    play has still to read the host's GPUs (neither preflight's report C(ansible_facts['llm_stack_host']) nor the
    GPU facts of M(gpufleet.llm_stack.gpu_facts) are there).
  - With O(info), the result of M(gpufleet.llm_stack.vllm_serve_info), the plan the role acts on (the service
    manager, the parallel sizes, the argv, the environment without secrets, the files, the fingerprint that decides a
    restart, the health gate's and the benchmark's settings) and RV(errors), the errors the role's gate
    (M(gpufleet.llm_stack.stack_compat), parts C(matrix) and C(serve)) judges as its own.
  - With O(env_file), only the text of the 0600 environment file, which holds O(api_key) and O(hf_token); the task
    that asks for it hides its output (C(no_log)).
  - The decisions are in C(plugins/module_utils/vllm_serve.py) (the plan, the environment file), C(vllm.py) (the
    refusal of a vLLM whose record says it failed) and C(host_gpus.py) (whether the GPUs are read).
author:
  - gpufleet maintainers (@gpufleet)
options:
  inputs:
    description:
      - The role's variables, the keys of C(INPUTS) in C(plugins/module_utils/vllm_serve.py) (the role's
        C(vllm_serve_inputs)); any other key fails the task.
    type: dict
    required: true
  info:
    description:
      - The result of M(gpufleet.llm_stack.vllm_serve_info) on this host (PID 1, the model, the venv's vLLM, the
        service). Absent, the plan is made before the reading.
    type: dict
  api_key:
    description:
      - The service's API key (C(vllm_serve_api_key)). The plan only checks it (present, long enough, writable to
        the environment file); nothing of it is in the plan.
      - Absent (preflight, which reads no secret), the key is not checked. Needed with O(env_file).
    type: str
  hf_token:
    description: The Hugging Face token (C(vllm_serve_hf_token)), checked like O(api_key) and written to the
      environment file when set.
    type: str
  collect:
    description:
      - In preflight's collection (C(llm_stack_gate_collect)), RV(errors) are the plan's own only, without the
        refusal of a vLLM whose record says it failed (preflight runs before vllm_source checks again).
    type: bool
    default: false
  env_file:
    description:
      - Return only RV(env_file), the environment file's text, with the secrets, and with O(supervisor_index_url)
        RV(supervisor_pip_environment); nothing of the plan.
    type: bool
    default: false
  supervisor_index_url:
    description:
      - The index supervisor is installed from (C(vllm_serve_supervisor_index_url)); empty, pip's own configuration.
        It may carry credentials, so it is only read with O(env_file), whose task hides its output.
    type: str
  across:
    description:
      - With the host's gates (the role's C(vllm_serve_gate) step), add the checks over every node of each deployment
        across hosts that the host is a node of (a service with C(nodes)), read from each node's C(vllm_serve_checked)
        of this run; the same model commit at the same path, the same vLLM version and GPU count, and every node in
        the run.
    type: bool
    default: false
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.read_only
notes:
  - Bad inputs never fail the task, each problem is a message of C(errors) in RV(plan) that names the variable and
    the fix, for the role's gate. Only arguments of the wrong shape (an unknown key of O(inputs)) fail it, and, with
    O(env_file), a secret the environment file cannot carry.
  - The role keeps RV(plan) as the fact C(vllm_serve_plan) with a C(set_fact) task.
  - Where the task hides its output (C(no_log)), a failure's message is shown all the same; it names the variable,
    never a secret.
seealso:
  - module: gpufleet.llm_stack.vllm_serve_info
  - module: gpufleet.llm_stack.stack_compat
"""

EXAMPLES = r"""
- name: Work out the service's name and paths
  gpufleet.llm_stack.vllm_serve_state:
    inputs: "{{ vllm_serve_inputs }}"
  register: vllm_serve_state

- name: Read the model, the venv's vLLM and the service
  gpufleet.llm_stack.vllm_serve_info:
    model_dir: "{{ vllm_serve_state.reading.model_dir }}"
    venv: "{{ vllm_serve_state.reading.venv }}"
    service: "{{ vllm_serve_state.reading.service }}"
    mode: "{{ vllm_serve_state.reading.mode }}"
    supervisorctl: "{{ vllm_serve_state.reading.supervisorctl }}"
  register: vllm_serve_seen

- name: Work out the service, its flags and its tensor parallel size
  gpufleet.llm_stack.vllm_serve_state:
    inputs: "{{ vllm_serve_inputs }}"
    info: "{{ vllm_serve_seen }}"
    api_key: "{{ vllm_serve_api_key }}"
    hf_token: "{{ vllm_serve_hf_token }}"
  register: vllm_serve_state

- name: Work out the environment file with the API key
  gpufleet.llm_stack.vllm_serve_state:
    inputs: "{{ vllm_serve_inputs }}"
    info: "{{ vllm_serve_seen }}"
    api_key: "{{ vllm_serve_api_key }}"
    hf_token: "{{ vllm_serve_hf_token }}"
    supervisor_index_url: "{{ vllm_serve_supervisor_index_url }}"
    env_file: true
  register: vllm_serve_env_file
  no_log: true
"""

RETURN = r"""
plan:
  description:
    - The serving plan of this host, no secret in it (C(ok), C(errors), C(warnings), C(mode), C(mode_reason),
      C(service), C(served_model_name), C(model_dir), C(venv), C(user), C(group), C(tensor_parallel_size),
      C(tensor_parallel_reason), C(pipeline_parallel_size), C(preset_reason), C(extra_args), C(gpu_count),
      C(gpu_memory_mib), C(argv), C(exec_start), C(exec_shell), C(env), C(files), C(base_url), C(gpu_wait),
      C(supervisorctl), C(supervisor_pip_argv), C(health), C(benchmark), C(serve_env), C(fingerprint), ...).
    - C(supervisor_pip_argv) is pip's argv that installs supervisor into its venv, from the pushed wheelhouse alone
      (C(--no-index --find-links) C(vllm_serve_supervisor_wheelhouse_dest)) where C(vllm_serve_supervisor_wheelhouse)
      is set, else from the index of RV(supervisor_pip_environment) or pip's own configuration.
    - C(benchmark.result_fact) is the fact the role's result C(vllm_serve_result.benchmark) reads the benchmark's
      numbers from (C(vllm_serve_benchmark_result)), or null where no benchmark runs (C(benchmark.enabled) false), so
      that a fact of an earlier run is not reported.
    - C(serve_env) is C(vllm_serve_env) as the gate's part serve reads it, the mapping as set, else C({}) (the plan's
      C(errors) say why it is not one).
    - Without O(info) the plan made before the reading, whose name and paths are those of the final plan.
  returned: without O(env_file)
  type: dict
reading:
  description: The options of M(gpufleet.llm_stack.vllm_serve_info) (C(model_dir), C(venv), C(service), C(mode),
    C(supervisorctl)); C(mode) is C(vllm_serve_mode) where it is a mode, else C(auto).
  returned: without O(info) and O(env_file)
  type: dict
read_gpus:
  description: Whether the play has still to read the host's GPUs (no preflight report and no GPU facts).
  returned: without O(info) and O(env_file)
  type: bool
errors:
  description: The errors the role's gate judges as its own, the plan's C(errors) and, without O(collect), the
    refusal of a vLLM whose record in the venv says its last checks failed.
  returned: with O(info), without O(env_file)
  type: list
  elements: str
fail_as:
  description: The option C(fail_as) of M(gpufleet.llm_stack.stack_compat) in the role's gate, C(vllm_serve on <host>),
    so that any error stops the host, or, with O(collect) (preflight, which only collects), an empty string.
  returned: with O(info), without O(env_file)
  type: str
env_file:
  description: The text of the 0600 environment file, with the secrets.
  returned: with O(env_file)
  type: str
supervisor_pip_environment:
  description: The environment of the pip that installs supervisor, C(PIP_INDEX_URL) where O(supervisor_index_url) is
    set, else empty (pip's own configuration). It may hold the index's credentials.
  returned: with O(env_file) and O(supervisor_index_url)
  type: dict
"""
