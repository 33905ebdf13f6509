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


GOOD = {"cuda_version": "12.8.1", "torch_version": "2.10.0", "torch_cuda": "cu128", "python_version": "3.12",
        "flash_attn_version": "2.8.3", "vllm_version": "0.19.1", "transformers_version": "5.5.4",
        "model": "Qwen/Qwen3.5-9B", "gpus": ["9.0"], "driver_version": "580.159.04"}


def test_default_part_is_the_matrix_and_returns_every_key(run_module):
    kind, result, dummy = run_module(stack_compat.main, dict(GOOD))
    assert kind == "exit"
    assert sorted(result) == sorted(["changed", "ok", "errors", "compat_warnings", "problems", "torch_cuda_arch_list",
                                     "suggested", "suggested_group_vars", "normalized", "cuda_runfile",
                                     "vllm_method", "vllm_method_reason", "inputs"])
    assert result["suggested"] is None and result["suggested_group_vars"] == ""
    # no part vllm: no method
    assert result["vllm_method"] is None and result["vllm_method_reason"] is None
    assert result["normalized"]["torch_cuda_version"] == "12.8" and result["normalized"]["cuda_major_minor"] == "12.8"
    assert result["cuda_runfile"]["name"] == "cuda_12.8.1_570.124.06_linux.run"
    assert "ansible_facts" not in result


def test_readme_command_line(run_module):
    # ansible localhost -m gpufleet.llm_stack.stack_compat -a "cuda_version=12.1 torch_version=2.3.1 torch_cuda=cu121
    #   vllm_version=0.19.1 model=Qwen/Qwen3.5-7B gpus=8.9"
    kind, result, dummy = run_module(stack_compat.main, {"cuda_version": "12.1", "torch_version": "2.3.1",
                                                         "torch_cuda": "cu121", "vllm_version": "0.19.1",
                                                         "model": "Qwen/Qwen3.5-7B", "gpus": "8.9"})
    assert kind == "exit" and result["ok"] is False
    assert result["suggested"]["torch_version"] == "2.10.0" and result["suggested"]["model"] == "Qwen/Qwen3.5-9B"
    assert result["cuda_runfile"] is None


def test_problems_carry_rule_part_severity_variables(run_module):
    kind, result, dummy = run_module(stack_compat.main, dict(EXAMPLE, parts=["matrix", "cuda_toolkit"]))
    assert kind == "exit"
    by_rule = dict((p["rule"], p) for p in result["problems"])
    assert by_rule["cuda-version-format"]["part"] == "cuda_toolkit"
    assert by_rule["vllm-torch-pin"] == dict(by_rule["vllm-torch-pin"], part="matrix", severity="error",
                                             variables=["llm_stack_torch_version", "llm_stack_vllm_version"])
    assert set(result["errors"]) == set(p["msg"] for p in result["problems"] if p["severity"] == "error")


def test_facts_merge_the_contract(run_module):
    contract = {"venv": "/opt/llm-stack/venv", "cpu_only_test_host": False,
                "gpu": {"count": 1, "compute_caps": ["9.0"]}}
    kind, result, dummy = run_module(stack_compat.main, dict(GOOD, parts=["matrix", "host"], gpu_count=1,
                                                             arch_list="9.0a;9.0+PTX", vllm_version="v0.19.1",
                                                             facts=True, contract=contract))
    assert kind == "exit"
    host = result["ansible_facts"]["llm_stack_host"]
    assert host["venv"] == "/opt/llm-stack/venv" and host["gpu"]["count"] == 1
    assert host["ok"] is True and host["errors"] == [] and host["suggested"] is None
    assert host["arch_list"] == "9.0a;9.0+PTX" and host["arch_list_source"] == "inventory"
    assert host["stack"]["vllm_version"] == "0.19.1"
    assert sorted(host["stack"]) == sorted(["cuda_version", "torch_version", "torch_cuda", "python_version",
                                            "flash_attn_version", "vllm_version", "transformers_version", "model"])


def test_facts_carry_the_vllm_method_of_vllm_sources_gate(run_module):
    """preflight: the vllm part runs in vllm_source's gate (role_gates); the contract says how that host gets vLLM."""
    kind, gate, dummy = run_module(stack_compat.main, dict(GOOD, parts=["vllm"], driver_version="470.182.03"))
    assert kind == "exit" and gate["vllm_method"] == "source"
    assert gate["vllm_method_reason"].startswith("auto: driver 470.182.03 does not run vLLM 0.19.1's release wheel")
    kind, result, dummy = run_module(stack_compat.main, dict(GOOD, parts=["matrix", "host"], gpu_count=1, facts=True,
                                                             role_gates=[{"inputs": gate["inputs"]}]))
    host = result["ansible_facts"]["llm_stack_host"]
    assert (host["vllm_method"], host["vllm_method_reason"]) == (gate["vllm_method"], gate["vllm_method_reason"])


def test_host_part_numbers_in_the_inventory(run_module):
    kind, result, dummy = run_module(stack_compat.main, dict(GOOD, parts=["host"], gpu_count=1,
                                                             raw_pins={"llm_stack_python_version": 3.1,
                                                                       "llm_stack_cuda_version": "12.8.1"}))
    assert kind == "exit" and result["ok"] is False
    assert 'llm_stack_python_version: "3.10"' in result["errors"][0]
    assert result["problems"][0]["rule"] == "host-quoted-pin"


def test_extra_errors_are_merged(run_module):
    extra = ["cuda_toolkit_prefix is relative. Fix: set it to /usr/local"]
    kind, result, dummy = run_module(stack_compat.main, dict(GOOD, extra_errors=extra))
    assert kind == "exit" and result["ok"] is False
    assert result["problems"][-1]["rule"] == "role-check" and result["problems"][-1]["part"] == "extra"


def test_bad_input_fails_naming_the_option_without_traceback(run_module):
    for option, value in (("gpus", ["0.0"]), ("vllm_version", "1" * 5000), ("torch_version", u"\uff12.10.0")):
        kind, result, dummy = run_module(stack_compat.main, dict(GOOD, **{option: value}))
        assert kind == "fail" and result["option"] == option
        assert result["msg"].startswith("Invalid option %s: " % option) and len(result["msg"]) < 400
    kind, result, dummy = run_module(stack_compat.main, dict(GOOD, parts=["matrix", "nope"]))
    assert kind == "fail" and "parts" in result["msg"]


def test_package_index_checked_in_part_torch(run_module):
    """llm_stack_package_index_url: a proxy's base URL, and the host's question to the proxy for its torch build
    answered (torch_info's package_index), else an error that names the variable and the fix."""
    base = {"parts": ["torch"], "torch_version": "2.10.0", "torch_cuda": "cu128", "python_version": "3.12",
            "cuda_version": "12.8.1", "gpus": ["9.0"], "driver_version": "580.159.04"}
    answered = {"url": "https://cache-1:8081/root/cu128/+simple/", "answered": True, "error": "", "build": "cu128"}
    kind, result, dummy = run_module(stack_compat.main, dict(base, package_index_url="https://cache-1:8081",
                                                             package_index=answered))
    assert kind == "exit" and not [p for p in result["problems"] if p["rule"] == "package-index"]
    silent = dict(answered, answered=False, error="the proxy has no such index (404)")
    kind, result, dummy = run_module(stack_compat.main, dict(base, package_index_url="https://cache-1:8081",
                                                             package_index=silent))
    found = [p for p in result["problems"] if p["rule"] == "package-index"]
    assert len(found) == 1 and found[0]["severity"] == "error" and not result["ok"]
    assert "llm_stack_package_index_url" in found[0]["variables"] and "cu128 in fleet_cache_proxy_torch_builds" in \
        found[0]["msg"] and "(404)" in found[0]["msg"]
    kind, result, dummy = run_module(stack_compat.main, dict(base, package_index_url="https://u:p@cache-1:8081"))
    assert [p["rule"] for p in result["problems"]] == ["package-index"]
    assert "u:p" not in result["problems"][0]["msg"] and "Fix:" in result["problems"][0]["msg"]
    # In preflight, with the inventory's cache host running the proxy, the run sets it up: a warning that names
    # the build the cache host must mirror.
    kind, result, dummy = run_module(stack_compat.main, dict(base, package_index_url="https://cache-1:8081",
                                                             package_index=dict(silent, planned=True)))
    assert result["ok"] and [p["rule"] for p in result["problems"]] == ["package-index-pending"]
    assert result["problems"][0]["severity"] == "warning" and "cu128" in result["problems"][0]["msg"]
    # torch from a wheelhouse: the proxy is not asked and not judged
    kind, result, dummy = run_module(stack_compat.main, dict(base, package_index_url="nonsense", package_index=silent,
                                                             torch_wheelhouse="/nonexistent"))
    assert "package-index" not in [p["rule"] for p in result["problems"]]
