# -*- coding: utf-8 -*-
"""stack_compat driven through AnsibleModule."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.llm_stack.plugins.modules import stack_compat

EXAMPLE = {"cuda_version": "12.1", "torch_version": "2.3.1", "torch_cuda": "cu121", "python_version": "3.10",
           "flash_attn_version": "2.6.3", "vllm_version": "0.19.1", "transformers_version": "4.41.2",
           "model": "Qwen/Qwen3.5-7B", "gpus": ["8.9"]}


def test_issue_example_returns_all_errors_without_failing(run_module):
    kind, result, dummy = run_module(stack_compat.main, EXAMPLE)
    assert kind == "exit"
    assert result["changed"] is False and result["ok"] is False
    assert len(result["errors"]) == 4
    joined = "\n".join(result["errors"])
    for needle in ("llm_stack_torch_version=2.3.1 / llm_stack_vllm_version=0.19.1",
                   "llm_stack_transformers_version=4.41.2 / llm_stack_vllm_version=0.19.1",
                   "llm_stack_model=Qwen/Qwen3.5-7B / llm_stack_transformers_version=4.41.2",
                   "llm_stack_model=Qwen/Qwen3.5-7B: Qwen3.5 has no 7B model"):
        assert needle in joined
    assert result["torch_cuda_arch_list"] == "8.9"
    assert len(result["compat_warnings"]) == 1


def test_good_stack(run_module):
    args = {"cuda_version": "12.8.1", "torch_version": "2.10.0", "torch_cuda": "cu128", "python_version": "3.12",
            "flash_attn_version": "2.8.3", "vllm_version": "0.19.1", "transformers_version": "5.5.4",
            "model": "Qwen/Qwen3.5-9B", "gpus": ["9.0", "8.0"], "driver_version": "580.159.04"}
    kind, result, dummy = run_module(stack_compat.main, args)
    assert (kind, result["ok"], result["errors"], result["compat_warnings"]) == ("exit", True, [], [])
    assert result["torch_cuda_arch_list"] == "8.0;9.0"


def test_empty_strings_from_unset_variables_are_skipped(run_module):
    kind, result, dummy = run_module(stack_compat.main, {"cuda_version": "12.8.1", "driver_version": "", "torch_cuda": "",
                                                         "flash_attn_version": "", "model": ""})
    assert (kind, result["ok"], result["errors"], result["compat_warnings"]) == ("exit", True, [], [])


def test_malformed_option_fails_naming_it(run_module):
    kind, result, dummy = run_module(stack_compat.main, dict(EXAMPLE, torch_cuda="121"))
    assert kind == "fail"
    assert result["option"] == "torch_cuda"
    assert result["msg"].startswith("Invalid option torch_cuda: '121' is not a torch CUDA build")


def test_cuda_version_is_required(run_module):
    kind, result, dummy = run_module(stack_compat.main, {"torch_version": "2.10.0"})
    assert kind == "fail" and "cuda_version" in result["msg"]


def test_gpus_as_numbers_from_yaml(run_module):
    kind, result, dummy = run_module(stack_compat.main, {"cuda_version": "12.8.1", "gpus": [9.0, 8.9]})
    assert kind == "exit" and result["torch_cuda_arch_list"] == "8.9;9.0"
