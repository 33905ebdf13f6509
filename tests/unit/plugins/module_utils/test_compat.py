# -*- coding: utf-8 -*-
"""The compatibility matrix against a table of stacks, the issue's example and the stack defaults."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import pytest
import yaml

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat_matrix as M
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.nvidia import parse_header, parse_query_csv
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.versions import Version, satisfies

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
GPU = os.path.join(REPO, "tests", "fixtures", "gpu")

# The stack every host of a test fleet gets (CPU-only test hosts, no GPU).
TEST_FLEET_STACK = dict(cuda_version="13.0.2", torch_version="2.13.0", torch_cuda="cu130", python_version="3.11",
                        flash_attn_version="2.8.3", vllm_version="0.28.0", transformers_version="5.24.0",
                        model="Qwen/Qwen3.5-0.8B", gpus=[])

# The issue's example of an impossible stack.
ISSUE_EXAMPLE = dict(cuda_version="12.1", torch_version="2.3.1", torch_cuda="cu121", python_version="3.10",
                     flash_attn_version="2.6.3", vllm_version="0.19.1", transformers_version="4.41.2",
                     model="Qwen/Qwen3.5-7B", gpus=["8.9"])

# A good stack for an H200 host; cases below change one or two things.
GOOD = dict(cuda_version="12.8.1", torch_version="2.10.0", torch_cuda="cu128", python_version="3.12",
            flash_attn_version="2.8.3", vllm_version="0.19.1", transformers_version="5.5.4",
            model="Qwen/Qwen3.5-9B", gpus=["9.0"], driver_version="580.159.04")


def host_facts(cls):
    """gpus and driver_version as gpu_facts derives them from a GPU class's recordings."""
    with open(os.path.join(GPU, cls, "query.csv")) as handle:
        devices, driver = parse_query_csv(handle.read())
    with open(os.path.join(GPU, cls, "nvidia-smi.txt")) as handle:
        assert parse_header(handle.read())[0] == driver
    return dict(gpus=sorted(set(d["compute_cap"] for d in devices)), driver_version=driver)


def rule_ids(messages):
    return sorted(set(re.search(r"\[rule ([a-z0-9-]+);", message).group(1) for message in messages))


def stack_defaults():
    with open(os.path.join(REPO, "roles", "llm_stack", "defaults", "main.yml")) as handle:
        defaults = yaml.safe_load(handle)
    return dict(cuda_version=defaults["llm_stack_cuda_version"], torch_version=defaults["llm_stack_torch_version"],
                torch_cuda=defaults["llm_stack_torch_cuda"], python_version=defaults["llm_stack_python_version"],
                flash_attn_version=defaults["llm_stack_flash_attn_version"],
                vllm_version=defaults["llm_stack_vllm_version"],
                transformers_version=defaults["llm_stack_transformers_version"], model=defaults["llm_stack_model"])


def test_issue_example_is_rejected_with_every_problem():
    result = compat.check_stack(ISSUE_EXAMPLE)
    assert result["ok"] is False
    assert rule_ids(result["errors"]) == ["model-transformers", "qwen35-model-id", "vllm-torch-pin", "vllm-transformers"]
    by_rule = dict((rule_ids([m])[0], m) for m in result["errors"])
    pin = by_rule["vllm-torch-pin"]
    assert pin.startswith("llm_stack_torch_version=2.3.1 / llm_stack_vllm_version=0.19.1: vLLM 0.19.1 pins torch==2.10.0")
    assert pin.endswith("Fix: set llm_stack_torch_version to 2.10.0")
    assert "https://pypi.org/project/vllm/0.19.1/" in pin
    qwen = by_rule["model-transformers"]
    assert "llm_stack_model=Qwen/Qwen3.5-7B / llm_stack_transformers_version=4.41.2" in qwen and ">= 5.2.0" in qwen
    assert qwen.endswith("Fix: set llm_stack_transformers_version to 5.5.4")
    model = by_rule["qwen35-model-id"]
    for size in M.QWEN35["sizes"]:
        assert "Qwen/Qwen3.5-" + size in model
    assert "Fix: set llm_stack_model" in model
    # flash-attn 2.6.3 floors are not in the matrix: said, not guessed
    assert rule_ids(result["compat_warnings"]) == ["flash-attn-known"]
    assert result["torch_cuda_arch_list"] == "8.9"


def test_stack_defaults_pass_on_the_real_h200():
    stack = stack_defaults()
    stack.update(host_facts("h200"))
    assert stack["gpus"] == ["9.0"] and stack["driver_version"] == "580.159.04"
    result = compat.check_stack(stack)
    assert result["errors"] == []
    assert result["ok"] is True
    assert result["torch_cuda_arch_list"] == "9.0"


def test_test_fleet_stack_passes_without_gpus():
    result = compat.check_stack(TEST_FLEET_STACK)
    assert result["errors"] == [] and result["ok"] is True
    assert result["torch_cuda_arch_list"] == ""


def test_transformers_5_5_0_is_excluded_by_vllm_0_19_1():
    result = compat.check_stack(dict(GOOD, transformers_version="5.5.0"))
    assert rule_ids(result["errors"]) == ["vllm-transformers"]
    assert result["errors"][0].endswith("Fix: set llm_stack_transformers_version to 5.5.4")


CASES = [
    # (id, changes to GOOD, expected error rules, expected warning rules)
    ("good", {}, [], []),
    ("a100x8 host, older driver", host_facts("a100x8"), [], ["cuda-driver-release", "torch-driver-release"]),
    ("l40s host", host_facts("l40s"), [], []),
    ("mixed host", host_facts("mixed"), [], []),
    ("t4 on 470", {"gpus": ["7.5"], "driver_version": "470.182.03"},
     ["cuda-driver-minimum", "flash-attn-arch", "torch-driver"], []),
    ("t4 on 470 without flash-attn", {"gpus": ["7.5"], "driver_version": "470.182.03", "flash_attn_version": ""},
     ["cuda-driver-minimum", "torch-driver"], []),
    ("cuda 13 on a 575 driver", {"cuda_version": "13.0.2", "torch_cuda": "cu130", "driver_version": "575.57.08"},
     ["cuda-driver-minimum", "torch-driver"], []),
    ("B200 needs 12.8", {"gpus": ["10.0"], "cuda_version": "12.6.3", "torch_cuda": "cu126"},
     ["arch-first-cuda", "torch-build-archs"], []),
    ("B200 with cu126 torch", {"gpus": ["10.0"], "torch_cuda": "cu126"}, ["torch-build-archs"], ["torch-toolkit-minor"]),
    ("V100 on cuda 13", {"gpus": ["7.0"], "cuda_version": "13.0.2", "torch_cuda": "cu130"},
     ["arch-dropped", "flash-attn-arch", "torch-build-archs"], []),
    ("unknown future arch", {"gpus": ["9.0", "13.0"]}, [], ["arch-known"]),
    ("cu129 does not exist for torch 2.10", {"torch_cuda": "cu129"}, ["torch-cuda-build"], ["torch-toolkit-minor"]),
    ("nvcc 13 with a cu128 torch", {"cuda_version": "13.0.2"}, ["torch-toolkit-major"], []),
    ("nvcc 12.9 with a cu128 torch", {"cuda_version": "12.9.1"}, [], ["torch-toolkit-minor"]),
    ("python 3.14 with vllm 0.19.1", {"python_version": "3.14"}, ["vllm-python"], []),
    ("python 3.9 with torch 2.10", {"python_version": "3.9"}, ["torch-python", "vllm-python"], []),
    ("vllm 0.19.0 caps transformers below 5", {"vllm_version": "0.19.0"}, ["vllm-transformers"], []),
    ("vllm 0.19.0 and transformers 4.57.6 with Qwen3.5", {"vllm_version": "0.19.0", "transformers_version": "4.57.6"},
     ["model-transformers"], []),
    ("vllm 0.16.0 for Qwen3.5", {"vllm_version": "0.16.0"}, ["model-vllm", "vllm-known"], []),
    ("vllm 0.16.0 for Qwen3.5, unlisted accepted", {"vllm_version": "0.16.0", "allow_unlisted_versions": True},
     ["model-vllm"], ["vllm-known"]),
    ("vllm newer than the matrix", {"vllm_version": "0.35.0"}, ["vllm-known"], []),
    ("vllm newer than the matrix, accepted", {"vllm_version": "0.35.0", "allow_unlisted_versions": True},
     [], ["vllm-known"]),
    ("vllm 0.34.0 is listed", {"vllm_version": "0.34.0", "torch_version": "2.14.0", "transformers_version": "5.16.1",
                               "torch_cuda": "cu130", "cuda_version": "13.0.2"}, [], []),
    ("vllm 0.19.1.0 is 0.19.1", {"vllm_version": "0.19.1.0"}, [], []),
    ("vllm v0.19.1 is 0.19.1", {"vllm_version": " v0.19.1"}, [], []),
    ("vllm 0.19.1.post1 is another release", {"vllm_version": "0.19.1.post1"}, ["vllm-known"], []),
    ("vllm 0.19.1rc1 is another release", {"vllm_version": "0.19.1rc1"}, ["vllm-known"], []),
    ("torch newer than the matrix", {"torch_version": "2.15.0", "vllm_version": ""}, ["torch-known"], []),
    ("torch newer than the matrix, accepted", {"torch_version": "2.15.0", "vllm_version": "",
                                               "allow_unlisted_versions": True}, [], ["torch-known"]),
    ("torch release the index does not have", {"torch_version": "2.10.7"}, ["torch-known", "vllm-torch-pin"], []),
    ("torch 2.10.0.0 is 2.10.0", {"torch_version": "2.10.0.0"}, [], []),
    ("transformers release the index does not have", {"transformers_version": "5.5.5"}, ["transformers-known"], []),
    ("transformers pre-release, accepted", {"transformers_version": "5.6.0rc1", "allow_unlisted_versions": True},
     [], ["transformers-known"]),
    ("Qwen3 without vLLM on transformers 4.50.3", {"model": "Qwen/Qwen3-8B", "vllm_version": "",
                                                   "transformers_version": "4.50.3"}, ["model-transformers"], []),
    ("Qwen3 MoE on transformers 4.51.0", {"model": "Qwen/Qwen3-30B-A3B", "vllm_version": "",
                                          "transformers_version": "4.51.0"}, [], []),
    ("Qwen2 MoE on transformers 4.39.3", {"model": "Qwen/Qwen2-57B-A14B-Instruct", "vllm_version": "",
                                          "transformers_version": "4.39.3"}, ["model-transformers"], []),
    ("torch cpu build on a GPU host", {"torch_cuda": "cpu"}, ["torch-cpu-build"], []),
    ("torch cpu build without GPUs", {"torch_cuda": "cpu", "gpus": [], "driver_version": ""}, [], []),
    ("torch local version names the build", {"torch_version": "2.10.0+cu128", "torch_cuda": ""}, [], []),
    ("torch local version of another platform", {"torch_version": "2.10.0+rocm6.2", "torch_cuda": ""},
     ["torch-local-build"], []),
    ("flash-attn on torch 2.1", {"torch_version": "2.1.2", "torch_cuda": "cu121", "cuda_version": "12.1.1",
                                 "python_version": "3.11", "vllm_version": ""}, ["flash-attn-torch"], []),
    ("flash-attn on cuda 11.8", {"cuda_version": "11.8.0", "torch_version": "2.6.0", "torch_cuda": "cu118",
                                 "vllm_version": ""}, ["flash-attn-cuda"], []),
    ("flash-attn newer than the matrix", {"flash_attn_version": "2.9.0"}, [], ["flash-attn-known"]),
    ("flash-attn post release", {"flash_attn_version": "2.8.3.post2"}, [], []),
    ("unknown toolkit release", {"cuda_version": "12.8.7"}, [], ["cuda-known"]),
    ("toolkit newer than the matrix", {"cuda_version": "14.0.0", "torch_cuda": ""}, [], ["cuda-known"]),
    ("torch is not vLLM's pin", {"torch_version": "2.11.0"}, ["vllm-torch-pin"], []),
    ("Qwen3.5 size that does not exist", {"model": "Qwen/Qwen3.5-7B"}, ["qwen35-model-id"], []),
    ("Qwen3.5 FP8 variant of a small size", {"model": "Qwen/Qwen3.5-9B-FP8"}, [], ["qwen35-model-variant"]),
    ("Qwen3.5 id in the wrong case", {"model": "Qwen/qwen3.5-9b"}, [], ["qwen35-model-variant"]),
    ("Qwen3.5 MoE", {"model": "Qwen/Qwen3.5-35B-A3B"}, [], []),
    ("community Qwen3.5 repo: floors only", {"model": "unsloth/Qwen3.5-7B-GGUF", "vllm_version": "0.16.0",
                                             "allow_unlisted_versions": True}, ["model-vllm"], ["vllm-known"]),
    ("not a Qwen3.5 model", {"model": "Qwen/Qwen2.5-7B-Instruct", "vllm_version": "0.16.0",
                             "transformers_version": "4.41.2", "allow_unlisted_versions": True}, [], ["vllm-known"]),
    ("a model of no family the matrix has", {"model": "mistralai/Mistral-7B-v0.1", "vllm_version": "",
                                             "transformers_version": "4.41.2"}, [], []),
]


@pytest.mark.parametrize("name, changes, errors, warnings", CASES, ids=[case[0] for case in CASES])
def test_matrix_cases(name, changes, errors, warnings):
    result = compat.check_stack(dict(GOOD, **changes))
    assert rule_ids(result["errors"]) == errors
    assert rule_ids(result["compat_warnings"]) == warnings
    assert result["ok"] is (not errors)


def test_every_rule_is_exercised():
    seen = set()
    for dummy, changes, errors, warnings in CASES:
        seen.update(errors)
        seen.update(warnings)
    # flash-attn-below-sm80 needs the flash_attn_below_sm80 policy; tests/unit/gate covers it
    assert seen | {"flash-attn-below-sm80"} == set(rule["id"] for rule in M.RULES if rule["part"] == "matrix")


@pytest.mark.parametrize("changes", [dict(c[1]) for c in CASES], ids=[c[0] for c in CASES])
def test_messages_name_variables_rule_and_fix(changes):
    result = compat.check_stack(dict(GOOD, **changes))
    for message in result["errors"] + result["compat_warnings"]:
        assert re.match(r"^(llm_stack_[a-z_]+|gpu_[a-z_]+)=", message), message
        assert "[rule " in message and "source: " in message
    for message in result["errors"]:
        assert "Fix: " in message


def test_gpu_messages_name_the_gpu_fact():
    result = compat.check_stack(dict(GOOD, gpus=["7.5"]))
    assert result["errors"][0].startswith("llm_stack_flash_attn_version=2.8.3 / gpu_compute_caps=7.5:")


def test_mixed_arch_list_and_dedup():
    result = compat.check_stack(dict(GOOD, gpus=["9.0", "8.0", "8.9", "8.0"]))
    assert result["torch_cuda_arch_list"] == "8.0;8.9;9.0"


@pytest.mark.parametrize("option, value", [
    ("cuda_version", None),
    ("cuda_version", "12"),
    ("cuda_version", "cuda-12.8"),
    ("torch_version", "latest"),
    ("torch_cuda", "128"),
    ("torch_cuda", "cuda12.8"),
    ("python_version", "python3"),
    ("python_version", "2.7"),
    ("python_version", "3.1"),
    ("driver_version", "r580"),
    ("vllm_version", "main"),
    ("transformers_version", "5.x"),
    ("flash_attn_version", "2.8.3-cu12"),
    ("model", "Qwen3.5-9B"),
    ("model", "https://huggingface.co/Qwen/Qwen3.5-9B"),
    ("gpus", ["9"]),
    ("gpus", ["Hopper"]),
    ("gpus", "9.0"),
])
def test_malformed_input_names_the_option(option, value):
    with pytest.raises(compat.StackInputError) as err:
        compat.check_stack(dict(GOOD, **{option: value}))
    assert err.value.option == option
    assert str(err.value).startswith(option + ": ")


def test_torch_local_version_conflicting_with_torch_cuda():
    with pytest.raises(compat.StackInputError) as err:
        compat.check_stack(dict(GOOD, torch_version="2.10.0+cu126", torch_cuda="cu128"))
    assert err.value.option == "torch_version"


@pytest.mark.parametrize("value, expected", [("cu128", "12.8"), ("12.8", "12.8"), ("CU130", "13.0"), ("cu118", "11.8"),
                                             ("cpu", "cpu"), ("", None), (None, None)])
def test_torch_cuda_forms(value, expected):
    assert compat.normalize_torch_cuda(value) == expected


# The matrix itself: internal consistency, so a bad edit fails here.

def test_matrix_rules_have_sources_and_unique_ids():
    ids = [rule["id"] for rule in M.RULES]
    assert len(ids) == len(set(ids))
    for rule in M.RULES:
        assert rule["severity"] in ("error", "warning")
        assert rule["source"] in M.SOURCES
        assert rule["text"]
    for source in M.SOURCES.values():
        assert source["url"].startswith("https://") and source["note"]


def test_matrix_tables_are_consistent():
    for cuda, driver in M.CUDA_RELEASE_DRIVER.items():
        assert Version(driver) >= Version(M.CUDA_DRIVER_MINIMUM[Version(cuda).major])
    for torch, entry in M.TORCH.items():
        for cuda in entry["cuda"]:
            assert cuda in M.TORCH_BUILD_ARCHS, (torch, cuda)
        assert Version(entry["python"][0]) <= Version(entry["python"][1])
        assert entry.get("python_source", "torch-release-matrix") in M.SOURCES
    qwen35 = compat.model_family("Qwen/Qwen3.5-9B")["min_transformers"]
    for vllm, entry in M.VLLM.items():
        assert Version(entry["torch"]).major_minor() in M.TORCH, vllm
        assert entry["torch"] in M.TORCH_RELEASES, vllm
        suggest = entry["transformers_suggest"]
        if suggest is None:
            assert not [v for v in M.TRANSFORMERS_RELEASES if satisfies(v, entry["transformers"] + ",>=" + qwen35)]
        else:
            assert satisfies(suggest, entry["transformers"]) and Version(suggest) >= Version(qwen35)
            assert suggest in M.TRANSFORMERS_RELEASES
        assert entry["wheel_cuda"] is None or entry["wheel_cuda"] in M.TORCH_BUILD_ARCHS or \
            Version(entry["wheel_cuda"]).major in M.CUDA_DRIVER_MINIMUM
    assert min(M.VLLM, key=Version) == M.VLLM_FLOOR
    for family in M.MODEL_FAMILIES:
        assert family["min_transformers"] in M.TRANSFORMERS_RELEASES, family["family"]
        assert Version(family["min_vllm"]) <= Version(M.VLLM_FLOOR) or family["min_vllm"] in M.VLLM
    for releases in (M.TORCH_RELEASES, M.TRANSFORMERS_RELEASES):
        assert releases == sorted(releases, key=Version) and len(set(releases)) == len(releases)
    for archs in M.TORCH_BUILD_ARCHS.values():
        for arch in archs["sass"] + archs["ptx"]:
            assert arch in M.ARCH_FIRST_CUDA
    for model in M.QWEN35["models"]:
        parts = compat.qwen35_parts(model)
        assert parts[0] == "Qwen" and parts[1] in M.QWEN35["sizes"]
