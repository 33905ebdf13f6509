# -*- coding: utf-8 -*-
"""gpu_facts against a wedged GPU, new driver layouts and bytes that are not UTF-8, as real processes."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import time

import pytest

from ansible_collections.gpufleet.llm_stack.plugins.modules import gpu_facts

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = os.path.abspath(os.path.join(HERE, "..", "..", "..", "fixtures", "bin", "nvidia-smi"))
QUERY = "--query-gpu=index,name,uuid,compute_cap,driver_version,memory.total,pci.bus_id --format=csv,noheader,nounits"


@pytest.fixture
def smi(tmp_path, monkeypatch):
    """An nvidia-smi in tmp that logs its pid, LC_ALL and arguments, then does what `body` says."""
    log = tmp_path / "calls.log"
    path = tmp_path / "bin" / "nvidia-smi"
    path.parent.mkdir()

    def make(cls, body='exec "%s" "$@"\n' % FAKE):
        monkeypatch.setenv("NVIDIA_SMI_FAKE_CLASS", cls)
        path.write_text('#!/bin/sh\n# test-only stand-in\necho "$$ ${LC_ALL:-} $*" >> "%s"\n%s' % (log, body))
        path.chmod(0o755)
        return str(path)

    def calls():
        return [line.split(" ", 2) for line in log.read_text().splitlines()] if log.exists() else []

    make.calls = calls
    return make


def gone(pid, seconds=5.0):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            os.kill(pid, 0)
            with open("/proc/%d/stat" % pid) as handle:
                if handle.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except (OSError, IOError):
            return True
        time.sleep(0.05)
    return False


def test_wedged_gpu_is_reported_as_the_hosts_problem_not_a_failed_task(run_module, smi):
    # regression: gpu_facts waited forever on an nvidia-smi that hangs
    started = time.time()
    kind, result, warnings = run_module(gpu_facts.main, {"nvidia_smi_path": smi("wedged"), "timeout": 1})
    assert time.time() - started < 10
    assert kind == "exit" and result["changed"] is False
    facts = result["ansible_facts"]
    assert facts["gpu_error"].startswith("nvidia-smi did not answer within 1 seconds (a wedged GPU or driver?)")
    assert facts["gpu_count"] == 0 and facts["gpu_compute_caps"] == []
    calls = smi.calls()
    assert len(calls) == 1 and calls[0][2] == QUERY
    assert gone(int(calls[0][0])), "the hung nvidia-smi still runs"


def test_hang_on_the_header_keeps_the_gpus_and_reports_the_host(run_module, smi):
    body = 'if [ $# -eq 0 ]; then exec sleep 60; fi\nexec "%s" "$@"\n' % FAKE
    kind, result, dummy = run_module(gpu_facts.main, {"nvidia_smi_path": smi("h200", body), "timeout": 1})
    assert kind == "exit"
    facts = result["ansible_facts"]
    assert facts["gpu_count"] == 1 and facts["gpu_driver_version"] == "580.159.04"
    assert facts["gpu_error"].startswith("nvidia-smi did not answer within 1 seconds (a wedged GPU or driver?)")
    assert gone(int(smi.calls()[1][0]))


def test_default_timeout_is_documented_and_used(run_module, smi, monkeypatch):
    seen = []
    real_run = gpu_facts.run
    monkeypatch.setattr(gpu_facts, "run", lambda argv, timeout, env: seen.append(timeout) or real_run(argv, timeout, env=env))
    run_module(gpu_facts.main, {"nvidia_smi_path": smi("h200")})
    assert seen and set(seen) == {30}
    assert "default: 30" in gpu_facts.DOCUMENTATION


def test_runs_with_lc_all_c(run_module, smi):
    run_module(gpu_facts.main, {"nvidia_smi_path": smi("h200")})
    assert all(call[1] == "C" for call in smi.calls())


@pytest.mark.parametrize("timeout", [0, -5])
def test_timeout_must_be_positive(run_module, smi, timeout):
    kind, result, dummy = run_module(gpu_facts.main, {"nvidia_smi_path": smi("h200"), "timeout": timeout})
    assert kind == "fail" and result["msg"].startswith("timeout=%d: give the seconds" % timeout)
    assert smi.calls() == []


def test_610_driver(run_module, smi):
    # regression: the 610 header (KMD Version / CUDA UMD Version) gave no driver CUDA version, silently
    kind, result, warnings = run_module(gpu_facts.main, {"nvidia_smi_path": smi("b200-610")})
    facts = result["ansible_facts"]
    assert warnings == []
    assert (facts["gpu_driver_version"], facts["gpu_driver_cuda_version"]) == ("610.43.02", "13.3")
    assert facts["gpu_driver_cuda_version_source"] == "header"
    assert facts["gpu_compute_caps"] == ["10.0"] and facts["gpu_count"] == 2


def test_unknown_header_falls_back_to_xml_with_a_warning(run_module, smi):
    kind, result, warnings = run_module(gpu_facts.main, {"nvidia_smi_path": smi("header-unknown")})
    facts = result["ansible_facts"]
    assert (facts["gpu_driver_cuda_version"], facts["gpu_driver_cuda_version_source"]) == ("14.0", "xml")
    assert [call[2] if len(call) > 2 else "" for call in smi.calls()] == [QUERY, "", "--version", "-q -x"]
    assert len(warnings) == 1 and "'CUDA Version:' or 'CUDA UMD Version:'" in warnings[0]


def test_non_utf8_gpu_name_is_a_warning_naming_nvidia_smi(run_module, smi):
    # regression: a byte that is not UTF-8 ended in Ansible's generic UTF-8 error
    body = ('if [ "$1" = "--query-gpu=index,name,uuid,compute_cap,driver_version,memory.total,pci.bus_id" ]; then\n'
            "  printf '0, NVIDIA H200 \\377\\376, GPU-x, 9.0, 580.159.04, 143771, 00000000:00:06.0\\n'; exit 0\n"
            'fi\nexec "%s" "$@"\n' % FAKE)
    kind, result, warnings = run_module(gpu_facts.main, {"nvidia_smi_path": smi("h200", body)})
    assert kind == "exit"
    facts = result["ansible_facts"]
    assert facts["gpu_error"] is None and facts["gpu_count"] == 1
    assert facts["gpu_devices"][0]["name"] == u"NVIDIA H200 \ufffd\ufffd"
    assert warnings == ["nvidia-smi printed bytes that are not UTF-8 (shown as U+FFFD) in the GPU list;"
                        " the GPU names may hold U+FFFD characters"]
    json.dumps(result, ensure_ascii=False).encode("utf-8")  # what Ansible does with the result


def test_non_utf8_error_output_is_readable(run_module, smi):
    body = "printf 'NVIDIA-SMI has failed \\377\\n'\nexit 9\n"
    kind, result, dummy = run_module(gpu_facts.main, {"nvidia_smi_path": smi("h200", body)})
    assert kind == "exit"
    assert result["ansible_facts"]["gpu_error"] == u"nvidia-smi exited with 9: NVIDIA-SMI has failed \ufffd"
    json.dumps(result, ensure_ascii=False).encode("utf-8")


def test_nvidia_smi_that_is_not_a_program(run_module, smi, tmp_path):
    # executable bit, but no interpreter line: the kernel refuses it; still a clean gpu_error
    path = tmp_path / "bin" / "nvidia-smi"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(b"\x7fELF\x00garbage")
    path.chmod(0o755)
    kind, result, dummy = run_module(gpu_facts.main, {"nvidia_smi_path": str(path)})
    assert kind == "exit"
    assert result["ansible_facts"]["gpu_error"].startswith("nvidia-smi exited with 126: %s: cannot run: " % path)
