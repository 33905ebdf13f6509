# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host's GPUs as the roles read them (host_gpus filter), on the H200's real gpu_facts and contract."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.llm_stack.plugins.filter.host_gpus import FilterModule
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import flash_attn
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.host_gpus import gpus_known, host_gpus

FILTER = FilterModule().filters()["host_gpus"]
# gpu_facts on the H200 host (docs/validation/h200.md item 6)
H200_FACTS = {"gpu_count": 1, "gpu_compute_caps": ["9.0"], "gpu_driver_version": "580.159.04", "gpu_error": None,
              "gpu_devices": [{"index": 0, "name": "NVIDIA H200", "compute_cap": "9.0", "memory_total_mib": 143771}]}
H200 = {"count": 1, "compute_caps": ["9.0"], "driver_version": "580.159.04", "memory_mib": [143771]}


def test_gpu_facts_without_preflight():
    assert FILTER(H200_FACTS) == H200


def test_preflights_contract_wins_over_the_facts():
    contract = {"llm_stack_host": {"gpu": {"count": 8, "compute_caps": ["8.0"], "driver_version": "550.127.05",
                                           "memory_mib": [81920] * 8}}}
    assert host_gpus(dict(H200_FACTS, **contract)) == {"count": 8, "compute_caps": ["8.0"],
                                                       "driver_version": "550.127.05", "memory_mib": [81920] * 8}
    # a contract without GPUs (a build host) is no GPUs, whatever facts a module left
    assert host_gpus(dict(H200_FACTS, llm_stack_host={"gpu": {"count": 0, "compute_caps": []}})) == {
        "count": 0, "compute_caps": [], "driver_version": None, "memory_mib": []}


@pytest.mark.parametrize("facts", [{}, {"gpu_count": None}, {"gpu_count": "x", "gpu_compute_caps": "9.0"},
                                   {"llm_stack_host": {"gpu": None}}])
def test_no_or_broken_gpu_facts_are_no_gpus(facts):
    assert host_gpus(facts) == {"count": 0, "compute_caps": [], "driver_version": None, "memory_mib": []}


def test_flash_attn_reads_the_same():
    assert flash_attn.host_gpus(H200_FACTS) == (1, ["9.0"])


@pytest.mark.parametrize("facts, known", [
    ({}, False), ({"env": {"PATH": "/usr/bin"}}, False), (H200_FACTS, True), ({"gpu_count": 0}, True),
    ({"llm_stack_host": {"gpu": {"count": 0}}}, True)])
def test_gpus_known(facts, known):
    """A role reads the GPUs itself only where neither preflight's contract nor a GPU reading is in the facts."""
    assert gpus_known(facts) is known


def test_not_facts():
    with pytest.raises(AnsibleFilterError):
        FILTER(["9.0"])
