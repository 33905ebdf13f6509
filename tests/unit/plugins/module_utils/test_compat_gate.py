# -*- coding: utf-8 -*-
"""The gate's parts (module_utils/gate.py): one case per rule of the host, cuda_toolkit, torch, flash_attn and vllm parts."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat, gate
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat_matrix as M

GOOD = dict(cuda_version="12.8.1", torch_version="2.10.0", torch_cuda="cu128", python_version="3.12",
            flash_attn_version="2.8.3", vllm_version="0.19.1", transformers_version="5.5.4",
            model="Qwen/Qwen3.5-9B", gpus=["9.0"], driver_version="580.159.04")
PY312 = {"found": True, "executable": "/usr/bin/python3.12", "version": "3.12.3", "venv": True, "ensurepip": True,
         "error": None}


@pytest.fixture
def controller(tmp_path):
    runfile = tmp_path / "cuda_12.8.1_570.124.06_linux.run"
    runfile.write_text(u"")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "torch-2.10.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl").write_text(u"")
    (wheels / "flash_attn-2.8.3.tar.gz").write_text(u"")
    (tmp_path / "empty").mkdir()
    return str(tmp_path)


def cases(c):
    """(id, part, changes, error rules, warning rules); c is the controller directory."""
    return [
        # host
        ("host ok", "host", {"gpu_count": 1}, [], []),
        ("quoted pins", "host", {"gpu_count": 1, "raw_pins": {"llm_stack_python_version": 3.1,
                                                              "llm_stack_cuda_version": 12, "llm_stack_model": "x/y"}},
         ["host-quoted-pin"], []),
        ("nvidia-smi fails", "host", {"gpus": [], "gpu_count": 0, "gpu_error": "NVML: Driver/library version mismatch"},
         ["host-gpu-error"], []),
        ("no gpu", "host", {"gpus": [], "gpu_count": 0}, ["host-arch-list-empty", "host-no-gpu"], []),
        ("build host", "host", {"gpus": [], "gpu_count": 0, "require_gpu": False, "arch_list": "8.0;9.0"}, [],
         ["host-build-host"]),
        ("test host", "host", {"gpus": [], "gpu_count": 0, "cpu_only_test_host": True}, [], ["host-test-host"]),
        ("invalid override", "host", {"gpu_count": 1, "arch_list": "8.0,9.0"}, ["host-arch-list-invalid"], []),
        ("override leaves out a gpu", "host", {"gpus": ["8.0", "9.0"], "gpu_count": 2, "arch_list": "9.0a;9.0+PTX"},
         ["host-arch-list-gpus"], []),
        ("free space", "host", {"gpu_count": 1, "free_gb": 12.5, "min_free_gb": 40.0, "prefix": "/opt/llm-stack"},
         ["host-free-space"], []),
        ("nvcc differs", "host", {"gpu_count": 1, "nvcc_version": "12.4", "nvcc_path": "/usr/local/cuda-12.4/bin/nvcc"},
         [], ["host-nvcc-differs"]),
        # cuda_toolkit
        ("toolkit ok, url", "cuda_toolkit", {"runfile_checksum": "md5:" + "a" * 32}, [], []),
        ("toolkit x.y", "cuda_toolkit", {"cuda_version": "12.8", "runfile_checksum": "md5:" + "a" * 32},
         ["cuda-version-format"], []),
        ("toolkit unknown release", "cuda_toolkit",
         {"cuda_version": "12.8.7", "torch_cuda": "", "runfile_checksum": "md5:" + "a" * 32},
         ["cuda-runfile-known"], []),
        ("toolkit runfile name", "cuda_toolkit", {"runfile_name": "/tmp/cuda.run", "runfile_checksum": "md5:" + "a" * 32},
         ["cuda-runfile-name"], []),
        ("toolkit checksum format", "cuda_toolkit", {"runfile_checksum": "abc"},
         ["cuda-runfile-checksum-format"], []),
        ("toolkit source", "cuda_toolkit", {"runfile_source": "ftp"}, ["cuda-runfile-source"], []),
        ("toolkit no checksum", "cuda_toolkit", {}, ["cuda-runfile-checksum"], []),
        ("toolkit installed", "cuda_toolkit", {"toolkit_installed": True}, [], []),
        ("toolkit controller", "cuda_toolkit", {"runfile_source": "controller",
                                                "runfile_src": os.path.join(c, "cuda_12.8.1_570.124.06_linux.run")},
         [], []),
        ("toolkit controller missing", "cuda_toolkit", {"runfile_source": "controller",
                                                        "runfile_src": os.path.join(c, "nope.run")},
         ["cuda-runfile-src"], []),
        ("toolkit controller dir", "cuda_toolkit", {"runfile_source": "controller", "runfile_src": c},
         ["cuda-runfile-src"], []),
        ("toolkit controller empty", "cuda_toolkit", {"runfile_source": "controller"}, ["cuda-runfile-src"], []),
        # torch
        ("torch ok", "torch", {"interpreter": PY312, "torch_wheelhouse": os.path.join(c, "wheels")}, [], []),
        ("torch v", "torch", {"torch_version": "v2.10.0"}, ["torch-version-format"], []),
        ("torch empty", "torch", {"torch_version": ""}, ["torch-version-format"], []),
        ("torch cpu", "torch", {"torch_cuda": "cpu"}, ["torch-cuda-format"], []),
        ("python x.y.z", "torch", {"python_version": "3.12.3"}, ["python-version-format"], []),
        ("torch extra packages", "torch", {"torch_extra_packages": ["torchvision>=0.25"]}, ["torch-extra-packages"], []),
        ("interpreter missing", "torch", {"interpreter": {"found": False, "error": "python3.12: not found"}},
         ["torch-interpreter"], []),
        ("interpreter other version", "torch", {"interpreter": dict(PY312, version="3.11.9")}, ["torch-interpreter"], []),
        ("interpreter without venv", "torch", {"interpreter": dict(PY312, ensurepip=False)}, ["torch-interpreter"], []),
        ("venv of another python", "torch", {"interpreter": PY312, "venv_python": "3.11.2"}, ["torch-venv-python"], []),
        ("wheelhouse missing", "torch", {"torch_wheelhouse": os.path.join(c, "nope")}, ["torch-wheelhouse"], []),
        ("wheelhouse without the wheel", "torch", {"torch_wheelhouse": os.path.join(c, "empty")},
         ["torch-wheelhouse"], []),
        ("proxy answers", "torch", {"interpreter": PY312, "package_index_url": "https://cache-1:8081",
                                    "package_index": {"answered": True, "build": "cu128"}}, [], []),
        ("proxy silent", "torch", {"interpreter": PY312, "package_index_url": "https://cache-1:8081",
                                   "package_index": {"answered": False, "build": "cu128", "error": "HTTP 502"}},
         ["package-index"], []),
        ("proxy silent, set up by this run", "torch", {
            "interpreter": PY312, "package_index_url": "https://cache-1:8081",
            "package_index": {"answered": False, "build": "cu128", "error": "connection refused", "planned": True}},
         [], ["package-index-pending"]),
        ("proxy CA missing", "torch", {"interpreter": PY312, "package_index_url": "https://cache-1:8081",
                                       "package_index_ca_cert": os.path.join(c, "nope.pem")}, ["package-index"], []),
        ("torch driver", "torch", {"driver_version": "470.182.03"}, ["torch-driver"], []),
        ("torch driver 550", "torch", {"driver_version": "550.54.15"}, [], ["torch-driver-release"]),
        # flash_attn
        ("flash ok", "flash_attn", {"flash_attn_wheelhouse": os.path.join(c, "wheels")}, [], []),
        ("flash none", "flash_attn", {"flash_attn_version": ""}, [], []),
        ("flash v", "flash_attn", {"flash_attn_version": "v2.8.3"}, ["flash-attn-version-format"], []),
        ("flash options", "flash_attn", {"flash_attn_source": "zip", "flash_attn_below_sm80": "maybe"},
         ["flash-attn-options"], []),
        ("flash arch list empty", "flash_attn", {"gpus": []}, ["flash-attn-arch-list"], []),
        ("flash arch list invalid", "flash_attn", {"flash_attn_arch_list": "Ampere"}, ["flash-attn-arch-list"], []),
        ("flash below sm80 skip", "flash_attn", {"gpus": ["7.5", "9.0"]}, [], ["flash-attn-below-sm80"]),
        ("flash below sm80 fail", "flash_attn", {"flash_attn_arch_list": "7.5;9.0", "flash_attn_below_sm80": "fail"},
         ["flash-attn-arch"], []),
        ("flash wheelhouse", "flash_attn", {"flash_attn_wheelhouse": os.path.join(c, "empty")},
         ["flash-attn-wheelhouse"], []),
        ("flash requirements", "flash_attn", {"flash_attn_build_requirements": ["ninja>=1"]},
         ["flash-attn-requirements"], []),
        # vllm
        ("vllm ok, wheel", "vllm", {"vllm_method": "wheel", "vllm_venv_torch": "2.10.0+cu128"}, [], []),
        ("vllm ok, source", "vllm", {"vllm_method": "source"}, [], []),
        ("vllm method", "vllm", {"vllm_method": "pip"}, ["vllm-method"], []),
        ("vllm wheel driver", "vllm", {"vllm_method": "wheel", "driver_version": "470.182.03"},
         ["vllm-binary-driver"], []),
        ("vllm wheel driver 550", "vllm", {"vllm_method": "wheel", "driver_version": "550.54.15"}, [],
         ["vllm-binary-driver-release"]),
        ("vllm wheel torch", "vllm", {"vllm_method": "wheel", "vllm_venv_torch": "2.11.0+cu130"},
         ["vllm-wheel-torch"], []),
        ("vllm wheel cuda unknown", "vllm", {"vllm_method": "wheel", "vllm_version": "0.18.1",
                                             "transformers_version": "4.57.0"}, [], ["vllm-wheel-cuda-unknown"]),
        # serve (one H200 of the capture: 143771 MiB)
        ("serve ok", "serve", {"gpu_count": 1, "gpu_memory_mib": [143771], "serve_tensor_parallel_size": "auto",
                               "serve_gpu_memory_utilization": "0.9"}, [], []),
        ("serve input", "serve", {"gpu_count": 1, "serve_max_model_len": "lots", "serve_gpu_memory_utilization": "2"},
         ["serve-input"], []),
        ("serve tp x pp", "serve", {"gpu_count": 1, "serve_tensor_parallel_size": "2",
                                    "serve_gpu_memory_utilization": "0.9"}, ["serve-parallel-gpus"], []),
        ("serve tp heads", "serve", {"gpu_count": 8, "serve_tensor_parallel_size": "3",
                                     "serve_gpu_memory_utilization": "0.9"}, ["serve-tp-heads"], []),
        ("serve max len", "serve", {"gpu_count": 1, "serve_max_model_len": "1048576",
                                    "serve_gpu_memory_utilization": "0.9"}, ["serve-max-len"], []),
        ("serve max len override", "serve", {"gpu_count": 1, "serve_max_model_len": "1048576",
                                             "serve_gpu_memory_utilization": "0.9",
                                             "serve_env": {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}},
         [], ["serve-max-len-override"]),
        ("serve memory", "serve", {"gpu_count": 1, "gpu_memory_mib": [24564], "serve_model": "Qwen/Qwen3.5-397B-A17B",
                                   "serve_gpu_memory_utilization": "0.9"}, ["serve-memory"], []),
        ("serve own flags", "serve", {"gpu_count": 1, "serve_extra_args": ["--port", "9000"],
                                      "serve_gpu_memory_utilization": "0.9"}, ["serve-own-flags"], []),
        ("serve own flags spelled as vLLM reads them", "serve", {"gpu_count": 1, "serve_extra_args": ["--port_", "9"],
                                                                 "serve_gpu_memory_utilization": "0.9"},
         ["serve-own-flags", "serve-extra-args"], []),
        ("serve extra args", "serve", {"gpu_count": 1, "serve_extra_args": ["--config", "serve.yaml"],
                                       "serve_gpu_memory_utilization": "0.9"}, ["serve-extra-args"], []),
        ("serve extra args unchecked", "serve", {"gpu_count": 1, "serve_extra_args": ["--no-such-flag"],
                                                 "vllm_version": "0.19.2", "serve_gpu_memory_utilization": "0.9"},
         [], ["serve-extra-args-unchecked"]),
        ("serve preset", "serve", {"gpu_count": 1, "serve_preset": "fast", "serve_gpu_memory_utilization": "0.9"},
         ["serve-preset"], []),
        ("serve unknown model", "serve", {"gpu_count": 1, "serve_model": "Example/model",
                                          "serve_gpu_memory_utilization": "0.9"}, [], ["serve-not-checked"]),
        ("vllm wheel torch cuda", "vllm", {"vllm_method": "wheel", "torch_cuda": "cu130"}, ["vllm-wheel-torch-cuda"],
         []),
        ("vllm auto", "vllm", {}, [], []),
        ("vllm auto driver 550", "vllm", {"vllm_method": "auto", "driver_version": "550.54.15"}, [],
         ["vllm-binary-driver-release"]),
        ("vllm auto torch cuda", "vllm", {"vllm_method": "auto", "torch_cuda": "cu130"}, [], []),
        ("vllm auto cuda unknown", "vllm", {"vllm_version": "0.18.1", "transformers_version": "4.57.0"}, [], []),
        # extra
        ("extra", "matrix", {"extra_errors": ["torch_venv=venv must be absolute. Fix: set torch_venv to /opt/venv"]},
         ["role-check"], []),
    ]


def run_case(controller, index):
    name, part, changes, errors, warnings = cases(controller)[index]
    result = gate.run_gate(dict(GOOD, parts=[part], **changes))
    return name, result, errors, warnings


@pytest.mark.parametrize("index", range(len(cases("/c"))), ids=[case[0] for case in cases("/c")])
def test_part_cases(controller, index):
    name, result, errors, warnings = run_case(controller, index)
    got = sorted(set(p["rule"] for p in result["problems"] if p["severity"] == "error"))
    assert got == sorted(errors), (name, result["errors"])
    got = sorted(set(p["rule"] for p in result["problems"] if p["severity"] == "warning"))
    assert set(warnings) <= set(got), (name, result["compat_warnings"])
    for problem in result["problems"]:
        assert problem["variables"], problem["msg"]
        if problem["severity"] == "error":
            assert "Fix: " in problem["msg"], problem["msg"]


def test_every_rule_of_the_parts_is_exercised(controller):
    seen = set()
    for index in range(len(cases(controller))):
        dummy, result, dummy2, dummy3 = run_case(controller, index)
        seen.update(p["rule"] for p in result["problems"])
    wanted = set(rule["id"] for rule in M.RULES if rule["part"] != "matrix")
    assert wanted <= seen, wanted - seen


def test_quoted_pin_message_can_be_applied():
    result = gate.run_gate(dict(GOOD, parts=["host"], gpu_count=1, raw_pins={"llm_stack_python_version": 3.1}))
    assert result["errors"][0].endswith('(if 3.10 was meant, write llm_stack_python_version: "3.10")')


def test_arch_list_fact_and_source():
    params = dict(GOOD, gpus=["8.0", "9.0"], arch_list="")
    result = gate.run_gate(params)
    assert gate.host_facts(params, result)["arch_list"] == "8.0;9.0"
    assert gate.host_facts(params, result)["arch_list_source"] == "gpus"
    params = dict(params, arch_list=" 8.0 9.0a+PTX ")
    assert gate.host_facts(params, gate.run_gate(params))["arch_list"] == "8.0;9.0a+PTX"


def test_runfile_return_follows_the_inventory():
    result = gate.run_gate(dict(GOOD, runfile_url="https://mirror.example/cuda.run"))
    assert result["cuda_runfile"] == {"name": "cuda_12.8.1_570.124.06_linux.run",
                                      "url": "https://mirror.example/cuda.run", "driver": "570.124.06"}
    assert gate.run_gate(dict(GOOD, cuda_version="12.8"))["cuda_runfile"] is None


def test_one_runfile_table():
    assert set(M.CUDA_RUNFILES) == set(M.CUDA_RELEASE_DRIVER)
    assert compat.known_runfile_releases("12.8") == ["12.8.0", "12.8.1"]
    assert compat.release_of_minor("12.6") == "12.6.3"


def test_runfile_url_credentials_never_returned():
    params = dict(GOOD, parts=["cuda_toolkit"], runfile_url="https://user:s3cret@mirror.example/cuda.run")
    result = gate.run_gate(params)
    text = repr(result)
    assert "s3cret" not in text
    assert result["cuda_runfile"]["url"] == "https://***@mirror.example/cuda.run"
    assert result["inputs"]["runfile_url"] == "https://***@mirror.example/cuda.run"


def test_role_gates_are_run_again_with_their_inputs():
    role = gate.run_gate(dict(GOOD, cuda_version="12.1", parts=["cuda_toolkit"], runfile_checksum="md5:" + "a" * 32))
    assert role["inputs"]["parts"] == ["cuda_toolkit"] and role["errors"]
    params = dict(GOOD, cuda_version="12.1", parts=["matrix"], role_gates=[role, {"skipped": True}],
                  extra_errors=role["errors"])
    result = gate.run_gate(params)
    assert [p["rule"] for p in result["problems"] if p["severity"] == "error"] == ["cuda-version-format"]
    assert [p["part"] for p in result["problems"] if p["severity"] == "error"] == ["cuda_toolkit"]
    assert result["suggested"]["cuda_version"] == "12.8.1"
    with pytest.raises(compat.StackInputError) as err:
        gate.run_gate(dict(params, role_gates=[{"ok": True}]))
    assert err.value.option == "role_gates"
