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


def run_action(args, hostvars=None):
    task = mock.MagicMock()
    task.args = dict(args)
    task.check_mode = False
    task.async_val = 0
    task.diff = False
    action = action_mod.ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=None)
    action._execute_module = mock.MagicMock(side_effect=AssertionError("no module may be sent"))
    return action.run(task_vars={"hostvars": hostvars if hostvars is not None else HOSTVARS,
                                 "groups": {"llm_cache": ["cache-9"]}})


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
