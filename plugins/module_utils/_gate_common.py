# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: what the parts of the gate (module_utils/gate.py) share: the part names, the formats
the roles take their inputs in, and the quoting of versions in messages. Not part of the public API."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

PARTS = ("matrix", "host", "cuda_toolkit", "torch", "flash_attn", "vllm", "serve")

# ASCII only, matched in full.
_CUDA_XYZ_RE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")
_TORCH_XYZ_RE = re.compile(r"[0-9]+\.[0-9]+(?:\.[0-9]+)?")
_PYTHON_XY_RE = re.compile(r"3\.[0-9]+")
_FLASH_ATTN_RE = re.compile(r"[0-9]+\.[0-9]+(?:\.[0-9]+)?[.a-z0-9]*")
_REQUIREMENT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(?:==[A-Za-z0-9.+!_-]+)?")
_RUNFILE_SOURCES = ("url", "controller")
_FLASH_ATTN_SOURCES = ("sdist", "git")
_BELOW_SM80 = ("skip", "fail")
_VLLM_TARGETS = ("cuda", "cpu", "empty")


def _q(value):
    """A version as YAML wants it in the inventory: quoted."""
    return '"%s"' % value
