# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: parts torch and flash_attn of the gate (module_utils/gate.py), the torch and
flash_attn_build roles' checks."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat_matrix as M
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._gate_common import (
    _BELOW_SM80,
    _FLASH_ATTN_RE,
    _FLASH_ATTN_SOURCES,
    _PYTHON_XY_RE,
    _REQUIREMENT_RE,
    _TORCH_XYZ_RE,
    _q,
)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._readers import text as _text
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import package_proxy
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.compat import _src, torch_cuda_tag
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.cuda_arch import ArchError, caps_of
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.versions import Version, VersionError


# --- part torch --------------------------------------------------------------

def _default_torch(p):
    vllm = p["vllm_version"]
    entry = compat.vllm_entry(vllm) if vllm is not None else None
    return entry["torch"] if entry else max(M.TORCH, key=Version) + ".0"


def _wheel_in(directory, prefix, suffix):
    try:
        names = os.listdir(directory)
    except OSError:
        return False
    for name in names:
        if name.startswith(prefix) and name.endswith(suffix):
            rest = name[len(prefix):]
            if rest[:1] in ("+", "-") or rest[:3].upper() == "%2B":
                return True
    return False


def part_torch(p, params, report):
    """The torch role's checks: formats, the cu tag, the driver rule, the interpreter and venv, the wheelhouse."""
    torch, raw_torch = p["torch_version"], _text(p["raw"]["torch_version"])
    if torch is None:
        report.add("torch-version-format",
                   "llm_stack_torch_version is empty; the torch role installs a torch release %s. Fix: set"
                   " llm_stack_torch_version to %s" % (_src("torch-version-format"), _q(_default_torch(p))))
    elif not _TORCH_XYZ_RE.fullmatch(raw_torch):
        local = torch.local or ""
        extra = ""
        if local.startswith("cu"):
            extra = " and llm_stack_torch_cuda to %s" % torch_cuda_tag(local)
        elif local and local != "cpu":
            builds = compat.torch_builds(torch)
            extra = " and llm_stack_torch_cuda to %s" % (compat._cu(compat._prefer_build(builds, p["cuda_version"]))
                                                         if builds else "cu128")
        report.add("torch-version-format",
                   "llm_stack_torch_version=%s: the torch role needs a plain release X.Y.Z; the build goes in"
                   " llm_stack_torch_cuda (torch_version) %s. Fix: set llm_stack_torch_version to %s%s"
                   % (compat._short(raw_torch, 60), _src("torch-version-format"),
                      _q(compat.listed(M.TORCH_RELEASES, torch) or torch.public_canonical()), extra))

    raw_cuda = _text(p["raw"]["torch_cuda"])
    tag = None
    builds = compat.torch_builds(torch) if torch is not None else []
    suggest = compat._cu(compat._prefer_build(builds, p["cuda_version"])) if builds else "cu128"
    if p["torch_cuda"] in (None, "cpu"):
        report.add("torch-cuda-format",
                   "llm_stack_torch_cuda=%s: the torch role installs a CUDA build of torch, named by its index tag"
                   " (the CPU build is taken by itself on CPU-only test hosts) %s. Fix: set llm_stack_torch_cuda to %s"
                   % (raw_cuda or "\"\"", _src("torch-cuda-format"), suggest))
    else:
        tag = compat._cu(p["torch_cuda"])
    python, raw_python = p["python_version"], _text(p["raw"]["python_version"])
    if python is None or not _PYTHON_XY_RE.fullmatch(raw_python):
        report.add("python-version-format",
                   "llm_stack_python_version=%s: the torch role needs a Python X.Y, such as \"3.12\" (torch_python_version)"
                   " %s. Fix: set llm_stack_python_version to %s"
                   % (raw_python or "\"\"", _src("python-version-format"),
                      _q(python.major_minor() if python is not None else "3.12")))

    if torch is not None:
        compat._check_torch(p, report)
    if tag and p["driver_version"] is not None:
        for dummy, rule, message in compat.driver_runtime_problems(p["driver_version"], tag, torch_version=torch):
            report.add(rule, message)

    extra = params.get("torch_extra_packages") or []
    bad = [item for item in extra if not isinstance(item, str) or not _REQUIREMENT_RE.fullmatch(item.strip())]
    if bad:
        report.add("torch-extra-packages",
                   "torch_extra_packages has %s %s. Fix: list exact pins or bare names, such as"
                   " torchvision==0.25.0, so that a re-run can tell without pip whether they are installed"
                   % (", ".join(compat._short(item, 60) for item in bad), _src("torch-extra-packages")))

    _interpreter_checks(p, params, report)
    _package_index_checks(params, report)

    wheelhouse = _text(params.get("torch_wheelhouse"))
    if wheelhouse:
        version = (compat.listed(M.TORCH_RELEASES, torch) or torch.public_canonical()) if torch is not None else "?"
        fill = ("`pip download torch==%s --index-url https://download.pytorch.org/whl/%s -d %s`"
                % (version, tag or suggest, wheelhouse))
        if not os.path.isdir(wheelhouse):
            report.add("torch-wheelhouse",
                       "torch_wheelhouse=%s: not a directory on the controller %s. Fix: fill it with %s, or set"
                       " torch_wheelhouse to \"\" to install from torch_index_url" % (wheelhouse, _src("torch-wheelhouse"), fill))
        elif torch is not None and not _wheel_in(wheelhouse, "torch-" + version, ".whl"):
            report.add("torch-wheelhouse",
                       "torch_wheelhouse=%s: has no torch %s wheel %s. Fix: add it with %s"
                       % (wheelhouse, version, _src("torch-wheelhouse"), fill))


def _package_index_checks(params, report):
    """llm_stack_package_index_url: a proxy's base URL, and the proxy's answer to the host for its torch build."""
    base = _text(params.get("package_index_url"))
    if not base or _text(params.get("torch_wheelhouse")):
        return
    problem = package_proxy.fleet_problem(base)
    if problem:
        report.add("package-index", "%s %s" % (problem, _src("package-index")))
        return
    ca_cert = _text(params.get("package_index_ca_cert"))
    if ca_cert and not os.path.isfile(ca_cert):
        report.add("package-index",
                   "llm_stack_package_index_ca_cert=%s: not a file on the controller %s. Fix: set it to the PEM file"
                   " of the CA that signed the proxy's certificate (the cache host's fleet_cache_index_tls_cert,"
                   " itself where it is self-signed), or to \"\" where the hosts' trust store has it"
                   % (ca_cert, _src("package-index")))
        return
    asked = params.get("package_index")
    if isinstance(asked, dict) and not asked.get("answered") and asked.get("planned"):
        build = _text(asked.get("build")) or "its build"
        report.add("package-index-pending",
                   "llm_stack_package_index_url=%s: the cache host's package proxy does not answer yet for this"
                   " host's index %s (%s); the cache host's play of this run sets it up (fleet_cache_proxy), and the"
                   " torch role asks again before it installs %s. Check that %s is in the cache host's"
                   " fleet_cache_proxy_torch_builds"
                   % (base, _text(asked.get("url")), _text(asked.get("error")), _src("package-index-pending"), build))
    elif isinstance(asked, dict) and not asked.get("answered"):
        build = _text(asked.get("build")) or "its build"
        report.add("package-index",
                   "llm_stack_package_index_url=%s: the cache host's package proxy does not serve this host's index"
                   " %s (%s) %s. Fix: run the cache host's play (role fleet_cache, fleet_cache_proxy: true) with %s"
                   " in fleet_cache_proxy_torch_builds, check that this host reaches it (and trusts its certificate:"
                   " llm_stack_package_index_ca_cert), or set llm_stack_package_index_url to \"\""
                   % (base, _text(asked.get("url")), _text(asked.get("error")), _src("package-index"), build))


def _interpreter_checks(p, params, report):
    python = p["python_version"]
    pin = python.major_minor() if python is not None else None
    venv = _text(params.get("torch_venv")) or "the venv"
    name = _text(params.get("torch_python")) or ("python%s" % pin if pin else "the interpreter")
    venv_python = _text(params.get("venv_python"))
    interpreter = params.get("interpreter")
    if venv_python:
        try:
            have = Version(venv_python).major_minor()
        except VersionError:
            have = venv_python
        if pin and have != pin:
            report.add("torch-venv-python",
                       "llm_stack_python_version=%s: the venv %s runs Python %s; it is left as it is %s. Fix: remove it"
                       " (rm -r %s) so that it is created again, or set llm_stack_python_version to %s"
                       % (pin, venv, venv_python, _src("torch-venv-python"), venv, _q(have)))
        return
    if not isinstance(interpreter, dict):
        return
    if not interpreter.get("found"):
        error = _text(interpreter.get("error"))
        report.add("torch-interpreter",
                   "llm_stack_python_version=%s: %s is not on the host%s %s. Fix: install Python %s with its venv module"
                   " (python%s-venv on Debian/Ubuntu), or set torch_python to its path"
                   % (pin, name, (": " + error) if error else "", _src("torch-interpreter"), pin, pin))
        return
    version = _text(interpreter.get("version"))
    try:
        have = Version(version).major_minor()
    except VersionError:
        have = version or "?"
    if pin and have != pin:
        report.add("torch-interpreter",
                   "llm_stack_python_version=%s: %s is Python %s %s. Fix: set torch_python to a Python %s, or set"
                   " llm_stack_python_version to %s" % (pin, name, version or "?", _src("torch-interpreter"), pin, _q(have)))
    elif not (interpreter.get("venv") and interpreter.get("ensurepip")):
        report.add("torch-interpreter",
                   "llm_stack_python_version=%s: %s has no working venv module (venv=%s, ensurepip=%s) %s. Fix:"
                   " install python%s-venv on the host" % (pin, name, interpreter.get("venv"), interpreter.get("ensurepip"),
                                                           _src("torch-interpreter"), pin))


# --- part flash_attn ---------------------------------------------------------

def flash_attn_arch_list(p, params):
    """The arch list flash-attn builds for: flash_attn_arch_list, else the GPUs; (text, source variable)."""
    given = _text(params.get("flash_attn_arch_list"))
    if given:
        return given, "flash_attn_build_arch_list"
    return ";".join(p["gpus"]), "gpus"


def part_flash_attn(p, params, report):
    """The flash_attn_build role's checks: version, options, the arch list and sm80, the wheelhouse, requirements."""
    fa, raw = p["flash_attn_version"], _text(p["raw"]["flash_attn_version"])
    if fa is None:
        return
    if not _FLASH_ATTN_RE.fullmatch(raw):
        report.add("flash-attn-version-format",
                   "llm_stack_flash_attn_version=%s: not a flash-attn release as the flash_attn_build role takes it"
                   " (flash_attn_build_version) %s. Fix: set llm_stack_flash_attn_version to %s"
                   % (compat._short(raw, 60), _src("flash-attn-version-format"), _q(fa.public_canonical())))
    source = _text(params.get("flash_attn_source")) or "sdist"
    policy = _text(params.get("flash_attn_below_sm80")) or "skip"
    if source not in _FLASH_ATTN_SOURCES:
        report.add("flash-attn-options",
                   "flash_attn_build_source=%s: not a source %s. Fix: set flash_attn_build_source to sdist (PyPI or"
                   " flash_attn_build_index_url) or git (flash_attn_build_git_url at flash_attn_build_git_ref)"
                   % (compat._short(source, 40), _src("flash-attn-options")))
    if policy not in _BELOW_SM80:
        report.add("flash-attn-options",
                   "flash_attn_build_below_sm80=%s: not a policy %s. Fix: set flash_attn_build_below_sm80 to skip or fail"
                   % (compat._short(policy, 40), _src("flash-attn-options")))
        policy = "fail"

    text, variable = flash_attn_arch_list(p, params)
    if not text:
        report.add("flash-attn-arch-list",
                   "flash_attn_build_arch_list is empty and the host has no GPUs to derive it from %s. Fix: set"
                   " llm_stack_torch_cuda_arch_list: \"8.0;9.0\" (the GPUs it builds for) for such hosts"
                   % _src("flash-attn-arch-list"))
    else:
        try:
            caps = caps_of(text)
        except ArchError as exc:
            report.add("flash-attn-arch-list",
                       "flash_attn_build_arch_list=%s: %s %s. Fix: set flash_attn_build_arch_list (or"
                       " llm_stack_torch_cuda_arch_list) to compute capabilities separated by ';', such as \"8.0;9.0\""
                       % (compat._short(text, 60), exc, _src("flash-attn-arch-list")))
        else:
            compat.flash_attn_below_sm80_problems(fa, caps, policy, report, variable=variable)
    p_policy = dict(p, flash_attn_below_sm80=policy)
    compat._check_flash_attn(p_policy, report)

    wheelhouse = _text(params.get("flash_attn_wheelhouse"))
    if wheelhouse:
        fill = "`pip download --no-deps --no-binary :all: flash-attn==%s -d %s`" % (fa.public_canonical(), wheelhouse)
        if not os.path.isdir(wheelhouse):
            report.add("flash-attn-wheelhouse",
                       "flash_attn_build_wheelhouse=%s: not a directory on the controller %s. Fix: fill it with %s and"
                       " the build tools, or set flash_attn_build_wheelhouse to \"\" to use an index"
                       % (wheelhouse, _src("flash-attn-wheelhouse"), fill))
        elif source == "sdist" and not os.path.isfile(os.path.join(wheelhouse, "flash_attn-%s.tar.gz" % raw)):
            report.add("flash-attn-wheelhouse",
                       "flash_attn_build_wheelhouse=%s: has no flash_attn-%s.tar.gz %s. Fix: add it with %s"
                       % (wheelhouse, raw, _src("flash-attn-wheelhouse"), fill))
    reqs = list(params.get("flash_attn_build_requirements") or []) + list(params.get("flash_attn_runtime_requirements") or [])
    bad = [item for item in reqs if not isinstance(item, str) or not _REQUIREMENT_RE.fullmatch(item.strip())]
    if bad:
        report.add("flash-attn-requirements",
                   "flash_attn_build_build_requirements / flash_attn_build_runtime_requirements have %s %s. Fix: list"
                   " exact pins or bare names, such as ninja or einops==0.8.2"
                   % (", ".join(compat._short(item, 60) for item in bad), _src("flash-attn-requirements")))
