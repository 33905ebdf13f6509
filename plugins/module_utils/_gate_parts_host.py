# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: part host of the gate (module_utils/gate.py), what preflight checks on the host itself."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._gate_common import _q
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._readers import text as _text
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.compat import StackInputError, _src
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.cuda_arch import ArchError, arch_list, format_arch_list, parse_arch_list
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.versions import Version, VersionError


def _quoted_fix(name, value):
    if isinstance(value, float) and name == "llm_stack_python_version":
        guess = repr(value)
        if re.fullmatch(r"3\.[1-9]", guess):
            return "%s: %s (if %s was meant, write %s: %s)" % (name, _q(guess), guess + "0", name, _q(guess + "0"))
        return "%s: %s" % (name, _q(guess))
    return "%s: %s" % (name, _q(value if not isinstance(value, bool) else str(value).lower()))


def part_host(p, params, report):
    """What preflight checks on the host: pins as strings, nvidia-smi, GPUs, arch list, free space."""
    raw_pins = params.get("raw_pins") or {}
    if not isinstance(raw_pins, dict):
        raise StackInputError("raw_pins", "expected a dict of llm_stack_* variable -> value, got %s" % compat._short(raw_pins))
    for name in sorted(raw_pins):
        value = raw_pins[name]
        if value is None or isinstance(value, str):
            continue
        if isinstance(value, (int, float, bool)):
            report.add("host-quoted-pin",
                       "%s=%s: the inventory gives it as a YAML %s, not a string; YAML reads an unquoted 3.10 as the"
                       " number 3.1 and 12.10 as 12.1 %s. Fix: quote it in the inventory, %s"
                       % (name, value, type(value).__name__, _src("host-quoted-pin"), _quoted_fix(name, value)))
        else:
            report.add("host-quoted-pin",
                       "%s=%s: the inventory gives a %s, not a version string %s. Fix: set it to a quoted version"
                       " such as %s: \"2.10.0\""
                       % (name, compat._short(value), type(value).__name__, _src("host-quoted-pin"), name))

    gpus = p["gpus"]
    gpu_count = params.get("gpu_count")
    gpu_count = len(gpus) if gpu_count is None else int(gpu_count)
    gpu_error = _text(params.get("gpu_error"))
    require_gpu = params.get("require_gpu", True) is not False
    test_host = bool(params.get("cpu_only_test_host"))

    if gpu_error:
        report.add("host-gpu-error",
                   "gpu_error=%s: nvidia-smi failed; the driver is installed but not working %s. Fix: check"
                   " `nvidia-smi` and `dmesg` on the host, load the kernel module or reboot after a driver install"
                   " (this collection never installs the driver)" % (gpu_error, _src("host-gpu-error")))
    elif gpu_count == 0 and require_gpu and not test_host:
        report.add("host-no-gpu",
                   "gpu_count=0: no NVIDIA GPU found (no nvidia-smi, or it lists no GPU) %s. Fix: install the NVIDIA"
                   " driver, or, for a build host without GPUs, set preflight_require_gpu: false and"
                   " llm_stack_torch_cuda_arch_list: \"8.0;9.0\" (the GPUs it builds for)" % _src("host-no-gpu"))

    override = _text(params.get("arch_list"))
    entries = None
    if override:
        try:
            entries = parse_arch_list(override)
        except ArchError as exc:
            report.add("host-arch-list-invalid",
                       "llm_stack_torch_cuda_arch_list=%s: %s %s. Fix: set llm_stack_torch_cuda_arch_list to"
                       " compute capabilities separated by ';', such as \"%s\", or to \"\" to use the GPUs' own"
                       % (compat._short(override, 60), exc, _src("host-arch-list-invalid"), arch_list(gpus) or "8.0;9.0"))
    if entries:
        named = set(entry["cap"] for entry in entries)
        missing = [gpu for gpu in gpus if gpu not in named]
        if missing:
            report.add("host-arch-list-gpus",
                       "llm_stack_torch_cuda_arch_list=%s / gpu_compute_caps=%s: the list leaves out compute capability"
                       " %s of this host's GPUs; kernels built from it carry no code for them (\"no kernel image is"
                       " available for execution on the device\", or a slow PTX JIT at every start) %s. Fix: set"
                       " llm_stack_torch_cuda_arch_list to \"%s\", or to \"\" to use the GPUs' own"
                       % (override, ",".join(gpus), ", ".join(missing), _src("host-arch-list-gpus"),
                          format_arch_list(entries + [{"cap": m, "suffix": "", "ptx": False} for m in missing])))
    final = format_arch_list(entries) if entries else ("" if override else arch_list(gpus))
    if not final and not override and not gpu_error and (gpu_count > 0 or not test_host):
        report.add("host-arch-list-empty",
                   "llm_stack_torch_cuda_arch_list is empty and there are no GPU compute capabilities to derive it"
                   " from (gpu_count=%d) %s. Fix: set llm_stack_torch_cuda_arch_list: \"8.0;9.0\" (the GPUs this host"
                   " builds for) in the inventory for this host" % (gpu_count, _src("host-arch-list-empty")))

    free, need = params.get("free_gb"), params.get("min_free_gb")
    if free is not None and need is not None and float(free) < float(need):
        report.add("host-free-space",
                   "preflight_min_free_gb=%s / llm_stack_prefix=%s: only %s GiB free on %s, which holds the stack %s."
                   " Fix: free space there, or set llm_stack_prefix to a directory on a larger volume"
                   % (need, _text(params.get("prefix")) or "?", free,
                      _text(params.get("free_mount")) or "its filesystem", _src("host-free-space")))

    if test_host and gpu_count == 0:
        report.add("host-test-host",
                   "llm_stack_cpu_only_test_host=true: no GPU on this host, so the CPU test paths are used %s."
                   " Fix: never set llm_stack_cpu_only_test_host on a real fleet" % _src("host-test-host"))
    elif gpu_count == 0 and not require_gpu and not gpu_error:
        report.add("host-build-host",
                   "preflight_require_gpu=false: no GPU on this host (a build host); kernels are built for"
                   " llm_stack_torch_cuda_arch_list=%s (flash-attn, with flash_attn_build_for_fleet, for the"
                   " other hosts' build keys instead) %s. Fix: none needed on a build host"
                   % (final or "(empty)", _src("host-build-host")))
    nvcc = _text(params.get("nvcc_version"))
    if nvcc:
        try:
            differs = Version(nvcc).major_minor() != p["cuda_version"].major_minor()
        except VersionError:
            differs = True
        if differs:
            report.add("host-nvcc-differs",
                       "llm_stack_cuda_version=%s: nvcc on this host is %s (%s); the cuda_toolkit role installs"
                       " CUDA %s and links /usr/local/cuda to it %s. Fix: none needed; set llm_stack_cuda_version to"
                       " \"%s\" to keep the toolkit in place instead, if that is a release the stack allows"
                       % (p["cuda_version"], compat._short(nvcc, 40), _text(params.get("nvcc_path")) or "on PATH",
                          p["cuda_version"], _src("host-nvcc-differs"),
                          compat.release_of_minor(nvcc) if _is_version(nvcc) else nvcc))


def _is_version(text):
    try:
        Version(text)
    except VersionError:
        return False
    return True


def host_arch_list(p, params):
    """(arch list, source): the inventory override when it parses, else the GPUs' own; source 'inventory' or 'gpus'."""
    override = _text(params.get("arch_list"))
    if override:
        try:
            return format_arch_list(parse_arch_list(override)), "inventory"
        except ArchError:
            return "", "inventory"
    return arch_list(p["gpus"]), "gpus"
