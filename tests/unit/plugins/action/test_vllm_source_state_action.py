# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vllm_source_state action: the plan of each step of the role vllm_source and the judgements of what it saw.

The GPUs are read by the real gpu_facts, run in this process against the nvidia-smi replay of the H200 (the fixture
host, tests/unit/plugins/conftest.py); the plan, the key's state and the judgements are the real module_utils, on the
H200's readings (tests/fixtures) and pip's real report of vLLM 0.20.2 (tests/fixtures/vllm-bundle).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import copy
import gzip
import json
import os

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.gpufleet.llm_stack.plugins.plugin_utils import _role_action as role_action
from ansible_collections.gpufleet.llm_stack.plugins.action import vllm_source_state as action_module
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _build_env
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import nvidia
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm as V
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_build
from ansible_collections.gpufleet.llm_stack.plugins.modules import gpu_facts
from action_task import new_action

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "..", "fixtures")
COMMIT = "92661ace91d4b55ee2a7ce395355ab39be7d13b5"
OTHER = "0123456789abcdef0123456789abcdef01234567"
LS_REMOTE = "%s\trefs/tags/v0.20.2\n%s\trefs/tags/v0.20.2^{}\n" % (OTHER, COMMIT)
TORCH = {"version": "2.11.0", "record_sha256": "9f37c46b1da1d9d38305b030b432631083aaecc0b19a3b70fcf870326a81b337",
         "file_problems": [], "files_checked": 0, "verified": False}


def h200_facts():
    with open(os.path.join(FIXTURES, "gpu", "h200", "query.csv")) as handle:
        devices, driver = nvidia.parse_query_csv(handle.read(), nvidia.QUERY_FIELDS)
    return {"gpu_count": len(devices), "gpu_compute_caps": sorted(set(d["compute_cap"] for d in devices)),
            "gpu_driver_version": driver}


def inputs(tmp_path, **over):
    base = dict(method="source", version="0.20.2", distribution="vllm", venv="/opt/llm-stack/venv",
                target_device="cuda", git_url="https://github.com/vllm-project/vllm.git", git_ref="v0.20.2",
                cache_dir=str(tmp_path / "cache"), work_dir="/opt/llm-stack/build", wheel_dir="/opt/llm-stack/wheels",
                log_dir="/var/log/llm-stack", cuda_version="13.0.2", torch_version="2.11.0", torch_cuda="cu130",
                model_architecture="Qwen3_5ForConditionalGeneration", hostname="gpu-validate")
    base.update(over)
    return base


def probe(installed=None, url=""):
    dists = {"vllm": None}
    if installed:
        dists["vllm"] = {"version": installed, "direct_url": {"url": url} if url else None, "requires_torch": None}
    return {"changed": False, "info": {"venv_exists": True, "python": {"abi_tag": "cp312", "version": "3.12.3"},
                                       "distributions": dists, "torch": dict(TORCH)}}


def make_action(args, run_module, facts=None, check_mode=False, no_log=False):
    """The action, its module calls made by the real gpu_facts; returns (action, calls, task_vars)."""
    action = new_action(action_module, args, check_mode=check_mode, no_log=no_log)
    calls = []

    def execute(module_name=None, module_args=None, task_vars=None, **kwargs):
        assert module_name == "gpufleet.llm_stack.gpu_facts"
        calls.append((dict(module_args), check_mode))
        kind, result, warnings = run_module(gpu_facts.main, dict(module_args, _ansible_check_mode=check_mode))
        result = dict(result, invocation={"module_args": dict(module_args)})
        if warnings:
            result["warnings"] = warnings
        if kind == "fail":
            result["failed"] = True
        return result

    action._execute_module = execute
    return action, calls, {"ansible_facts": dict(facts or {}), "inventory_hostname": "gpu-validate"}


def run(args, run_module, **kwargs):
    action, calls, task_vars = make_action(args, run_module, **kwargs)
    return action.run(task_vars=task_vars), calls


# --- the first plan: the inputs, the GPUs, the driver of the gate -----------------------------------------------------

@pytest.mark.parametrize("check_mode", [False, True])
def test_reads_the_gpus_where_the_play_has_none_and_plans_with_them(run_module, host, tmp_path, check_mode):
    host.gpus("h200")
    result, calls = run({"inputs": inputs(tmp_path, method="auto")}, run_module, check_mode=check_mode)
    assert calls == [({}, check_mode)] and len(host.calls("smi")) >= 1
    facts = result["ansible_facts"]
    assert facts["gpu_compute_caps"] == ["9.0"] and facts["gpu_driver_version"] == h200_facts()["gpu_driver_version"]
    # The gate is given the driver the plan resolved auto with.
    assert result["driver_version"] == facts["gpu_driver_version"]
    assert result["plan"] == dict(V.plan(inputs(tmp_path, method="auto"), facts=facts), key_state=None,
                                  jobs_request=None)
    assert result["plan"]["method_requested"] == "auto" and result["plan"]["errors"] == []
    assert result["commit_problem"] == "" and result["changed"] is False and not result.get("failed")


def test_preflights_report_is_read_and_nothing_is_sent(run_module, tmp_path):
    facts = {"llm_stack_host": {"gpu": {"count": 1, "compute_caps": ["9.0"], "driver_version": "570.86.15"},
                                "arch_list": "9.0", "arch_list_source": "gpus"}}
    result, calls = run({"inputs": inputs(tmp_path)}, run_module, facts=facts)
    assert calls == [] and "ansible_facts" not in result
    assert result["driver_version"] == "570.86.15"
    assert result["plan"]["arch_list"] == "9.0" and result["plan"]["arch_list_source"] == "gpus"


def test_a_cpu_only_test_host_reads_no_gpus(run_module, tmp_path):
    args = {"inputs": inputs(tmp_path, target_device="empty", cpu_only_test_host=True)}
    result, calls = run(args, run_module)
    assert calls == [] and "ansible_facts" not in result and result["driver_version"] is None
    assert result["plan"]["errors"] == [] and result["plan"]["probe_platform"] is None


def test_the_plans_errors_are_the_gates_not_a_failure(run_module, tmp_path):
    result, dummy = run({"inputs": inputs(tmp_path, verify="sometimes", venv="venv")}, run_module, facts=h200_facts())
    assert not result.get("failed")
    errors = result["plan"]["errors"]
    assert any("vllm_source_verify" in e and "Fix:" in e for e in errors)
    assert any("vllm_source_venv" in e and "Fix:" in e for e in errors)


def test_an_unknown_input_is_the_callers_bug_named_as_the_filter_was(run_module, tmp_path):
    result, calls = run({"inputs": inputs(tmp_path, surprise=1)}, run_module, facts=h200_facts())
    assert result["failed"] is True and calls == []
    assert result["msg"].startswith("vllm_source_plan: unknown input(s): surprise (known: ")


def test_hidden_output_still_shows_the_failure_masked(run_module, tmp_path, monkeypatch):
    shown = []
    monkeypatch.setattr(role_action.display, "error", lambda msg, wrap_text=True: shown.append(msg))
    args = {"inputs": inputs(tmp_path, surprise="x", index_url="https://user:s3cret@pypi.example.org/simple")}
    result, dummy = run(args, run_module, facts=h200_facts(), no_log=True)
    assert result["failed"] is True and len(shown) == 1
    assert shown[0].startswith("vllm_source_plan: unknown input(s): surprise")
    assert shown[0].endswith("(the task's output is hidden: credentials)")
    result, dummy = run(args, run_module, facts=h200_facts())
    assert len(shown) == 1


def test_a_failed_gpu_reading_fails_with_the_modules_message(run_module, tmp_path):
    action, dummy, task_vars = make_action({"inputs": inputs(tmp_path)}, run_module)
    action._execute_module = lambda **kwargs: {"failed": True, "msg": "MODULE FAILURE", "warnings": ["w"]}
    result = action.run(task_vars=task_vars)
    assert result["failed"] is True and result["msg"] == "MODULE FAILURE" and result["warnings"] == ["w"]
    assert "plan" not in result


# --- the plan of the venv as read, with the tag's commit ---------------------------------------------------------------

def test_the_source_plan_carries_the_tags_commit_the_keys_state_and_the_jobs(run_module, tmp_path):
    facts = dict(h200_facts(), processor_vcpus=32, memory_mb={"nocache": {"free": 262144}})
    args = {"inputs": inputs(tmp_path), "probe": probe(), "ls_remote": LS_REMOTE}
    result, dummy = run(args, run_module, facts=facts)
    plan = result["plan"]
    # The peeled commit of the annotated tag goes into the key, as the plan makes it from that commit.
    assert plan["commit"] == COMMIT and plan["key"]["commit"] == COMMIT and plan["key"]["archs"] == "9.0"
    expected = V.plan(inputs(tmp_path), facts=facts, probe=probe(), commit=COMMIT)
    assert dict((k, v) for k, v in plan.items() if k not in ("key_state", "jobs_request")) == expected
    assert result["commit_problem"] == ""
    # wheel_build's own plan of the request the include passes: nothing installed, nothing cached.
    state = wheel_build.plan(dict(plan["wheel_build_request"]))
    assert plan["key_state"] == {"installed": False, "needs_build": True, "summary": "is built once for its key"}
    assert (state["installed"], state["needs_build"], state["summary"]) == (False, True, "is built once for its key")
    # The jobs request wheel_build turns into the environment and the log header on the builder.
    assert plan["jobs_request"] == V.jobs_request(expected)
    job = _build_env.with_builder(plan["jobs_request"], facts)
    assert job["environment"]["TORCH_CUDA_ARCH_LIST"] == "9.0" and job["environment"]["NVCC_THREADS"] == "1"
    assert job["environment"]["MAX_JOBS"] == "32"
    assert job["log_header"][0].startswith("vLLM 0.20.2 (source, commit %s, tag v0.20.2 of " % COMMIT)
    json.dumps(result)


def test_the_keys_wheel_in_the_cache_or_installed(run_module, tmp_path):
    facts = h200_facts()
    args = {"inputs": inputs(tmp_path), "probe": probe(), "ls_remote": LS_REMOTE}
    first, dummy = run(args, run_module, facts=facts)
    entry = wheel_build.entry_name(first["plan"]["label"], "vllm", first["plan"]["key"])
    cached = tmp_path / "cache" / entry
    cached.mkdir(parents=True)
    (cached / "vllm-0.20.2-cp312-cp312-linux_x86_64.whl").write_bytes(b"")
    again, dummy = run(args, run_module, facts=facts)
    assert again["plan"]["key_state"] == {"installed": False, "needs_build": False, "summary": "is in the cache"}
    url = "file:///opt/llm-stack/wheels/%s/vllm-0.20.2-cp312-cp312-linux_x86_64.whl" % entry
    args["probe"] = probe(installed="0.20.2", url=url)
    installed, dummy = run(args, run_module, facts=facts)
    assert installed["plan"]["wheel_build_request"]["installed_url"] == url
    assert installed["plan"]["key_state"] == {"installed": True, "needs_build": False, "summary": "is installed"}


@pytest.mark.parametrize("ls_remote, pinned, message", [
    ("", "", "https://github.com/vllm-project/vllm.git has no tag v0.20.2. Fix: set vllm_source_git_ref"),
    (LS_REMOTE, OTHER, "The tag v0.20.2 of https://github.com/vllm-project/vllm.git points to %s, not to"
                       " vllm_source_git_commit=%s" % (COMMIT, OTHER)),
])
def test_a_tag_that_is_missing_or_moved_is_the_commit_problem(run_module, tmp_path, ls_remote, pinned, message):
    args = {"inputs": inputs(tmp_path, git_commit=pinned), "probe": probe(), "ls_remote": ls_remote}
    result, dummy = run(args, run_module, facts=h200_facts())
    assert result["commit_problem"].startswith(message) and not result.get("failed")


def test_the_wheel_method_has_no_commit_problem_and_no_key(run_module, tmp_path):
    args = {"inputs": inputs(tmp_path, method="wheel"), "probe": probe(), "ls_remote": ""}
    result, dummy = run(args, run_module, facts=h200_facts())
    plan = result["plan"]
    assert result["commit_problem"] == "" and plan["key"] is None and plan["key_state"] is None
    assert plan["jobs_request"] is None and plan["install"] is True and plan["reason"] == "vllm is not installed"


def test_a_venv_without_torch_is_the_plans_torch_error(run_module, tmp_path):
    reading = probe()
    reading["info"]["torch"] = None
    result, dummy = run({"inputs": inputs(tmp_path), "probe": reading, "ls_remote": LS_REMOTE}, run_module,
                        facts=h200_facts())
    assert result["plan"]["torch_error"].startswith("/opt/llm-stack/venv on gpu-validate has no torch")
    assert result["plan"]["key"] is None and result["plan"]["verify_on_install"] is False


# --- judgements of what the role saw later ------------------------------------------------------------------------------

def source_plan(run_module, tmp_path):
    result, dummy = run({"inputs": inputs(tmp_path), "probe": probe(), "ls_remote": LS_REMOTE}, run_module,
                        facts=h200_facts())
    return result["plan"]


def test_the_checkout_is_judged_against_the_tags_commit(run_module, tmp_path):
    plan = source_plan(run_module, tmp_path)
    good, dummy = run({"plan": plan, "ls_remote": LS_REMOTE, "head": COMMIT + "\n"}, run_module)
    assert good["commit_problem"] == "" and set(good) >= {"changed"} and "plan" not in good
    bad, dummy = run({"plan": plan, "ls_remote": LS_REMOTE, "head": OTHER}, run_module)
    assert bad["commit_problem"] == ("The checkout of https://github.com/vllm-project/vllm.git at v0.20.2 is %s, not the"
                                     " tag's commit %s. Nothing was built." % (OTHER, COMMIT))


def pip_report(keep_torch):
    with gzip.open(os.path.join(FIXTURES, "vllm-bundle", "vllm-0.20.2-cp312-report.json.gz"), "rt") as handle:
        report = json.load(handle)
    if keep_torch:
        report["install"] = [item for item in report["install"]
                             if V.normalize_name(item["metadata"]["name"]) not in V.TORCH_FAMILY]
    return {"changed": False, "content": base64.b64encode(json.dumps(report).encode("utf-8")).decode("ascii"),
            "encoding": "base64", "source": "/var/log/llm-stack/vllm-dry-run-report.json"}


def wheel_plan(run_module, tmp_path):
    result, dummy = run({"inputs": inputs(tmp_path, method="wheel"), "probe": probe()}, run_module, facts=h200_facts())
    return result["plan"]


def test_pips_dry_run_that_would_reinstall_torch_is_refused(run_module, tmp_path):
    plan = wheel_plan(run_module, tmp_path)
    args = {"plan": plan, "dry_run": {"rc": 0, "changed": True}, "dry_run_report": pip_report(keep_torch=False)}
    result, dummy = run(args, run_module)
    verdict = result["dry_run"]
    assert verdict["ok"] is False and not result.get("failed")
    assert verdict["msg"].startswith("Installing vllm==0.20.2 into /opt/llm-stack/venv would change torch or a package"
                                     " built against it: torch 2.11.0 again (a reinstall of the venv's torch);")
    assert "torchvision 0.26.0 (built against one torch release)" in verdict["msg"]
    kept, dummy = run(dict(args, dry_run_report=pip_report(keep_torch=True)), run_module)
    assert kept["dry_run"] == {"ok": True, "msg": "pip keeps torch 2.11.0"}


def test_a_failed_dry_run_and_its_skipped_report(run_module, tmp_path):
    plan = wheel_plan(run_module, tmp_path)
    dry_run = {"rc": 1, "failed": False, "tail": ["ERROR: No matching distribution found for vllm==0.20.2"]}
    skipped = {"changed": False, "skipped": True, "skip_reason": "Conditional result was False"}
    result, dummy = run({"plan": plan, "dry_run": dry_run, "dry_run_report": skipped}, run_module)
    assert result["dry_run"]["ok"] is False
    assert result["dry_run"]["msg"].startswith("pip cannot install vllm==0.20.2 into /opt/llm-stack/venv keeping torch"
                                               " 2.11.0 (nothing was installed):\nERROR: No matching distribution")
    assert result["dry_run"] == V.dry_run_verdict(plan, dry_run, None)


def test_the_checks_after_the_install_on_the_h200(run_module, tmp_path):
    """vLLM 0.26.0's release wheel as read on the H200 (tests/fixtures/vllm_source): the host's caps are the play's."""
    with open(os.path.join(FIXTURES, "vllm_source", "h200-0.26.0-extension.json"), encoding="utf-8") as handle:
        extension = json.load(handle)
    result, dummy = run({"inputs": inputs(tmp_path, method="wheel", version="0.26.0"), "probe": probe()}, run_module,
                        facts=h200_facts())
    plan = result["plan"]
    after = {"info": {
        "distributions": {"vllm": {"version": "0.26.0", "requires_torch": "2.11.0", "direct_url": None}},
        "torch": dict(TORCH, verified=True, files_checked=11846),
        "vllm": {"version": "0.26.0", "error": None, "registry": {"Qwen3_5ForConditionalGeneration": True},
                 "extension": extension},
        "cli": {"ok": True, "version": "0.26.0", "error": None},
        "start": {"ran": True, "ok": True, "user": "vllm", "platform": "CudaPlatform", "device_type": "cuda",
                  "steps": [], "missing": [], "error": None}}}
    before = probe()
    checked, dummy = run({"plan": plan, "probe": before, "after": after}, run_module, facts=h200_facts())
    assert checked["verdict"] == V.verdict(plan, before, after, ["9.0"])
    assert checked["verdict"]["ok"] is True, checked["verdict"]["problems"]
    # A host whose GPUs the release's loaded kernels lack (sm_89 is listed only by some libraries): refused.
    lacking = copy.deepcopy(after)
    for item in lacking["info"]["vllm"]["extension"]["kernels"].values():
        item["archs"] = [arch for arch in item["archs"] if arch not in ("sm_90", "sm_90a")]
    refused, dummy = run({"plan": plan, "probe": before, "after": lacking}, run_module, facts=h200_facts())
    assert refused["verdict"]["ok"] is False and refused["verdict"]["problems"]
    assert refused["verdict"]["record"]["ok"] is False


@pytest.mark.parametrize("collect", [False, True])
def test_the_gates_options_from_the_plan_and_the_reading(run_module, tmp_path, collect):
    plan = run({"inputs": inputs(tmp_path)}, run_module, facts=h200_facts())[0]["plan"]
    before = probe()
    result, calls = run({"plan": plan, "probe": before, "collect": collect}, run_module, facts=h200_facts())
    assert calls == [] and result["gate"] == V.gate_options(plan, before, collect)
    assert result["gate"]["fail_as"] == ("" if collect else "vllm_source on gpu-validate")
    assert result["gate"]["vllm_venv_torch"] == (plan["torch_pin"] if collect else TORCH["version"])
    # Without collect, no gate: the checks' step returns its verdict only.
    assert "gate" not in run({"plan": plan, "probe": before}, run_module, facts=h200_facts())[0]


@pytest.mark.parametrize("args", [
    {},
    {"inputs": {}, "plan": {}},
    {"plan": {}, "collect": True},
    {"plan": {}, "head": "abc"},
    {"inputs": {}, "after": {}},
    {"plan": {}, "dry_run_report": {}},
])
def test_wrong_option_sets_are_refused(run_module, args):
    action, dummy, task_vars = make_action(args, run_module)
    with pytest.raises(AnsibleActionFail):
        action.run(task_vars=task_vars)
