# -*- coding: utf-8 -*-
"""nvidia-smi parsers against the real H200 capture and the hand-written GPU classes."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import nvidia
from nvidia_smi_replay import GPU, fake_runner, read


def test_query_args_match_the_h200_capture_command():
    # h200/README.md: query.csv came from exactly this command line
    assert nvidia.query_args() == [
        "--query-gpu=index,name,uuid,compute_cap,driver_version,memory.total,pci.bus_id",
        "--format=csv,noheader,nounits",
    ]
    with open(os.path.join(GPU, "h200", "README.md")) as handle:
        assert " ".join(["nvidia-smi"] + nvidia.query_args()) in handle.read()


def test_parse_real_h200_query():
    devices, driver = nvidia.parse_query_csv(read("h200", "query.csv"))
    assert driver == "580.159.04"
    assert devices == [{
        "index": 0,
        "name": "NVIDIA H200",
        "uuid": "GPU-c2d869be-1bd4-aefd-e552-306f4e15e127",
        "compute_cap": "9.0",
        "memory_total_mib": 143771,
        "pci_bus_id": "00000000:00:06.0",
    }]


def test_parse_real_h200_header():
    assert nvidia.parse_header(read("h200", "nvidia-smi.txt")) == ("580.159.04", "13.0")


@pytest.mark.parametrize("cls, header", [
    ("a100x8", ("550.54.15", "12.4")),
    ("l40s", ("575.57.08", "12.9")),
    ("mixed", ("570.133.20", "12.8")),
    ("t4-470", ("470.182.03", "11.4")),
])
def test_parse_headers(cls, header):
    assert nvidia.parse_header(read(cls, "nvidia-smi.txt")) == header


def test_parse_header_absent_or_na():
    assert nvidia.parse_header("No devices were found\n") == (None, None)
    assert nvidia.parse_header("| NVIDIA-SMI 580.1  Driver Version: 580.1  CUDA Version: N/A |") == ("580.1", None)


def test_parse_eight_a100():
    devices, driver = nvidia.parse_query_csv(read("a100x8", "query.csv"))
    assert driver == "550.54.15"
    assert [d["index"] for d in devices] == list(range(8))
    assert set(d["compute_cap"] for d in devices) == {"8.0"}
    assert all(d["memory_total_mib"] == 81920 for d in devices)
    assert devices[7]["pci_bus_id"] == "00000000:BD:00.0"
    assert len(set(d["uuid"] for d in devices)) == 8


def test_parse_mixed():
    devices, dummy = nvidia.parse_query_csv(read("mixed", "query.csv"))
    assert [(d["name"], d["compute_cap"]) for d in devices] == [("NVIDIA A100 80GB PCIe", "8.0"), ("NVIDIA L40S", "8.9")]


def test_parse_without_compute_cap_field():
    devices, driver = nvidia.parse_query_csv(read("t4-470", "query-nocap.csv"), nvidia.QUERY_FIELDS_NO_CAP)
    assert driver == "470.182.03"
    assert devices[0]["compute_cap"] is None
    assert devices[0]["memory_total_mib"] == 15109


@pytest.mark.parametrize("line", [
    "0, NVIDIA H200, GPU-x, 9.0, 580.159.04, 143771",  # a field short
    "x, NVIDIA H200, GPU-x, 9.0, 580.159.04, 143771, 00000000:00:06.0",  # no index
    "0, NVIDIA H200, GPU-x, nine, 580.159.04, 143771, 00000000:00:06.0",  # garbage cap
])
def test_parse_rejects_malformed(line):
    with pytest.raises(ValueError):
        nvidia.parse_query_csv(line + "\n")


def test_na_values():
    devices, driver = nvidia.parse_query_csv("0, NVIDIA H200, [N/A], [N/A], [N/A], [N/A], [N/A]\n")
    assert devices[0]["compute_cap"] is None and devices[0]["memory_total_mib"] is None
    assert devices[0]["uuid"] is None and driver is None


def test_unknown_field_message_is_nvidia_smis():
    rc, out, dummy = fake_runner("t4-470")[0](["nvidia-smi"] + nvidia.query_args())
    assert rc == 2
    assert out == 'Field "compute_cap" is not a valid field to query.\n\n'
    assert nvidia.unknown_field(out) == "compute_cap"
    assert nvidia.unknown_field("NVIDIA-SMI has failed") is None


@pytest.mark.parametrize("name, cap", [
    ("Tesla T4", "7.5"),
    ("Tesla V100-SXM2-16GB", "7.0"),
    ("Tesla V100-PCIE-32GB", "7.0"),
    ("A100-SXM4-40GB", "8.0"),  # how 470.x names an A100
    ("NVIDIA A100-SXM4-80GB", "8.0"),
    ("NVIDIA A100 80GB PCIe", "8.0"),
    ("NVIDIA A10G", "8.6"),
    ("NVIDIA A10", "8.6"),
    ("NVIDIA A40", "8.6"),
    ("NVIDIA GeForce RTX 3090", "8.6"),
    ("NVIDIA RTX A6000", "8.6"),
    ("NVIDIA L4", "8.9"),
    ("NVIDIA L40S", "8.9"),
    ("NVIDIA GeForce RTX 4090", "8.9"),
    ("NVIDIA RTX 6000 Ada Generation", "8.9"),
    ("NVIDIA H100 80GB HBM3", "9.0"),
    ("NVIDIA H100 PCIe", "9.0"),
    ("NVIDIA H200", "9.0"),
    ("NVIDIA GH200 480GB", "9.0"),
    ("NVIDIA B200", "10.0"),
    ("NVIDIA B300 SXM6 AC", "10.3"),
    ("NVIDIA GeForce RTX 5090", "12.0"),
    ("Quadro RTX 8000", "7.5"),
    ("Tesla P100-PCIE-16GB", "6.0"),
    ("Tesla P40", "6.1"),
    ("Tesla K80", "3.7"),
    ("Some Future GPU", None),
])
def test_name_table(name, cap):
    assert nvidia.cap_from_name(name) == cap


def test_read_h200_runs_the_query_once_and_the_header_once():
    run, calls = fake_runner("h200")
    facts, warnings = nvidia.read_gpus(run, "/usr/bin/nvidia-smi")
    assert calls == [nvidia.query_args(), []]
    assert warnings == []
    assert facts["gpu_count"] == 1
    assert facts["gpu_compute_caps"] == ["9.0"]
    assert facts["gpu_driver_version"] == "580.159.04"
    assert facts["gpu_driver_cuda_version"] == "13.0"
    assert facts["gpu_compute_cap_source"] == "query"
    assert facts["gpu_error"] is None
    assert facts["gpu_nvidia_smi_path"] == "/usr/bin/nvidia-smi"


def test_read_mixed_caps_sorted_unique():
    run, calls = fake_runner("mixed")
    facts, dummy = nvidia.read_gpus(run, "nvidia-smi")
    assert facts["gpu_compute_caps"] == ["8.0", "8.9"]
    assert facts["gpu_count"] == 2
    assert len(calls) == 2


def test_read_a100x8_one_query_for_all_gpus():
    run, calls = fake_runner("a100x8")
    facts, dummy = nvidia.read_gpus(run, "nvidia-smi")
    assert facts["gpu_count"] == 8 and facts["gpu_compute_caps"] == ["8.0"]
    assert facts["gpu_driver_cuda_version"] == "12.4"
    assert len(calls) == 2


def test_read_old_driver_falls_back_to_name_table():
    run, calls = fake_runner("t4-470")
    facts, warnings = nvidia.read_gpus(run, "nvidia-smi")
    assert calls == [nvidia.query_args(), nvidia.query_args(nvidia.QUERY_FIELDS_NO_CAP), []]
    assert facts["gpu_compute_cap_source"] == "name_table"
    assert facts["gpu_compute_caps"] == ["7.5"]
    assert facts["gpu_devices"][0]["compute_cap"] == "7.5"
    assert facts["gpu_driver_version"] == "470.182.03"
    assert facts["gpu_driver_cuda_version"] == "11.4"
    assert facts["gpu_error"] is None and warnings == []


def test_read_failing_driver_stops_after_one_call():
    run, calls = fake_runner("driver-fail")
    facts, dummy = nvidia.read_gpus(run, "nvidia-smi")
    assert len(calls) == 1
    assert facts["gpu_count"] == 0 and facts["gpu_devices"] == [] and facts["gpu_compute_caps"] == []
    assert facts["gpu_error"] == ("nvidia-smi exited with 9: NVIDIA-SMI has failed because it couldn't communicate with"
                                  " the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.")


def test_read_no_devices():
    run, calls = fake_runner("no-devices")
    facts, dummy = nvidia.read_gpus(run, "nvidia-smi")
    assert facts["gpu_error"] == "nvidia-smi exited with 6: No devices were found"
    assert facts["gpu_count"] == 0 and len(calls) == 1


def test_read_without_nvidia_smi_is_not_an_error():
    calls = []
    facts, warnings = nvidia.read_gpus(calls.append, None)
    assert calls == [] and warnings == []
    assert facts == nvidia.empty_facts()
    assert facts["gpu_count"] == 0 and facts["gpu_error"] is None


def test_read_unknown_gpu_on_old_driver_warns():
    answers = {
        tuple(nvidia.query_args()): (2, 'Field "compute_cap" is not a valid field to query.\n\n', ""),
        tuple(nvidia.query_args(nvidia.QUERY_FIELDS_NO_CAP)): (0, "0, Mystery Board, GPU-1, 470.1, 1024, 0:1:0.0\n", ""),
        (): (0, read("t4-470", "nvidia-smi.txt"), ""),
    }
    facts, warnings = nvidia.read_gpus(lambda args: answers[tuple(args[1:])], "nvidia-smi")
    assert facts["gpu_devices"][0]["compute_cap"] is None
    assert facts["gpu_compute_caps"] == []
    assert len(warnings) == 1 and "llm_stack_torch_cuda_arch_list" in warnings[0]


def test_read_header_failure_keeps_gpu_list():
    mismatch = (18, "Failed to initialize NVML: Driver/library version mismatch\n", "")
    answers = {
        tuple(nvidia.query_args()): (0, read("h200", "query.csv"), ""),
        (): mismatch,
        ("--version",): mismatch,
        ("-q", "-x"): mismatch,
    }
    facts, warnings = nvidia.read_gpus(lambda args: answers[tuple(args[1:])], "nvidia-smi")
    assert facts["gpu_count"] == 1 and facts["gpu_driver_cuda_version"] is None
    assert facts["gpu_driver_version"] == "580.159.04" and facts["gpu_error"] is None
    assert len(warnings) == 1 and warnings[0].startswith("driver CUDA version unknown:")
    assert warnings[0].count("Driver/library version mismatch") == 3


def test_read_unparsable_query_is_an_error():
    facts, dummy = nvidia.read_gpus(lambda args: (0, "garbage\n", ""), "nvidia-smi")
    assert facts["gpu_error"].startswith("cannot parse nvidia-smi output")
    assert facts["gpu_count"] == 0
