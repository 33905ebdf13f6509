# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""python_probe: the interpreter a venv is made from, an existing venv, free space; captured and hostile answers."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import python_probe as pp

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.abspath(os.path.join(HERE, "..", "..", "..", "fixtures", "torch_probe"))


def fixture(name):
    with open(os.path.join(FIX, name)) as f:
        return f.read()


def script(path, body):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize("name, expected", [
    ("interpreter-debian12-python3.11.txt", {"version": "3.11.2", "executable": "/usr/bin/python3", "venv": True,
                                             "ensurepip": True}),
    ("interpreter-h200-python3.12.txt", None),
])
def test_parse_captured_interpreter_probes(name, expected):
    data = pp.parse_probe_output(fixture(name))
    assert set(data) == {"version", "executable", "venv", "ensurepip"}
    if expected:
        assert data == expected


@pytest.mark.parametrize("stdout, message", [
    ("", "the interpreter is not an executable Python interpreter: it printed no probe result"),
    ("hello\n", "it printed no probe result (output: 'hello')"),
    ("TORCH_PROBE_JSON {oops", "printed a probe result that is not valid JSON"),
    ("TORCH_PROBE_JSON [1, 2]", "is a JSON list, not an object"),
    ("TORCH_PROBE_JSON null", "is a JSON null, not an object"),
    ("TORCH_PROBE_JSON \"x\"", "is a JSON str, not an object"),
])
def test_bad_answers_are_named(stdout, message):
    with pytest.raises(pp.ProbeError) as err:
        pp.parse_probe_output(stdout)
    assert message in str(err.value)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200).map(lambda t: "TORCH_PROBE_JSON " + t) | st.text(max_size=200))
def test_any_answer_parses_or_gives_a_probe_error(stdout):
    try:
        assert isinstance(pp.parse_probe_output(stdout), dict)
    except pp.ProbeError as exc:
        assert str(exc)


def test_etc_passwd_is_not_an_interpreter():
    info = pp.probe_interpreter("/etc/passwd", timeout=5)
    assert info["found"] is False
    assert info["error"] == "/etc/passwd is not an executable Python interpreter: it is not executable"


def test_other_things_that_are_not_interpreters(tmp_path):
    assert pp.probe_interpreter(str(tmp_path))["error"].endswith("is not an executable Python interpreter: it is a directory")
    assert pp.probe_interpreter(str(tmp_path / "none"))["error"] == "%s: no such file" % (tmp_path / "none")
    os.symlink(str(tmp_path / "gone"), str(tmp_path / "link"))
    assert "a dangling symbolic link" in pp.probe_interpreter(str(tmp_path / "link"))["error"]
    silent = script(tmp_path / "bin" / "silent", "exit 0")
    assert pp.probe_interpreter(silent)["error"] == "%s is not an executable Python interpreter: it printed no probe result" % silent
    listing = script(tmp_path / "bin" / "listing", "echo 'TORCH_PROBE_JSON [\"3.12\"]'")
    assert "is a JSON list, not an object" in pp.probe_interpreter(listing)["error"]
    failing = script(tmp_path / "bin" / "failing", "echo 'SyntaxError: bad' >&2; exit 1")
    assert pp.probe_interpreter(failing)["error"] == "%s exited with 1: SyntaxError: bad" % failing
    odd = script(tmp_path / "bin" / "odd", "echo 'TORCH_PROBE_JSON {\"version\": \"three\"}'")
    assert "reported version 'three'" in pp.probe_interpreter(odd)["error"]
    noshebang = tmp_path / "bin" / "noshebang"
    noshebang.write_bytes(b"\x7fELF junk")
    noshebang.chmod(0o755)
    assert "is not an executable Python interpreter" in pp.probe_interpreter(str(noshebang))["error"]
    assert pp.probe_interpreter("")["error"] == "no interpreter named (empty)"


def test_hung_interpreter_times_out(tmp_path):
    hung = script(tmp_path / "bin" / "hung", "sleep 30")
    info = pp.probe_interpreter(hung, timeout=1)
    assert info["found"] is False and info["error"] == "%s did not answer within 1 seconds" % hung


def test_real_interpreter_by_name(monkeypatch):
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable))
    info = pp.probe_interpreter(os.path.basename(sys.executable))
    assert info["found"] is True and info["error"] is None
    assert info["version"] == "%d.%d.%d" % sys.version_info[:3] and info["venv"] is True


def test_name_not_on_path(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert pp.probe_interpreter("python3.99")["error"] == "python3.99: not found on PATH"


def test_venv_version_from_pyvenv_cfg_without_running(tmp_path):
    venv = tmp_path / "venv"
    script(venv / "bin" / "python", "echo ran >> %s; exit 1" % (tmp_path / "ran"))
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.2\n")
    assert pp.read_venv(str(venv)) == {"path": str(venv), "exists": True, "python_version": "3.11.2", "abi_tag": "cp311",
                                       "error": None}
    assert not (tmp_path / "ran").exists()
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\nversion_info = 3.12.3.final.0\n")
    assert pp.read_venv(str(venv))["python_version"] == "3.12.3"


def test_venv_without_pyvenv_cfg_is_asked(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    os.symlink(sys.executable, str(venv / "bin" / "python"))
    assert pp.read_venv(str(venv))["python_version"] == "%d.%d.%d" % sys.version_info[:3]


def test_missing_and_broken_venvs(tmp_path):
    assert pp.read_venv(str(tmp_path / "none"))["exists"] is False
    (tmp_path / "half").mkdir()
    half = pp.read_venv(str(tmp_path / "half"))
    assert half["exists"] is False and half["error"] == "%s has no working bin/python" % (tmp_path / "half")


def test_disk_space_of_a_path_to_be_created(tmp_path):
    space = pp.disk_space(str(tmp_path / "a" / "b"))
    assert space["checked"] == str(tmp_path) and space["free_gb"] >= 0 and os.path.ismount(space["mount"])
    assert space["error"] is None


def test_abi_tag():
    assert (pp.abi_tag("3.11.2"), pp.abi_tag("3.9"), pp.abi_tag(None), pp.abi_tag("x")) == ("cp311", "cp39", None, None)
