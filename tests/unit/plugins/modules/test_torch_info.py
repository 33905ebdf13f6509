# -*- coding: utf-8 -*-
"""torch_info driven through AnsibleModule. The venv's python is a real
executable that replays a captured probe output (tests/fixtures/torch_probe)
and records the arguments it was given."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible_collections.gpufleet.llm_stack.plugins.modules import torch_info

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.abspath(os.path.join(HERE, "..", "..", "..", "fixtures", "torch_probe"))


def replay(path, fixture, log):
    """An executable at path that prints a fixture and logs its arguments as JSON."""
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
        f.write('#!/bin/sh\n'
                'python3 -c \'import json, sys; print(json.dumps(sys.argv[1:]))\' "$@" >> "%s"\n'
                'cat "%s"\n' % (log, os.path.join(FIX, fixture) if fixture else "/dev/null"))
    os.chmod(path, 0o755)


@pytest.fixture
def venv(tmp_path):
    """venv(fixture) -> path of a venv whose python replays the fixture; venv.calls() -> argv lists."""
    log = tmp_path / "calls.log"

    def make(fixture):
        root = tmp_path / "venv"
        replay(str(root / "bin" / "python"), fixture, str(log))
        return str(root)

    make.calls = lambda: [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
    make.log = str(log)
    make.tmp = tmp_path
    return make


def test_h200_venv(run_module, venv):
    path = venv("probe-h200-torch2.11.0-cu130.txt")
    kind, result, warnings = run_module(torch_info.main, {
        "venv": path, "requirements": ["einops", "ninja==1.13.2"], "expect_version": "2.11.0", "expect_local": "cu130",
        "gpu_count": 1, "compute_caps": ["9.0"], "driver_cuda_version": "13.0"})
    assert kind == "exit" and result["changed"] is False and warnings == []
    info = result["ansible_facts"]["torch_info"]
    assert info == result["info"]
    assert info["venv_exists"] is True and info["venv"] == path
    assert info["torch"]["cuda_build"] == "cu130" and info["torch"]["version"] == "2.11.0+cu130"
    assert (result["problems"], result["unmet"], result["gpu_checks"]) == ([], [], "passed")
    # the probe ran isolated, importing torch, asked for the requirements' distributions
    (argv,) = venv.calls()
    assert argv[0:2] == ["-I", "-c"] and "TORCH_PROBE_JSON" in argv[2]
    assert json.loads(argv[3]) == {"import_torch": True, "distributions": ["einops", "ninja"], "verify_files": False,
                                   "record": None}


def test_unmet_requirements(run_module, venv):
    kind, result, dummy = run_module(torch_info.main, {
        "venv": venv("probe-h200-torch2.11.0-cu130.txt"), "requirements": ["ninja==1.11.1", "flash-attn"]})
    assert kind == "exit" and result["unmet"] == ["ninja==1.11.1", "flash-attn"]
    # nothing expected, nothing judged
    assert result["problems"] == [] and result["gpu_checks"].startswith("not requested")


def test_bad_requirement_fails_before_probing(run_module, venv):
    kind, result, dummy = run_module(torch_info.main, {"venv": venv("probe-h200-noimport.txt"), "requirements": ["torch>=2"]})
    assert kind == "fail" and "NAME==VERSION" in result["msg"] and venv.calls() == []


def test_cpu_test_host_without_import_or_facts(run_module, venv):
    kind, result, dummy = run_module(torch_info.main, {
        "venv": venv("probe-debian12-torch2.13.0-cpu.txt"), "import_torch": False, "distributions": ["flash-attn"],
        "set_facts": False, "expect_version": "2.13.0", "expect_local": "cpu", "cpu_only_test_host": True})
    assert kind == "exit" and "ansible_facts" not in result
    assert result["info"]["distributions"]["flash-attn"]["version"] == "2.8.3"
    assert result["problems"] == [] and result["gpu_checks"] == "skipped: CPU-only test host (llm_stack_cpu_only_test_host)"
    assert json.loads(venv.calls()[0][3])["import_torch"] is False


def test_cpu_build_on_gpu_host_is_named(run_module, venv):
    kind, result, dummy = run_module(torch_info.main, {
        "venv": venv("probe-debian12-torch2.13.0-cpu.txt"), "expect_version": "2.13.0", "expect_local": "cu130",
        "gpu_count": 8, "index_url": "https://download.pytorch.org/whl/cu130"})
    assert [p["name"] for p in result["problems"]] == ["cpu_only_build"]
    assert "pip install torch==2.13.0+cu130 --index-url https://download.pytorch.org/whl/cu130" in result["problems"][0]["msg"]


def test_missing_venv(run_module, tmp_path):
    kind, result, dummy = run_module(torch_info.main, {
        "venv": str(tmp_path / "none"), "requirements": ["einops"], "expect_version": "2.13.0"})
    assert kind == "exit"
    assert result["info"]["venv_exists"] is False and result["info"]["torch"] is None
    assert [p["name"] for p in result["problems"]] == ["venv_missing"] and result["unmet"] == ["einops"]


def test_interpreter_probe(run_module, venv):
    interp = str(venv.tmp / "py" / "bin" / "python3.11")
    replay(interp, "interpreter-debian12-python3.11.txt", venv.log)
    kind, result, dummy = run_module(torch_info.main, {"venv": str(venv.tmp / "none"), "python": interp})
    assert result["info"]["interpreter"] == {"version": "3.11.2", "executable": "/usr/bin/python3", "venv": True,
                                             "ensurepip": True, "found": True, "name": interp}


def test_interpreter_not_on_path(run_module, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    kind, result, dummy = run_module(torch_info.main, {"venv": str(tmp_path / "none"), "python": "python3.99"})
    assert result["info"]["interpreter"] == {"found": False, "name": "python3.99"}


def test_probe_without_result_fails(run_module, venv):
    kind, result, dummy = run_module(torch_info.main, {"venv": venv(None)})
    assert kind == "fail" and "Cannot probe the venv" in result["msg"] and "recreate the venv" in result["msg"]


def test_interpreter_not_read_once_the_venv_exists(run_module, venv):
    path = venv("probe-debian12-torch2.13.0-cpu.txt")
    interp = str(venv.tmp / "py" / "bin" / "python3.11")
    replay(interp, "interpreter-debian12-python3.11.txt", venv.log + ".interp")
    kind, result, dummy = run_module(torch_info.main, {"venv": path, "python": interp, "import_torch": False})
    assert kind == "exit" and result["info"]["interpreter"] is None
    assert result["info"]["python"]["version"] == "3.11.2"
    assert not os.path.exists(venv.log + ".interp") and len(venv.calls()) == 1
