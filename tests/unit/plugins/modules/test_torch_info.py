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
        "gpu_count": 1, "compute_caps": ["9.0"], "driver_version": "580.159.04"})
    assert kind == "exit" and result["changed"] is False and warnings == []
    info = result["ansible_facts"]["torch_info"]
    assert info == result["info"]
    assert info["venv_exists"] is True and info["venv"] == path
    assert info["torch"]["cuda_build"] == "cu130" and info["torch"]["version"] == "2.11.0+cu130"
    assert (result["problems"], result["unmet"], result["gpu_checks"]) == ([], [], "passed")
    assert (result["ok"], result["needs_install"], result["failure"]) == (True, False, "")
    assert result["report"] == [
        "torch 2.11.0+cu130 (CUDA 13.0, C++11 ABI True) on Python 3.12.3 (cp312); GPU checks passed; "
        "torch.cuda.is_available() true, capability (9, 0), arch list sm_75 sm_80 sm_86 sm_90 sm_100 sm_120"]
    # the probe ran isolated, importing torch (a GPU host), asked for the requirements' distributions
    (argv,) = venv.calls()
    assert argv[0:2] == ["-I", "-c"] and "TORCH_PROBE_JSON" in argv[2]
    assert json.loads(argv[3]) == {"import_torch": True, "distributions": ["einops", "ninja"], "verify_files": False,
                                   "record": os.path.join(path, ".llm_stack", "torch.json")}


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


def test_probe_without_result_fails(run_module, venv):
    kind, result, dummy = run_module(torch_info.main, {"venv": venv(None)})
    assert kind == "fail" and "Cannot probe the venv" in result["msg"] and "recreate the venv" in result["msg"]
    assert "printed no probe result" in result["msg"]


@pytest.mark.parametrize("printed, message", [
    ("TORCH_PROBE_JSON {not json", "not valid JSON"),
    ("TORCH_PROBE_JSON [1, 2]", "is a JSON list, not an object"),
])
def test_probe_with_a_bad_answer_fails_cleanly(run_module, tmp_path, printed, message):
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\necho '%s'\n" % printed)
    python.chmod(0o755)
    kind, result, dummy = run_module(torch_info.main, {"venv": str(tmp_path / "venv")})
    assert kind == "fail" and message in result["msg"] and "Traceback" not in result["msg"]


def test_hung_probe_times_out(run_module, tmp_path):
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\nsleep 30\n")
    python.chmod(0o755)
    kind, result, dummy = run_module(torch_info.main, {"venv": str(tmp_path / "venv"), "timeout": 1})
    assert kind == "fail" and "did not answer within 1 seconds" in result["msg"]


def test_bad_expect_local_is_named(run_module, venv):
    kind, result, dummy = run_module(torch_info.main, {"venv": venv("probe-h200-noimport.txt"), "expect_local": "cu12x"})
    assert kind == "fail" and result["msg"].startswith("expect_local: 'cu12x' is not a torch CUDA build") and venv.calls() == []


def test_cpu_test_host_decisions(run_module, venv):
    """No GPU: torch is imported only without a matching record, the CPU build is accepted, nothing to install."""
    path = venv("probe-debian12-torch2.13.0-cpu.txt")
    kind, result, dummy = run_module(torch_info.main, {
        "venv": path, "expect_version": "2.13.0", "expect_local": "cpu", "cpu_only_test_host": True,
        "wheelhouse": "/opt/llm-stack/wheelhouse", "write_record": True})
    # this capture is of such an import (no record yet): its record is written
    assert kind == "exit" and result["changed"] is True and result["record_written"] is True
    assert (result["ok"], result["needs_install"]) == (True, False)
    assert json.loads(venv.calls()[0][3])["import_torch"] is False
    assert result["report"][0].startswith("torch 2.13.0+cpu (CUDA none, C++11 ABI ") and result["report"][0].endswith(
        "on Python 3.11.2 (cp311); GPU checks skipped: CPU-only test host (llm_stack_cpu_only_test_host)")
    assert result["report"][1].startswith("Not checked here, for want of a GPU: torch.cuda.is_available()")


def test_wrong_build_needs_install_and_check_mode_says_so(run_module, venv):
    path = venv("probe-debian12-torch2.13.0-cpu.txt")
    args = {"venv": path, "expect_version": "2.13.0", "expect_local": "12.8", "gpu_count": 2,
            "index_url": "https://user:secret@mirror.example/whl/cu128"}
    kind, result, dummy = run_module(torch_info.main, dict(args, _ansible_check_mode=True))
    assert result["needs_install"] is True and result["ok"] is False
    assert result["report"] == ["check mode: torch==2.13.0+cu128 would be installed into %s from "
                                "https://***@mirror.example/whl/cu128" % path]
    assert result["failure"].startswith("torch in %s: 1 problem(s):\n- cpu_only_build: torch 2.13.0+cpu" % path)
    assert "secret" not in json.dumps(result)


def test_missing_venv_needs_install(run_module, tmp_path):
    kind, result, dummy = run_module(torch_info.main, {"venv": str(tmp_path / "none"), "expect_version": "2.13.0"})
    assert result["needs_install"] is True and result["gpu_checks"] == "skipped: no venv"


def test_record_written_after_a_clean_import_then_kept(run_module, venv):
    path = venv("probe-h200-torch2.11.0-cu130.txt")
    args = {"venv": path, "expect_version": "2.11.0", "expect_local": "cu130", "gpu_count": 1, "compute_caps": ["9.0"],
            "driver_version": "580.159.04", "write_record": True}
    kind, check, dummy = run_module(torch_info.main, dict(args, _ansible_check_mode=True))
    assert check["changed"] is True and check["record_written"] is True
    record = os.path.join(path, ".llm_stack", "torch.json")
    assert not os.path.exists(record)
    kind, first, dummy = run_module(torch_info.main, args)
    assert first["changed"] is True and first["record_written"] is True
    with open(record) as f:
        saved = json.load(f)
    assert saved["version"] == "2.11.0+cu130" and saved["cxx11_abi"] is True and "sm_90" in saved["arch_list"]
    kind, second, dummy = run_module(torch_info.main, args)
    assert second["changed"] is False and second["record_written"] is False


def test_no_record_after_an_import_with_problems(run_module, venv):
    path = venv("probe-h200-cuda-visible-devices-empty.txt")
    kind, result, dummy = run_module(torch_info.main, {
        "venv": path, "expect_version": "2.11.0", "expect_local": "cu130", "gpu_count": 1, "write_record": True})
    assert [p["name"] for p in result["problems"]] == ["cuda_unavailable"]
    assert result["changed"] is False and not os.path.exists(os.path.join(path, ".llm_stack", "torch.json"))
    assert result["needs_install"] is False  # reinstalling torch does not fix that
