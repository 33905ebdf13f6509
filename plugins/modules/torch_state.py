#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: torch_state
short_description: Read a host's venv and its torch, and check torch's part of the stack, in one step
version_added: "0.1.0"
description:
  - The gate of role C(gpufleet.llm_stack.torch), as an action plugin that runs in the controller's worker.
  - One run of M(gpufleet.llm_stack.torch_info) with the options O(read) reads the interpreter, the venv and its
    torch. The GPUs, their compute capabilities and the driver come from the play's facts (preflight's report
    C(ansible_facts['llm_stack_host']), else the GPU facts); where neither is in the play, torch_info reads them
    and returns them as the GPU facts.
  - Then M(gpufleet.llm_stack.stack_compat)'s part C(torch), with the same code and the same validation of its
    options, judges the options O(gate) with the host's GPUs and driver, the interpreter and the venv's own Python
    as the reading found them. With O(fail_as) any error stops the host, every problem listed, and the warnings
    show.
  - With O(fail_as), where this reading is the role's last (O(after_install), or the reading asks for no install
    and no record), the role's verdict follows; the task fails with every problem of the reading, unless the
    venv's torch is right (or, in check mode, would be installed); else its message is the role's report and the
    gate's warnings.
  - The decisions are in C(plugins/module_utils/torch_state.py), C(torch_probe.py) and C(gate.py).
author:
  - gpufleet maintainers (@gpufleet)
options:
  read:
    description:
      - The options of M(gpufleet.llm_stack.torch_info), without C(read_gpus), C(gpu_count), C(compute_caps),
        C(driver_version) and C(set_facts), which this action sets. Options whose value is null are left out.
    type: dict
    required: true
  gate:
    description:
      - The options of M(gpufleet.llm_stack.stack_compat) for part C(torch) (C(cuda_version), C(torch_version),
        C(torch_cuda), C(python_version), C(vllm_version), C(torch_venv), C(torch_python), C(torch_wheelhouse),
        C(torch_extra_packages)), without C(parts), C(gpus), C(driver_version), C(interpreter), C(venv_python),
        C(fail_as) and C(show_warnings), which this action sets.
    type: dict
    required: true
  fail_as:
    description:
      - Who stops when the gate finds an error or the verdict fails, as in M(gpufleet.llm_stack.stack_compat)'s
        O(fail_as). Set, the gate's warnings show too.
      - Empty, the verdict of the gate is only returned and there is no role verdict (preflight, which collects
        every role's gate into one report).
    type: str
    default: ""
  collect:
    description:
      - For preflight, which collects every role's gate into one report (the role passes C(llm_stack_gate_collect)).
      - Set, O(fail_as) is taken as empty (the verdict of the gate is only returned, no role verdict), and the
        reading imports no torch and reads no record (the options C(import_torch) and C(use_record) of O(read) are
        set to false).
    type: bool
    default: false
  wheelhouse_dest:
    description:
      - Where the role pushes the controller's wheelhouse (the C(torch_wheelhouse) of O(gate)). Where that
        wheelhouse is set, this is the reading's C(wheelhouse) (it replaces one in O(read)) and RV(pip_source) is
        C(wheelhouse).
    type: str
  after_install:
    description:
      - This reading follows the role's install (or its record of an import of torch), so it is the last one and
        the verdict follows whatever it says.
      - The gate then only reports (RV(ok) and its errors); it stopped the host before the install where it had to.
    type: bool
    default: false
  package_index_ca_cert:
    description:
      - The controller file of the package proxy's CA (C(llm_stack_package_index_ca_cert)); its text goes to the
        reading (C(torch_info)'s C(package_index_ca)), which checks the proxy's certificate with it. Empty, or no
        such file (which the gate reports), for the host's trust store.
    type: str
    default: ""
  package_index_planned:
    description:
      - The inventory's cache host runs the package proxy (its C(fleet_cache_proxy)), which the run sets up after
        preflight. With O(collect), a proxy that does not answer is then a warning (rule C(package-index-pending))
        instead of an error; the role's own gate, outside preflight, still stops the host.
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    description: Only reads; a record that the reading would write is reported as C(changed) and not written.
  diff_mode:
    support: none
    description: No diff is produced.
  facts:
    support: full
    description: Returns the GPU facts where the reading read the GPUs.
notes:
  - A failed reading fails the task with the module's message, before the gate.
  - C(changed) is that of the reading (true where it wrote the record of an import of torch).
seealso:
  - module: gpufleet.llm_stack.torch_info
  - module: gpufleet.llm_stack.stack_compat
"""

EXAMPLES = r"""
- name: Read the venv and check torch's part of the stack
  gpufleet.llm_stack.torch_state:
    read:
      venv: /opt/llm/venv
      python: python3.12
      expect_version: "{{ llm_stack_torch_version }}"
      expect_local: "{{ llm_stack_torch_cuda }}"
      write_record: false
    gate:
      cuda_version: "{{ llm_stack_cuda_version }}"
      torch_version: "{{ llm_stack_torch_version }}"
      torch_cuda: "{{ llm_stack_torch_cuda }}"
      python_version: "{{ llm_stack_python_version }}"
      torch_venv: /opt/llm/venv
    fail_as: "torch on {{ inventory_hostname }}"
  register: torch_gate

- name: Install torch when the reading asks for it
  ansible.builtin.debug:
    msg: "{{ torch_gate.reading.install.spec }} would be installed"
  when: torch_gate.reading.needs_install
"""

RETURN = r"""
ok:
  description: Whether the gate found no error. The other keys of M(gpufleet.llm_stack.stack_compat)'s result
    (C(errors), C(problems), C(compat_warnings), C(inputs), C(suggested), ...) are returned as well.
  returned: always
  type: bool
pip_source:
  description: Where the role's pip installs torch from, C(wheelhouse) where the C(torch_wheelhouse) of O(gate) is
    set, else C(index) (the role picks pip's environment by it).
  returned: always
  type: str
  sample: index
reading:
  description: What M(gpufleet.llm_stack.torch_info) returned (C(ok), C(needs_install), C(record_stale),
    C(install), C(info), C(report), C(failure), C(interpreter), C(venv), ...), without its invocation, warnings
    and facts.
  returned: always
  type: dict
msg:
  description: With O(fail_as) and the role's verdict passed, the role's report and the gate's warnings; on a
    failure, the failure.
  returned: with the verdict, and on failure
  type: raw
ansible_facts:
  description: The GPU facts, where the reading read the GPUs.
  returned: where the reading read the GPUs
  type: dict
"""
