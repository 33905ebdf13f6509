#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: stack_compat
short_description: Check a GPU inference stack against the collection's compatibility matrix
version_added: "0.1.0"
description:
  - A pure check that never touches the host; it runs the same anywhere, including
    C(ansible localhost -m gpufleet.llm_stack.stack_compat -a ...).
  - Checks driver against toolkit and torch's CUDA build, GPU compute capabilities against toolkit,
    torch build and flash-attn, torch's CUDA builds and Python range, vLLM's exact torch pin, Python
    range and transformers requirement, torch against nvcc major version (extension builds), flash-attn
    floors, and Qwen3.5's vLLM and transformers floors and model ids.
  - Returns every problem, not the first one. Each message names the variables involved
    (C(llm_stack_*) pins, C(gpu_*) facts), the rule id, its source and the fix.
  - It does not fail on an incompatible stack (C(ok=false)); the caller decides. It fails only on
    malformed input, naming the option.
  - Versions the matrix does not know (newer releases) give warnings (RV(compat_warnings)), not errors.
  - The rules and their sources are in C(plugins/module_utils/compat_matrix.py); C(docs/compat-matrix.md)
    is their readable form.
author:
  - gpufleet maintainers (@gpufleet)
options:
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
      - CUDA toolkit to install, C(major.minor.patch) such as C(12.8.1) (C(llm_stack_cuda_version)).
    type: str
    required: true
  torch_version:
    description:
      - PyTorch release such as C(2.10.0) (C(llm_stack_torch_version)). A local part such as C(+cu128)
        sets O(torch_cuda) when that is empty.
    type: str
  torch_cuda:
    description:
      - CUDA build of torch (C(llm_stack_torch_cuda)), the wheel index name C(cu128), or C(12.8); C(cpu)
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
      - Hugging Face repo id of the model to serve, such as C(Qwen/Qwen3.5-9B) (C(llm_stack_model)).
    type: str
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.read_only
seealso:
  - module: gpufleet.llm_stack.gpu_facts
  - module: gpufleet.llm_stack.nvcc_facts
"""

EXAMPLES = r"""
- name: Check the pinned stack against this host's GPUs
  gpufleet.llm_stack.stack_compat:
    gpus: "{{ gpu_compute_caps }}"
    driver_version: "{{ gpu_driver_version }}"
    cuda_version: "{{ llm_stack_cuda_version }}"
    torch_version: "{{ llm_stack_torch_version }}"
    torch_cuda: "{{ llm_stack_torch_cuda }}"
    python_version: "{{ llm_stack_python_version }}"
    flash_attn_version: "{{ llm_stack_flash_attn_version }}"
    vllm_version: "{{ llm_stack_vllm_version }}"
    transformers_version: "{{ llm_stack_transformers_version }}"
    model: "{{ llm_stack_model }}"
  register: llm_stack_compat

- name: Stop on an impossible stack, listing every problem
  ansible.builtin.assert:
    that: llm_stack_compat.ok
    fail_msg: "{{ llm_stack_compat.errors }}"

# From the command line:
# ansible localhost -m gpufleet.llm_stack.stack_compat \
#   -a "cuda_version=12.1 torch_version=2.3.1 torch_cuda=cu121 vllm_version=0.19.1 gpus=8.9"
"""

RETURN = r"""
ok:
  description: True when no rule reports an error.
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
    - Caveats, and versions the matrix does not know. Not an error; C(ok) stays true.
    - Named C(compat_warnings) because C(warnings) is a reserved key of module results.
  returned: always
  type: list
  elements: str
  sample:
    - "llm_stack_flash_attn_version=2.6.3: flash-attn 2.6.3 has no CUDA/torch floors in the matrix (known: 2.8.x
      (to 2.8.3.post2)); only the sm80 floor is checked [rule flash-attn-known; source:
      https://github.com/Dao-AILab/flash-attention/blob/v2.8.3/README.md]"
torch_cuda_arch_list:
  description: TORCH_CUDA_ARCH_LIST for O(gpus) (no C(+PTX)); empty without GPUs.
  returned: always
  type: str
  sample: "8.0;9.0"
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.llm_stack.plugins.module_utils.compat import StackInputError, check_stack


def main():
    module = AnsibleModule(
        argument_spec=dict(
            gpus=dict(type="list", elements="str", default=[]),
            driver_version=dict(type="str"),
            cuda_version=dict(type="str", required=True),
            torch_version=dict(type="str"),
            torch_cuda=dict(type="str"),
            python_version=dict(type="str"),
            flash_attn_version=dict(type="str"),
            vllm_version=dict(type="str"),
            transformers_version=dict(type="str"),
            model=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    try:
        result = check_stack(module.params)
    except StackInputError as exc:
        module.fail_json(msg="Invalid option %s" % exc, option=exc.option)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
