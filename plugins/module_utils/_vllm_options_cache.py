# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: the venv's cache of the options of its ``vllm serve`` (``<venv>/.llm_stack/vllm-serve-options.json``).

vllm_serve_info reads the installed vLLM's options by running ``vllm_args.DUMP_SCRIPT`` through the venv's
Python, which imports vLLM (15 to 60 s on a CPU host). What it prints depends only on the vLLM installed, the
script and the interpreter, so the dump is kept, with a key of those three (``key``):

- the digest of every vLLM distribution's dist-info RECORD in the venv (vllm_serve_info's ``install_digest``; none, no cache),
- the digest of DUMP_SCRIPT's text (another collection reads again),
- the real path of ``<venv>/bin/python`` with its size and mtime (a replaced interpreter reads again).

The file is used only in a ``.llm_stack`` folder that exists already as a real folder (not a link), owned by the
effective user and writable by nobody else; the file itself must be a regular file (opened without following a
link), owned by the effective user, writable by nobody else and at most 4 MiB. A file that fails a check, is
malformed or holds another key is ignored (the options are read the slow way, and ``write`` replaces it). It is
written through a new temporary file in the same folder (O_EXCL|O_NOFOLLOW, 0644, fsync) renamed over it.

Not part of the public API.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import binascii
import hashlib
import json
import os
import stat

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm_args

FORMAT = 1
FOLDER = ".llm_stack"
NAME = "vllm-serve-options.json"
LIMIT = 4 * 1024 * 1024

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def key(venv, files_sha256, script=None):
    """The key of the cache for this venv's vLLM, or None (no cache) without files_sha256 or a Python to stat."""
    if not files_sha256:
        return None
    python = os.path.realpath(os.path.join(venv, "bin", "python"))
    try:
        st = os.stat(python)
    except (IOError, OSError):
        return None
    text = vllm_args.DUMP_SCRIPT if script is None else script
    return {"files_sha256": files_sha256, "script_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "python": python, "python_size": st.st_size,
            "python_mtime_ns": getattr(st, "st_mtime_ns", None) or int(st.st_mtime * 1e9)}


def _private(st):
    """Owned by the effective user and writable by nobody else."""
    return st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _open_folder(venv):
    """A descriptor of <venv>/.llm_stack when it is a real folder, private to the effective user; else None."""
    try:
        fd = os.open(os.path.join(venv, FOLDER), os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC)
    except (IOError, OSError):
        return None
    try:
        st = os.fstat(fd)
    except (IOError, OSError):
        os.close(fd)
        return None
    if not stat.S_ISDIR(st.st_mode) or not _private(st):
        os.close(fd)
        return None
    return fd


def _read_in(folder, key_):
    try:
        fd = os.open(NAME, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, dir_fd=folder)
    except (IOError, OSError):
        return None
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode) or not _private(st) or st.st_size > LIMIT:
            return None
        data = handle.read(LIMIT + 1)
    if len(data) > LIMIT:
        return None
    try:
        cached = json.loads(data.decode("utf-8"))
    except ValueError:
        return None
    if not isinstance(cached, dict) or cached.get("format") != FORMAT or cached.get("key") != key_:
        return None
    dump = cached.get("dump")
    return dump if vllm_args.dump_problem(dump) is None else None


def read(venv, key_):
    """The dump kept for key_, or None (no key, no usable folder or file, another key, a malformed file)."""
    if key_ is None:
        return None
    folder = _open_folder(venv)
    if folder is None:
        return None
    try:
        return _read_in(folder, key_)
    except (IOError, OSError):
        return None
    finally:
        os.close(folder)


def write(venv, key_, dump):
    """Keep dump for key_; True when written. Nothing is written without a key, a usable folder or a valid dump."""
    if key_ is None or dump is None or vllm_args.dump_problem(dump) is not None:
        return False
    folder = _open_folder(venv)
    if folder is None:
        return False
    data = (json.dumps({"format": FORMAT, "key": key_, "dump": dump}, sort_keys=True) + "\n").encode("utf-8")
    tmp = ".%s.%d.%s.tmp" % (NAME, os.getpid(), binascii.hexlify(os.urandom(6)).decode("ascii"))
    created = False
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o644, dir_fd=folder)
        created = True
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), 0o644)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, NAME, src_dir_fd=folder, dst_dir_fd=folder)
        created = False
        try:
            os.fsync(folder)
        except (IOError, OSError):
            pass
        return True
    except (IOError, OSError):
        return False
    finally:
        if created:
            try:
                os.unlink(tmp, dir_fd=folder)
            except (IOError, OSError):
                pass
        os.close(folder)
