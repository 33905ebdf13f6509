# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The build environment flash-attn's and vLLM's builds share (module_utils/_build_env.py): one arch list in force,
one CUDA_HOME, one jobs rule."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _build_env as B
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import flash_attn as F
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm as V

PREFLIGHT = {"llm_stack_host": {"arch_list": "9.0a;8.0+PTX", "arch_list_source": "inventory"}}


def test_one_arch_list_in_force_for_both_builds():
    # flash-attn takes the text as given (its plan parses it); vLLM's build the caps as TORCH_CUDA_ARCH_LIST
    assert F.arch_in_force is B.arch_in_force
    assert B.arch_in_force("", PREFLIGHT) == ("9.0a;8.0+PTX", "preflight")
    assert B.arch_in_force("", PREFLIGHT, normalize=True) == ("8.0;9.0", "preflight")
    assert B.arch_in_force("8.6 9.0", {}, normalize=True) == ("8.6;9.0", "variable")
    assert B.arch_in_force("bogus", {}, normalize=True) == ("bogus", "variable")
    assert B.arch_in_force(None, {"gpu_compute_caps": ["9.0", "8.0"]}, normalize=True) == ("8.0;9.0", "gpus")
    assert B.arch_in_force("", {}, normalize=True) == ("", "")


def test_cuda_home_names_the_variable_of_the_override():
    assert B.cuda_home("/opt/cuda") == ("/opt/cuda", "flash_attn_build_cuda_home")
    assert B.cuda_home(" /opt/cuda ", variable="vllm_source_cuda_home") == ("/opt/cuda", "vllm_source_cuda_home")
    assert B.cuda_home("", {}, None, "13.0.2") == ("/usr/local/cuda", "default")


def test_plan_jobs_is_the_rule_of_both_builds():
    plan = {"environment": {"A": "1"}, "gb_per_nvcc_thread": 0, "max_jobs": 0, "nvcc_threads": 0}
    facts = {"processor_vcpus": 16, "memory_mb": {"nocache": {"free": 128410}}}
    job = B.plan_jobs(plan, facts, 8.0, 2)
    assert (job["max_jobs"], job["nvcc_threads"]) == B.jobs(16, 125.4, 8.0, 2) == (7, 2)
    assert job["environment"] == {"A": "1", "MAX_JOBS": "7", "NVCC_THREADS": "2"} and plan["environment"] == {"A": "1"}
    assert job["line"] == "MAX_JOBS=7 NVCC_THREADS=2 (16 vCPUs, 125.4 GB available, 8.0 GB per nvcc thread)"


def test_vllm_does_not_import_flash_attn():
    source = V.__file__
    for name in os.listdir(os.path.dirname(source)):
        if name == "vllm.py" or name.startswith("_vllm_"):
            with open(os.path.join(os.path.dirname(source), name)) as handle:
                assert "flash_attn" not in "".join(line for line in handle if "import" in line), name
