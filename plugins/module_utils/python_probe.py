# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Python interpreter a venv is made from, an existing venv, and free disk space.

``python_info`` is argument handling around these; ``torch_probe`` reads
the output of its own probe with ``parse_probe_output``. Subprocesses run
through ``proc.run`` (a deadline, the process group killed on timeout).
Standard library only, Python 3.8+ (it runs on the managed host).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re

from ansible_collections.gpufleet.llm_stack.plugins.module_utils._fs import existing_ancestor, free_bytes
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.proc import run

# A probe prints its result as one JSON object on a line starting with MARK
# (whatever else the interpreter prints, such as a sitecustomize banner).
MARK = "TORCH_PROBE_JSON "

# Runs under the interpreter a venv is to be made from: stdlib only, any Python 3.
INTERPRETER_SCRIPT = r'''
import importlib.util, json, sys
print("TORCH_PROBE_JSON " + json.dumps({
    "version": "%d.%d.%d" % tuple(sys.version_info[:3]),
    "executable": sys.executable,
    "venv": importlib.util.find_spec("venv") is not None,
    "ensurepip": importlib.util.find_spec("ensurepip") is not None,
}))
'''

NOT_PYTHON = "is not an executable Python interpreter"
_VERSION_RE = re.compile(r"([0-9]+)\.([0-9]+)(?:\.([0-9]+))?")
_GIB = 1024.0 ** 3


class ProbeError(Exception):
    """A probe gave no usable result; the message says which program and why."""


def _excerpt(text, limit=300):
    text = (text or "").strip()
    return text if len(text) <= limit else "..." + text[-limit:]


def parse_probe_output(stdout, program="the interpreter"):
    """The JSON object a probe printed on its marked line; ProbeError naming program otherwise."""
    for line in (stdout or "").splitlines():
        if line.startswith(MARK):
            payload = line[len(MARK):]
            try:
                data = json.loads(payload)
            except ValueError as exc:
                raise ProbeError("%s printed a probe result that is not valid JSON (%s): %r"
                                 % (program, exc, _excerpt(payload, 200)))
            if not isinstance(data, dict):
                raise ProbeError("%s printed a probe result that is a JSON %s, not an object: %r"
                                 % (program, type(data).__name__.replace("dict", "object").replace("NoneType", "null"),
                                    _excerpt(payload, 200)))
            return data
    raise ProbeError("%s %s: it printed no probe result%s" % (
        program, NOT_PYTHON, (" (output: %r)" % _excerpt(stdout)) if (stdout or "").strip() else ""))


def run_probe(executable, script, args=(), timeout=30, env=None):
    """Run script under executable (isolated mode) and return its parsed result; ProbeError on any failure."""
    environ = dict(os.environ)
    environ["PYTHONWARNINGS"] = "ignore"
    environ.update(env or {})
    result = run([executable, "-I", "-c", script] + list(args), timeout=timeout, env=environ)
    if result.timed_out:
        raise ProbeError(result.error)
    if result.rc == 126 and result.error:
        raise ProbeError("%s %s: %s" % (executable, NOT_PYTHON, result.error))
    if result.rc != 0:
        said = _excerpt(result.stderr or result.stdout, 800)
        raise ProbeError("%s exited with %s%s" % (executable, result.rc, (": " + said) if said else ""))
    return parse_probe_output(result.stdout, executable)


def find_program(name, path_env=None):
    """(path, None) where name runs from, or (None, the reason it does not)."""
    if not isinstance(name, str) or not name.strip():
        return None, "no interpreter named (empty)"
    name = name.strip()
    if "\0" in name:
        return None, "%r %s: it holds a NUL character" % (name, NOT_PYTHON)
    if os.sep in name:
        if not os.path.lexists(name):
            return None, "%s: no such file" % name
        if not os.path.exists(name):
            return None, "%s %s: a dangling symbolic link" % (name, NOT_PYTHON)
        if os.path.isdir(name):
            return None, "%s %s: it is a directory" % (name, NOT_PYTHON)
        if not os.access(name, os.X_OK):
            return None, "%s %s: it is not executable" % (name, NOT_PYTHON)
        return name, None
    for folder in (path_env if path_env is not None else os.environ.get("PATH", os.defpath)).split(os.pathsep):
        candidate = os.path.join(folder or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate, None
    return None, "%s: not found on PATH" % name


def probe_interpreter(python, timeout=30):
    """{found, name, executable, version, venv, ensurepip, error} of the interpreter python (a name on PATH or a path)."""
    info = {"found": False, "name": python, "executable": None, "version": None, "venv": None, "ensurepip": None,
            "error": None}
    executable, why = find_program(python)
    if executable is None:
        info["error"] = why
        return info
    try:
        data = run_probe(executable, INTERPRETER_SCRIPT, timeout=timeout)
    except ProbeError as exc:
        info.update(executable=executable, error=str(exc))
        return info
    version = data.get("version")
    if not isinstance(version, str) or not _VERSION_RE.fullmatch(version):
        info.update(executable=executable, error="%s %s: it reported version %r" % (executable, NOT_PYTHON, version))
        return info
    info.update(found=True, executable=data.get("executable") or executable, version=version,
                venv=bool(data.get("venv")), ensurepip=bool(data.get("ensurepip")))
    return info


def abi_tag(version):
    """'3.11.2' -> 'cp311'; None for anything else."""
    match = _VERSION_RE.match(version or "")
    return "cp%s%s" % (match.group(1), match.group(2)) if match else None


def _pyvenv_version(venv):
    """The Python version pyvenv.cfg records ('version = 3.11.2', or virtualenv's 'version_info = 3.11.2.final.0')."""
    try:
        with open(os.path.join(venv, "pyvenv.cfg")) as handle:
            lines = handle.read(65536).splitlines()
    except (IOError, OSError, UnicodeDecodeError):
        return None
    values = {}
    for line in lines:
        if "=" in line:
            key, value = line.split("=", 1)
            values[key.strip().lower()] = value.strip()
    for key in ("version", "version_info"):
        match = _VERSION_RE.match(values.get(key, ""))
        if match and match.group(3) is not None:
            return "%s.%s.%s" % match.groups()
    return None


def read_venv(venv, timeout=30, probed_version=None):
    """{path, exists, python_version, abi_tag, error} of a venv: exists when bin/python runs.

    The version comes from pyvenv.cfg without running anything; a venv
    without it is asked (bin/python runs the interpreter probe), unless the
    caller has run bin/python already and gives the version it reported
    (probed_version).
    """
    info = {"path": venv, "exists": False, "python_version": None, "abi_tag": None, "error": None}
    python = os.path.join(venv, "bin", "python")
    if not os.path.isdir(venv):
        return info
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        info["error"] = "%s has no working bin/python" % venv
        return info
    version = _pyvenv_version(venv) or probed_version
    if version is None:
        try:
            version = run_probe(python, INTERPRETER_SCRIPT, timeout=timeout).get("version")
        except ProbeError as exc:
            info["error"] = str(exc)
            return info
    info.update(exists=True, python_version=version, abi_tag=abi_tag(version))
    return info


def mount_point(path):
    path = os.path.realpath(path)
    while not os.path.ismount(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def disk_space(path):
    """{path, checked, mount, free_gb} of the filesystem path is (or would be) on: its deepest existing ancestor."""
    checked = existing_ancestor(path)
    try:
        free = free_bytes(checked, nearest_existing=False)
    except OSError as exc:
        return {"path": path, "checked": checked, "mount": None, "free_gb": None,
                "error": "cannot read the free space of %s: %s" % (checked, exc.strerror or exc)}
    return {"path": path, "checked": checked, "mount": mount_point(checked),
            "free_gb": round(free / _GIB, 1), "error": None}
