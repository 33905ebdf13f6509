# -*- coding: utf-8 -*-
# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: where a model's directory is, paths that stay inside it, and files read and written there without
following links.

hf_local re-exports these names (``PathError``, ``check_relpath``, ``safe_join``, ``create_file``, ``model_path``...);
import them from there.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os

CHUNK = 4 * 1024 * 1024
FILE_MODE = 0o644
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# The link in a model's directory that names the revision served (qwen_model_fetch switches it, vllm_serve serves it).
CURRENT_LINK = "current"


def model_path(models_dir, model, revision=CURRENT_LINK):
    """The one rule of the model layout: <models_dir>/<org>/<name>/<revision>, the link CURRENT_LINK by default;
    revision None: the model's base <models_dir>/<org>/<name>, which holds its revisions and the link.

    models_dir loses its trailing slashes; model is the repository id ORG/NAME. qwen_model_fetch (where it fetches
    a revision and which link it switches) and vllm_serve (the directory it serves) place a model by it.
    """
    base = "%s/%s" % (_str(models_dir).rstrip("/"), _str(model))
    return base if revision is None else "%s/%s" % (base, revision)


def _str(value):
    return "" if value is None else str(value).strip()


class PathError(ValueError):
    """A path that is not a plain relative path, or that leads outside its directory."""


def _inside(path, base):
    return path == base or path.startswith(base.rstrip(os.sep) + os.sep)


def check_relpath(relpath):
    """Refuse what is not a plain relative path (absolute, '..', NUL, empty); return it unchanged."""
    if not isinstance(relpath, str):
        raise PathError("%r is not a path (a string is needed)" % (relpath,))
    if not relpath or "\x00" in relpath:
        raise PathError("%r is not a usable relative path" % (relpath,))
    if relpath.startswith("/") or relpath.startswith("\\"):
        raise PathError("absolute path in repository listing: %s" % relpath)
    parts = relpath.replace("\\", "/").split("/")
    if ".." in parts:
        raise PathError("path leaves the model directory: %s" % relpath)
    if all(part in ("", ".") for part in parts):
        raise PathError("%r names the directory itself, not a file in it" % (relpath,))
    return relpath


def safe_join(root, relpath):
    """root/relpath, refusing paths that leave root, by their text or through a symbolic link.

    The text must be a relative path without '..'; and what it resolves to
    (``realpath``: every symbolic link followed, those not created yet
    included) must lie inside what root resolves to. Returns the joined path
    (not resolved). Raises PathError otherwise.
    """
    check_relpath(relpath)
    root = os.path.abspath(root)
    joined = os.path.normpath(os.path.join(root, relpath))
    if joined == root or not _inside(joined, root):
        raise PathError("path leaves the model directory: %s" % relpath)
    real_root = os.path.realpath(root)
    real = os.path.realpath(joined)
    if real == real_root or not _inside(real, real_root):
        raise PathError(
            "%s leads outside the directory %s through a symbolic link (it resolves to %s); "
            "nothing there is read, written or deleted: remove the link" % (relpath, root, real))
    return joined


def _read_text_nofollow(path):
    """The text of the plain file at path; None when absent, unreadable or a symbolic link."""
    try:
        fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC)
    except (IOError, OSError):
        return None
    try:
        with os.fdopen(fd, "rb") as handle:
            return handle.read().decode("utf-8")
    except (IOError, OSError, ValueError):
        return None


def _remove(path):
    """Unlink path itself (a symbolic link is removed, never followed); False when it was absent."""
    try:
        os.unlink(path)
        return True
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return False
        raise


def _makedirs_inside(root, path):
    """Create path and its parents; PathError when it then resolves outside root."""
    if not os.path.isdir(path):
        os.makedirs(path)
    if not _inside(os.path.realpath(path), os.path.realpath(root)):
        raise PathError("%s leads outside the directory %s through a symbolic link" % (path, root))


def create_file(path, data, mode=FILE_MODE):
    """Create path as a new plain file holding data (bytes), with mode set on it.

    O_CREAT|O_EXCL|O_NOFOLLOW: an existing file or symbolic link at path makes
    this fail (EEXIST or ELOOP) instead of writing through it. The mode is set
    explicitly (the umask may have narrowed it), and only on the file created here.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, mode)
    try:
        os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
    except BaseException:
        os.close(fd)
        _remove(path)
        raise
    os.close(fd)


def _copy_new(source, dest):
    """Copy source to dest, a new plain file (never written through a link), with source's mode and times."""
    st = os.stat(source)
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, st.st_mode & 0o777)
    try:
        os.fchmod(fd, st.st_mode & 0o777)
        with open(source, "rb") as handle:
            for block in iter(lambda: handle.read(CHUNK), b""):
                view = memoryview(block)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
        os.utime(fd, ns=(st.st_atime_ns, st.st_mtime_ns))
    except BaseException:
        os.close(fd)
        _remove(dest)
        raise
    os.close(fd)


def _link_or_copy(root, source, dest):
    _makedirs_inside(root, os.path.dirname(dest))
    _remove(dest)
    try:
        os.link(source, dest)
    except OSError:
        _copy_new(source, dest)
