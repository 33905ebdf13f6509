#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: torch_info
short_description: Read the torch of a virtualenv and diagnose it against the stack
description:
  - Runs a probe under the virtualenv's own Python and reports what PyTorch
    sees there (C(torch.__version__), C(torch.version.cuda), whether
    C(torch.cuda.is_available), the devices and their capability, the arch
    list of C(torch.cuda.get_arch_list), the C++11 ABI, the Python ABI tag), the
    versions of named distributions, and whether the driver's C(libcuda.so.1)
    can be loaded.
  - Checks the result against the pinned torch version and CUDA build and
    the host's GPUs, and names each problem with its fix
    (C(cpu_only_build), C(cuda_build_newer_than_driver),
    C(libcuda_unresolvable), ...). On a host without GPUs the GPU checks are
    reported as skipped, with the reason.
  - Changes nothing; the same in check mode.
version_added: "0.1.0"
author:
  - gpufleet maintainers (@gpufleet)
options:
  venv:
    description: Path of the virtualenv. A missing venv is reported, not an error.
    type: path
    required: true
  python:
    description:
      - Interpreter the venv is to be created from (name on C(PATH) or path).
        When given and the venv does not exist yet, its version and whether
        it has the C(venv) and C(ensurepip) modules are reported under
        C(interpreter); null once the venv exists, whose own Python is then
        reported under C(python).
    type: str
  import_torch:
    description:
      - Import torch to read its CUDA view (availability, devices, arch list,
        C++11 ABI). With C(false) only C(torch/version.py) is read, which is
        fast and needs no driver.
    type: bool
    default: true
  record:
    description:
      - A file where an earlier full reading of this torch was recorded (the torch role writes
        C(<venv>/.llm_stack/torch.json)). With I(import_torch=false), the C++11 ABI and the arch list are
        taken from it when it describes the torch installed now (same version, same sizes and times of
        C(version.py) and C(_C*.so), same Python); C(torch.from_record) then names the file. When it does
        not (or is missing), torch is imported after all.
    type: path
  distributions:
    description: Distribution names whose installed version (and C(direct_url.json)) to report.
    type: list
    elements: str
    default: []
  requirements:
    description:
      - Exact pins (C(NAME==VERSION)) or bare names checked against the venv;
        those not satisfied are returned in C(unmet). Their names are added to
        I(distributions).
    type: list
    elements: str
    default: []
  verify_files:
    description: Check every file of the reported distributions against the hashes in their C(RECORD).
    type: bool
    default: false
  expect_version:
    description: The torch release the stack pins (C(2.10.0)). Omit to skip the version check.
    type: str
  expect_local:
    description:
      - Local label of the expected build, C(cu128) for the CUDA 12.8 build, C(cpu) for the CPU build.
    type: str
  index_url:
    description: Index the fix messages point at.
    type: str
  gpu_count:
    description: Number of NVIDIA GPUs on the host (fact C(gpu_count) of M(gpufleet.llm_stack.gpu_facts)).
    type: int
    default: 0
  compute_caps:
    description: Compute capabilities of the host's GPUs (C(gpu_compute_caps)).
    type: list
    elements: str
    default: []
  driver_cuda_version:
    description: Newest CUDA the driver supports (C(gpu_driver_cuda_version)).
    type: str
  set_facts:
    description:
      - Return what the probe saw as the C(torch_info) fact. With C(false) it
        is only returned as C(info), and an earlier C(torch_info) fact (say
        from a full probe) is kept.
    type: bool
    default: true
  cpu_only_test_host:
    description:
      - CPU-only test hosts (no GPU) accept the CPU build of torch. Set from
        C(llm_stack_cpu_only_test_host); never true on a real fleet.
    type: bool
    default: false
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.read_only
  - gpufleet.llm_stack.attributes.facts
attributes:
  facts:
    support: full
    description: Returns ansible_facts (unless I(set_facts=false)).
notes:
  - Facts are returned as one dictionary, C(torch_info), so that they never
    shadow the C(torch_*) variables of the torch role.
seealso:
  - module: gpufleet.llm_stack.gpu_facts
"""

EXAMPLES = r"""
- name: Read the venv's torch and check it against the stack
  gpufleet.llm_stack.torch_info:
    venv: /opt/llm-stack/venv
    python: python3.12
    expect_version: "2.10.0"
    expect_local: cu128
    gpu_count: "{{ gpu_count }}"
    compute_caps: "{{ gpu_compute_caps }}"
    driver_cuda_version: "{{ gpu_driver_cuda_version }}"
  register: torch_probe

- name: Fail with every problem and its fix
  ansible.builtin.fail:
    msg: "{{ torch_probe.problems | map(attribute='msg') | join('\n') }}"
  when: torch_probe.problems | length > 0

- name: Versions of flash-attn and its build tools, without importing torch
  gpufleet.llm_stack.torch_info:
    venv: /opt/llm-stack/venv
    import_torch: false
    requirements: [einops, ninja, "packaging", "psutil"]
"""

RETURN = r"""
unmet:
  description: Entries of I(requirements) that the venv does not satisfy.
  returned: always
  type: list
  elements: str
  sample: ["torch==2.10.0+cu128"]
problems:
  description: What is wrong, each with its name and a message that gives the fix.
  returned: always
  type: list
  elements: dict
  sample: [{"name": "cpu_only_build", "msg": "torch 2.10.0+cpu is the CPU-only build ... Fix: ..."}]
notes:
  description: Things worth saying that are not problems (CPU build accepted on a CPU-only test host).
  returned: always
  type: list
  elements: str
gpu_checks:
  description: C(passed), C(failed), or C(skipped) with the reason (no GPU, CPU-only test host, no torch).
  returned: always
  type: str
  sample: "skipped: CPU-only test host (llm_stack_cpu_only_test_host)"
info:
  description: Same as the C(torch_info) fact; returned also with I(set_facts=false).
  returned: always
  type: dict
ansible_facts:
  description: Facts about the venv.
  returned: when I(set_facts) is true
  type: dict
  contains:
    torch_info:
      description: What the probe saw.
      type: dict
      contains:
        venv:
          description: The venv path.
          type: str
        venv_exists:
          description: Whether the venv has a C(bin/python).
          type: bool
        interpreter:
          description:
            - The I(python) interpreter (C(version), C(executable), C(venv), C(ensurepip), C(found)); null without
              I(python) or when the venv exists.
          type: dict
        python:
          description: The venv's Python (C(version), C(abi_tag) such as C(cp312), C(executable), C(prefix)); null without venv.
          type: dict
        torch:
          description:
            - Null when torch is not installed. Otherwise C(version), C(cuda) (null for the CPU build),
              C(cuda_build) (C(cu128) or C(cpu)), C(path), C(imported), and after an import C(cxx11_abi),
              C(cuda_available), C(cuda_warnings), C(devices) (list of C(index), C(name), C(capability),
              C(memory_total_mib)), C(arch_list); C(error) when it does not load.
            - C(signature) identifies the install (sizes and times of C(version.py) and C(_C*.so), Python version);
              C(from_record) names the I(record) the C++11 ABI and arch list came from, without an import.
          type: dict
          sample:
            version: 2.11.0+cu130
            cuda: "13.0"
            cuda_build: cu130
            cxx11_abi: true
            cuda_available: true
            devices: [{index: 0, name: NVIDIA H200, capability: "9.0", memory_total_mib: 143166}]
            arch_list: [sm_75, sm_80, sm_86, sm_90, sm_100, sm_120]
        distributions:
          description: For each requested name, null or C(version), C(direct_url) and, with I(verify_files), C(file_problems).
          type: dict
        libcuda:
          description: C(loaded), C(path) and C(error) of loading C(libcuda.so.1).
          type: dict
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import torch_probe


def run_probe(module, python, script, payload=None):
    argv = [python, "-I", "-c", script]
    if payload is not None:
        argv.append(json.dumps(payload))
    rc, out, err = module.run_command(argv, environ_update={"PYTHONWARNINGS": "ignore"})
    if rc != 0:
        raise torch_probe.ProbeError("%s exited with %d: %s" % (python, rc, (err or out).strip()[-800:]))
    return torch_probe.parse_probe_output(out)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            venv=dict(type="path", required=True),
            python=dict(type="str"),
            import_torch=dict(type="bool", default=True),
            record=dict(type="path"),
            distributions=dict(type="list", elements="str", default=[]),
            requirements=dict(type="list", elements="str", default=[]),
            verify_files=dict(type="bool", default=False),
            expect_version=dict(type="str"),
            expect_local=dict(type="str"),
            index_url=dict(type="str"),
            gpu_count=dict(type="int", default=0),
            compute_caps=dict(type="list", elements="str", default=[]),
            driver_cuda_version=dict(type="str"),
            cpu_only_test_host=dict(type="bool", default=False),
            set_facts=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        req_names = [torch_probe.parse_requirement(r)[0] for r in p["requirements"]]
    except ValueError as e:
        module.fail_json(msg="requirements: %s" % e)

    info = {"venv": p["venv"], "venv_exists": False, "interpreter": None, "python": None,
            "torch": None, "distributions": {}, "libcuda": None}

    venv_python = os.path.join(p["venv"], "bin", "python")
    if p["python"] and not os.access(venv_python, os.X_OK):
        exe = p["python"] if os.path.sep in p["python"] else module.get_bin_path(p["python"])
        if not exe:
            info["interpreter"] = {"found": False, "name": p["python"]}
        else:
            try:
                info["interpreter"] = dict(run_probe(module, exe, torch_probe.INTERPRETER_SCRIPT), found=True, name=p["python"])
            except torch_probe.ProbeError as e:
                info["interpreter"] = {"found": False, "name": p["python"], "error": str(e)}

    unmet = list(p["requirements"])
    if os.access(venv_python, os.X_OK):
        info["venv_exists"] = True
        names = list(dict.fromkeys(list(p["distributions"]) + req_names))
        try:
            probed = run_probe(module, venv_python, torch_probe.PROBE_SCRIPT,
                               {"import_torch": p["import_torch"], "distributions": names, "verify_files": p["verify_files"],
                                "record": p["record"]})
        except (torch_probe.ProbeError, ValueError) as e:
            module.fail_json(msg="Cannot probe the venv %s: %s. Fix: recreate the venv (remove it and run the torch role)."
                             % (p["venv"], e), info=info)
        info.update(probed)
        if info["torch"]:
            info["torch"]["cuda_build"] = torch_probe.cuda_build_tag(info["torch"].get("cuda"))
        unmet = torch_probe.unmet_requirements(p["requirements"], info["distributions"])

    if p["expect_version"] is None and p["expect_local"] is None:
        problems, notes, gpu_checks = [], [], "not requested (no expect_version or expect_local)"
    else:
        problems, notes, gpu_checks = torch_probe.diagnose(
            info if info["venv_exists"] else {},
            expect_version=p["expect_version"], expect_local=p["expect_local"], index_url=p["index_url"],
            gpu_count=p["gpu_count"], driver_cuda_version=p["driver_cuda_version"],
            compute_caps=p["compute_caps"], cpu_only_test_host=p["cpu_only_test_host"])
    if not info["venv_exists"]:
        problems = [{"name": "venv_missing", "msg": "%s is not a virtualenv (no bin/python). Fix: run the torch role, "
                     "which creates it." % p["venv"]}]
        gpu_checks = "skipped: no venv"
    result = dict(changed=False, unmet=unmet, problems=problems, notes=notes, gpu_checks=gpu_checks, info=info)
    if p["set_facts"]:
        result["ansible_facts"] = {"torch_info": info}
    module.exit_json(**result)


if __name__ == "__main__":
    main()
