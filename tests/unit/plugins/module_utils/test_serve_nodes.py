# -*- coding: utf-8 -*-
"""One vLLM server across hosts (_serve_nodes, and its use by _serve_services and the plan): the nodes settings,
the node addresses the gate takes, the rank and head of each host, the launch flags, the world size against the
nodes' GPUs and the checks over every node before any start.

The interfaces are a real capture of Ansible's network facts (tests/fixtures/vllm_serve/network-facts.json); the
GPU memory the real H200 capture (tests/fixtures/gpu/h200/query.csv), repeated per GPU.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _serve_nodes as N
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _serve_services as S
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm_serve

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "..", "fixtures")
SETTINGS = settings(max_examples=150, deadline=None)


def network_facts():
    with open(os.path.join(FIXTURES, "vllm_serve", "network-facts.json"), encoding="utf-8") as handle:
        return json.load(handle)


def h200_host(count):
    with open(os.path.join(FIXTURES, "gpu", "h200", "query.csv"), encoding="utf-8") as handle:
        mib = int(handle.read().split(",")[5])
    return {"llm_stack_host": {"gpu": {"count": count, "memory_mib": [mib] * count}}}


GROUPS = {"qwen_big": ["gpu-01", "gpu-02"], "lonely": ["gpu-09"]}
ADDRESSES = {"gpu-01": "10.20.0.11", "gpu-02": "10.20.0.12", "gpu-09": "10.20.0.19"}
SINGLE = {"model": "Qwen/Qwen3-32B", "served_model_name": "", "service_name": "", "port": 8000, "host": "0.0.0.0",
          "tensor_parallel_size": "auto", "pipeline_parallel_size": 1, "extra_args": [], "env": {},
          "benchmark": False}


def item(**over):
    found = {"name": "big", "model": "Qwen/Qwen3-32B", "gpus": [0, 1, 2, 3], "tensor_parallel_size": 4,
             "pipeline_parallel_size": 2, "port": 8000, "nodes": {"group": "qwen_big"}}
    found.update(over)
    return found


def listed(hostname, items=None, addresses=None, facts=None, single=None):
    return S.host_services(items if items is not None else [item()], single or SINGLE, facts or h200_host(4),
                           hostname, nodes={"groups": GROUPS, "addresses": ADDRESSES if addresses is None
                                            else addresses})


# --- settings() -----------------------------------------------------------------------------------------

def test_settings_defaults_and_none():
    errors = []
    assert N.settings({"group": "qwen_big"}, "p", errors) == {"group": "qwen_big", "head": None, "master_port": 29500}
    assert N.settings(None, "p", errors) is None and N.settings({}, "p", errors) is None
    assert errors == []


@pytest.mark.parametrize("value, says", [
    ("qwen_big", "must be a mapping"),
    ({"group": "qwen-big"}, "p.group=qwen-big is not an inventory group name"),
    ({"group": "g", "master_port": 80}, "p.master_port=80 is not a TCP port"),
    ({"group": "g", "master_port": True}, "p.master_port=True"),
    ({"group": "g", "rank": 1}, "p has rank, not a nodes setting"),
])
def test_settings_problems_name_the_path_and_the_fix(value, says):
    errors = []
    N.settings(value, "p", errors)
    assert any(says in message and "Fix:" in message for message in errors), errors


# --- address_problem() ---------------------------------------------------------------------------------

@pytest.mark.parametrize("address", ["10.0.0.5", "172.31.255.1", "192.168.1.9", "100.64.3.2", "fd12:3456::7"])
def test_private_addresses_pass(address):
    assert N.address_problem("h", address) is None


@pytest.mark.parametrize("address, says", [
    ("8.8.8.8", "not a private address: vLLM's traffic between nodes is unencrypted"),
    ("192.0.2.2", "not a private address"),
    ("169.254.1.1", "not a private address"),
    ("2001:4860::1", "not a private address"),
    ("127.0.0.1", "loopback address, which other hosts cannot reach"),
    ("not-an-ip", "is not an IP address"),
    ("", "no vllm_serve_node_address and no default IPv4 address"),
])
def test_other_addresses_are_refused_naming_the_variable(address, says):
    problem = N.address_problem("gpu-01", address)
    assert says in problem and "Fix: set vllm_serve_node_address for gpu-01" in problem


def test_loopback_only_on_cpu_only_test_hosts():
    assert N.address_problem("h", "127.0.0.12", test_host=True) is None
    assert N.address_problem("h", "8.8.8.8", test_host=True) is not None


# --- interface_of() and default_address() on the captured facts ------------------------------------------

def test_interface_of_the_captured_facts():
    facts = network_facts()
    assert N.default_address(facts) == "192.0.2.2"
    assert N.interface_of(facts, "192.0.2.2") == "eth0"
    assert N.interface_of(facts, "192.0.2.77") == "eth0"
    # Every loopback address is on lo (127.0.0.0/8): the test path's node addresses.
    assert N.interface_of(facts, "127.0.0.12") == "lo"
    assert N.interface_of(facts, "10.9.9.9") is None
    assert N.interface_of(facts, "bad") is None and N.interface_of({}, "10.0.0.1") is None


# --- resolve() and launch() -----------------------------------------------------------------------------

def test_the_group_s_first_host_is_the_head():
    nodes = {"group": "qwen_big", "head": None, "master_port": 29500}
    head = N.resolve(nodes, "gpu-01", GROUPS, ADDRESSES)
    worker = N.resolve(nodes, "gpu-02", GROUPS, ADDRESSES)
    assert head["errors"] == [] and worker["errors"] == []
    assert head["node"]["rank"] == 0 and worker["node"]["rank"] == 1
    assert worker["node"]["master_addr"] == "10.20.0.11" and worker["node"]["address"] == "10.20.0.12"
    assert N.launch(head["node"]) == {
        "args": ["--nnodes", "2", "--node-rank", "0", "--master-addr", "10.20.0.11", "--master-port", "29500"],
        "env": {"VLLM_HOST_IP": "10.20.0.11"}, "headless": False}
    assert N.launch(worker["node"])["args"][-1] == "--headless"


def test_a_named_head_is_rank_0_and_its_address_the_master():
    nodes = {"group": "qwen_big", "head": "gpu-02", "master_port": 29511}
    found = N.resolve(nodes, "gpu-01", GROUPS, ADDRESSES)["node"]
    assert found["hosts"] == ["gpu-02", "gpu-01"] and found["rank"] == 1 and found["master_addr"] == "10.20.0.12"


def test_the_interface_of_the_node_address_is_gloo_s_and_nccl_s():
    facts = network_facts()
    node = N.resolve({"group": "g", "head": None, "master_port": 29500}, "b", {"g": ["a", "b"]},
                     {"a": "127.0.0.11", "b": "127.0.0.12"}, facts, test_host=True)["node"]
    assert N.launch(node)["env"] == {"VLLM_HOST_IP": "127.0.0.12", "GLOO_SOCKET_IFNAME": "lo",
                                     "NCCL_SOCKET_IFNAME": "lo"}


@pytest.mark.parametrize("hostname, groups, nodes, addresses, says", [
    ("gpu-01", GROUPS, {"group": "nope"}, ADDRESSES, "is no inventory group with hosts"),
    ("gpu-09", GROUPS, {"group": "qwen_big"}, ADDRESSES, "does not hold this host (gpu-09)"),
    ("gpu-09", GROUPS, {"group": "lonely"}, ADDRESSES, "has one host (gpu-09)"),
    ("gpu-01", GROUPS, {"group": "qwen_big", "head": "gpu-09"}, ADDRESSES, "head=gpu-09 is not a host of group"),
    ("gpu-01", GROUPS, {"group": "qwen_big"}, dict(ADDRESSES, **{"gpu-02": "10.20.0.11"}),
     "both have the address 10.20.0.11: VLLM_HOST_IP must be unique per node"),
    ("gpu-01", GROUPS, {"group": "qwen_big"}, dict(ADDRESSES, **{"gpu-02": "54.1.2.3"}), "not a private address"),
    ("gpu-01", GROUPS, {"group": "qwen_big"}, {"gpu-01": "10.20.0.11"}, "gpu-02 has no vllm_serve_node_address"),
])
def test_resolve_problems(hostname, groups, nodes, addresses, says):
    nodes = dict({"head": None, "master_port": 29500}, **nodes)
    found = N.resolve(nodes, hostname, groups, addresses)
    assert found["node"] is None
    assert any(says in message and "Fix:" in message for message in found["errors"]), found["errors"]


@SETTINGS
@given(st.lists(st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True), min_size=2, max_size=8, unique=True),
       st.data())
def test_ranks_are_a_permutation_with_one_head(hosts, data):
    head = data.draw(st.sampled_from(hosts + [None]))
    addresses = dict((host, "10.1.0.%d" % (index + 1)) for index, host in enumerate(hosts))
    nodes = {"group": "g", "head": head, "master_port": 29500}
    found = [N.resolve(nodes, host, {"g": hosts}, addresses)["node"] for host in hosts]
    assert sorted(node["rank"] for node in found) == list(range(len(hosts)))
    heads = [node for node in found if not N.launch(node)["headless"]]
    assert len(heads) == 1 and heads[0]["rank"] == 0 and heads[0]["address"] == found[0]["master_addr"]
    assert (head or hosts[0]) == found[0]["head"]
    assert all(N.launch(node)["env"]["VLLM_HOST_IP"] == addresses[host] for node, host in zip(found, hosts))


# --- world_problems() -------------------------------------------------------------------------------------

def test_world_size_is_the_node_set_times_the_nodes():
    assert N.world_problems("big", "p", 4, 2, 1, [0, 1, 2, 3], 2) == []
    [problem] = N.world_problems("big", "p", 4, 2, 1, [0, 1], 2)
    assert "is 8 GPU(s), but 2 node(s) with 2 GPU(s) each (gpus) have 4" in problem and "list 4 GPU(s)" in problem
    [problem] = N.world_problems("big", "p", 3, 1, 1, [0], 2)
    assert "the 2 nodes of the deployment do not divide" in problem
    assert N.world_problems("big", "p", 1, 2, 1, None, 2, test_host=True) == []
    assert "p.gpus is not set" in N.world_problems("big", "p", 1, 2, 1, None, 2)[0]


@SETTINGS
@given(st.integers(1, 8), st.integers(1, 4), st.integers(1, 4), st.integers(1, 8), st.integers(1, 8))
def test_world_problem_exactly_when_the_product_differs(tp, pp, dp, per_node, nnodes):
    problems = N.world_problems("s", "p", tp, pp, dp, list(range(per_node)), nnodes)
    assert bool(problems) == (tp * pp * dp != per_node * nnodes)


# --- host_services(): the service of every node -------------------------------------------------------------

def test_every_node_gets_its_flags_the_head_alone_serves_the_api():
    head, worker = listed("gpu-01"), listed("gpu-02")
    assert head["errors"] == [] and worker["errors"] == []
    head_vars, worker_vars = head["services"][0]["vars"], worker["services"][0]["vars"]
    assert head_vars["vllm_serve_extra_args"][-8:] == ["--nnodes", "2", "--node-rank", "0", "--master-addr",
                                                       "10.20.0.11", "--master-port", "29500"]
    assert worker_vars["vllm_serve_extra_args"][-1] == "--headless"
    assert worker_vars["vllm_serve_env"]["VLLM_HOST_IP"] == "10.20.0.12"
    assert worker_vars["vllm_serve_env"]["CUDA_VISIBLE_DEVICES"] == "0,1,2,3"
    assert head["contract"][0]["router"] is True and head["contract"][0]["headless"] is False
    contract = worker["contract"][0]
    assert contract["router"] is False and contract["headless"] is True and contract["router_server"] is None
    assert contract["node"] == {"group": "qwen_big", "rank": 1, "nnodes": 2, "head": "gpu-01",
                                "address": "10.20.0.12"}
    # The routers and Prometheus take the head only.
    backends = S.router_backends({"gpu-01": {"services": head["contract"]}, "gpu-02": {"services": worker["contract"]}})
    assert [one["host"] for one in backends["Qwen/Qwen3-32B"]] == ["gpu-01"]


def test_sizes_against_the_nodes_gpus():
    found = listed("gpu-01", [item(gpus=[0, 1])])
    assert any("is 8 GPU(s), but 2 node(s) with 2 GPU(s) each" in message for message in found["errors"])
    found = listed("gpu-01", [item(tensor_parallel_size=None)])
    assert any("tensor_parallel_size is not set; a deployment across hosts needs it" in m for m in found["errors"])


def test_the_model_fit_judges_every_node_s_gpus():
    # Qwen3-32B at TP 4 x PP 2 over two nodes of 4 H200s fits; on one host of 4 the same sizes would not start.
    assert listed("gpu-01")["errors"] == []
    fit = {"inputs": {"max_model_len": 8192, "gpu_memory_utilization": 0.9, "preset": "none"}}
    assert S.problems([dict(S.services([item()], SINGLE)["services"][0],
                            node={"nnodes": 2, "rank": 0})], h200_host(4), fit) == []


@pytest.mark.parametrize("over, says", [
    ({"extra_args": ["--nnodes", "2"]}, "extra_args has --nnodes, which the role sets"),
    ({"extra_args": ["--master-addr=10.0.0.1"]}, "extra_args has --master-addr=10.0.0.1"),
    ({"env": {"VLLM_HOST_IP": "10.0.0.1"}}, "env.VLLM_HOST_IP is set by the role for each node"),
])
def test_the_role_s_node_flags_are_refused_elsewhere(over, says):
    found = S.services([item(**over)], SINGLE)
    assert any(says in message and "Fix:" in message for message in found["errors"]), found["errors"]


def test_a_cpu_only_test_host_serves_without_a_gpu_set():
    single = dict(SINGLE, cpu_only_test_host=True)
    one = item(gpus=None, tensor_parallel_size=1, pipeline_parallel_size=2, nodes={"group": "g"})
    found = S.host_services([one], single, {}, "b", nodes={"groups": {"g": ["a", "b"]},
                                                           "addresses": {"a": "127.0.0.11", "b": "127.0.0.12"}})
    assert found["errors"] == []
    assert found["services"][0]["vars"]["vllm_serve_extra_args"][-1] == "--headless"
    found = S.host_services([dict(one, pipeline_parallel_size=3)], single, {}, "b",
                            nodes={"groups": {"g": ["a", "b"]}, "addresses": {"a": "127.0.0.11", "b": "127.0.0.12"}})
    assert any("do not divide" in message for message in found["errors"])


# --- the plan of a node -----------------------------------------------------------------------------------

def plan_inputs(node, host="0.0.0.0"):
    return {"model": "Qwen/Qwen3-32B", "served_model_name": "big", "service_name": "vllm-big", "models_dir": "/m",
            "model_dir": "", "venv": "/opt/v", "command": [], "mode": "systemd", "host": host, "port": 8000,
            "tensor_parallel_size": 4, "pipeline_parallel_size": 2, "gpu_memory_utilization": 0.9,
            "max_model_len": 8192, "enforce_eager": False, "extra_args": [], "preset": "none", "env": {},
            "user": "vllm", "group": "vllm", "config_dir": "/etc/v", "cache_dir": "/var/cache/v", "log_dir": "/var/log/v",
            "restart_sec": 10, "start_limit_burst": 5, "start_limit_interval": 600, "supervisor_venv": "/opt/s",
            "supervisor_version": "4.3.0", "supervisor_run_dir": "/run/s", "supervisor_start_retries": 3,
            "supervisor_wheelhouse": "", "supervisor_wheelhouse_dest": "", "health_timeout": 600, "health_poll": 5,
            "health_tokens": 4, "gpu_wait_timeout": 60, "benchmark": True, "benchmark_when": "changed",
            "benchmark_num_prompts": 10, "benchmark_input_len": 8, "benchmark_output_len": 8, "benchmark_seed": 0,
            "benchmark_request_rate": "inf", "benchmark_thresholds": {}, "benchmark_fail_on_miss": False,
            "benchmark_dir": "/var/lib/v", "benchmark_command": [], "cpu_only_test_host": False, "hostname": "gpu-02",
            "node": node}


def test_the_plan_of_a_headless_node_checks_the_head_and_runs_no_benchmark():
    node = N.resolve({"group": "qwen_big", "head": None, "master_port": 29500}, "gpu-02", GROUPS, ADDRESSES)["node"]
    plan = vllm_serve.plan(plan_inputs(node), facts=h200_host(4))
    assert plan["headless"] is True and plan["health"]["headless"] is True
    assert plan["health"]["url"] == "http://10.20.0.11:8000"
    assert plan["benchmark"]["enabled"] is False
    # The serving checks see the GPUs of both nodes: TP 4 x PP 2 on a host of 4.
    assert plan["gpu_count"] == 8 and len(plan["gpu_memory_mib"]) == 8
    assert not any("needs 8 GPUs" in message for message in plan["errors"]), plan["errors"]
    # A head bound to one address is checked there.
    assert vllm_serve.plan(plan_inputs(node, host="127.0.0.1"), facts=h200_host(4))["health"]["url"] == \
        "http://127.0.0.1:8000"


def test_the_plan_of_the_head_and_of_one_host():
    node = N.resolve({"group": "qwen_big", "head": None, "master_port": 29500}, "gpu-01", GROUPS, ADDRESSES)["node"]
    plan = vllm_serve.plan(dict(plan_inputs(node), hostname="gpu-01"), facts=h200_host(4))
    assert plan["headless"] is False and plan["health"]["headless"] is False and plan["benchmark"]["enabled"]
    alone = vllm_serve.plan(plan_inputs(None), facts=h200_host(4))
    assert alone["node"] is None and alone["gpu_count"] == 4
    assert any("needs 8 GPUs, but the host has 4" in message for message in alone["errors"])


# --- across(): every node before any start -------------------------------------------------------------------

def checked(commit="abc", model_dir="/m/Qwen--Qwen3-32B", version="0.32.0", visible="0,1,2,3"):
    return [{"plan": {"service": "vllm-big", "model_dir": model_dir, "env": {"CUDA_VISIBLE_DEVICES": visible}},
             "seen": {"model": {"manifest": {"commit": commit}}, "vllm": {"version": version}}}]


NODE = {"group": "qwen_big", "hosts": ["gpu-01", "gpu-02"]}


def test_across_passes_when_every_node_matches():
    assert N.across("vllm-big", NODE, {"gpu-01": checked(), "gpu-02": checked()}) == []


@pytest.mark.parametrize("second, says", [
    (None, "gpu-02 is node 1 of the deployment vllm-big (group qwen_big) but stopped before its gate"),
    ([], "gpu-02 is in group qwen_big but does not list the service vllm-big"),
    (checked(commit=""), "the model of vllm-big is not fetched on gpu-02"),
    (checked(commit="def"), "differ in the model's commit: gpu-01 abc; gpu-02 def"),
    (checked(model_dir="/other"), "differ in the model's path"),
    (checked(version="0.31.0"), "differ in vLLM's version"),
    (checked(visible="0,1"), "differ in the GPU count"),
])
def test_across_names_the_node_and_the_fix(second, says):
    found = N.across("vllm-big", NODE, {"gpu-01": checked(), "gpu-02": second})
    assert any(says in message and "Fix:" in message for message in found), found


def test_across_refuses_a_batch_that_splits_the_nodes():
    found = N.across("vllm-big", NODE, {"gpu-01": checked(), "gpu-02": checked()}, batch=["gpu-01"])
    assert len(found) == 1 and "gpu-02 is node 1 of the deployment vllm-big (group qwen_big) but not in this batch" \
        in found[0] and "Fix: set llm_stack_serial to 2 or more" in found[0]
    assert N.across("vllm-big", NODE, {"gpu-01": checked(), "gpu-02": checked()}, batch=["gpu-02", "gpu-01"]) == []


def test_across_names_why_a_node_is_missing():
    found = N.across("vllm-big", NODE, {"gpu-01": checked()}, batch=["gpu-01"], play_hosts=["gpu-01"])
    assert len(found) == 1 and "not a host of this run (left out by --limit" in found[0]
    found = N.across("vllm-big", NODE, {"gpu-01": checked(), "gpu-02": None}, batch=["gpu-01", "gpu-02"],
                     play_hosts=["gpu-01", "gpu-02"])
    assert len(found) == 1 and "stopped before its gate in this run (it failed earlier" in found[0]


def test_a_change_of_any_node_restarts_every_node():
    nodes = {"group": "qwen_big", "head": None, "master_port": 29500}
    node = N.resolve(nodes, "gpu-01", GROUPS, ADDRESSES)["node"]
    moved = N.resolve(nodes, "gpu-01", GROUPS, dict(ADDRESSES, **{"gpu-02": "10.20.0.99"}))["node"]
    assert node["addresses"] == ["10.20.0.11", "10.20.0.12"]
    head = dict(plan_inputs(node), hostname="gpu-01")
    # The head's own flags and address are the same; the worker's address moved.
    assert vllm_serve.plan(head, facts=h200_host(4))["argv"] == \
        vllm_serve.plan(dict(head, node=moved), facts=h200_host(4))["argv"]
    assert vllm_serve.plan(head, facts=h200_host(4))["fingerprint"] != \
        vllm_serve.plan(dict(head, node=moved), facts=h200_host(4))["fingerprint"]


def test_a_node_waits_for_its_own_gpu_set_and_binds_where_the_others_reach_it():
    node = N.resolve({"group": "qwen_big", "head": None, "master_port": 29500}, "gpu-02", GROUPS, ADDRESSES)["node"]
    inputs = dict(plan_inputs(node), env={"CUDA_VISIBLE_DEVICES": "4,5,6,7"})
    assert vllm_serve.plan(inputs, facts=h200_host(8))["gpu_wait"]["gpus"] == [4, 5, 6, 7]
    plan = vllm_serve.plan(dict(inputs, host="127.0.0.1"), facts=h200_host(8))
    assert any("vllm_serve_host=127.0.0.1 on a node of a deployment across hosts" in m for m in plan["errors"])
    test_path = vllm_serve.plan(dict(inputs, host="127.0.0.1", cpu_only_test_host=True), facts=h200_host(8))
    assert not any("on a node of a deployment" in m for m in test_path["errors"])


def test_the_flags_of_the_list_the_service_runs_any_spelling():
    found = S.services([item(extra_args=None)], dict(SINGLE, extra_args=["--node_rank", "1"]))
    assert any(m.startswith("vllm_serve_extra_args has --node_rank, which the role sets") for m in found["errors"])


def test_the_master_port_is_no_other_service_s_port():
    one = item(name="a", port=8000, nodes={"group": "qwen_big", "master_port": 8001})
    two = item(name="b", port=8001, gpus=[4, 5, 6, 7], nodes=None, tensor_parallel_size=4, pipeline_parallel_size=1)
    found = S.problems(S.services([one, two], SINGLE)["services"], h200_host(8))
    assert any("nodes.master_port=8001 is also" in message for message in found), found
