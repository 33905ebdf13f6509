# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet_report action reads hostvars, writes report.json and report.md, and rewrites nothing unchanged."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
from unittest import mock

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.gpufleet.llm_stack.plugins.action import fleet_report as action_mod

HOSTVARS = {
    "gpu-1": {
        "ansible_facts": {"llm_stack_host": {"ok": True, "errors": [], "arch_list": "9.0"}},
        "llm_stack_phases_done": ["preflight", "model"],
        "qwen_model_fetch_result": {"repo_id": "Qwen/Qwen3.5-9B", "revision": "main", "commit": "c" * 40,
                                    "files_downloaded": 3, "bytes_downloaded": 300},
        "unrelated": "ignored",
    },
    "gpu-2": {"ansible_facts": {}},
}


def run_action(args, hostvars=None, groups=None):
    task = mock.MagicMock()
    task.args = dict(args)
    task.check_mode = False
    task.async_val = 0
    task.diff = False
    action = action_mod.ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=None)
    action._execute_module = mock.MagicMock(side_effect=AssertionError("no module may be sent"))
    return action.run(task_vars={"hostvars": hostvars if hostvars is not None else HOSTVARS,
                                 "groups": groups if groups is not None else {"llm_cache": ["cache-9"]}})


def test_reads_hostvars_and_writes_both_forms(tmp_path):
    dest = tmp_path / "report"
    result = run_action({"hosts": ["gpu-1", "gpu-2", "gpu-3"], "phases": ["preflight", "model"],
                         "dest": str(dest), "cache_host": "cache-1"})
    assert result["changed"] is False
    hosts = result["report"]["hosts"]
    assert hosts["gpu-1"]["state"] == "installed"
    assert hosts["gpu-1"]["model"]["bytes_downloaded"] == 300
    assert hosts["gpu-2"]["state"] == "unreachable"
    assert hosts["gpu-3"]["state"] == "unreachable"
    assert json.loads((dest / "report.json").read_text()) == result["report"]
    assert (dest / "report.md").read_text() == result["markdown"]
    assert sorted(result["written"]) == [str(dest / "report.json"), str(dest / "report.md")]
    again = run_action({"hosts": ["gpu-1", "gpu-2", "gpu-3"], "phases": ["preflight", "model"],
                        "dest": str(dest), "cache_host": "cache-1"})
    assert again["written"] == []


def test_records_instead_of_hostvars():
    result = run_action({"hosts": ["gpu-1"], "records": {"gpu-1": {"phases_done": ["preflight"],
                                                                   "llm_stack_host": {"ok": True}}},
                         "phases": ["preflight"]}, hostvars={})
    assert result["summary"]["states"]["installed"] == 1
    assert result["json_path"] is None


def test_unknown_phase_is_refused():
    with pytest.raises(AnsibleActionFail, match="unknown phase"):
        run_action({"hosts": ["gpu-1"], "phases": ["nonsense"]})


def test_cache_host_defaults_to_the_first_of_llm_cache():
    assert run_action({"hosts": ["gpu-1"]})["report"]["cache_host"] == "cache-9"
    assert run_action({"hosts": ["gpu-1"], "cache_host": "cache-1"})["report"]["cache_host"] == "cache-1"


def serving_hostvars():
    """A host with two services, and the routers: router-1 lists one of them, router-2 did not run llm_router."""
    services = [
        {"service": "vllm-qwen", "name": "qwen", "endpoint": "http://127.0.0.1:8000", "bind": "0.0.0.0", "port": 8000,
         "gpus": [0], "model": "/srv/m/qwen", "served_model_name": "qwen", "tensor_parallel_size": 1,
         "router_server": "gpu-1_qwen", "routers": ["router-1", "router-2"], "healthy": True, "gpu_others": [],
         "benchmark": None},
        {"service": "vllm-embed", "name": "embed", "endpoint": "http://127.0.0.1:8001", "bind": "0.0.0.0",
         "port": 8001, "gpus": [1], "model": "/srv/m/embed", "served_model_name": "embed",
         "tensor_parallel_size": 1, "router_server": "gpu-1_embed", "routers": ["router-1", "router-2"],
         "healthy": True, "gpu_others": [], "benchmark": None}]
    return {
        "gpu-1": {"ansible_facts": {"llm_stack_host": {"ok": True, "errors": []}},
                  "llm_stack_phases_done": ["preflight", "serve"],
                  "vllm_serve_result": services[0], "vllm_serve_results": services},
        "router-1": {"llm_router_result": {"endpoint": "http://router-1:8080", "healthy": True,
                                           "models": {"qwen": ["gpu-1_qwen"]}}},
        "router-2": {},
    }


def test_reads_the_services_and_the_routers_of_group_llm_router():
    result = run_action({"hosts": ["gpu-1"], "phases": ["preflight", "serve"]}, hostvars=serving_hostvars(),
                        groups={"llm_router": ["router-1", "router-2", "router-3"]})
    summary = result["summary"]
    assert result["report"]["hosts"]["gpu-1"]["state"] == "served"
    assert [(one["service"], one["routers"]) for one in summary["services"]] == [
        ("vllm-qwen", {"router-1": "listed", "router-2": "not run", "router-3": "not run"}),
        ("vllm-embed", {"router-1": "not in router", "router-2": "not run", "router-3": "not run"})]
    assert [(r["host"], r["healthy"]) for r in summary["routers"]] == [
        ("router-1", True), ("router-2", None), ("router-3", None)]
    assert "## Routers" in result["markdown"]
    # No group llm_router: no routers, each service's own routers not run.
    summary = run_action({"hosts": ["gpu-1"], "phases": ["preflight", "serve"]}, hostvars=serving_hostvars(),
                         groups={})["summary"]
    assert summary["routers"] == []
    assert summary["services"][0]["routers"] == {"router-1": "not run", "router-2": "not run"}


def test_routers_instead_of_hostvars():
    routers = {"router-7": {"endpoint": "http://r7:8080", "healthy": True, "models": {"qwen": ["gpu-1_qwen"]}}}
    result = run_action({"hosts": ["gpu-1"], "phases": ["preflight", "serve"], "routers": routers},
                        hostvars=serving_hostvars(), groups={"llm_router": ["router-1"]})
    assert [r["host"] for r in result["summary"]["routers"]] == ["router-7"]
    assert result["summary"]["services"][0]["routers"] == {
        "router-1": "not run", "router-2": "not run", "router-7": "listed"}
