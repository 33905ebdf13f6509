#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_facts
short_description: Read the host's NVIDIA GPUs, driver and driver CUDA version with nvidia-smi
version_added: "0.1.0"
description:
  - Runs C(nvidia-smi) and returns what it reports as facts. Never changes anything on the host.
  - "Invocations: one C(--query-gpu=index,name,uuid,compute_cap,driver_version,memory.total,pci.bus_id
    --format=csv,noheader,nounits) for the whole GPU list, then one plain C(nvidia-smi) whose header
    carries the driver's CUDA version (no query field exposes it)."
  - "Header layouts read: C(Driver Version: X  CUDA Version: Y) (drivers up to the 595 series) and
    C(KMD Version: X  CUDA UMD Version: Y) (610 and later). When the header gives no CUDA version,
    C(nvidia-smi --version) is read (C(CUDA Version) or C(CUDA UMD version)), then C(nvidia-smi -q -x)
    (C(cuda_version) or C(cuda_umd_version)); RV(ansible_facts.gpu_driver_cuda_version_source) says which.
    A layout that gives no CUDA version at all is named in a warning, never a silent null."
  - Drivers that reject the C(compute_cap) query field (seen on 470.x) get a second query without it;
    the compute capability then comes from a product name table and
    RV(ansible_facts.gpu_compute_cap_source) says C(name_table). A driver that rejects C(driver_version)
    (deprecated in the 610 drivers) is asked for C(kmd_version) instead.
  - When the first query fails (driver not loaded, no devices) nothing else runs and the reason is in
    C(gpu_error).
  - Every call runs with a deadline (O(timeout)). A call that does not answer in time is stopped with
    its whole process group, and C(gpu_error) says that nvidia-smi did not answer. The task itself does
    not fail, so a play reports that host's problem and goes on with the others.
  - Bytes that are not UTF-8 in nvidia-smi's output are shown as U+FFFD with a warning that names
    nvidia-smi.
  - A host without C(nvidia-smi) is not an error, it reports C(gpu_count=0).
author:
  - gpufleet maintainers (@gpufleet)
options:
  nvidia_smi_path:
    description:
      - Path of the C(nvidia-smi) to run.
      - Default is C(nvidia-smi) found on C(PATH), C(/usr/bin), C(/usr/local/bin) or C(/usr/local/nvidia/bin).
      - When set, the file must exist, otherwise the module fails.
    type: path
  timeout:
    description:
      - Seconds each C(nvidia-smi) call may take. A call still running then is stopped (SIGTERM to its
        process group, SIGKILL 2 seconds later) and RV(ansible_facts.gpu_error) says so.
      - A healthy driver answers in well under a second; a wedged GPU makes nvidia-smi hang for good.
    type: int
    default: 30
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.read_only
  - gpufleet.llm_stack.attributes.facts
notes:
  - The C(CUDA Version) of the driver is the newest CUDA the driver supports, not an installed toolkit;
    see M(gpufleet.llm_stack.nvcc_facts) for toolkits.
seealso:
  - module: gpufleet.llm_stack.nvcc_facts
  - module: gpufleet.llm_stack.stack_compat
"""

EXAMPLES = r"""
- name: Read the GPUs of each host
  gpufleet.llm_stack.gpu_facts:

- name: Show compute capabilities
  ansible.builtin.debug:
    msg: "{{ inventory_hostname }}: {{ gpu_count }} GPU(s), caps {{ gpu_compute_caps }}, driver {{ gpu_driver_version }}"

- name: Use an nvidia-smi outside PATH
  gpufleet.llm_stack.gpu_facts:
    nvidia_smi_path: /usr/local/nvidia/bin/nvidia-smi

- name: Give a slow host more time before it is reported as wedged
  gpufleet.llm_stack.gpu_facts:
    timeout: 90
"""

RETURN = r"""
ansible_facts:
  description: GPU facts.
  returned: always
  type: dict
  contains:
    gpu_count:
      description: Number of GPUs nvidia-smi lists (0 without nvidia-smi or when it fails).
      type: int
      sample: 1
    gpu_devices:
      description: One entry per GPU, sorted by index.
      type: list
      elements: dict
      contains:
        index:
          description: nvidia-smi's GPU index.
          type: int
        name:
          description: Product name.
          type: str
        uuid:
          description: GPU UUID.
          type: str
        compute_cap:
          description: Compute capability such as C(9.0); null when neither the driver nor the name table knows it.
          type: str
        memory_total_mib:
          description: Total memory in MiB.
          type: int
        pci_bus_id:
          description: PCI bus id.
          type: str
      sample:
        - index: 0
          name: NVIDIA H200
          uuid: GPU-c2d869be-1bd4-aefd-e552-306f4e15e127
          compute_cap: "9.0"
          memory_total_mib: 143771
          pci_bus_id: "00000000:00:06.0"
    gpu_compute_caps:
      description: Sorted, unique compute capabilities of the GPUs.
      type: list
      elements: str
      sample: ["8.0", "8.9"]
    gpu_driver_version:
      description: Driver version, null without GPUs.
      type: str
      sample: "580.159.04"
    gpu_driver_cuda_version:
      description:
        - Newest CUDA the driver supports (the C(CUDA Version), or C(CUDA UMD Version) on 610 and later
          drivers, of the nvidia-smi header).
        - Null when no output gave it; a warning then names the fields looked for.
      type: str
      sample: "13.0"
    gpu_driver_cuda_version_source:
      description:
        - Where RV(ansible_facts.gpu_driver_cuda_version) came from, C(header) (plain nvidia-smi),
          C(version) (C(nvidia-smi --version)) or C(xml) (C(nvidia-smi -q -x)); null when unknown.
      type: str
      sample: header
    gpu_error:
      description:
        - Null, or why nvidia-smi failed (for example the driver is not loaded).
        - When a call did not answer within O(timeout) it starts with
          C(nvidia-smi did not answer within N seconds (a wedged GPU or driver?)); the GPUs listed
          before that call stay in the facts.
      type: str
      sample: "nvidia-smi exited with 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.
        Make sure that the latest NVIDIA driver is installed and running."
    gpu_compute_cap_source:
      description: C(query) when the driver reported the compute capabilities, C(name_table) when they came from the
        product name table; null without GPUs.
      type: str
      sample: query
    gpu_nvidia_smi_path:
      description: The nvidia-smi that was run, null when there is none.
      type: str
      sample: /usr/bin/nvidia-smi
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.llm_stack.plugins.module_utils.nvidia import SMI_SEARCH_DIRS, read_gpus
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.proc import run

SEARCH_DIRS = SMI_SEARCH_DIRS


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nvidia_smi_path=dict(type="path"),
            timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    timeout = module.params["timeout"]
    if timeout < 1:
        module.fail_json(msg="timeout=%s: give the seconds each nvidia-smi call may take, 1 or more"
                             " (the default is 30)" % timeout)
    explicit = module.params["nvidia_smi_path"]
    if explicit:
        if not (os.path.isfile(explicit) and os.access(explicit, os.X_OK)):
            module.fail_json(msg="nvidia_smi_path=%s is not an executable file. Fix: point nvidia_smi_path at"
                                 " nvidia-smi, or leave it unset to search PATH" % explicit)
        smi = explicit
    else:
        smi = module.get_bin_path("nvidia-smi", opt_dirs=SEARCH_DIRS)

    env = dict(os.environ, LC_ALL="C")

    def run_smi(argv):
        return run(argv, timeout=timeout, env=env)

    facts, warnings = read_gpus(run_smi, smi, timeout)
    for warning in warnings:
        module.warn(warning)
    module.exit_json(changed=False, ansible_facts=facts)


if __name__ == "__main__":
    main()
