# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The counting and splitting parts of the AWX sliced-run test (tests/awx/sliced_run.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "awx"))
sliced_run = pytest.importorskip("sliced_run")

COMMIT = "ebb87bd28a026ee5f72dd43368fc55bf866b1a5e"


def test_slices_split_hosts_as_awx_job_slicing_does():
    hosts = ["a", "b", "c", "d", "e"]
    assert sliced_run.slices(hosts, 3) == [["a", "d"], ["b", "e"], ["c"]]
    assert sliced_run.slices(hosts, 2) == [["a", "c", "e"], ["b", "d"]]
    assert sorted(sum(sliced_run.slices(hosts, 4), [])) == hosts


def test_hub_gets_counts_each_upstream_file_transfer(tmp_path):
    log = tmp_path / "hub-access.log"
    log.write_text(
        '127.0.0.1 - "GET /Qwen/Qwen3.5-0.8B/resolve/%s/config.json HTTP/1.1" 200\n'
        '127.0.0.1 - "HEAD /Qwen/Qwen3.5-0.8B/resolve/%s/config.json HTTP/1.1" 200\n'
        '127.0.0.1 - "GET /Qwen/Qwen3.5-0.8B/resolve/%s/model-00001-of-00005.safetensors HTTP/1.1" 200\n'
        '127.0.0.1 - "GET /Qwen/Qwen3.5-0.8B/resolve/%s/config.json HTTP/1.1" 200\n'
        '127.0.0.1 - "GET /api/models/Qwen/Qwen3.5-0.8B/revision/main HTTP/1.1" 200\n' % ((COMMIT,) * 4))
    gets = sliced_run.hub_gets(str(log), "Qwen/Qwen3.5-0.8B")
    assert gets == {(COMMIT, "config.json"): 2, (COMMIT, "model-00001-of-00005.safetensors"): 1}
    assert not sliced_run.hub_gets(str(tmp_path / "missing.log"), "Qwen/Qwen3.5-0.8B")


def test_build_results_and_report_summaries_read_every_job():
    results = [
        {"results": {"h1": {"flash_attn_build_result": {"build_key": "k1", "compiled": True}}},
         "set_stats": {"llm_stack_fleet_report": {"summary": {"compiles": 1, "build_keys": {"flash_attn": ["k1"]}}}}},
        {"results": {"h2": {"flash_attn_build_result": {"build_key": "k1", "compiled": False}},
                     "h3": {"torch_result": {}}},
         "set_stats": {}},
    ]
    assert sorted(sliced_run.build_results(results)) == ["h1", "h2"]
    summaries = sliced_run.report_summaries(results)
    assert [s["compiles"] for s in summaries] == [1]


def test_the_pared_inventory_holds_only_the_slice():
    inventory = {
        "_meta": {"hostvars": {"a": {"x": 1}, "b": {}, "cache": {"y": 2}}},
        "all": {"children": ["gpu", "llm_cache", "ungrouped"], "vars": {"v": 1}},
        "gpu": {"hosts": ["a", "b"]},
        "llm_cache": {"hosts": ["cache"]},
    }
    pared = sliced_run.pared_inventory(inventory, ["a"])
    assert pared["gpu"]["hosts"] == ["a"]
    assert pared["llm_cache"]["hosts"] == []
    assert list(pared["_meta"]["hostvars"]) == ["a"]
    assert pared["all"]["vars"] == {"v": 1}
    assert inventory["gpu"]["hosts"] == ["a", "b"]
