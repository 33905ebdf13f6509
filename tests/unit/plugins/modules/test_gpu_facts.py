# -*- coding: utf-8 -*-
"""gpu_facts driven through AnsibleModule, running the test-only nvidia-smi replay as a real process."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpufleet.llm_stack.plugins.modules import gpu_facts

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = os.path.abspath(os.path.join(HERE, "..", "..", "..", "fixtures", "bin", "nvidia-smi"))


@pytest.fixture
def smi(tmp_path, monkeypatch):
    """An nvidia-smi in tmp that logs its arguments and runs the replay for a GPU class."""
    log = tmp_path / "calls.log"
    wrapper = tmp_path / "bin" / "nvidia-smi"
    wrapper.parent.mkdir()
    wrapper.write_text('#!/bin/sh\necho "$*" >> "%s"\nexec "%s" "$@"\n' % (log, FAKE))
    wrapper.chmod(0o755)

    def use(cls):
        monkeypatch.setenv("NVIDIA_SMI_FAKE_CLASS", cls)
        return str(wrapper)

    use.calls = lambda: log.read_text().splitlines() if log.exists() else []
    use.bindir = str(wrapper.parent)
    return use


def test_h200(run_module, smi):
    kind, result, warnings = run_module(gpu_facts.main, {"nvidia_smi_path": smi("h200")})
    assert kind == "exit" and result["changed"] is False and warnings == []
    facts = result["ansible_facts"]
    assert facts["gpu_count"] == 1
    assert facts["gpu_devices"] == [{"index": 0, "name": "NVIDIA H200", "uuid": "GPU-c2d869be-1bd4-aefd-e552-306f4e15e127",
                                     "compute_cap": "9.0", "memory_total_mib": 143771, "pci_bus_id": "00000000:00:06.0"}]
    assert facts["gpu_compute_caps"] == ["9.0"]
    assert (facts["gpu_driver_version"], facts["gpu_driver_cuda_version"]) == ("580.159.04", "13.0")
    assert facts["gpu_error"] is None and facts["gpu_compute_cap_source"] == "query"
    # one query for the GPU list, one plain call for the header's CUDA Version
    assert smi.calls() == [
        "--query-gpu=index,name,uuid,compute_cap,driver_version,memory.total,pci.bus_id --format=csv,noheader,nounits",
        "",
    ]


def test_found_on_path(run_module, smi, monkeypatch):
    smi("a100x8")
    monkeypatch.setenv("PATH", smi.bindir + os.pathsep + os.environ.get("PATH", ""))
    kind, result, dummy = run_module(gpu_facts.main, {})
    facts = result["ansible_facts"]
    assert facts["gpu_nvidia_smi_path"] == os.path.join(smi.bindir, "nvidia-smi")
    assert facts["gpu_count"] == 8 and facts["gpu_compute_caps"] == ["8.0"]
    assert facts["gpu_driver_cuda_version"] == "12.4"


def test_mixed(run_module, smi):
    facts = run_module(gpu_facts.main, {"nvidia_smi_path": smi("mixed")})[1]["ansible_facts"]
    assert facts["gpu_compute_caps"] == ["8.0", "8.9"]
    assert [d["name"] for d in facts["gpu_devices"]] == ["NVIDIA A100 80GB PCIe", "NVIDIA L40S"]


def test_old_driver(run_module, smi):
    facts = run_module(gpu_facts.main, {"nvidia_smi_path": smi("t4-470")})[1]["ansible_facts"]
    assert facts["gpu_compute_cap_source"] == "name_table"
    assert facts["gpu_compute_caps"] == ["7.5"]
    assert len(smi.calls()) == 3


def test_failing_driver(run_module, smi):
    kind, result, dummy = run_module(gpu_facts.main, {"nvidia_smi_path": smi("driver-fail")})
    assert kind == "exit" and result["changed"] is False
    facts = result["ansible_facts"]
    assert facts["gpu_count"] == 0
    assert "couldn't communicate with the NVIDIA driver" in facts["gpu_error"]
    assert facts["gpu_error"].startswith("nvidia-smi exited with 9:")
    assert len(smi.calls()) == 1


def test_no_nvidia_smi(run_module, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(gpu_facts, "SEARCH_DIRS", [str(tmp_path)])
    if any(os.path.exists(os.path.join(d, "nvidia-smi")) for d in ("/sbin", "/usr/sbin", "/usr/local/sbin")):
        pytest.skip("this machine has an nvidia-smi in an sbin directory")
    kind, result, warnings = run_module(gpu_facts.main, {})
    assert kind == "exit"
    facts = result["ansible_facts"]
    assert facts["gpu_count"] == 0 and facts["gpu_error"] is None and facts["gpu_nvidia_smi_path"] is None
    assert facts["gpu_devices"] == [] and facts["gpu_compute_caps"] == []


def test_explicit_path_must_exist(run_module, tmp_path):
    missing = str(tmp_path / "nvidia-smi")
    kind, result, dummy = run_module(gpu_facts.main, {"nvidia_smi_path": missing})
    assert kind == "fail"
    assert result["msg"].startswith("nvidia_smi_path=%s is not an executable file" % missing)


def test_check_mode_reports_the_same(run_module, smi):
    normal = run_module(gpu_facts.main, {"nvidia_smi_path": smi("l40s")})[1]
    checked = run_module(gpu_facts.main, {"nvidia_smi_path": smi("l40s"), "_ansible_check_mode": True})[1]
    assert normal == checked
    assert checked["ansible_facts"]["gpu_compute_caps"] == ["8.9"]
