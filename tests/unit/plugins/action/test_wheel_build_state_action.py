# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The wheel_build_state action: the role's plan, its election, the controller cache after the build step, the
build's jobs on the builder, the wheel's name on the index, the index's wheel to install and push_dir's files.

The venv is read by the real torch_info on the fixture host (tests/unit/plugins/conftest.py); the decisions are
the real module_utils, compared where the role used to call a filter with what the module_utils function that
filter called returns.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
from ansible.plugins.filter.core import to_json

from ansible_collections.gpufleet.llm_stack.plugins.action import wheel_build_state as action_module
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _build_env
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_build as W
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_index as WI
from ansible_collections.gpufleet.llm_stack.plugins.modules import torch_info
from action_task import new_action

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
KEY = {"flash_attn": "2.8.3", "torch": "2.13.0+cpu", "python_abi": "cp311", "cxx11_abi": True, "archs": "80"}
LABEL = "flash-attn-2.8.3-torch2.13.0_cpu-cp311-sm80"
ENTRY = W.entry_name(LABEL, "flash-attn", KEY)
WHEEL = "flash_attn-2.8.3-cp311-cp311-linux_x86_64.whl"


def make_inputs(tmp_path, **over):
    inputs = {"name": "flash-attn", "key": dict(KEY), "label": LABEL, "requirement": "flash-attn==2.8.3",
              "cache_dir": str(tmp_path / "cache"), "venv": "/opt/llm/venv", "work_dir": "/opt/llm/build",
              "wheel_dir": "/opt/llm/wheels", "log_dir": "/var/log/llm-stack", "installed_url": "",
              "prefer_builder": False, "install": True, "jobs": {}, "index_url": "", "cache_host": "",
              "cache_host_vars": {}, "index_ca_cert": ""}
    inputs.update(over)
    return inputs


def make_action(args, run_module=None, check_mode=False, hostname="gpu-a", **task_vars):
    """The action; the module it sends is the real torch_info. Returns (action, module calls, task_vars)."""
    action = new_action(action_module, args, check_mode=check_mode)
    calls = []

    def execute(module_name=None, module_args=None, task_vars=None, **kwargs):
        assert module_name == "gpufleet.llm_stack.torch_info" and run_module is not None
        calls.append(dict(module_args))
        kind, result, warnings = run_module(torch_info.main, dict(module_args, _ansible_check_mode=check_mode))
        result = dict(result, invocation={"module_args": dict(module_args)})
        if warnings:
            result["warnings"] = warnings
        if kind == "fail":
            result["failed"] = True
        return result

    action._execute_module = execute
    variables = {"inventory_hostname": hostname, "groups": {"all": ["gpu-a", "gpu-b"]}, "ansible_facts": {}}
    variables.update(task_vars)
    return action, calls, variables


def run(args, **kwargs):
    action, dummy, task_vars = make_action(args, **kwargs)
    return action.run(task_vars=task_vars)


# --- the plan --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("check_mode", [False, True])
def test_the_plan_reads_the_venv_where_the_caller_did_not(tmp_path, run_module, host, check_mode):
    """installed_url null: torch_info reads the venv once (its flash-attn was installed from another file)."""
    venv = host.venv("probe-debian12-torch2.13.0-cpu.txt")
    inputs = make_inputs(tmp_path, venv=venv, installed_url=None)
    action, calls, task_vars = make_action({"inputs": inputs}, run_module=run_module, check_mode=check_mode)
    result = action.run(task_vars=task_vars)
    assert not result.get("failed"), result
    assert calls == [{"venv": venv, "import_torch": False, "use_record": False, "distributions": ["flash-attn"],
                      "set_facts": False}]
    plan = result["plan"]
    # What the role got before (wheel_build.plan), given the same reading.
    probe = dict(torch_info_result(run_module, calls[0]))
    assert {k: plan[k] for k in W.plan(inputs, cached=[])} == W.plan(dict(inputs, probe=probe))
    assert (plan["entry"], plan["installed"], plan["needs_build"]) == (ENTRY, False, True)
    assert (plan["backend"], plan["install"], plan["add_cache_host"], plan["no_log"]) == (
        "controller_cache", True, False, False)
    assert (plan["name"], plan["label"], plan["key"]) == ("flash-attn", LABEL, KEY)
    assert result["result"] == {"source": "none", "compiled": False, "wheel": None, "was_installed": False}
    assert result["changed"] is False


def torch_info_result(run_module, args):
    kind, result, dummy = run_module(torch_info.main, dict(args))
    assert kind == "exit"
    return result


def test_the_plan_of_an_installed_key_reads_nothing_and_says_present(tmp_path):
    url = "file:///opt/llm/wheels/%s/%s" % (ENTRY, WHEEL)
    action, calls, task_vars = make_action({"inputs": make_inputs(tmp_path, installed_url=url)})
    result = action.run(task_vars=task_vars)
    assert calls == []
    assert (result["plan"]["installed"], result["plan"]["needs_build"]) == (True, False)
    assert result["result"] == {"source": "present", "compiled": False, "wheel": WHEEL, "was_installed": True}


def test_a_cached_key_needs_no_build_and_the_role_booleans_are_read_as_ansible_does(tmp_path):
    entry = tmp_path / "cache" / ENTRY
    entry.mkdir(parents=True)
    (entry / WHEEL).write_text("wheel")
    result = run({"inputs": make_inputs(tmp_path, prefer_builder="yes", install="false")})
    plan = result["plan"]
    assert plan["cached_wheels"] == [str(entry / WHEEL)] and plan["needs_build"] is False
    assert plan["summary"] == "is in the cache"
    assert (plan["preferred"], plan["install"]) == (True, False)


def test_the_plan_stops_on_the_inputs_with_wheel_builds_message(tmp_path):
    result = run({"inputs": make_inputs(tmp_path, requirement="")})
    assert result["failed"] is True
    assert result["msg"].startswith("wheel_build needs wheel_build_name, wheel_build_key (a non-empty dict), "
                                    "wheel_build_requirement and wheel_build_cache_dir (missing or empty: "
                                    "wheel_build_requirement).")
    result = run({"inputs": make_inputs(tmp_path, venv="opt/venv")})
    assert result["msg"] == "wheel_build_venv='opt/venv' must be an absolute path"


def test_the_index_backend_and_a_cache_host_outside_the_inventory(tmp_path):
    inputs = make_inputs(tmp_path, index_url="http://10.0.0.5:8080", cache_host="cache-1",
                         cache_host_vars={"ansible_host": "10.0.0.5"})
    plan = run({"inputs": inputs})["plan"]
    assert (plan["backend"], plan["add_cache_host"]) == ("index", True)
    plan = run({"inputs": inputs}, groups={"all": ["gpu-a", "cache-1"]})["plan"]
    assert (plan["backend"], plan["add_cache_host"]) == ("index", False)


def test_the_index_ca_path_is_the_pushed_ca_file_and_null_without_one(tmp_path):
    url = "file:///opt/llm/wheels/%s/%s" % (ENTRY, WHEEL)
    ca = tmp_path / "index-ca.crt"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    inputs = make_inputs(tmp_path, installed_url=url, index_url="https://cache-1:8443", cache_host="cache-1",
                         index_ca_cert=str(ca))
    result = run({"inputs": inputs}, groups={"all": ["gpu-a", "cache-1"]})
    assert not result.get("failed") and result["plan"]["index_ca_path"] == "/opt/llm/wheels/index-ca.pem"
    for ca_cert in ("", None):
        plan = run({"inputs": dict(inputs, index_ca_cert=ca_cert)}, groups={"all": ["gpu-a", "cache-1"]})["plan"]
        assert "index_ca_path" in plan and plan["index_ca_path"] is None
    # The download task reads the plan's field as it is, no choice of its own.
    with open(os.path.join(REPO, "roles", "wheel_build", "tasks", "install_index.yml")) as handle:
        assert 'ca_path: "{{ wheel_build_state.index_ca_path }}"' in handle.read()


def test_the_index_settings_stop_every_host_with_every_problem(tmp_path):
    inputs = make_inputs(tmp_path, index_url="ftp://cache", cache_host="")
    result = run({"inputs": inputs})
    expected = WI.config_problems("ftp://cache", "", ["gpu-a", "gpu-b"], {}, "")
    assert len(expected) == 2 and result["failed"] is True
    assert result["msg"] == " ".join(expected) and result["problems"] == expected
    assert "llm_stack_cache_host is empty" in result["msg"] and "plan" not in result
    result = run({"inputs": make_inputs(tmp_path, index_url="http://c:1", cache_host="c", cache_host_vars=[])})
    assert result["msg"] == "wheel_index_problems: cache_host_vars (llm_stack_cache_host_vars) must be a dict"


def test_a_jobs_request_with_credentials_hides_the_jobs_step(tmp_path):
    request = _build_env.jobs_request({"environment": {"PIP_INDEX_URL": "https://u:secret@pypi.example/simple"}},
                                      5.0, 1, ["flash-attn"])
    assert run({"inputs": make_inputs(tmp_path, jobs=request)})["plan"]["no_log"] is True
    request = _build_env.jobs_request({"environment": {"FLASH_ATTN_CUDA_ARCHS": "80"}}, 5.0, 1, ["flash-attn"])
    assert run({"inputs": make_inputs(tmp_path, jobs=request)})["plan"]["no_log"] is False


# --- the election ------------------------------------------------------------------------------------------------

def states(**hosts):
    return dict((host, {"wheel_build_state": state}) for host, state in hosts.items())


@pytest.mark.parametrize("backend, tail", [
    ("controller_cache", "."),
    ("index", " unless another job of the fleet does already."),
])
def test_the_election_picks_the_preferred_host_then_play_order(tmp_path, backend, tail):
    plan = dict(run({"inputs": make_inputs(tmp_path)})["plan"], backend=backend)
    hostvars = states(a=dict(plan, preferred=False), b=dict(plan, preferred=True), c=dict(plan, needs_build=False))
    batch = ["c", "a", "b"]
    # What the role got before (wheel_build.builder over each host's wheel_build_state).
    assert W.builder(batch, dict((host, hostvars[host]["wheel_build_state"]) for host in batch), ENTRY) == "b"
    mine = run({"plan": plan, "elect": True}, hostname="a", ansible_play_batch=batch, hostvars=hostvars)
    assert (mine["builder"], mine["builds_here"]) == ("b", False)
    assert mine["msg"] == "b builds %s (key %s)%s" % (LABEL, ENTRY, tail)
    theirs = run({"plan": plan, "elect": True}, hostname="b", ansible_play_batch=batch, hostvars=hostvars,
                 check_mode=True)
    assert (theirs["builder"], theirs["builds_here"]) == ("b", True)
    assert theirs["msg"] == "This host builds %s (key %s)%s (check mode: nothing is built)." % (
        LABEL, ENTRY, tail[:-1])
    # Without the preferred host the first in play order; a host outside the batch's states is left out.
    alone = run({"plan": plan, "elect": True}, hostname="a", ansible_play_batch=["x", "c", "a"],
                hostvars=dict(hostvars, x={}))
    assert (alone["builder"], alone["builds_here"]) == ("a", True)


# --- the controller cache after the build step -------------------------------------------------------------------

def test_an_empty_cache_entry_stops_the_host_with_the_builder_and_its_log(tmp_path):
    plan = run({"inputs": make_inputs(tmp_path)})["plan"]
    result = run({"plan": plan, "look_in_cache": True, "builder": "gpu-b"})
    assert result["failed"] is True
    assert result["msg"] == W.cache_problem(plan, [], "flash-attn", "gpu-b", plan["log"])
    assert result["msg"].startswith("No flash-attn wheel in %s on the controller. Its build on gpu-b did not finish"
                                    % plan["cache_entry"])
    # In check mode nothing was built: no stop, nothing to install.
    checked = run({"plan": plan, "look_in_cache": True, "builder": "gpu-b"}, check_mode=True)
    assert not checked.get("failed") and (checked["install"], checked["result"], checked["cached"]) == (False, None, [])
    # A plan that does not install does not stop either.
    assert not run({"plan": dict(plan, install=False), "look_in_cache": True}).get("failed")


def test_one_cached_wheel_is_installed_and_accounted_for(tmp_path):
    plan = run({"inputs": make_inputs(tmp_path)})["plan"]
    entry = tmp_path / "cache" / ENTRY
    entry.mkdir(parents=True)
    (entry / WHEEL).write_text("wheel")
    (entry / "key.json").write_text("{}")
    here = run({"plan": plan, "look_in_cache": True, "builder": "gpu-a"}, hostname="gpu-a")
    assert (here["cached"], here["install"], here["problem"]) == ([str(entry / WHEEL)], True, "")
    assert here["result"] == {"source": "built", "compiled": True, "wheel": WHEEL, "was_installed": False}
    there = run({"plan": plan, "look_in_cache": True, "builder": "gpu-a"}, hostname="gpu-b")
    assert there["result"] == {"source": "controller_cache", "compiled": False, "wheel": WHEEL, "was_installed": False}
    # A key that was cached already compiles nowhere.
    cached = run({"inputs": make_inputs(tmp_path)})["plan"]
    assert run({"plan": cached, "look_in_cache": True}, hostname="gpu-a")["result"]["source"] == "controller_cache"
    (entry / ("x" + WHEEL)).write_text("wheel")
    several = run({"plan": plan, "look_in_cache": True, "builder": "gpu-a"})
    assert several["failed"] is True and several["msg"].startswith("Several flash-attn wheels in ")


# --- the build's jobs on the builder -----------------------------------------------------------------------------

FACTS = {"processor_vcpus": 16, "memory_mb": {"nocache": {"free": 65536}}}


def test_the_jobs_request_becomes_the_builds_environment_and_log_header(tmp_path):
    request = _build_env.jobs_request({"environment": {"FLASH_ATTN_CUDA_ARCHS": "80", "TORCH_CUDA_ARCH_LIST": "8.0"}},
                                      5.0, 1, ["flash-attn 2.8.3", "FLASH_ATTN_CUDA_ARCHS=80"], ["CUDA_HOME=/usr/local/cuda"])
    plan = run({"inputs": make_inputs(tmp_path, jobs=request)})["plan"]
    result = run({"plan": plan, "jobs": request}, ansible_facts=FACTS)
    job = _build_env.with_builder(request, FACTS)
    # What the role's build task made of the caller's environment and header before.
    assert result["environment"] == dict(job["environment"], TMPDIR=plan["tree"])
    assert result["environment"]["MAX_JOBS"] == "12" and result["environment"]["NVCC_THREADS"] == "1"
    assert result["log_header"] == job["log_header"] + ["key %s: %s" % (ENTRY, to_json(KEY, sort_keys=True))]
    assert result["log_header"][2].startswith("MAX_JOBS=12 NVCC_THREADS=1 (16 vCPUs, 64.0 GB available")
    empty = run({"plan": plan, "jobs": {}}, ansible_facts=FACTS)
    assert empty == dict(empty, environment={"TMPDIR": plan["tree"]}, log_header=[result["log_header"][-1]])
    broken = run({"plan": plan, "jobs": {"environment": {}}}, ansible_facts=FACTS)
    assert broken["failed"] is True and broken["msg"].startswith("wheel_build_jobs is not the jobs request")


# --- the fleet's index -------------------------------------------------------------------------------------------

def test_the_wheels_name_on_the_index(tmp_path):
    plan = run({"inputs": make_inputs(tmp_path)})["plan"]
    result = run({"plan": plan, "built_wheel": "/opt/llm/build/%s/dist/%s" % (ENTRY, WHEEL)})
    assert result["index_filename"] == WI.tagged_filename(WHEEL, ENTRY)
    assert result["index_filename"] == "flash_attn-2.8.3-0%s-cp311-cp311-linux_x86_64.whl" % ENTRY[-12:]
    bad = run({"plan": plan, "built_wheel": "/tmp/flash_attn.tar.gz"})
    assert bad["failed"] is True and bad["msg"] == "'flash_attn.tar.gz' is not the file name of a wheel"


def test_the_index_wheel_installed_is_the_first_one_given(tmp_path):
    plan = run({"inputs": make_inputs(tmp_path, index_url="http://c:1", cache_host="gpu-b")})["plan"]
    lock = {"filename": "a.whl", "sha256": "0" * 64}
    query = {"filename": "b.whl", "sha256": "1" * 64}
    result = run({"plan": plan, "index_wheels": [None, lock, None, query]})
    assert result["wheel"] == lock
    assert result["result"] == {"source": "index", "compiled": False, "wheel": "a.whl", "was_installed": False}
    built = run({"plan": plan, "index_wheels": [query, None, None, None], "compiled": True})
    assert built["result"] == {"source": "built", "compiled": True, "wheel": "b.whl", "was_installed": False}
    # Check mode: nothing on the index yet, nothing to install.
    assert run({"plan": plan, "index_wheels": [None, None, None, None]}, check_mode=True) == dict(
        wheel=None, result=None, changed=False)


# --- push_dir -----------------------------------------------------------------------------------------------------

def test_push_dir_copies_the_files_the_host_lacks():
    local = [{"path": "/c/b.whl", "size": 2}, {"path": "/c/a.whl", "size": 1}, {"path": "/c/d.tar.gz", "size": 4}]
    remote = [{"path": "/h/a.whl", "size": 1}, {"path": "/h/d.tar.gz", "size": 3}]
    result = run({"local_files": local, "remote_files": remote})
    assert result["missing"] == W.files_to_push(local, remote)
    assert [f["path"] for f in result["missing"]] == ["/c/b.whl", "/c/d.tar.gz"]
    assert run({"local_files": [], "remote_files": []})["missing"] == []
    bad = run({"local_files": [{"size": 1}], "remote_files": []})
    assert bad["failed"] is True and bad["msg"] == "files_to_push: every controller file needs a path (a find result)"


def test_a_call_without_a_step_fails():
    result = run({})
    assert result["failed"] is True and result["msg"].startswith("wheel_build_state: give inputs")
    result = run({"plan": {"entry": ENTRY}})
    assert result["failed"] is True and result["msg"].startswith("wheel_build_state: give inputs")


def test_the_action_is_documented_with_its_options():
    from ansible_collections.gpufleet.llm_stack.plugins.modules import wheel_build_state as doc
    import yaml
    options = yaml.safe_load(doc.DOCUMENTATION)["options"]
    assert sorted(options) == sorted(action_module.OPTIONS)
    for name, spec in action_module.OPTIONS.items():
        assert options[name]["type"] == spec["type"], name
        assert options[name].get("default") == spec.get("default"), name
        assert options[name].get("elements") == spec.get("elements"), name
    assert os.path.basename(doc.__file__) == "wheel_build_state.py"
