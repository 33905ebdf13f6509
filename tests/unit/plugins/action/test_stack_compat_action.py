# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stack_compat action runs the gate in the worker: the same result as the module, no module sent anywhere."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from unittest import mock

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.gpufleet.llm_stack.plugins.action import stack_compat as action_mod
from ansible_collections.gpufleet.llm_stack.plugins.modules import stack_compat

GUIDE = {"cuda_version": "12.1", "torch_version": "2.3.1", "torch_cuda": "cu121", "python_version": "3.10",
         "flash_attn_version": "2.6.3", "vllm_version": "0.19.1", "transformers_version": "4.41.2",
         "model": "Qwen/Qwen3.5-7B", "gpus": ["8.9"], "parts": ["matrix", "host"], "driver_version": "550.54.15",
         "facts": True, "contract": {"venv": "/opt/llm-stack/venv"}}


def run_action(args):
    task = mock.MagicMock()
    task.args = dict(args)
    task.check_mode = False
    task.async_val = 0
    task.diff = False
    connection = mock.MagicMock()
    action = action_mod.ActionModule(task, connection, mock.MagicMock(), loader=None, templar=None)
    action._execute_module = mock.MagicMock(side_effect=AssertionError("no module may be sent"))
    return action.run(task_vars={})


@pytest.mark.parametrize("args", [
    GUIDE,
    {"cuda_version": "12.8.1", "torch_version": "2.10.0", "torch_cuda": "cu128", "gpus": ["9.0"],
     "driver_version": "580.159.04", "parts": ["matrix", "host", "torch"]},
    {"cuda_version": "13.0.2", "parts": ["cuda_toolkit"], "runfile_source": "url", "toolkit_installed": False},
])
def test_action_result_is_the_modules(args, run_module):
    kind, expected, dummy = run_module(stack_compat.main, args)
    assert kind == "exit"
    result = run_action(args)
    expected.pop("invocation", None)
    for key, value in expected.items():
        assert result[key] == value, key
    assert result["changed"] is False


def test_action_sets_the_contract_fact():
    result = run_action(GUIDE)
    host = result["ansible_facts"]["llm_stack_host"]
    assert host["ok"] is False and host["errors"] == result["errors"]
    assert host["suggested"] == result["suggested"]


def test_bad_option_fails_like_the_module(run_module):
    args = {"cuda_version": "12.8.1", "gpus": ["0.0"], "parts": ["host"]}
    kind, expected, dummy = run_module(stack_compat.main, args)
    assert kind == "fail"
    with pytest.raises(AnsibleActionFail) as err:
        run_action(args)
    assert str(err.value.message) == expected["msg"]
    assert "gpus" in expected["msg"]


def test_unknown_option_is_refused():
    with pytest.raises(AnsibleActionFail, match="no_such_option"):
        run_action({"cuda_version": "12.8.1", "no_such_option": 1})


def test_a_roles_gate_stops_the_host_with_every_problem_once(run_module):
    """fail_as: the one message every role's gate stops with (formerly a fail task in each role)."""
    args = dict(GUIDE, facts=False, fail_as="torch on gpu-01", extra_errors=["a problem", "a problem"])
    kind, expected, dummy = run_module(stack_compat.main, args)
    result = run_action(args)
    assert kind == "fail" and result["failed"] is True
    assert result["msg"] == expected["msg"]
    head, dummy, listed = result["msg"].partition(":\n- ")
    unique = list(dict.fromkeys(result["errors"]))
    assert head == "torch on gpu-01: %d problem(s), nothing was changed" % len(unique)
    assert listed.split("\n- ") == unique and unique.count("a problem") == 1
    # the registered result keeps the whole verdict (preflight and the roles' reports read it)
    assert result["ok"] is False and result["errors"] == expected["errors"]
    # without fail_as (preflight collecting the gates): the verdict only
    assert "failed" not in run_action(dict(args, fail_as=""))
    # how the gate was asked to report is no input of its parts (preflight runs them again from inputs)
    assert "fail_as" not in result["inputs"] and "show_warnings" not in result["inputs"]


def test_a_passing_gate_does_not_fail_and_shows_its_warnings_when_asked(run_module):
    args = {"cuda_version": "12.8.1", "torch_version": "2.10.0", "torch_cuda": "cu128", "gpus": ["9.0"],
            "driver_version": "550.127.05", "python_version": "3.12", "parts": ["matrix", "host", "torch"],
            "fail_as": "torch on gpu-01"}
    quiet = run_action(args)
    assert quiet["ok"] is True and "failed" not in quiet and quiet["compat_warnings"] and "warnings" not in quiet
    shown = run_action(dict(args, show_warnings=True))
    assert shown["warnings"] == shown["compat_warnings"]
    kind, module_result, warnings = run_module(stack_compat.main, dict(args, show_warnings=True))
    assert kind == "exit" and warnings == shown["compat_warnings"]
