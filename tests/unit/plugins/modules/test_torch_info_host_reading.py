# -*- coding: utf-8 -*-
"""torch_info as the one reading of a role's gate: the GPUs (read_gpus), the interpreter
(python), the venv, and whether the record of the import is out of date (record_stale).
The venv's python, the interpreter and nvidia-smi are real executables that replay
captured outputs (tests/fixtures) and log their arguments (the fixture host, in
tests/unit/plugins/conftest.py)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import nvidia
from ansible_collections.gpufleet.llm_stack.plugins.modules import gpu_facts, torch_info

H200 = {"expect_version": "2.11.0", "expect_local": "cu130", "set_facts": False}


def test_one_call_reads_gpus_interpreter_venv_and_torch(run_module, host):
    host.gpus("h200")
    path = host.venv("probe-h200-torch2.11.0-cu130.txt")
    kind, result, warnings = run_module(torch_info.main, dict(H200, venv=path, python=host.python(
        "interpreter-h200-python3.12.txt"), read_gpus=True))
    assert kind == "exit" and result["changed"] is False and warnings == []
    # the GPU facts are gpu_facts' own, from the same nvidia-smi calls
    kind, alone, dummy = run_module(gpu_facts.main, {})
    assert result["ansible_facts"] == alone["ansible_facts"]
    assert result["ansible_facts"]["gpu_count"] == 1 and result["ansible_facts"]["gpu_compute_caps"] == ["9.0"]
    # and the diagnosis used them: an import (a GPU host), the driver rule, the devices
    assert json.loads(host.calls("venv")[0][3])["import_torch"] is True
    assert (result["ok"], result["gpu_checks"], result["needs_install"]) == (True, "passed", False)
    assert "torch.cuda.is_available() true, capability (9, 0)" in result["report"][0]
    assert result["venv"] == {"path": path, "exists": True, "python_version": "3.12.3", "abi_tag": "cp312",
                              "error": None}
    # the venv's python ran once (pyvenv.cfg gave its version); the interpreter is not needed for a venv that
    # exists (the gate judges it by its own Python), so it did not run
    assert result["interpreter"] is None
    assert len(host.calls("python")) == 0 and len(host.calls("venv")) == 1


def test_the_interpreter_is_read_where_the_venv_is_still_to_be_made(run_module, host, tmp_path):
    kind, result, dummy = run_module(torch_info.main, dict(H200, venv=str(tmp_path / "new-venv"), python=host.python(
        "interpreter-h200-python3.12.txt"), gpu_count=1))
    assert kind == "exit" and result["needs_install"] is True
    assert result["interpreter"]["found"] is True and result["interpreter"]["version"] == "3.12.3"
    assert result["interpreter"]["name"] == "python3.12"
    assert len(host.calls("python")) == 1 and host.calls("venv") == []


def test_read_gpus_wins_over_the_gpu_options(run_module, host):
    """A host without nvidia-smi: no GPU, whatever the options say; no import, the GPU checks skipped."""
    path = host.venv("probe-debian12-torch2.13.0-cpu.txt")
    kind, result, dummy = run_module(torch_info.main, {
        "venv": path, "read_gpus": True, "gpu_count": 8, "compute_caps": ["9.0"], "expect_version": "2.13.0",
        "expect_local": "cu130", "cpu_only_test_host": True, "set_facts": False})
    assert kind == "exit"
    facts = result["ansible_facts"]
    assert facts["gpu_count"] == 0 and facts["gpu_error"] is None and facts["gpu_nvidia_smi_path"] is None
    assert json.loads(host.calls("venv")[0][3])["import_torch"] is False
    assert result["gpu_checks"] == "skipped: CPU-only test host (llm_stack_cpu_only_test_host)"
    assert result["install"]["build"] == "cpu"
    assert result["interpreter"] is None


def test_broken_driver_is_a_fact_not_a_failure(run_module, host):
    host.gpus("driver-fail")
    kind, result, dummy = run_module(torch_info.main, {
        "venv": host.venv("probe-h200-noimport.txt"), "read_gpus": True, "set_facts": False})
    assert kind == "exit" and result["ansible_facts"]["gpu_count"] == 0
    assert result["ansible_facts"]["gpu_error"].startswith("nvidia-smi exited with 9:")
    assert len(host.calls("smi")) == 1


def test_gpus_are_not_read_unless_asked(run_module, host):
    host.gpus("h200")
    kind, result, dummy = run_module(torch_info.main, {
        "venv": host.venv("probe-h200-noimport.txt"), "set_facts": False, "gpu_count": 0})
    assert kind == "exit" and "ansible_facts" not in result and host.calls("smi") == []


def test_both_kinds_of_facts(run_module, host):
    kind, result, dummy = run_module(torch_info.main, {"venv": host.venv("probe-h200-noimport.txt"), "read_gpus": True})
    assert sorted(result["ansible_facts"]) == sorted(list(nvidia.empty_facts()) + ["torch_info"])


def test_venv_version_from_the_probe_without_pyvenv_cfg(run_module, host):
    path = host.venv("probe-debian12-torch2.13.0-cpu.txt", pyvenv=None)
    kind, result, dummy = run_module(torch_info.main, {"venv": path, "import_torch": False, "set_facts": False})
    assert result["venv"]["python_version"] == "3.11.2" and result["venv"]["abi_tag"] == "cp311"
    assert len(host.calls("venv")) == 1


def test_missing_venv_and_interpreter(run_module, host, tmp_path):
    kind, result, dummy = run_module(torch_info.main, {
        "venv": str(tmp_path / "none"), "python": "python3.99", "expect_version": "2.13.0", "set_facts": False})
    assert kind == "exit" and result["needs_install"] is True
    assert result["venv"] == {"path": str(tmp_path / "none"), "exists": False, "python_version": None, "abi_tag": None,
                              "error": None}
    assert result["interpreter"]["found"] is False and result["interpreter"]["error"] == "python3.99: not found on PATH"


def test_record_stale_without_writing_then_written(run_module, host):
    path = host.venv("probe-h200-torch2.11.0-cu130.txt")
    args = dict(H200, venv=path, gpu_count=1, compute_caps=["9.0"], driver_version="580.159.04")
    record = os.path.join(path, ".llm_stack", "torch.json")
    kind, read, dummy = run_module(torch_info.main, args)
    assert (read["changed"], read["record_written"], read["record_stale"]) == (False, False, True)
    assert not os.path.exists(record)
    kind, check, dummy = run_module(torch_info.main, dict(args, write_record=True, _ansible_check_mode=True))
    assert (check["changed"], check["record_written"], check["record_stale"]) == (True, True, True)
    assert not os.path.exists(record)
    kind, written, dummy = run_module(torch_info.main, dict(args, write_record=True))
    assert (written["changed"], written["record_written"], written["record_stale"]) == (True, True, False)
    assert os.path.exists(record)
    kind, again, dummy = run_module(torch_info.main, args)
    assert (again["changed"], again["record_written"], again["record_stale"]) == (False, False, False)


def test_no_import_no_stale_record(run_module, host):
    kind, result, dummy = run_module(torch_info.main, {
        "venv": host.venv("probe-h200-noimport.txt"), "import_torch": False, "use_record": False, "set_facts": False})
    assert result["record_stale"] is False


def test_an_import_with_problems_leaves_the_record_alone(run_module, host):
    kind, result, dummy = run_module(torch_info.main, dict(
        H200, venv=host.venv("probe-h200-cuda-visible-devices-empty.txt"), gpu_count=1))
    assert [p["name"] for p in result["problems"]] == ["cuda_unavailable"] and result["record_stale"] is False
