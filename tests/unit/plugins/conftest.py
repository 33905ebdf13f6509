# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fixture host: a venv's python, an interpreter and nvidia-smi as real executables that replay captured
outputs (tests/fixtures) and log their arguments. Used by the tests of torch_info and of the actions that run it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import sys

import pytest

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import nvidia

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.abspath(os.path.join(HERE, "..", "..", "fixtures"))
PROBES = os.path.join(FIXTURES, "torch_probe")
FAKE_SMI = os.path.join(FIXTURES, "bin", "nvidia-smi")


def replay(path, fixture, log):
    """An executable at path that prints a fixture and logs its arguments as one JSON line."""
    if not os.path.isdir(os.path.dirname(path)):
        os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
        f.write('#!/bin/sh\n'
                '"%s" -c \'import json, sys; print(json.dumps(sys.argv[1:]))\' "$@" >> "%s"\n'
                '/bin/cat "%s"\n' % (sys.executable, log, os.path.join(PROBES, fixture)))
    os.chmod(path, 0o755)


@pytest.fixture
def host(tmp_path, monkeypatch):
    """A host: host.venv(fixture, pyvenv) makes the venv, host.python(fixture) an interpreter,
    host.gpus(cls) puts an nvidia-smi replaying that GPU class on the search path (none until then)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    # the replays need bash and python3 from the system directories
    monkeypatch.setenv("PATH", os.pathsep.join([str(bindir), "/usr/bin", "/bin"]))
    monkeypatch.setattr(nvidia, "SMI_SEARCH_DIRS", [str(bindir)])
    if any(os.path.exists(os.path.join(d, "nvidia-smi")) for d in ("/usr/bin", "/bin", "/sbin", "/usr/sbin", "/usr/local/sbin")):
        pytest.skip("this machine has an nvidia-smi of its own")
    logs = {"venv": tmp_path / "venv.log", "python": tmp_path / "python.log", "smi": tmp_path / "smi.log"}

    class Host(object):
        def venv(self, fixture, pyvenv="home = /usr/bin\nversion = 3.12.3\n"):
            root = tmp_path / "venv"
            replay(str(root / "bin" / "python"), fixture, str(logs["venv"]))
            if pyvenv is not None:
                (root / "pyvenv.cfg").write_text(pyvenv)
            return str(root)

        def python(self, fixture):
            replay(str(bindir / "python3.12"), fixture, str(logs["python"]))
            return "python3.12"

        def gpus(self, cls):
            monkeypatch.setenv("NVIDIA_SMI_FAKE_CLASS", cls)
            smi = bindir / "nvidia-smi"
            smi.write_text('#!/bin/sh\necho "$*" >> "%s"\nexec "%s" "$@"\n' % (logs["smi"], FAKE_SMI))
            smi.chmod(0o755)

        def calls(self, what):
            log = logs[what]
            if not log.exists():
                return []
            lines = log.read_text().splitlines()
            return lines if what == "smi" else [json.loads(line) for line in lines]

    return Host()
