# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vllm_serve filters are thin: plans and env files from module_utils, bad shapes as filter errors."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.llm_stack.plugins.filter import vllm_serve as F


def test_filters_listed():
    assert set(F.FilterModule().filters()) == {"vllm_serve_plan", "vllm_serve_env_file"}


def test_plan_and_env_file():
    plan = F.vllm_serve_plan({"model": "Qwen/Qwen3-tiny", "user": "vllm", "port": 8000, "config_dir": "/etc/x",
                              "cache_dir": "/c", "log_dir": "/l", "benchmark_dir": "/b", "prefix_venv": "/v"},
                             facts={}, info={"pid1": "sleep"}, api_key="k-1")
    assert plan["mode"] == "supervisord" and plan["service"] == "vllm-qwen-qwen3-tiny"
    assert "k-1" not in str(plan)
    assert "VLLM_API_KEY='k-1'" in F.vllm_serve_env_file(plan, "k-1")


def test_bad_shapes_are_filter_errors():
    with pytest.raises(AnsibleFilterError, match="vllm_serve_plan: unknown input"):
        F.vllm_serve_plan({"nope": 1})
    with pytest.raises(AnsibleFilterError, match="vllm_serve_env_file"):
        F.vllm_serve_env_file({}, "k")
