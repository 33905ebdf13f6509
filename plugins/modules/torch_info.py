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
    the host's GPUs and driver (the driver rule of M(gpufleet.llm_stack.stack_compat)), and names each problem
    with its fix (C(cpu_only_build), C(cuda_build_newer_than_driver),
    C(libcuda_unresolvable), ...). On a host without GPUs the GPU checks are
    reported as skipped, with the reason.
  - Says whether the torch role must install (RV(needs_install)) and gives the role's report (RV(report)), so that
    the role decides nothing itself.
  - Hosts without GPUs need no import of torch on a re-run. With I(use_record) the C++11 ABI and the arch list come
    from the record of the last full import, as long as it describes the torch installed now.
  - With I(python) and I(read_gpus) it is also, in one call, the one reading of the host a role's gate needs, namely
    the interpreter the venv is made from and the venv's own Python (as M(gpufleet.llm_stack.python_info) reads them),
    and the GPUs and driver (as M(gpufleet.llm_stack.gpu_facts) reads them, returned as its facts), which the
    diagnosis then uses.
  - Changes nothing, except the record with I(write_record).
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
      - The interpreter the venv would be made from, a name on C(PATH) or a path. When set and the venv has no
        working C(bin/python), it is read as M(gpufleet.llm_stack.python_info) reads it and returned as
        RV(interpreter); a venv that exists is judged by its own Python (its C(pyvenv.cfg)), so the interpreter is
        not run then.
    type: str
  read_gpus:
    description:
      - Read the host's GPUs and driver here, as M(gpufleet.llm_stack.gpu_facts) does with its defaults
        (C(nvidia-smi) on C(PATH) or in its usual directories, 30 seconds per call), return them as the same facts
        (C(gpu_count), C(gpu_compute_caps), C(gpu_driver_version), ...) and judge torch against them.
      - I(gpu_count), I(compute_caps) and I(driver_version) are then not used.
      - For a play without preflight's C(llm_stack_host) and without those facts, this is one call instead of two.
    type: bool
    default: false
  read_toolkits:
    description:
      - Read the host's CUDA toolkits here, as M(gpufleet.llm_stack.nvcc_facts) does with its defaults (C(nvcc) on
        C(PATH), else C(/usr/local/cuda/bin/nvcc); every C(/usr/local/cuda-X.Y); 20 seconds per C(nvcc --version)),
        and return them as RV(toolkits), not as facts, so that they never replace the facts a play has.
      - For a role that needs the toolkit where no preflight report names it, this is one call instead of two.
    type: bool
    default: false
  import_torch:
    description:
      - Import torch to read its CUDA view (availability, devices, arch list, C++11 ABI).
      - With C(false), only C(torch/version.py) is read (fast, no driver needed), plus the record with I(use_record).
      - Unset, torch is imported on hosts with GPUs (I(gpu_count) above 0) and not on the others.
    type: bool
  use_record:
    description:
      - Without an import, take the C++11 ABI and the arch list from the record of the last full import (kept in the
        venv by I(write_record)) when it describes the torch installed now (same version, same sizes and times of
        C(version.py) and C(_C*.so), same Python); C(torch.from_record) then names it. When it does not (or there is
        none), torch is imported after all.
    type: bool
    default: true
  write_record:
    description:
      - After an import of torch that found no problem, write the record when it differs from the one in the venv
        (C(changed) then; not in check mode).
      - Without it, RV(record_stale) says whether a reading with it would write.
    type: bool
    default: false
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
      - Local label of the expected build, C(cu128) (or C(12.8)) for the CUDA 12.8 build, C(cpu) for the CPU build.
    type: str
  index_url:
    description: Index the messages point at (credentials are masked).
    type: str
  wheelhouse:
    description: Host directory of wheels torch is installed from instead of an index, for the messages.
    type: str
  package_index_url:
    description:
      - The base URL of the cache host's package proxy (C(llm_stack_package_index_url)); empty for none. Where it is
        set and I(wheelhouse) is not, RV(install) C(default_index_url) is the proxy's index of the host's torch build,
        and the module asks the proxy for that index (RV(package_index)).
    type: str
  package_index_ca:
    description: The CA certificate (PEM text) the proxy's certificate is checked with; empty for the host's trust
      store.
    type: str
  package_index_ca_path:
    description: Where the torch role keeps I(package_index_ca) on the host, for pip (RV(install) C(pip_cert)); empty
      where no CA is given.
    type: str
  pip_spec:
    description:
      - What the torch role asks pip for (C(torch_pip_spec)); empty for C(torch==VERSION+BUILD), the build being
        I(expect_local), or C(cpu) on a CPU-only test host without GPUs. Returned in RV(install).
    type: str
  gpu_count:
    description: Number of NVIDIA GPUs on the host (C(llm_stack_host.gpu.count), or the C(gpu_count) fact); not used
      with I(read_gpus).
    type: int
    default: 0
  compute_caps:
    description: Compute capabilities of the host's GPUs (C(llm_stack_host.gpu.compute_caps) or C(gpu_compute_caps));
      not used with I(read_gpus).
    type: list
    elements: str
    default: []
  driver_version:
    description: The NVIDIA driver's version (C(gpu_driver_version)); the driver rule is skipped when empty. Not used
      with I(read_gpus).
    type: str
  set_facts:
    description:
      - Return what the probe saw as the C(torch_info) fact. With C(false) it
        is only returned as C(info).
    type: bool
    default: true
  cpu_only_test_host:
    description:
      - CPU-only test hosts (no GPU) accept the CPU build of torch. Set from
        C(llm_stack_cpu_only_test_host); never true on a real fleet.
    type: bool
    default: false
  timeout:
    description: Seconds the probe (an import of torch) may take; then its process group is killed and the module fails.
    type: int
    default: 300
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.facts
attributes:
  check_mode:
    support: full
    description: Only reads; the record is not written in check mode (C(changed) says it would be).
  diff_mode:
    support: none
    description: No diff is produced.
  facts:
    support: full
    description: Returns ansible_facts (the C(torch_info) fact unless I(set_facts=false); the GPU facts with
      I(read_gpus)).
notes:
  - Facts are returned as one dictionary, C(torch_info), so that they never
    shadow the C(torch_*) variables of the torch role.
seealso:
  - module: gpufleet.llm_stack.python_info
  - module: gpufleet.llm_stack.gpu_facts
"""

EXAMPLES = r"""
- name: Read the venv's torch and check it against the stack
  gpufleet.llm_stack.torch_info:
    venv: /opt/llm-stack/venv
    expect_version: "2.10.0"
    expect_local: cu128
    gpu_count: "{{ ansible_facts['gpu_count'] }}"
    compute_caps: "{{ ansible_facts['gpu_compute_caps'] }}"
    driver_version: "{{ ansible_facts['gpu_driver_version'] }}"
    write_record: true
  register: torch_state

- name: Fail with every problem and its fix
  ansible.builtin.fail:
    msg: "{{ torch_state.failure }}"
  when: not torch_state.ok

- name: Read the GPUs, the interpreter python3.12, the venv and its torch in one call (a role's gate)
  gpufleet.llm_stack.torch_info:
    venv: /opt/llm-stack/venv
    python: python3.12
    read_gpus: true
    expect_version: "2.10.0"
    expect_local: cu128
    set_facts: false
  register: torch_state

- name: Versions of flash-attn and its build tools, without importing torch
  gpufleet.llm_stack.torch_info:
    venv: /opt/llm-stack/venv
    import_torch: false
    requirements: [einops, ninja, "packaging", "psutil"]
    set_facts: false
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
  description: Things worth saying that are not problems (CPU build accepted on a CPU-only test host, a driver that
    runs the build only through minor version compatibility).
  returned: always
  type: list
  elements: str
gpu_checks:
  description: C(passed), C(failed), or C(skipped) with the reason (no GPU, CPU-only test host, no torch).
  returned: always
  type: str
  sample: "skipped: CPU-only test host (llm_stack_cpu_only_test_host)"
ok:
  description: No problem and no unmet requirement.
  returned: always
  type: bool
needs_install:
  description:
    - Whether the torch role installs torch here; true when there is no venv, torch is missing, does not load, is of
      another release or build, or a requirement is unmet.
  returned: always
  type: bool
failure:
  description: The problems and unmet requirements as one message, each with its fix; empty when RV(ok).
  returned: always
  type: str
report:
  description:
    - The torch role's report; the torch found (version, CUDA, C++11 ABI, Python), the GPU checks and, on GPU hosts,
      what the import saw (C(torch.cuda.is_available()), the devices' capabilities, C(torch.cuda.get_arch_list()));
      in check mode, what would be installed; then the notes.
  returned: always
  type: list
  elements: str
install:
  description:
    - What the torch role installs when RV(needs_install); C(build) (the tag, C(cpu) on a CPU-only test host without
      GPUs), C(spec) (what pip is asked for), C(default_index_url) (PyTorch's index of that build, or the cache
      host's package proxy's index of it where I(package_index_url) is set, used when no index is set) and
      C(source) (where from, for the messages, credentials masked).
    - C(proxy) (pip goes through the proxy), C(pip_cert) (the proxy's CA on the host for pip, or empty) and
      C(proxy_key) (the index and the spec where the host installs through the proxy, else empty; the first host
      of each key installs before the others).
  returned: always
  type: dict
  sample: {build: cu128, spec: torch==2.10.0+cu128, default_index_url: "https://download.pytorch.org/whl/cu128",
           source: "https://download.pytorch.org/whl/cu128"}
package_index:
  description:
    - Where I(package_index_url) is set and I(wheelhouse) is not, the answer of the proxy for the host's torch build
      (to C(GET <base>/root/<build>)) - C(url) (the index pip uses), C(answered) (it answered 200 with an index
      that inherits, as the cache host's fleet_cache role makes it), C(error) (why not) and C(build); else null.
  returned: always
  type: dict
  sample: {url: "https://cache-01:8081/root/cu128/+simple/", answered: true, error: "", build: cu128}
record_written:
  description: Whether the record was written (or, in check mode, would be).
  returned: always
  type: bool
record_stale:
  description:
    - Whether torch was imported here without any problem and the record in the venv does not say what that import
      told (none, or of another install); I(write_record) writes it then.
  returned: always
  type: bool
interpreter:
  description:
    - The interpreter I(python) (C(found), C(name), C(executable), C(version), C(venv), C(ensurepip), C(error)), as
      M(gpufleet.llm_stack.python_info) returns it; null without I(python) and where the venv exists.
  returned: always
  type: dict
  sample: {found: true, name: python3.12, executable: /usr/bin/python3.12, version: 3.12.3, venv: true,
           ensurepip: true, error: null}
venv:
  description:
    - The venv as M(gpufleet.llm_stack.python_info) returns it (C(path), C(exists), C(python_version) from its
      C(pyvenv.cfg), C(abi_tag), C(error)).
  returned: always
  type: dict
  sample: {path: /opt/llm-stack/venv, exists: true, python_version: 3.12.3, abi_tag: cp312, error: null}
toolkits:
  description:
    - With I(read_toolkits), what M(gpufleet.llm_stack.nvcc_facts) returns as facts (C(nvcc_path), C(nvcc_version),
      C(nvcc_build), C(nvcc_error), C(cuda_toolkits), C(cuda_home_link), C(cuda_home_link_dangling)); null
      without it.
  returned: always
  type: dict
  sample: {nvcc_path: /usr/local/cuda/bin/nvcc, nvcc_version: "13.0", nvcc_build: 13.0.88, cuda_toolkits: [], nvcc_error: null}
info:
  description: Same as the C(torch_info) fact; returned also with I(set_facts=false).
  returned: always
  type: dict
ansible_facts:
  description:
    - Facts about the venv (with I(set_facts)), and with I(read_gpus) the GPU facts of
      M(gpufleet.llm_stack.gpu_facts) (C(gpu_count), C(gpu_devices), C(gpu_compute_caps), C(gpu_driver_version),
      C(gpu_driver_cuda_version), C(gpu_driver_cuda_version_source), C(gpu_error), C(gpu_compute_cap_source),
      C(gpu_nvidia_smi_path)).
  returned: when I(set_facts) or I(read_gpus) is true
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
              C(from_record) names the record the C++11 ABI and arch list came from, without an import.
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

import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.urls import open_url
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import package_proxy
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import python_probe
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import torch_probe
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.proc import run
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.python_probe import ProbeError, run_probe
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import mask_credentials


def ask_package_index(base, build, ca_pem):
    """The proxy's answer for the build's index: package_proxy.answer of GET <base>/root/<build>?no_projects=."""
    url = package_proxy.index_url(base, build)
    ca_file = None
    try:
        if ca_pem:
            handle = tempfile.NamedTemporaryFile("w", suffix=".pem", delete=False)
            with handle:
                handle.write(ca_pem)
            ca_file = handle.name
        try:
            response = open_url(package_proxy.config_url(base, build), use_proxy=False, timeout=20, ca_path=ca_file,
                                headers={"Accept": "application/json"})
            status, body = response.getcode(), response.read()
        except HTTPError as exc:
            status, body = exc.code, b""
        except (URLError, OSError, ValueError) as exc:
            status, body = None, str(exc).encode("utf-8", "replace")
    finally:
        if ca_file:
            os.unlink(ca_file)
    return dict(package_proxy.answer(url, status, body), build=build)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            venv=dict(type="path", required=True),
            python=dict(type="str"),
            read_gpus=dict(type="bool", default=False),
            read_toolkits=dict(type="bool", default=False),
            import_torch=dict(type="bool"),
            use_record=dict(type="bool", default=True),
            write_record=dict(type="bool", default=False),
            distributions=dict(type="list", elements="str", default=[]),
            requirements=dict(type="list", elements="str", default=[]),
            verify_files=dict(type="bool", default=False),
            expect_version=dict(type="str"),
            expect_local=dict(type="str"),
            index_url=dict(type="str"),
            wheelhouse=dict(type="str"),
            package_index_url=dict(type="str"),
            package_index_ca=dict(type="str"),
            package_index_ca_path=dict(type="str"),
            pip_spec=dict(type="str"),
            gpu_count=dict(type="int", default=0),
            compute_caps=dict(type="list", elements="str", default=[]),
            driver_version=dict(type="str"),
            cpu_only_test_host=dict(type="bool", default=False),
            set_facts=dict(type="bool", default=True),
            timeout=dict(type="int", default=300),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        req_names = [torch_probe.parse_requirement(r)[0] for r in p["requirements"]]
    except ValueError as e:
        module.fail_json(msg="requirements: %s" % e)
    expect_local = p["expect_local"]
    if expect_local:
        try:
            expect_local = compat.torch_cuda_tag(expect_local)
        except compat.StackInputError as e:
            module.fail_json(msg="expect_local: %s" % str(e).split(": ", 1)[-1])
    if p["timeout"] < 1:
        module.fail_json(msg="timeout must be 1 or more seconds, got %d" % p["timeout"])
    index_url = mask_credentials(p["index_url"]) if p["index_url"] else None
    venv = p["venv"]
    facts = {}
    gpu_count, compute_caps, driver_version = p["gpu_count"], p["compute_caps"], p["driver_version"]
    # nvidia and nvcc are imported only where they read: every module run compiles what it imports.
    if p["read_gpus"]:
        from ansible_collections.gpufleet.llm_stack.plugins.module_utils import nvidia
        smi = module.get_bin_path("nvidia-smi", opt_dirs=nvidia.SMI_SEARCH_DIRS)
        env = dict(os.environ, LC_ALL="C")
        facts, warnings = nvidia.read_gpus(lambda argv: run(argv, timeout=nvidia.SMI_TIMEOUT, env=env), smi,
                                           nvidia.SMI_TIMEOUT)
        for warning in warnings:
            module.warn(warning)
        gpu_count, compute_caps, driver_version = (facts["gpu_count"], facts["gpu_compute_caps"],
                                                   facts["gpu_driver_version"])
    toolkits = None
    if p["read_toolkits"]:
        # nvcc_facts with its defaults.
        from ansible_collections.gpufleet.llm_stack.plugins.module_utils import nvcc
        nvcc_env = dict(os.environ, LC_ALL="C")
        toolkits, warnings = nvcc.read_nvcc(lambda argv: run(argv, timeout=nvcc.DEFAULT_TIMEOUT, env=nvcc_env), None,
                                            module.get_bin_path("nvcc"), nvcc.DEFAULT_ROOT, [])
        for warning in warnings:
            module.warn(warning)
    venv_python = os.path.join(venv, "bin", "python")
    has_venv = os.path.isfile(venv_python) and os.access(venv_python, os.X_OK)
    # Only a venv still to be made needs the interpreter (the gate judges an existing venv by its own Python).
    interpreter = python_probe.probe_interpreter(p["python"], timeout=p["timeout"]) \
        if p["python"] is not None and not has_venv else None

    info = {"venv": venv, "venv_exists": False, "python": None, "torch": None, "distributions": {}, "libcuda": None}
    unmet = list(p["requirements"])
    if has_venv:
        info["venv_exists"] = True
        import_torch = p["import_torch"] if p["import_torch"] is not None else gpu_count > 0
        payload = {"import_torch": import_torch, "verify_files": p["verify_files"],
                   "distributions": list(dict.fromkeys(list(p["distributions"]) + req_names)),
                   "record": torch_probe.record_path(venv) if p["use_record"] else None}
        try:
            probed = run_probe(venv_python, torch_probe.PROBE_SCRIPT, [json.dumps(payload)], timeout=p["timeout"])
        except ProbeError as e:
            module.fail_json(msg="Cannot probe the venv %s: %s. Fix: recreate the venv (remove it and run the torch role)."
                             % (venv, e), info=info)
        info.update(probed)
        if info["torch"]:
            info["torch"]["cuda_build"] = torch_probe.cuda_build_tag(info["torch"].get("cuda"))
        unmet = torch_probe.unmet_requirements(p["requirements"], info["distributions"])

    venv_read = python_probe.read_venv(venv, timeout=p["timeout"], probed_version=(info["python"] or {}).get("version"))
    if p["expect_version"] is None and expect_local is None:
        problems, notes, gpu_checks = [], [], "not requested (no expect_version or expect_local)"
    else:
        problems, notes, gpu_checks = torch_probe.diagnose(
            info if info["venv_exists"] else {},
            expect_version=p["expect_version"], expect_local=expect_local, index_url=index_url,
            wheelhouse=p["wheelhouse"], gpu_count=gpu_count, driver_version=driver_version,
            compute_caps=compute_caps, cpu_only_test_host=p["cpu_only_test_host"])
    if not info["venv_exists"]:
        problems = [{"name": "venv_missing", "msg": "%s is not a virtualenv (no bin/python). Fix: run the torch role, "
                     "which creates it." % venv}]
        gpu_checks = "skipped: no venv"

    install = torch_probe.needs_install(info, problems, unmet)
    plan = torch_probe.install_plan(p["expect_version"], expect_local, gpu_count, p["cpu_only_test_host"],
                                    p["pip_spec"], index_url, p["wheelhouse"], p["package_index_url"],
                                    p["package_index_ca_path"] if p["package_index_ca"] else "")
    # The key of what this host installs through the proxy: the first host of each key installs first.
    plan["proxy_key"] = "%s %s" % (plan["default_index_url"], plan["spec"]) if plan["proxy"] and install else ""
    package_index = None
    if p["package_index_url"] and not p["wheelhouse"] and plan["build"]:
        package_index = ask_package_index(p["package_index_url"], plan["build"], p["package_index_ca"])
    result = dict(
        changed=False, unmet=unmet, problems=problems, notes=notes, gpu_checks=gpu_checks, info=info,
        ok=not problems and not unmet, needs_install=install, install=plan,
        failure=torch_probe.failure_message(venv, problems, unmet),
        report=torch_probe.report_lines(info, gpu_checks, notes, module.check_mode, install,
                                        "%s would be installed into %s from %s" % (plan["spec"], venv, plan["source"]),
                                        gpu_count),
        record_written=False, record_stale=False, interpreter=interpreter, venv=venv_read, toolkits=toolkits,
        package_index=package_index)

    record = torch_probe.fresh_record(info["torch"], problems)
    if record is not None and torch_probe.read_record(venv) != record:
        result["record_stale"] = True
        if p["write_record"]:
            result.update(changed=True, record_written=True, record_stale=module.check_mode)
            if not module.check_mode:
                try:
                    torch_probe.write_record(venv, record)
                except OSError as e:
                    module.fail_json(msg="Cannot write the record of torch in %s: %s" % (venv, e), **result)
    if p["set_facts"]:
        facts["torch_info"] = info
    if facts:
        result["ansible_facts"] = facts
    module.exit_json(**result)


if __name__ == "__main__":
    main()
