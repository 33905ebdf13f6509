# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: part cuda_toolkit of the gate (module_utils/gate.py), the cuda_toolkit role's checks."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat_matrix as M
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._checksum import parse_checksum
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._gate_common import _CUDA_XYZ_RE, _RUNFILE_SOURCES, _q
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._readers import text as _text
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.compat import _src, runfile_for
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import mask_credentials


def part_cuda_toolkit(p, params, report):
    """The cuda_toolkit role's checks: X.Y.Z, a runfile name, checksum format, and the runfile source when needed."""
    raw = _text(p["raw"]["cuda_version"])
    cuda = p["cuda_version"]
    release = None
    if _CUDA_XYZ_RE.fullmatch(raw):
        release = cuda.canonical()
    else:
        if len(cuda.release) == 2:
            fix = compat.release_of_minor(cuda.major_minor()) or "%s.0" % cuda.major_minor()
        else:
            fix = cuda.canonical()
        report.add("cuda-version-format",
                   "llm_stack_cuda_version=%s: the cuda_toolkit role installs a full CUDA release X.Y.Z, the version in"
                   " the name of NVIDIA's runfile (cuda_toolkit_version) %s. Fix: set llm_stack_cuda_version to %s"
                   % (raw, _src("cuda-version-format"), _q(fix)))

    source = _text(params.get("runfile_source")) or "url"
    if source not in _RUNFILE_SOURCES:
        report.add("cuda-runfile-source",
                   "cuda_toolkit_runfile_source=%s: not a runfile source %s. Fix: set cuda_toolkit_runfile_source to"
                   " url (the hosts download it) or controller (a copy on the controller, cuda_toolkit_runfile_src)"
                   % (compat._short(source, 40), _src("cuda-runfile-source")))
    checksum = _text(params.get("runfile_checksum"))
    if checksum and parse_checksum(checksum) is None:
        report.add("cuda-runfile-checksum-format",
                   "cuda_toolkit_runfile_checksum=%s: not a checksum %s. Fix: write it as \"sha256:<64 hex digits>\" or"
                   " \"md5:<32 hex digits>\"" % (compat._short(checksum, 40), _src("cuda-runfile-checksum-format")))
    if release is None or params.get("toolkit_installed"):
        return

    name = _text(params.get("runfile_name"))
    known = runfile_for(release)
    if name:
        if not re.fullmatch(r"cuda_" + re.escape(release) + r"_[^/\s]+\.run", name):
            report.add("cuda-runfile-name",
                       "cuda_toolkit_runfile_name=%s: not NVIDIA's runfile name for CUDA %s, cuda_%s_<driver>_linux.run"
                       " without a directory %s. Fix: set cuda_toolkit_runfile_name to %s"
                       % (compat._short(name, 80), release, release, _src("cuda-runfile-name"),
                          _q(known["name"]) if known else "\"\" and check the name on NVIDIA's download site"))
            return
    elif known:
        name = known["name"]
    else:
        nearest = compat.release_of_minor(cuda.major_minor()) or compat.known_runfile_releases()[-1]
        report.add("cuda-runfile-known",
                   "llm_stack_cuda_version=%s: no runfile name is known for CUDA %s (known: %s) %s. Fix: set"
                   " llm_stack_cuda_version to %s, or set cuda_toolkit_runfile_name to NVIDIA's file name for %s"
                   " (cuda_%s_<driver>_linux.run, listed at %s)"
                   % (release, release, ", ".join(compat.known_runfile_releases()),
                      _src("cuda-runfile-known", version=release), _q(nearest), release, release,
                      M.RUNFILE_URL.format(version=release, name="")))
        return

    if source == "url" and not checksum:
        url = mask_credentials(_text(params.get("runfile_url"))) or M.RUNFILE_URL.format(version=release, name=name)
        report.add("cuda-runfile-checksum",
                   "cuda_toolkit_runfile_checksum is empty while the hosts download %s (cuda_toolkit_runfile_source=url,"
                   " from %s) %s. Fix: set cuda_toolkit_runfile_checksum to \"md5:\" followed by the sum listed for"
                   " %s in %s, or set cuda_toolkit_runfile_source: controller with cuda_toolkit_runfile_src: the path"
                   " of %s on the controller"
                   % (name, url, _src("cuda-runfile-checksum"), name, M.RUNFILE_MD5_URL.format(version=release), name))
    elif source == "controller":
        src = _text(params.get("runfile_src"))
        if not src:
            problem = "is empty while cuda_toolkit_runfile_source=controller"
        elif not os.path.exists(src):
            problem = "is not on the controller"
        elif not os.path.isfile(src):
            problem = "is not a regular file"
        elif os.path.basename(src) != name:
            problem = "is not named %s, the runfile of CUDA %s" % (name, release)
        else:
            return
        report.add("cuda-runfile-src",
                   "cuda_toolkit_runfile_src=%s: %s %s. Fix: set cuda_toolkit_runfile_src to the path of %s on the"
                   " controller (download it from %s), or set cuda_toolkit_runfile_source: url with"
                   " cuda_toolkit_runfile_checksum" % (src or "\"\"", problem, _src("cuda-runfile-src"), name,
                                                       M.RUNFILE_URL.format(version=release, name=name)))


def cuda_runfile(p, params):
    """{name, url, driver} of the runfile for the pinned release (name/url as the inventory overrides them), or None."""
    raw = _text(p["raw"]["cuda_version"])
    if not _CUDA_XYZ_RE.fullmatch(raw):
        return None
    release = p["cuda_version"].canonical()
    entry = runfile_for(release) or {}
    name = _text(params.get("runfile_name")) or entry.get("name")
    if not name:
        return None
    match = re.fullmatch(r"cuda_" + re.escape(release) + r"_([0-9.]+)_linux\.run", name)
    return {
        "name": name,
        "url": mask_credentials(_text(params.get("runfile_url"))) or M.RUNFILE_URL.format(version=release, name=name),
        "driver": match.group(1) if match else entry.get("driver"),
    }
