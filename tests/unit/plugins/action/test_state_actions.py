# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The torch_state and flash_attn_build_state actions: one reading, the gate, the verdict or the plan.

The module each action sends is the real torch_info, run in this process on the fixture host (a venv's python
and nvidia-smi that replay the H200 and Debian captures, tests/unit/plugins/conftest.py). The gate is compared
with the stack_compat action given the options the roles passed it as separate tasks.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.gpufleet.llm_stack.plugins.plugin_utils import _role_action as role_action
from ansible_collections.gpufleet.llm_stack.plugins.action import flash_attn_build_state as fa_action
from ansible_collections.gpufleet.llm_stack.plugins.action import stack_compat as gate_action
from ansible_collections.gpufleet.llm_stack.plugins.action import torch_state as torch_action
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import flash_attn as F
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import nvidia
from ansible_collections.gpufleet.llm_stack.plugins.modules import torch_info
from action_task import new_action

HERE = os.path.dirname(os.path.abspath(__file__))
GPU_FIXTURES = os.path.join(HERE, "..", "..", "..", "fixtures", "gpu")


def h200_facts():
    with open(os.path.join(GPU_FIXTURES, "h200", "query.csv")) as handle:
        devices, driver = nvidia.parse_query_csv(handle.read(), nvidia.QUERY_FIELDS)
    return {"gpu_count": len(devices), "gpu_compute_caps": sorted(set(d["compute_cap"] for d in devices)),
            "gpu_driver_version": driver}


def make_action(module, args, run_module, facts=None, check_mode=False, hostname="gpu-validate", no_log=False,
                delegate_to=None):
    """The action with its module calls made by the real torch_info; returns (action, calls, task_vars)."""
    action = new_action(module, args, check_mode=check_mode, no_log=no_log, delegate_to=delegate_to)
    calls = []

    def execute(module_name=None, module_args=None, task_vars=None, **kwargs):
        assert module_name == "gpufleet.llm_stack.torch_info"
        calls.append(dict(module_args))
        args = dict(module_args, _ansible_check_mode=check_mode)
        kind, result, warnings = run_module(torch_info.main, args)
        result = dict(result, invocation={"module_args": dict(module_args)})
        if warnings:
            result["warnings"] = warnings
        if kind == "fail":
            result["failed"] = True
        return result

    action._execute_module = execute
    task_vars = {"ansible_facts": dict(facts or {}), "inventory_hostname": hostname}
    return action, calls, task_vars


def gate_alone(options):
    """The stack_compat action given these options, as the roles' gate task was."""
    action = new_action(gate_action, options)
    return action.run(task_vars={})


# --- torch_state ----------------------------------------------------------------------------------------------------

STACK = {"cuda_version": "13.0.2", "torch_version": "2.11.0", "torch_cuda": "cu130", "python_version": "3.12",
         "vllm_version": "0.28.0", "torch_extra_packages": []}
READ = {"expect_version": "2.11.0", "expect_local": "cu130", "write_record": False, "wheelhouse": None}


def torch_args(venv, **over):
    args = {"read": dict(READ, venv=venv), "gate": dict(STACK, torch_venv=venv), "fail_as": "torch on gpu-validate"}
    args.update(over)
    return args


def test_torch_state_on_the_h200_reads_once_and_passes(run_module, host):
    """GPU facts in the play: torch_info is told the GPUs, reads none, imports torch; the gate and verdict pass."""
    venv = host.venv("probe-h200-torch2.11.0-cu130.txt")
    action, calls, task_vars = make_action(torch_action, torch_args(venv), run_module, facts=h200_facts())
    result = action.run(task_vars=task_vars)
    assert len(calls) == 1 and calls[0]["read_gpus"] is False and calls[0]["set_facts"] is False
    assert (calls[0]["gpu_count"], calls[0]["compute_caps"], calls[0]["driver_version"]) == (
        1, ["9.0"], h200_facts()["gpu_driver_version"])
    assert "wheelhouse" not in calls[0]
    assert host.calls("smi") == []
    reading = result["reading"]
    assert (reading["ok"], reading["needs_install"], reading["gpu_checks"]) == (True, False, "passed")
    assert "invocation" not in reading and "ansible_facts" not in result
    assert result["ok"] is True and not result.get("failed") and result["changed"] is False
    # The venv has no record of this import yet: the role records it (install.yml), so the verdict waits.
    assert reading["record_stale"] is True and "msg" not in result
    action, calls, task_vars = make_action(torch_action, torch_args(venv, after_install=True), run_module,
                                           facts=h200_facts())
    last = action.run(task_vars=task_vars)
    # The verdict on the last reading: the role's report and the gate's warnings are the task's message.
    assert not last.get("failed") and last["msg"] == last["reading"]["report"] + last["compat_warnings"]
    assert "torch.cuda.is_available() true, capability (9, 0)" in last["msg"][0]
    # The gate is stack_compat's, given the GPUs, driver and the venv's Python from the reading.
    alone = gate_alone(dict(STACK, parts=["torch"], torch_venv=venv, gpus=["9.0"],
                            driver_version=h200_facts()["gpu_driver_version"], interpreter=None,
                            venv_python=reading["venv"]["python_version"], fail_as="torch on gpu-validate"))
    for key in ("ok", "errors", "compat_warnings", "inputs", "problems"):
        assert result[key] == alone[key], key


def test_torch_state_reads_the_gpus_when_the_play_has_none(run_module, host):
    host.gpus("h200")
    venv = host.venv("probe-h200-torch2.11.0-cu130.txt")
    action, calls, task_vars = make_action(torch_action, torch_args(venv), run_module)
    result = action.run(task_vars=task_vars)
    assert calls[0]["read_gpus"] is True and "gpu_count" not in calls[0]
    assert result["ansible_facts"]["gpu_compute_caps"] == ["9.0"] and result["ansible_facts"]["gpu_count"] == 1
    assert result["inputs"]["gpus"] == ["9.0"] and result["ok"] is True
    assert len(host.calls("smi")) >= 1


def test_torch_state_prefers_preflights_report(run_module, host):
    venv = host.venv("probe-h200-torch2.11.0-cu130.txt")
    facts = {"llm_stack_host": {"gpu": {"count": 1, "compute_caps": ["9.0"], "driver_version": "580.95.05"}}}
    action, calls, task_vars = make_action(torch_action, torch_args(venv), run_module, facts=facts)
    action.run(task_vars=task_vars)
    assert (calls[0]["read_gpus"], calls[0]["gpu_count"], calls[0]["driver_version"]) == (False, 1, "580.95.05")


def test_torch_state_gate_error_stops_the_host_or_is_only_reported(run_module, host):
    """A CUDA build torch 2.11 does not have, and a venv whose Python (from the reading) is not the pinned one:
    the gate refuses both; preflight (no fail_as) only collects them."""
    venv = host.venv("probe-h200-torch2.11.0-cu130.txt")
    args = torch_args(venv, gate=dict(STACK, torch_venv=venv, torch_cuda="cu118", python_version="3.11"))
    action, calls, task_vars = make_action(torch_action, args, run_module, facts=h200_facts())
    result = action.run(task_vars=task_vars)
    assert result["failed"] is True and result["ok"] is False
    assert result["msg"].startswith("torch on gpu-validate: 2 problem(s), nothing was changed")
    assert "no cu118 build" in result["msg"] and "the venv %s runs Python 3.12.3" % venv in result["msg"]
    args["fail_as"] = ""
    action, calls, task_vars = make_action(torch_action, args, run_module, facts=h200_facts())
    collected = action.run(task_vars=task_vars)
    assert not collected.get("failed") and collected["errors"] == result["errors"] and "msg" not in collected


def test_torch_state_in_preflight_collects_and_imports_no_torch(run_module, host):
    """collect: the gate's errors are only returned (fail_as is taken as empty), torch is read without an import."""
    venv = host.venv("probe-h200-torch2.11.0-cu130.txt")
    args = torch_args(venv, gate=dict(STACK, torch_venv=venv, torch_cuda="cu118"))
    action, calls, task_vars = make_action(torch_action, args, run_module, facts=h200_facts())
    stopped = action.run(task_vars=task_vars)
    assert stopped["failed"] is True and "import_torch" not in calls[0] and "use_record" not in calls[0]
    action, calls, task_vars = make_action(torch_action, dict(args, collect=True), run_module, facts=h200_facts())
    collected = action.run(task_vars=task_vars)
    assert (calls[0]["import_torch"], calls[0]["use_record"]) == (False, False)
    assert not collected.get("failed") and collected["ok"] is False and "msg" not in collected
    assert collected["errors"] == stopped["errors"]


def test_torch_state_pip_source_and_the_readings_wheelhouse(run_module, host, tmp_path):
    venv = host.venv("probe-h200-torch2.11.0-cu130.txt")
    action, calls, task_vars = make_action(torch_action, torch_args(venv, wheelhouse_dest="/opt/wheelhouse"),
                                           run_module, facts=h200_facts())
    assert action.run(task_vars=task_vars)["pip_source"] == "index" and "wheelhouse" not in calls[0]
    wheels = tmp_path / "wheelhouse"
    wheels.mkdir()
    args = torch_args(venv, gate=dict(STACK, torch_venv=venv, torch_wheelhouse=str(wheels)),
                      wheelhouse_dest="/opt/wheelhouse")
    action, calls, task_vars = make_action(torch_action, args, run_module, facts=h200_facts())
    assert action.run(task_vars=task_vars)["pip_source"] == "wheelhouse"
    assert calls[0]["wheelhouse"] == "/opt/wheelhouse"


def test_torch_state_verdict_waits_for_the_install_and_follows_it(run_module, host, tmp_path):
    """A venv still to be made: the first reading asks for an install, so no verdict; after the install the
    verdict follows the reading (in check mode the install would happen, so it passes)."""
    venv = str(tmp_path / "new-venv")
    args = torch_args(venv)
    args["read"]["python"] = host.python("interpreter-h200-python3.12.txt")
    action, calls, task_vars = make_action(torch_action, args, run_module, facts=h200_facts())
    first = action.run(task_vars=task_vars)
    assert first["reading"]["needs_install"] is True and not first.get("failed") and "msg" not in first
    assert first["inputs"]["interpreter"]["version"] == "3.12.3"
    after = dict(args, after_install=True)
    action, calls, task_vars = make_action(torch_action, after, run_module, facts=h200_facts())
    failed = action.run(task_vars=task_vars)
    assert failed["failed"] is True and failed["msg"] == "gpu-validate: %s" % failed["reading"]["failure"]
    assert "is not a virtualenv" in failed["msg"]
    action, calls, task_vars = make_action(torch_action, after, run_module, facts=h200_facts(), check_mode=True)
    assert not action.run(task_vars=task_vars).get("failed")


def test_torch_state_after_the_install_the_gate_only_reports(run_module, host):
    """The gate stopped the host before the install where it had to; after it, the verdict decides."""
    venv = host.venv("probe-h200-torch2.11.0-cu130.txt")
    args = torch_args(venv, gate=dict(STACK, torch_venv=venv, python_version="3.11"), after_install=True)
    action, calls, task_vars = make_action(torch_action, args, run_module, facts=h200_facts())
    result = action.run(task_vars=task_vars)
    assert result["ok"] is False and "the venv %s runs Python 3.12.3" % venv in result["errors"][0]
    assert not result.get("failed") and "nothing was changed" not in str(result.get("msg"))
    assert result["msg"] == result["reading"]["report"] + result["compat_warnings"]


def test_torch_state_a_failed_reading_comes_before_the_gate(run_module, host):
    venv = host.venv("probe-h200-torch2.11.0-cu130.txt")
    args = torch_args(venv)
    args["read"]["timeout"] = 0
    action, calls, task_vars = make_action(torch_action, args, run_module, facts=h200_facts())
    result = action.run(task_vars=task_vars)
    assert result["failed"] is True and result["msg"] == "timeout must be 1 or more seconds, got 0"
    assert "errors" not in result


@pytest.mark.parametrize("part, key", [("read", "gpu_count"), ("read", "set_facts"), ("gate", "gpus"),
                                       ("gate", "parts"), ("gate", "fail_as")])
def test_torch_state_refuses_what_it_sets_itself(run_module, host, part, key):
    args = torch_args("/opt/llm-stack/venv")
    args[part][key] = 1
    action, calls, task_vars = make_action(torch_action, args, run_module, facts=h200_facts())
    with pytest.raises(AnsibleActionFail, match=key):
        action.run(task_vars=task_vars)
    assert calls == []


# --- flash_attn_build_state ------------------------------------------------------------------------------------------

def fa_inputs(venv, **over):
    base = dict(
        version="2.8.3", source="sdist", git_url="https://github.com/Dao-AILab/flash-attention.git", git_ref="v2.8.3",
        venv=venv, arch_list="", arch_scope="host", below_sm80="skip", max_jobs=0, nvcc_threads=0,
        gb_per_nvcc_thread=5.0, cuda_home="/usr/local/cuda-13.0", cuda_version="13.0.2",
        cache_dir="/ctl/.cache/llm_stack/wheels", wheel_dir="/opt/llm-stack/wheels", index_url="", wheelhouse="",
        wheelhouse_dest="/opt/llm-stack/wheelhouse",
        build_requirements=["ninja", "packaging", "psutil", "setuptools", "wheel"], runtime_requirements=["einops"],
        verify="changed", check_tolerance=0.01, cpu_only_test_host=False, hostname="gpu-validate")
    base.update(over)
    return base


def fa_args(venv, **over):
    args = {"inputs": fa_inputs(venv), "torch_version": "2.11.0", "fail_as": "flash_attn_build on gpu-validate"}
    args.update(over)
    return args


def validate_yml_gate(inputs, facts, torch_version="2.11.0", fail_as="flash_attn_build on gpu-validate",
                      index_problems=()):
    """What tasks/validate.yml gave stack_compat before the action: the role's variables, the plan's gate part."""
    gate = F.plan(inputs, facts=facts)["gate"]
    return gate_alone({
        "parts": ["flash_attn"], "cuda_version": inputs["cuda_version"], "torch_version": torch_version,
        "flash_attn_version": inputs["version"], "flash_attn_source": inputs["source"],
        "flash_attn_below_sm80": inputs["below_sm80"], "flash_attn_arch_list": gate["flash_attn_arch_list"],
        "gpus": gate["gpus"], "flash_attn_wheelhouse": inputs["wheelhouse"],
        "flash_attn_build_requirements": inputs["build_requirements"],
        "flash_attn_runtime_requirements": inputs["runtime_requirements"],
        "extra_errors": gate["extra_errors"] + list(index_problems), "fail_as": fail_as,
        "show_warnings": bool(fail_as)})


def test_flash_attn_state_on_the_h200_plans_the_real_builds_key(run_module, host):
    venv = host.venv("probe-h200-torch2.11.0-cu130.txt")
    action, calls, task_vars = make_action(fa_action, fa_args(venv), run_module, facts=h200_facts())
    result = action.run(task_vars=task_vars)
    assert len(calls) == 1
    assert calls[0] == {"venv": venv, "import_torch": False, "use_record": True,
                        "requirements": ["ninja", "packaging", "psutil", "setuptools", "wheel", "einops"],
                        "distributions": ["flash-attn"], "read_gpus": False, "read_toolkits": False,
                        "set_facts": False}
    # The replayed probe has no flash-attn and no build tools: the plan builds the real build's key.
    plan = result["plan"]
    assert plan["key"]["archs"] == "90" and plan["key"]["torch"] == "2.11.0+cu130" and plan["work"] is True
    assert plan["entry"].startswith("flash-attn-2.8.3-torch2.11.0_cu130-cp312-cxx11abiTRUE-sm90-")
    assert result["result"] is None
    # The same plan as the filter makes from the same reading.
    probe = dict(result["probe"])
    assert plan == F.plan(fa_inputs(venv), facts=h200_facts(), torch=probe, nvcc=probe.get("toolkits"))
    # The same gate as validate.yml's stack_compat task.
    alone = validate_yml_gate(fa_inputs(venv), h200_facts())
    for key in ("ok", "errors", "compat_warnings", "inputs", "problems"):
        assert result[key] == alone[key], key
    assert result["ok"] is True and not result.get("failed") and "ansible_facts" not in result


def test_flash_attn_state_installed_wheel_gives_the_hosts_result(run_module, host):
    """The key's wheel installed (its direct_url in the venv): nothing to do, and the host's result is set."""
    venv = host.venv("probe-h200-torch2.11.0-cu130.txt")
    action, calls, task_vars = make_action(fa_action, fa_args(venv), run_module, facts=h200_facts())
    entry = action.run(task_vars=task_vars)["plan"]["entry"]
    url = "file:///opt/llm-stack/wheels/%s/flash_attn-2.8.3-cp312-cp312-linux_x86_64.whl" % entry
    real = torch_info.main
    names = ["ninja", "packaging", "psutil", "setuptools", "wheel", "einops"]

    def with_wheel(run_module_result):
        kind, result, warnings = run_module_result
        result = json.loads(json.dumps(result))
        dists = result["info"].setdefault("distributions", {})
        dists["flash-attn"] = {"version": "2.8.3", "direct_url": {"url": url}}
        for name in names:
            dists[name] = {"version": "1"}
        result["unmet"] = []
        return kind, result, warnings

    def run_with_wheel(main, args):
        return with_wheel(run_module(real, args))

    action, calls, task_vars = make_action(fa_action, fa_args(venv), run_with_wheel, facts=h200_facts())
    result = action.run(task_vars=task_vars)
    assert (result["plan"]["installed"], result["plan"]["work"]) == (True, False)
    assert result["result"] == F.build_result(result["plan"])
    assert result["result"]["source"] == "present" and result["result"]["build_key"] == entry


def test_flash_attn_state_reads_gpus_and_toolkits_where_nobody_says(run_module, host):
    host.gpus("h200")
    venv = host.venv("probe-h200-torch2.11.0-cu130.txt")
    action, calls, task_vars = make_action(fa_action, fa_args(venv, inputs=fa_inputs(venv, cuda_home="")),
                                           run_module)
    result = action.run(task_vars=task_vars)
    assert (calls[0]["read_gpus"], calls[0]["read_toolkits"]) == (True, True)
    assert result["ansible_facts"]["gpu_compute_caps"] == ["9.0"]
    # The GPUs it read decide the arch list, as the facts of gpu_facts do.
    assert result["plan"]["arch_list"] == "9.0" and result["plan"]["arch_list_source"] == "gpus"


def test_flash_attn_state_gate_alone_sends_nothing(run_module):
    inputs = fa_inputs("/opt/llm-stack/venv", arch_list="7.5")
    action, calls, task_vars = make_action(fa_action, fa_args("/x", inputs=inputs, read_venv=False, fail_as=""),
                                           run_module, facts=h200_facts())
    result = action.run(task_vars=task_vars)
    # Its verdict only: nothing of the plan, which holds the index URL, goes into preflight's report.
    assert calls == [] and not {"plan", "probe", "result"} & set(result)
    alone = validate_yml_gate(inputs, h200_facts(), fail_as="")
    for key in ("ok", "errors", "compat_warnings", "inputs", "problems"):
        assert result[key] == alone[key], key
    assert not result.get("failed")


@pytest.mark.parametrize("over, variable", [
    ({"arch_scope": "fleet"}, "flash_attn_build_arch_scope"),
    ({"build_requirements": ["ninja>=1"]}, "flash_attn_build_build_requirements"),
    ({"version": "2.8"}, "flash_attn"),
    ({"arch_list": "8.0;banana"}, "arch"),
])
def test_flash_attn_state_bad_input_stops_before_the_reading_matters(run_module, host, over, variable):
    """Any input error stops the host with every problem, and the same errors as validate.yml's gate; the
    index's problems count as errors too."""
    venv = host.venv("probe-h200-torch2.11.0-cu130.txt")
    inputs = fa_inputs(venv, **over)
    args = fa_args(venv, inputs=inputs, index_problems=["llm_stack_wheel_index_url=x is not a URL. Fix: y"])
    action, calls, task_vars = make_action(fa_action, args, run_module, facts=h200_facts())
    result = action.run(task_vars=task_vars)
    assert result["failed"] is True and variable in result["msg"]
    assert "llm_stack_wheel_index_url=x" in result["msg"]
    assert result["msg"].startswith("flash_attn_build on gpu-validate:")
    assert "ansible_facts" not in result and result["result"] is None
    alone = validate_yml_gate(inputs, h200_facts(), index_problems=args["index_problems"])
    assert result["errors"] == alone["errors"]


def test_flash_attn_state_a_failed_reading_fails_with_its_message(run_module, tmp_path):
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").write_text("#!/bin/sh\nexit 3\n")
    (venv / "python").chmod(0o755)
    action, calls, task_vars = make_action(fa_action, fa_args(str(tmp_path / "venv")), run_module,
                                           facts=h200_facts())
    result = action.run(task_vars=task_vars)
    assert result["failed"] is True and "reading %s failed: Cannot probe the venv" % (tmp_path / "venv") in result["msg"]
    assert "errors" not in result


def test_flash_attn_state_wrong_shapes_are_the_callers_bug(run_module):
    action, calls, task_vars = make_action(fa_action, fa_args("/x", inputs={"nonsense": 1}), run_module)
    result = action.run(task_vars=task_vars)
    assert result["failed"] is True and result["msg"].startswith("inputs: unknown input(s): nonsense")
    assert calls == []


def test_flash_attn_state_reads_only_the_inventory_host(run_module):
    action, calls, task_vars = make_action(fa_action, fa_args("/x"), run_module, facts=h200_facts(),
                                           delegate_to="localhost")
    result = action.run(task_vars=task_vars)
    assert result["failed"] is True and "cannot run with delegate_to (localhost)" in result["msg"] and calls == []


def test_flash_attn_state_hidden_output_still_shows_the_failure_masked(run_module, host, monkeypatch):
    """An index URL with credentials hides the task's output (no_log); the gate's stop still shows, masked."""
    shown = []
    monkeypatch.setattr(role_action.display, "error", lambda msg, wrap_text=True: shown.append(msg))
    venv = host.venv("probe-h200-torch2.11.0-cu130.txt")
    inputs = fa_inputs(venv, index_url="https://bob:s3cret@pypi.example/simple", arch_scope="fleet",
                       git_url="https://bob:s3cret@git.example/fa.git")
    action, calls, task_vars = make_action(fa_action, fa_args(venv, inputs=inputs), run_module, facts=h200_facts(),
                                           no_log=True)
    result = action.run(task_vars=task_vars)
    assert result["failed"] is True and "flash_attn_build_arch_scope=fleet" in result["msg"]
    assert len(shown) == 1 and "flash_attn_build_arch_scope=fleet" in shown[0] and "s3cret" not in shown[0]
    # Not hidden, nothing is displayed twice.
    shown[:] = []
    action, calls, task_vars = make_action(fa_action, fa_args(venv, inputs=inputs), run_module, facts=h200_facts())
    assert action.run(task_vars=task_vars)["failed"] is True and shown == []
