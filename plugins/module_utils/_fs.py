# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: the collection's one free-space rule (hf_local.free_bytes and python_probe.disk_space use it), and its
one atomic file write (the fleet report, the router's server-state file, the GPU collector's textfile).

Not part of the public API.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import tempfile


def existing_ancestor(path):
    """The absolute path, or its deepest existing ancestor when it does not exist (yet)."""
    probe = os.path.abspath(path)
    while not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    return probe


def free_bytes(path, nearest_existing=True):
    """Free bytes for an unprivileged writer on the filesystem that holds path.

    With ``nearest_existing`` (the default) a path that does not exist is measured at its deepest existing
    ancestor; without it, path itself is measured. Raises OSError when the filesystem cannot be read.
    """
    st = os.statvfs(existing_ancestor(path) if nearest_existing else path)
    return st.f_bavail * st.f_frsize


def write_atomic(path, text, mode=0o644, only_if_changed=False):
    """Write text (UTF-8) to path through a temporary file in its directory, renamed over it with mode, so that a
    reader never sees half a file. only_if_changed: leave a file that already holds text alone. Returns whether
    the file was written."""
    data = text.encode("utf-8")
    if only_if_changed:
        try:
            with open(path, "rb") as handle:
                if handle.read() == data:
                    return False
        except (IOError, OSError):
            pass
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(temporary, mode)
        os.rename(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return True
