# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: the flash_attn_build role's variables as flash_attn's plan reads them, and the venv's torch.

flash_attn.py re-exports every name here its callers use; not part of the public API.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.llm_stack.plugins.module_utils._build_env import positive as _positive, whole as _whole
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._readers import (
    as_bool as _bool,
    as_dict as _dict,
    text as _text,
)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import has_credentials

SOURCES = ("sdist", "git")
BELOW_SM80 = ("skip", "fail")
ARCH_SCOPES = ("host", "group")
VERIFY = ("always", "changed", "never")

_REQUIREMENT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(==[A-Za-z0-9.+!_-]+)?", re.ASCII)


class FlashAttnError(TypeError):
    """The role passed something of the wrong shape (a bug of the caller, not of the inventory)."""


# --- inputs ----------------------------------------------------------------

INPUTS = {
    # key: (variable, default)
    "version": ("flash_attn_build_version", ""),
    "source": ("flash_attn_build_source", "sdist"),
    "git_url": ("flash_attn_build_git_url", ""),
    "git_ref": ("flash_attn_build_git_ref", ""),
    "venv": ("flash_attn_build_venv", ""),
    "arch_list": ("flash_attn_build_arch_list", ""),
    "arch_scope": ("flash_attn_build_arch_scope", "host"),
    "below_sm80": ("flash_attn_build_below_sm80", "skip"),
    "max_jobs": ("flash_attn_build_max_jobs", 0),
    "nvcc_threads": ("flash_attn_build_nvcc_threads", 0),
    "gb_per_nvcc_thread": ("flash_attn_build_gb_per_nvcc_thread", 5.0),
    "cuda_home": ("flash_attn_build_cuda_home", ""),
    "cuda_version": ("llm_stack_cuda_version", ""),
    "cache_dir": ("flash_attn_build_cache_dir", ""),
    "wheel_dir": ("flash_attn_build_wheel_dir", ""),
    "index_url": ("flash_attn_build_index_url", ""),
    "wheelhouse": ("flash_attn_build_wheelhouse", ""),
    "wheelhouse_dest": ("flash_attn_build_wheelhouse_dest", ""),
    "build_requirements": ("flash_attn_build_build_requirements", []),
    "runtime_requirements": ("flash_attn_build_runtime_requirements", []),
    "verify": ("flash_attn_build_verify", "changed"),
    "check_tolerance": ("flash_attn_build_check_tolerance", 0.01),
    "cpu_only_test_host": ("llm_stack_cpu_only_test_host", False),
    "hostname": ("inventory_hostname", ""),
    # A build host: it compiles the keys of the other hosts of the play before they install (flash_attn.fleet_plans).
    "for_fleet": ("flash_attn_build_for_fleet", False),
}


def read_inputs(inputs):
    """The role's variables, checked: (values, errors, gated). Every message names the variable and the fix.

    errors: what only this role checks (scope, verify, jobs, the cache, the
    venv, the git source). gated: what the gate (stack_compat, part
    flash_attn) checks as well (requirement formats). The gate alone checks
    the flash-attn version, the source and below_sm80 choices and the
    wheelhouse.
    """
    if not isinstance(inputs, dict):
        raise FlashAttnError("the inputs must be a dict of the role's variables, got %s" % type(inputs).__name__)
    unknown = sorted(set(inputs) - set(INPUTS))
    if unknown:
        raise FlashAttnError("unknown input(s): %s (known: %s)" % (", ".join(unknown), ", ".join(sorted(INPUTS))))
    v = dict((key, inputs.get(key, default)) for key, (dummy, default) in INPUTS.items())
    errors, gated = [], []
    for key, choices in (("arch_scope", ARCH_SCOPES), ("verify", VERIFY)):
        if _text(v[key]) not in choices:
            errors.append("%s=%s. Fix: use %s." % (INPUTS[key][0], v[key], " or ".join(choices)))
    fix = "whole numbers, 0 to derive them from the builder's vCPUs and RAM"
    v["max_jobs"] = _whole(v["max_jobs"], INPUTS["max_jobs"][0], errors, fix)
    v["nvcc_threads"] = _whole(v["nvcc_threads"], INPUTS["nvcc_threads"][0], errors, fix)
    v["gb_per_nvcc_thread"] = _positive(v["gb_per_nvcc_thread"], INPUTS["gb_per_nvcc_thread"][0], errors,
                                        "a positive number of GB of RAM per nvcc thread, such as 5.0") or 5.0
    v["check_tolerance"] = _positive(v["check_tolerance"], INPUTS["check_tolerance"][0], errors,
                                     "a positive number, such as 0.01") or 0.01
    if not _text(v["cache_dir"]):
        errors.append("flash_attn_build_cache_dir is empty. Fix: set it (or llm_stack_controller_cache) to a"
                      " directory on the controller.")
    if not _text(v["venv"]):
        errors.append("flash_attn_build_venv is empty. Fix: set it (or llm_stack_venv) to the venv with the"
                      " stack's torch.")
    if not _text(v["wheel_dir"]).startswith("/"):
        errors.append("flash_attn_build_wheel_dir=%r is not an absolute path. Fix: set it (default"
                      " llm_stack_prefix/wheels) to a directory on the host." % _text(v["wheel_dir"])[:120])
    for key in ("build_requirements", "runtime_requirements"):
        value = v[key]
        if not isinstance(value, (list, tuple)):
            errors.append("%s=%s is not a list. Fix: a list of exact pins or bare names (ninja, einops==0.8.2)."
                          % (INPUTS[key][0], value))
            v[key] = []
            continue
        bad = [item for item in value if not isinstance(item, str) or not _REQUIREMENT_RE.fullmatch(item.strip())]
        if bad:
            gated.append("%s has %s. Fix: exact pins or bare names only (ninja, einops==0.8.2)."
                         % (INPUTS[key][0], ", ".join(repr(item) for item in bad)))
        v[key] = [item.strip() for item in value if item not in bad]
    if _text(v["source"]) == "git":
        for key in ("git_url", "git_ref"):
            if not _text(v[key]) or re.search(r"\s", _text(v[key])):
                errors.append("%s=%r with flash_attn_build_source=git. Fix: the repository URL and a tag, branch"
                              " or commit (a commit is the reproducible choice), without spaces."
                              % (INPUTS[key][0], v[key]))
    v["cpu_only_test_host"] = _bool(v["cpu_only_test_host"])
    # A boolean, or a string Ansible reads as one ("true", "no"): the inventory's value through vars/main.yml.
    value = v["for_fleet"]
    for_fleet = value if isinstance(value, bool) else _bool(value, None) if isinstance(value, str) else None
    if for_fleet is None:
        errors.append("flash_attn_build_for_fleet=%r is not a boolean. Fix: true on a build host that compiles the"
                      " keys of the other hosts of the play, false (the default) elsewhere." % (v["for_fleet"],))
    v["for_fleet"] = bool(for_fleet)
    for key in ("version", "source", "git_url", "git_ref", "venv", "arch_list", "arch_scope", "below_sm80",
                "cuda_home", "cuda_version", "cache_dir", "wheel_dir", "index_url", "wheelhouse", "wheelhouse_dest",
                "verify",
                "hostname"):
        v[key] = _text(v[key])
    return v, errors, gated


# --- the venv's torch ------------------------------------------------------

def read_torch(result):
    """What a torch_info result says about the venv: {venv_exists, torch, python_abi, unmet, installed_url, error}.

    error is None when the venv has a torch to build against (version, CUDA build and C++11 ABI known).
    """
    result = _dict(result)
    info = _dict(result.get("info"))
    torch = info.get("torch")
    venv_exists = bool(info.get("venv_exists"))
    python = _dict(info.get("python"))
    dist = _dict(_dict(info.get("distributions")).get("flash-attn"))
    url = _dict(dist.get("direct_url")).get("url") or ""
    error = None
    if not venv_exists:
        error = "no venv"
    elif not isinstance(torch, dict):
        error = "torch not installed"
    elif torch.get("error"):
        error = _text(torch.get("error"))
    elif torch.get("cxx11_abi") is None:
        error = "torch's C++11 ABI is not known"
    return {
        "venv_exists": venv_exists,
        "torch": torch if isinstance(torch, dict) else None,
        "python_abi": _text(python.get("abi_tag")),
        "unmet": [_text(item) for item in result.get("unmet") or []],
        "installed_url": _text(url),
        "error": error,
    }


# --- an earlier plan, credentials -----------------------------------------

def checked_inputs(inputs):
    """(values, errors, gated) as read_inputs gives them, or as an earlier plan of the host carries them.

    A plan is taken as it is (its ``inputs`` and ``input_problems``): the role plans again with what it read on
    the host without reading its variables again, each of which Ansible renders from its template at every reading.
    """
    if isinstance(inputs, dict) and "input_problems" in inputs:
        values, problems = inputs.get("inputs"), inputs.get("input_problems")
        if not isinstance(values, dict) or not isinstance(problems, dict) or \
                not all(isinstance(problems.get(key), list) for key in ("errors", "gated")):
            raise FlashAttnError("an earlier plan needs its inputs (a dict) and input_problems (errors and gated,"
                                 " lists); make it with flash_attn.plan")
        return dict(values), list(problems["errors"]), list(problems["gated"])
    return read_inputs(inputs)


def no_log(inputs):
    """Whether the plan, and each task that acts on it, stays out of the logs.

    True when the index URL, or for a git source the repository URL, carries credentials. inputs: the role's
    variables (only index_url, source and git_url are read) or a plan.
    """
    if not isinstance(inputs, dict):
        raise FlashAttnError("the inputs must be a dict of the role's variables, got %s" % type(inputs).__name__)
    if "input_problems" in inputs:
        return bool(inputs.get("no_log"))
    return has_credentials(_text(inputs.get("index_url", ""))) or (
        _text(inputs.get("source", "sdist")) == "git" and has_credentials(_text(inputs.get("git_url", ""))))
