# -*- coding: utf-8 -*-
"""The flash-attn filters: thin wrappers over module_utils/flash_attn.py (tested there)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.llm_stack.plugins.filter import flash_attn as filters

INPUTS = {"version": "2.8.3", "venv": "/opt/llm-stack/venv", "arch_list": "8.0;9.0", "cache_dir": "/c",
          "wheel_dir": "/opt/llm-stack/wheels", "cpu_only_test_host": True, "hostname": "a"}
TORCH = {"info": {"venv_exists": True, "python": {"abi_tag": "cp311"},
                  "torch": {"version": "2.13.0+cpu", "cuda": None, "cuda_build": "cpu", "cxx11_abi": True}},
         "unmet": []}


def test_registered_under_their_names():
    registered = filters.FilterModule().filters()
    assert registered == {
        "flash_attn_build_plan": filters.flash_attn_build_plan,
        "flash_attn_build_no_log": filters.flash_attn_build_no_log,
        "flash_attn_build_jobs": filters.flash_attn_build_jobs,
        "flash_attn_build_result": filters.flash_attn_build_result,
        "flash_attn_check_result": filters.flash_attn_check_result,
    }


def test_plan_then_jobs():
    plan = filters.flash_attn_build_plan(INPUTS, facts={}, torch=TORCH)
    assert plan["ok"] and plan["key"]["archs"] == "80;90"
    built = filters.flash_attn_build_jobs(plan, {"processor_vcpus": 2, "memory_mb": {"nocache": {"free": 20480}}})
    assert (built["environment"]["MAX_JOBS"], built["environment"]["NVCC_THREADS"]) == ("1", "2")


@pytest.mark.parametrize("call, message", [
    (lambda: filters.flash_attn_build_plan("2.8.3"), "the input (the role's variables) must be a dict, got str"),
    (lambda: filters.flash_attn_build_plan(INPUTS, facts=[]), "facts must be a dict"),
    (lambda: filters.flash_attn_build_plan(INPUTS, torch="x"), "torch (a torch_info result) must be a dict"),
    (lambda: filters.flash_attn_build_plan(INPUTS, group="a"), "group must be a list of plans"),
    (lambda: filters.flash_attn_build_plan(dict(INPUTS, flash_attn_build_venv="/v")), "unknown input(s)"),
    (lambda: filters.flash_attn_build_jobs(filters.flash_attn_build_plan(INPUTS), {}), "made with the venv's torch"),
    (lambda: filters.flash_attn_check_result("FLASH_ATTN_CHECK {}"), "a registered script result"),
    (lambda: filters.flash_attn_build_result(None), "the input (a plan) must be a dict, got NoneType"),
    (lambda: filters.flash_attn_build_no_log("https://u:p@x/simple"), "the input (the role's variables or a plan) must"),
    (lambda: filters.flash_attn_build_plan({"inputs": INPUTS, "input_problems": {"errors": []}}), "an earlier plan"),
])
def test_wrong_shapes_raise_a_filter_error(call, message):
    with pytest.raises(AnsibleFilterError) as err:
        call()
    assert message in str(err.value)


def test_result_of_a_plan_that_ran_the_build_tasks():
    plan = filters.flash_attn_build_plan(INPUTS, facts={}, torch=TORCH)
    result = filters.flash_attn_build_result(plan, {"source": "built", "compiled": True, "wheel": "w.whl"})
    assert result == {"version": "2.8.3", "build_key": plan["entry"], "arch_list": "8.0;9.0", "wheel": "w.whl",
                      "source": "built", "compiled": True}


def test_check_result_of_a_registered_script():
    printed = {"ok": True, "problems": [], "skipped": [], "version": "2.8.3", "elf_archs": [80, 90]}
    result = filters.flash_attn_check_result({"rc": 0, "stdout": "FLASH_ATTN_CHECK " + json.dumps(printed), "stderr": ""})
    assert result["ok"] and result["summary"] == "flash-attn 2.8.3 works (kernels: sm80, sm90)."
    skipped = filters.flash_attn_check_result({"skipped": True, "changed": False})
    assert not skipped["ok"] and skipped["failure"].startswith("the check printed no result (exit ?)")


def test_plan_again_from_the_first_plan():
    first = filters.flash_attn_build_plan(INPUTS, facts={})
    assert filters.flash_attn_build_plan(first, facts={}, torch=TORCH) == \
        filters.flash_attn_build_plan(INPUTS, facts={}, torch=TORCH)


def test_no_log_of_the_inputs_and_of_a_plan():
    secret = dict(INPUTS, index_url="https://u:p@pypi.example/simple")
    assert filters.flash_attn_build_no_log(secret) and not filters.flash_attn_build_no_log(INPUTS)
    assert filters.flash_attn_build_no_log(filters.flash_attn_build_plan(secret, facts={}))
