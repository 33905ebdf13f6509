# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Compute capabilities and TORCH_CUDA_ARCH_LIST strings.

The one parser of arch lists in the collection: the ``cuda_arch_list``
filter, the ``stack_compat`` gate (preflight's arch list and override
checks, flash-attn's build targets) all use ``parse_arch_list`` and
``caps_of``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# Archs that have an arch-specific ("a") variant that
# torch.utils.cpp_extension accepts in TORCH_CUDA_ARCH_LIST
# (supported_arches there: 9.0a, 10.0a, 10.1a (before CUDA 13 renamed it
# 11.0a), 10.3a, 11.0a, 12.0a, 12.1a).
ARCH_SPECIFIC = ("9.0", "10.0", "10.1", "10.3", "11.0", "12.0", "12.1")

# Archs that have a family-specific ("f") variant (CUDA 12.9 and newer):
# the Blackwell generations.
FAMILY_SPECIFIC_FROM = (10, 0)

# ASCII digits only, matched in full.
_CAP_RE = re.compile(r"(?:sm_?)?([0-9]{1,2})\.([0-9])")
_SM_RE = re.compile(r"sm_?([0-9]{1,2})([0-9])")
_ENTRY_RE = re.compile(r"([0-9]{1,2})\.([0-9])([af]?)(\+PTX)?")
# Longest arch list taken: every real compute capability with its
# variants fits in far less.
MAX_ARCH_LIST_LENGTH = 512


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
    match = _CAP_RE.fullmatch(text) or _SM_RE.fullmatch(text.lower())
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
        values = [part for part in re.split(r"[;, \t\n]+", values) if part]
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


def _entry_error(text, entry, why):
    return ArchError("%r is not a TORCH_CUDA_ARCH_LIST: entry %r %s; use compute capabilities separated by ';'"
                     " or spaces, such as \"8.0;9.0+PTX\", with the 'a' (9.0a) or 'f' (10.0f) suffix and +PTX"
                     " where wanted" % (text, entry, why))


def parse_arch_list(text):
    """Parse a TORCH_CUDA_ARCH_LIST into a list of {cap, suffix, ptx}.

    Entries are separated by ';' and/or spaces (as torch.utils.cpp_extension
    reads them): '8.0;9.0+PTX', '9.0a 10.0', '8.6 9.0', '10.0f'. Each entry
    is a compute capability 'M.m', an optional 'a' (arch-specific, only for
    the archs in ARCH_SPECIFIC) or 'f' (family-specific, 10.0 and newer)
    suffix, and an optional '+PTX'. Raises ArchError with a clear message
    for anything else, including an empty list.
    """
    if not isinstance(text, str):
        raise ArchError("%r is not a TORCH_CUDA_ARCH_LIST (expected a string such as \"8.0;9.0\")" % (text,))
    if len(text) > MAX_ARCH_LIST_LENGTH:
        raise ArchError("the TORCH_CUDA_ARCH_LIST is %d characters long (at most %d)" % (len(text), MAX_ARCH_LIST_LENGTH))
    parts = [part for part in text.replace(";", " ").split(" ") if part]
    if not parts:
        raise ArchError("%r is an empty TORCH_CUDA_ARCH_LIST; use compute capabilities such as \"8.0;9.0\"" % (text,))
    entries = []
    for part in parts:
        match = _ENTRY_RE.fullmatch(part)
        if not match:
            raise _entry_error(text, part, "is not a compute capability")
        major, minor = int(match.group(1)), int(match.group(2))
        if major < 1:
            raise _entry_error(text, part, "has major version 0")
        cap = "%d.%d" % (major, minor)
        suffix = match.group(3)
        if suffix == "a" and cap not in ARCH_SPECIFIC:
            raise _entry_error(text, part, "has no arch-specific variant (only %s)" % ", ".join(c + "a" for c in ARCH_SPECIFIC))
        if suffix == "f" and (major, minor) < FAMILY_SPECIFIC_FROM:
            raise _entry_error(text, part, "has no family-specific variant (only %d.%d and newer)" % FAMILY_SPECIFIC_FROM)
        entries.append({"cap": cap, "suffix": suffix, "ptx": bool(match.group(4))})
    return entries


def format_arch_list(entries):
    """The text of parsed entries, joined with ';' ('8.0;9.0a;9.0+PTX')."""
    return ";".join(e["cap"] + e["suffix"] + ("+PTX" if e["ptx"] else "") for e in entries)


def caps_of(text):
    """Sorted unique compute capabilities named in an arch list ('9.0a;8.0+PTX' -> ['8.0', '9.0'])."""
    caps = set(parse_cap(entry["cap"]) for entry in parse_arch_list(text))
    return [cap_str(cap) for cap in sorted(caps)]
