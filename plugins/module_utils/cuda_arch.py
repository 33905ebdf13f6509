# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Compute capabilities and TORCH_CUDA_ARCH_LIST strings.

Shared by the ``cuda_arch_list`` filter and the ``stack_compat`` module.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# Archs that have an arch-specific ("a") variant that
# torch.utils.cpp_extension accepts in TORCH_CUDA_ARCH_LIST
# (supported_arches there: 9.0a, 10.0a, 10.1a (before CUDA 13 renamed it
# 11.0a), 10.3a, 11.0a, 12.0a, 12.1a).
ARCH_SPECIFIC = ("9.0", "10.0", "10.1", "10.3", "11.0", "12.0", "12.1")

_CAP_RE = re.compile(r"^(?:sm_?)?(\d{1,2})\.(\d)$")
_SM_RE = re.compile(r"^sm_?(\d{1,2})(\d)$")


class ArchError(ValueError):
    """A value that is not a compute capability."""


def parse_cap(value):
    """Return (major, minor) for '9.0', 9.0, 'sm_90' or 'sm90'; raise ArchError otherwise."""
    if isinstance(value, bool):
        raise ArchError("%r is not a compute capability (expected a string such as '9.0')" % (value,))
    if isinstance(value, float):
        text = "%.1f" % value
        if abs(float(text) - value) > 1e-9:
            raise ArchError("%r is not a compute capability (expected a string such as '9.0')" % (value,))
    elif isinstance(value, str):
        text = value.strip()
    else:
        raise ArchError("%r is not a compute capability (expected a string such as '9.0')" % (value,))
    match = _CAP_RE.match(text) or _SM_RE.match(text.lower())
    if not match:
        raise ArchError("%r is not a compute capability (expected a string such as '9.0')" % (value,))
    major, minor = int(match.group(1)), int(match.group(2))
    if major < 1:
        raise ArchError("%r is not a compute capability (major version 0)" % (value,))
    return major, minor


def cap_str(cap):
    return "%d.%d" % cap


def normalize_caps(values):
    """Sorted, de-duplicated list of 'M.m' strings from a list (or a ';'/','/space separated string)."""
    if values is None:
        return []
    if isinstance(values, str):
        values = [part for part in re.split(r"[;,\s]+", values) if part]
    elif not isinstance(values, (list, tuple)):
        raise ArchError("expected a list of compute capabilities, got %r" % (values,))
    caps = set(parse_cap(value) for value in values)
    return [cap_str(cap) for cap in sorted(caps)]


def arch_list(values, ptx=False, arch_specific=False):
    """TORCH_CUDA_ARCH_LIST for the given compute capabilities.

    - entries sorted ascending and separated by ';';
    - ``ptx``: append '+PTX' to the newest arch (PTX lets newer GPUs JIT the
      kernels; off by default since the build targets the host's GPUs);
    - ``arch_specific``: use the 'a' variant (e.g. 9.0a) for archs that have
      one. 'a' code runs only on that exact arch, so when both options are
      set the PTX is emitted for the plain newest arch ('9.0a;9.0+PTX').
    An empty input gives an empty string.
    """
    caps = normalize_caps(values)
    if not caps:
        return ""
    entries = []
    for cap in caps:
        entries.append(cap + "a" if arch_specific and cap in ARCH_SPECIFIC else cap)
    if ptx:
        newest = caps[-1]
        if entries[-1] == newest:
            entries[-1] = newest + "+PTX"
        else:
            entries.append(newest + "+PTX")
    return ";".join(entries)


def covered_by(cap, sass, ptx):
    """True if a GPU of compute capability cap runs code built for sass (cubin) / ptx archs.

    A cubin for X.y runs on X.z with z >= y (same major); PTX for X.y can be
    JIT-compiled for any cap >= X.y.
    """
    major, minor = parse_cap(cap)
    for arch in sass:
        a_major, a_minor = parse_cap(arch)
        if a_major == major and a_minor <= minor:
            return True
    for arch in ptx:
        if parse_cap(arch) <= (major, minor):
            return True
    return False
