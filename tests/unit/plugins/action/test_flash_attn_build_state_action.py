# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The flash_attn_build_state action's later steps and what the role's YAML reads of it.

The first step (the reading, the gate, the plan) is tested in test_state_actions.py; here: the jobs request that
wheel_build gets, the package index settings judged by the action, the plan for the group's archs, this host's
result and whether the checks run once wheel_build did its part, the check's verdict, and the task's no_log
before there is a plan. The reading is the real torch_info on the fixture host (tests/unit/plugins/conftest.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import jinja2
import pytest
import yaml
from ansible.errors import AnsibleActionFail

from ansible_collections.gpufleet.llm_stack.plugins.action import flash_attn_build_state as fa_action
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _build_env
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import flash_attn as F
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import nvidia
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_index
from ansible_collections.gpufleet.llm_stack.plugins.modules import torch_info
from ansible_collections.gpufleet.llm_stack.plugins.test.secrets import has_credentials
from action_task import new_action

HERE = os.path.dirname(os.path.abspath(__file__))
GPU_FIXTURES = os.path.join(HERE, "..", "..", "..", "fixtures", "gpu")
ROLE = os.path.join(HERE, "..", "..", "..", "..", "roles", "flash_attn_build")

# The builder's facts of the H200 build (docs/validation/h200.md): 16 vCPUs, about 125 GB available.
BUILDER = {"processor_vcpus": 16, "memory_mb": {"nocache": {"free": 128000}}}


def h200_facts():
    with open(os.path.join(GPU_FIXTURES, "h200", "query.csv")) as handle:
        devices, driver = nvidia.parse_query_csv(handle.read(), nvidia.QUERY_FIELDS)
    return {"gpu_count": len(devices), "gpu_compute_caps": sorted(set(d["compute_cap"] for d in devices)),
            "gpu_driver_version": driver}


def make_action(args, run_module, facts=None, check_mode=False, delegate_to=None):
    """The action with its module calls made by the real torch_info; returns (action, calls, task_vars)."""
    action = new_action(fa_action, args, check_mode=check_mode, delegate_to=delegate_to)
    calls = []

    def execute(module_name=None, module_args=None, task_vars=None, **kwargs):
        assert module_name == "gpufleet.llm_stack.torch_info"
        calls.append(dict(module_args))
        kind, result, warnings = run_module(torch_info.main, dict(module_args, _ansible_check_mode=check_mode))
        result = dict(result, invocation={"module_args": dict(module_args)})
        if warnings:
            result["warnings"] = warnings
        if kind == "fail":
            result["failed"] = True
        return result

    action._execute_module = execute
    return action, calls, {"ansible_facts": dict(facts or {}), "inventory_hostname": "gpu-validate"}


def fa_inputs(venv, **over):
    """The role's variables as vars/main.yml gives them (defaults/main.yml, the H200 host)."""
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


def first_step(run_module, venv, **over):
    action, dummy, task_vars = make_action(fa_args(venv, **over), run_module, facts=h200_facts())
    return action.run(task_vars=task_vars)


def later_step(run_module, args, check_mode=False, facts=None):
    action, calls, task_vars = make_action(args, run_module, facts=facts or h200_facts(), check_mode=check_mode)
    result = action.run(task_vars=task_vars)
    assert calls == []  # nothing is read on the host
    return result


# --- the jobs request --------------------------------------------------------------------------------------------------

def test_the_jobs_request_gives_wheel_build_the_environment_and_header_of_the_real_build(run_module, host):
    venv = host.venv("probe-h200-torch2.11.0-cu130.txt")
    result = first_step(run_module, venv)
    plan, request = result["plan"], result["jobs_request"]
    assert request == F.jobs_request(plan)
    # Plain data: what wheel_build makes of it on the builder is what the role passed it before.
    assert json.loads(json.dumps(request)) == request
    made = _build_env.with_builder(request, BUILDER)
    assert made == F.with_jobs(plan, BUILDER)
    assert (made["environment"]["MAX_JOBS"], made["environment"]["NVCC_THREADS"]) == ("16", "1")
    assert made["environment"]["FLASH_ATTN_CUDA_ARCHS"] == "90"
    assert made["log_header"][0] == "flash-attn 2.8.3 (sdist) against torch 2.11.0+cu130"
    assert made["log_header"][-1] == "CUDA_HOME=/usr/local/cuda-13.0 (from flash_attn_build_cuda_home)"


def test_no_jobs_request_without_a_build_key(run_module, tmp_path):
    """A venv the torch role has not made (check mode): a plan without a key, and no jobs request."""
    result = first_step(run_module, str(tmp_path / "no-venv"))
    assert result["plan"]["key"] is None and result["plan"]["venv_exists"] is False
    assert result["jobs_request"] is None and not result.get("failed")


# --- the fleet's package index -------------------------------------------------------------------------------------------

INDEX = dict(wheel_index_url="https://cache-01:8443", cache_host="cache-01", inventory_hosts=["gpu-validate", "cache-01"],
             cache_host_vars={}, wheel_index_ca_cert="")


@pytest.mark.parametrize("over", [
    {"wheel_index_url": "https://bob:pw@cache-01:8443"},
    {"cache_host": ""},
    {"cache_host": "cache-02"},
    {"wheel_index_url": "http://cache-01:8080", "wheel_index_ca_cert": "/nonexistent/ca.pem"},
])
def test_index_settings_stop_the_host_as_the_gate_errors_they_are(run_module, host, over):
    settings = dict(INDEX, **over)
    problems = wheel_index.config_problems(settings["wheel_index_url"], settings["cache_host"],
                                           settings["inventory_hosts"], settings["cache_host_vars"],
                                           settings["wheel_index_ca_cert"])
    assert problems
    venv = host.venv("probe-h200-torch2.11.0-cu130.txt")
    result = first_step(run_module, venv, **settings)
    assert result["failed"] is True and result["msg"].startswith("flash_attn_build on gpu-validate:")
    assert all(problem in result["errors"] for problem in problems)
    # The same verdict as with the problems passed in (the role's way before the action judged them).
    passed = first_step(run_module, venv, index_problems=problems)
    assert passed["errors"] == result["errors"] and passed["msg"] == result["msg"]


def test_good_index_settings_and_none_pass(run_module, host):
    venv = host.venv("probe-h200-torch2.11.0-cu130.txt")
    assert first_step(run_module, venv, **INDEX)["ok"] is True
    # The cache host outside the job's inventory, with its connection variables (an AWX job slice).
    sliced = dict(INDEX)
    sliced.update(inventory_hosts=["gpu-validate"], cache_host_vars={"ansible_host": "10.0.0.9"})
    assert first_step(run_module, venv, **sliced)["ok"] is True
    unset = dict(INDEX)
    unset.update(wheel_index_url="", cache_host="")
    assert first_step(run_module, venv, **unset)["ok"] is True


def test_preflight_collects_the_index_problems_without_reading(run_module):
    settings = dict(INDEX)
    settings["cache_host"] = "cache-02"
    args = fa_args("/x", read_venv=False, fail_as="", **settings)
    action, calls, task_vars = make_action(args, run_module, facts=h200_facts(), delegate_to="localhost")
    result = action.run(task_vars=task_vars)
    assert calls == [] and not result.get("failed") and result["ok"] is False
    assert any("llm_stack_cache_host='cache-02' is not a host" in error for error in result["errors"])
    assert not {"plan", "probe", "result", "jobs_request"} & set(result)


def test_preflight_collect_only_returns_the_verdict(run_module):
    settings = dict(INDEX)
    settings["cache_host"] = "cache-02"
    args = fa_args("/x", read_venv=False, **settings)
    action, calls, task_vars = make_action(args, run_module, facts=h200_facts(), delegate_to="localhost")
    stopped = action.run(task_vars=task_vars)
    assert stopped["failed"] is True and stopped["msg"].startswith("flash_attn_build on gpu-validate:")
    action, calls, task_vars = make_action(dict(args, collect=True), run_module, facts=h200_facts(),
                                           delegate_to="localhost")
    collected = action.run(task_vars=task_vars)
    assert not collected.get("failed") and collected["ok"] is False and collected["errors"] == stopped["errors"]
    # The same as fail_as empty, preflight's way before.
    action, calls, task_vars = make_action(dict(args, fail_as=""), run_module, facts=h200_facts(),
                                           delegate_to="localhost")
    assert action.run(task_vars=task_vars) == collected


# --- the plan for the group's archs ------------------------------------------------------------------------------------

def test_group_scope_plans_the_union_of_the_batch_with_the_same_reading(run_module, host):
    venv = host.venv("probe-h200-torch2.11.0-cu130.txt")
    first = first_step(run_module, venv, inputs=fa_inputs(venv, arch_scope="group"))
    plan, probe = first["plan"], first["probe"]
    # Waiting for the other hosts of its group, the key's wheel is work even where installed.
    assert plan["targets"] == [90] and plan["work"] is True
    # An A100 host of the batch with the same torch, and a host of another group (another flash-attn).
    a100 = F.plan(fa_inputs(venv, arch_scope="group", arch_list="8.0", hostname="gpu-a100"), facts={},
                  torch=probe, nvcc=probe.get("toolkits"))
    other = F.plan(fa_inputs(venv, arch_scope="group", arch_list="10.0", version="2.8.2", hostname="gpu-b200"),
                   facts={}, torch=probe, nvcc=probe.get("toolkits"))
    members = [plan, a100, other]
    result = later_step(run_module, {"plan": plan, "probe": probe, "group": members})
    assert result["plan"]["targets"] == [80, 90] and result["plan"]["key"]["archs"] == "80;90"
    assert result["plan"] == F.plan(plan, facts=h200_facts(), torch=probe, nvcc=probe.get("toolkits"), group=members)
    assert result["jobs_request"] == F.jobs_request(result["plan"])
    assert result["jobs_request"]["environment"]["FLASH_ATTN_CUDA_ARCHS"] == "80;90"
    assert result["jobs_request"]["n_targets"] == 2
    assert not {"result", "checks", "ok"} & set(result)


def test_group_needs_the_reading(run_module):
    with pytest.raises(AnsibleActionFail, match="probe"):
        later_step(run_module, {"plan": {"work": True}, "group": []})


@pytest.mark.parametrize("args", [
    {"inputs": {}, "torch_version": "2.11.0", "plan": {}},
    {"plan": {}, "check_output": {}},
    {"torch_version": "2.11.0"},
    {"inputs": {}},
])
def test_one_step_at_a_time(run_module, args):
    with pytest.raises(AnsibleActionFail):
        later_step(run_module, args)


# --- a build host's fleet (flash_attn_build_for_fleet) -------------------------------------------------------------

STACK = {"cuda_version": "13.0.2", "torch_version": "2.11.0", "torch_cuda": "cu130", "python_version": "3.12",
         "flash_attn_version": "2.8.3"}


def llm_stack_host(arch_list, **stack):
    """preflight's contract fact of a host (the keys fleet_plans reads)."""
    return {"ok": True, "arch_list": arch_list, "stack": dict(STACK, **stack), "cpu_only_test_host": False}


def fleet_step(run_module, args, hostvars, batch, play_hosts, facts):
    action, calls, task_vars = make_action(args, run_module, facts=facts)
    task_vars.update(hostvars=hostvars, ansible_play_batch=batch, ansible_play_hosts_all=play_hosts)
    result = action.run(task_vars=task_vars)
    assert calls == []
    return result


def test_a_build_host_plans_the_keys_of_the_play_from_plans_and_preflight(run_module, host):
    """The example inventory's build host (8.0;8.9;9.0) in the first batch with an A100 host; H200 and H100 hosts and
    a second build host in later batches (llm_stack_serial), known by preflight's fact alone."""
    venv = host.venv("probe-h200-torch2.11.0-cu130.txt")
    facts = dict(h200_facts(), llm_stack_host=llm_stack_host("8.0;8.9;9.0"))
    first = first_step(run_module, venv, inputs=fa_inputs(venv, arch_list="8.0;8.9;9.0", for_fleet=True,
                                                          hostname="build-01"))
    plan, probe = first["plan"], first["probe"]
    assert plan["for_fleet"] is True and plan["targets"] == [80, 90] and plan["work"] is True
    a100 = F.plan(fa_inputs(venv, hostname="gpu-a100-01", arch_list="8.0"), facts={}, torch=probe,
                  nvcc=probe.get("toolkits"))
    hostvars = {
        "build-01": {"flash_attn_build_plan": plan, "flash_attn_build_for_fleet": True,
                     "ansible_facts": {"llm_stack_host": llm_stack_host("8.0;8.9;9.0")}},
        "gpu-a100-01": {"flash_attn_build_plan": a100, "ansible_facts": {"llm_stack_host": llm_stack_host("8.0")}},
        "gpu-h200-01": {"ansible_facts": {"llm_stack_host": llm_stack_host("9.0")}},
        "gpu-h100-01": {"ansible_facts": {"llm_stack_host": llm_stack_host("9.0")}},
        "gpu-old-01": {"ansible_facts": {"llm_stack_host": llm_stack_host("10.0", torch_version="2.10.0")}},
        "gpu-none-01": {"ansible_facts": {}},
        "build-02": {"flash_attn_build_for_fleet": "true",
                     "ansible_facts": {"llm_stack_host": llm_stack_host("12.0")}},
    }
    play = ["build-01", "gpu-a100-01", "gpu-h200-01", "gpu-h100-01", "gpu-old-01", "gpu-none-01", "build-02"]
    args = {"plan": plan, "probe": probe, "fleet": True}
    result = fleet_step(run_module, args, hostvars, ["build-01", "gpu-a100-01"], play, facts)
    plans = result["fleet_plans"]
    assert [p["targets"] for p in plans] == [[80], [90]]
    assert plans[0]["key"] == a100["key"] and plans[0]["entry"] == a100["entry"]
    assert result["fleet_jobs_requests"] == [F.jobs_request(p) for p in plans]
    members, later, builders = fa_action.fleet_hosts({"hostvars": hostvars, "ansible_play_batch": play[:2],
                                                      "ansible_play_hosts_all": play})
    assert plans == F.fleet_plans(plan, members, later, builders, facts=facts, torch=probe, nvcc=probe.get("toolkits"))
    assert builders == ["build-01", "build-02"] and "gpu-a100-01" not in later and later["gpu-none-01"] is None
    # Its own key (sm80.90) is no one's: it installs the sm80 wheel, and wheel_build gets that plan's jobs request.
    assert result["plan"] == plans[0] and result["jobs_request"] == F.jobs_request(plans[0])
    assert not {"result", "checks"} & set(result)
    # Alone in the play: its own plan, nothing for others.
    alone = fleet_step(run_module, args, {"build-01": hostvars["build-01"]}, ["build-01"], ["build-01"], facts)
    assert alone["fleet_plans"] == [] and alone["plan"] == plan and alone["jobs_request"] == F.jobs_request(plan)


def test_a_fleet_needs_the_reading_and_a_plan(run_module):
    stopped = fleet_step(run_module, {"plan": {"work": True}, "fleet": True}, {}, [], [], {})
    assert stopped["failed"] is True and "fleet needs the reading (probe)" in stopped["msg"]
    stopped = fleet_step(run_module, {"plan": {"work": True}, "probe": {}, "fleet": True}, {}, [], [], {})
    assert stopped["failed"] is True and stopped["msg"].startswith("flash_attn_build_plan: fleet_targets needs")


def test_the_build_hosts_result_lists_its_fleet_builds(run_module, h200_plan):
    plan = h200_plan(for_fleet=True)
    fleet_built = [{"entry": "flash-attn-x-sm80-0123456789ab",
                    "outcome": built(source="built", compiled=True, wheel="fa80.whl")}]
    result = later_step(run_module, {"plan": plan, "built": built(), "fleet_built": fleet_built})
    assert result["result"]["fleet_builds"] == [{"build_key": "flash-attn-x-sm80-0123456789ab", "compiled": True,
                                                 "wheel": "fa80.whl"}]
    assert result["result"] == F.build_result(plan, built(), fleet_built)
    assert later_step(run_module, {"plan": h200_plan(), "built": built()})["result"]["fleet_builds"] == []


# --- after wheel_build: this host's result and whether the checks run ---------------------------------------------------

def built(source="controller_cache", compiled=False, wheel="flash_attn-2.8.3-cp312-cp312-linux_x86_64.whl",
          was_installed=False):
    """wheel_build's result (wheel_build_result)."""
    return {"source": source, "compiled": compiled, "wheel": wheel, "was_installed": was_installed}


@pytest.fixture
def h200_plan(run_module, host):
    venv = host.venv("probe-h200-torch2.11.0-cu130.txt")

    def make(**over):
        return first_step(run_module, venv, inputs=fa_inputs(venv, **over))["plan"]
    return make


@pytest.mark.parametrize("verify, was, check_mode, run, script", [
    # changed: after an install of this run only
    ("changed", False, False, True, True),
    ("changed", True, False, False, True),
    # always: every run; in check mode the script runs only where the wheel was there before
    ("always", True, False, True, True),
    ("always", False, True, True, False),
    ("always", True, True, True, True),
    ("never", False, False, False, True),
])
def test_checks_follow_the_verify_policy_and_the_install(run_module, h200_plan, verify, was, check_mode, run, script):
    plan = h200_plan(verify=verify)
    result = later_step(run_module, {"plan": plan, "built": built(was_installed=was)}, check_mode=check_mode)
    assert result["checks"] == {"run": run, "script": script}
    assert (plan["verify_on_install"], plan["verify_without_install"]) == (verify != "never", verify == "always")


def test_the_hosts_result_is_the_fleet_reports(run_module, h200_plan):
    plan = h200_plan()
    for account in (built(), built(source="built", compiled=True), built(source="index", was_installed=False)):
        result = later_step(run_module, {"plan": plan, "built": account})
        assert result["result"] == F.build_result(plan, account)
        assert result["result"]["source"] == account["source"] and result["result"]["build_key"] == plan["entry"]
    # Nothing of the plan, which holds the index URL, comes back.
    assert not {"plan", "jobs_request", "probe"} & set(result) and not result.get("failed")


def test_without_wheel_builds_result_no_check_runs(run_module, h200_plan):
    """wheel_build did not say whether the wheel was installed before: no install of this run is known (no check),
    nor a wheel to check in check mode."""
    plan = h200_plan(verify="changed")
    for account in (None, {"source": "present", "compiled": False, "wheel": "x.whl"}):
        args = {"plan": plan, "built": account}
        assert later_step(run_module, args)["checks"] == {"run": False, "script": True}
        assert later_step(run_module, args, check_mode=True)["checks"] == {"run": False, "script": False}
    assert later_step(run_module, {"plan": plan, "built": None})["result"]["source"] == "none"


def test_no_key_no_checks(run_module, tmp_path):
    """Check mode before the venv exists: no key, no checks even with verify always, and no flash-attn to report."""
    inputs = fa_inputs(str(tmp_path / "no-venv"), verify="always")
    plan = first_step(run_module, str(tmp_path / "no-venv"), inputs=inputs)["plan"]
    result = later_step(run_module, {"plan": plan, "built": None}, check_mode=True)
    assert result["checks"] == {"run": False, "script": False}
    assert result["result"] == {"version": "2.8.3", "build_key": "", "arch_list": "9.0", "wheel": "",
                                "source": "none", "compiled": False, "fleet_builds": []}


# --- the check's verdict ---------------------------------------------------------------------------------------------

def test_the_checks_verdict(run_module):
    printed = {"ok": True, "problems": [], "skipped": [], "version": "2.8.3", "elf_archs": [90],
               "forward_max_abs_err": 0.0009322166442871094, "tolerance": 0.01}
    output = {"rc": 0, "stdout": "noise\nFLASH_ATTN_CHECK " + json.dumps(printed) + "\n", "stderr": "", "changed": False}
    result = later_step(run_module, {"check_output": output})
    assert result["check_result"] == F.check_result(output["stdout"], 0, "")
    assert result["check_result"]["summary"] == ("flash-attn 2.8.3 works (kernels: sm90) (forward max abs error"
                                                 " 0.0009322166442871094).")
    crashed = later_step(run_module, {"check_output": {"rc": 1, "stdout": "", "stderr": "Traceback: boom"}},
                         check_mode=True)["check_result"]
    assert crashed["ok"] is False and crashed["failure"] == "the check printed no result (exit 1): Traceback: boom"


# --- no_log before there is a plan -----------------------------------------------------------------------------------------

def main_tasks():
    with open(os.path.join(ROLE, "tasks", "main.yml")) as handle:
        return yaml.safe_load(handle)


@pytest.mark.parametrize("over", [
    {},
    {"index_url": "https://bob:s3cret@pypi.example/simple"},
    {"source": "git", "git_url": "https://bob:s3cret@git.example/fa.git"},
    {"source": " git ", "git_url": "https://tok@git.example/fa.git"},
    {"source": "sdist", "git_url": "https://bob:s3cret@git.example/fa.git"},
    {"index_url": None},
])
def test_the_first_steps_no_log_is_the_plans(run_module, host, over):
    """main.yml hides the first step where the plan will (an index or git URL with credentials)."""
    step = [t for t in main_tasks() if "gpufleet.llm_stack.flash_attn_build_state" in t][0]
    env = jinja2.Environment()
    env.tests["has_credentials"] = has_credentials
    expression = step["no_log"].strip()[2:-2].replace("gpufleet.llm_stack.has_credentials", "has_credentials")
    inputs = fa_inputs("/opt/llm-stack/venv", **over)
    hidden = env.compile_expression(expression)(flash_attn_build_inputs=inputs)
    assert hidden is F.no_log(inputs)
    venv = host.venv("probe-h200-torch2.11.0-cu130.txt")
    assert first_step(run_module, venv, inputs=fa_inputs(venv, **over))["plan"]["no_log"] is hidden
