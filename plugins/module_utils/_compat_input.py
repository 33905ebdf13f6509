# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: the input of compat (module_utils/compat.py): every option normalized in one place, before
any lookup, and the Report the checks add their problems to. Not part of the public API.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat_matrix as M
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._compat_pins import (
    MAX_MODEL_LENGTH,
    PINS,
    RULES,
    StackInputError,
    _GPU_RE,
    _MODEL_RE,
    _VARIABLE_RE,
    _cu,
    _short,
    listed,
    normalize_torch_cuda,
)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.cuda_arch import ArchError, cap_str, parse_cap
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.versions import Version, VersionError


# --- input: every option normalized in one place, before any lookup.

def _version_option(option, value, what):
    """Version of an option's text, or None for an empty one. Raises StackInputError naming the option."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise StackInputError(option, "%s is not %s; quote it in YAML, such as \"%s\"" % (_short(value), what, value))
    if not value.strip():
        return None
    try:
        return Version(value)
    except VersionError as exc:
        raise StackInputError(option, "%s is not %s (%s)" % (_short(value), what, exc))


def _plain_release(option, version, value, parts, example):
    if version.pre is not None or version.post is not None or version.dev is not None or version.local \
            or len(version.release) not in parts:
        raise StackInputError(option, "%s is not %s" % (_short(value), example))


def validate(params):
    """Check and normalize stack_compat's options; return a dict of parsed values.

    The one place where versions are normalized (stripped, a leading 'v'
    dropped, ASCII digits only) before any lookup. Raises StackInputError
    naming the option on the first value that cannot be normalized, before
    any check runs.
    """
    parsed = {"raw": {}}
    for option in PINS + ("driver_version",):
        value = params.get(option)
        parsed["raw"][option] = value.strip() if isinstance(value, str) else value

    gpus = params.get("gpus") or []
    if not isinstance(gpus, (list, tuple)):
        raise StackInputError("gpus", "expected a list of compute capabilities such as ['8.0', '9.0'], got %s"
                                      % _short(gpus))
    caps = []
    for gpu in gpus:
        if isinstance(gpu, float) and not isinstance(gpu, bool):
            gpu = "%.1f" % gpu if abs(float("%.1f" % gpu) - gpu) < 1e-9 else repr(gpu)
        if not isinstance(gpu, str) or not _GPU_RE.fullmatch(gpu.strip()):
            raise StackInputError("gpus", "%s is not a compute capability; use strings such as '9.0'"
                                          " (the gpu_compute_caps fact)" % _short(gpu))
        try:
            caps.append(parse_cap(gpu.strip()))
        except ArchError as exc:
            raise StackInputError("gpus", "%s; use strings such as '9.0' (the gpu_compute_caps fact)" % exc)
    parsed["gpus"] = [cap_str(cap) for cap in sorted(set(caps))]

    cuda = _version_option("cuda_version", params.get("cuda_version"), "a CUDA toolkit version")
    if cuda is None:
        raise StackInputError("cuda_version", "%s is not a CUDA toolkit version; use major.minor.patch such as"
                                              " '12.8.1'" % _short(params.get("cuda_version")))
    _plain_release("cuda_version", cuda, params.get("cuda_version"), (2, 3),
                   "a CUDA toolkit version; use major.minor.patch such as '12.8.1'")
    parsed["cuda_version"] = cuda

    driver = _version_option("driver_version", params.get("driver_version"), "a driver version")
    if driver is not None:
        _plain_release("driver_version", driver, params.get("driver_version"), (2, 3),
                       "a driver version; use the gpu_driver_version fact such as '580.159.04'")
        if driver.prefixed:
            raise StackInputError("driver_version", "%s is not a driver version; use the gpu_driver_version fact such"
                                                    " as '580.159.04'" % _short(params.get("driver_version")))
    parsed["driver_version"] = driver

    python = params.get("python_version")
    if isinstance(python, str) and python.strip() == "3.1":
        raise StackInputError("python_version", "'3.1' looks like an unquoted 3.10 turned into a number by YAML;"
                                                " quote it: \"3.10\"")
    python = _version_option("python_version", python, "a Python 3 version; use major.minor such as '3.12'")
    if python is not None:
        _plain_release("python_version", python, params.get("python_version"), (2, 3),
                       "a Python 3 version; use major.minor such as '3.12'")
        if python.major != 3:
            raise StackInputError("python_version", "%s is not a Python 3 version; use major.minor such as '3.12'"
                                                    % _short(params.get("python_version")))
    parsed["python_version"] = python

    for option in ("torch_version", "flash_attn_version", "vllm_version", "transformers_version"):
        parsed[option] = _version_option(option, params.get(option), "a release version; use a PyPI release such as"
                                                                     " '2.10.0'")

    torch_cuda = params.get("torch_cuda")
    parsed["torch_cuda"] = normalize_torch_cuda(torch_cuda) if torch_cuda is not None else None
    parsed["torch_local"] = None
    torch = parsed["torch_version"]
    if torch is not None and torch.local:
        local = torch.local.lower()
        if local.startswith("cu") or local == "cpu":
            try:
                from_local = normalize_torch_cuda(local)
            except StackInputError:
                raise StackInputError("torch_version", "%s names the build %s, which is not a torch CUDA build; set"
                                                       " llm_stack_torch_version to %s and llm_stack_torch_cuda to the"
                                                       " build, such as cu128" % (_short(str(torch)), local,
                                                                                  torch.public_canonical()))
            if parsed["torch_cuda"] is None:
                parsed["torch_cuda"] = from_local
            elif parsed["torch_cuda"] != from_local:
                raise StackInputError("torch_version", "%r names build %s but torch_cuda is %s; set one of them"
                                                       % (str(torch), local, params.get("torch_cuda")))
        else:
            parsed["torch_local"] = local

    model = params.get("model")
    if model is not None and not isinstance(model, str):
        raise StackInputError("model", "%s is not a Hugging Face repo id; use 'org/name' such as 'Qwen/Qwen3.5-9B'"
                                       % _short(model))
    if model and model.strip():
        if len(model.strip()) > MAX_MODEL_LENGTH or not _MODEL_RE.fullmatch(model.strip()):
            raise StackInputError("model", "%s is not a Hugging Face repo id; use 'org/name' such as 'Qwen/Qwen3.5-9B'"
                                           % _short(model))
        parsed["model"] = model.strip()
    else:
        parsed["model"] = None
    allow = params.get("allow_unlisted_versions")
    if allow is not None and not isinstance(allow, bool):
        raise StackInputError("allow_unlisted_versions", "%s is not a boolean; set llm_stack_allow_unlisted_versions"
                                                         " to true or false" % _short(allow))
    parsed["allow_unlisted"] = allow is True
    return parsed


def normalized_pins(p):
    """The eight pins in their canonical spelling (strings; '' where unset), from validate()'s result."""
    def text(version):
        return version.canonical() if version is not None else ""

    def spelled(table, version):
        return (listed(table, version) or version.canonical()) if version is not None else ""
    torch = p["torch_version"]
    return {
        "cuda_version": text(p["cuda_version"]),
        "torch_version": (listed(M.TORCH_RELEASES, torch) or torch.public_canonical()) if torch is not None else "",
        "torch_cuda": ("cpu" if p["torch_cuda"] == "cpu" else _cu(p["torch_cuda"])) if p["torch_cuda"] else "",
        "python_version": text(p["python_version"]),
        "flash_attn_version": text(p["flash_attn_version"]),
        "vllm_version": spelled(M.VLLM, p["vllm_version"]),
        "transformers_version": spelled(M.TRANSFORMERS_RELEASES, p["transformers_version"]),
        "model": p["model"] or "",
    }


def variables_in(message):
    """Inventory variables and facts a message names, in order."""
    seen = []
    for name in _VARIABLE_RE.findall(message):
        if name not in seen:
            seen.append(name)
    return seen


class Report(object):
    """Problems of one part: {rule, part, severity, variables, msg}, no duplicates."""

    def __init__(self, part="matrix"):
        self.part = part
        self.problems = []

    def add(self, rule_id, message, variables=None, severity=None):
        """Adds a problem of rule_id; severity only for a rule with an opt-in (RULES' opt_in) that is given."""
        if any(problem["msg"] == message for problem in self.problems):
            return
        if severity is not None and severity != RULES[rule_id]["severity"] and not RULES[rule_id].get("opt_in"):
            raise ValueError("rule %s has no opt-in that changes its severity" % rule_id)
        self.problems.append({"rule": rule_id, "part": self.part, "severity": severity or RULES[rule_id]["severity"],
                              "variables": list(variables) if variables else variables_in(message), "msg": message})

    @property
    def errors(self):
        return [problem["msg"] for problem in self.problems if problem["severity"] == "error"]

    @property
    def warnings(self):
        return [problem["msg"] for problem in self.problems if problem["severity"] == "warning"]


_Report = Report
