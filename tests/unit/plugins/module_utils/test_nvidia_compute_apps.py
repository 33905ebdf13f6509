# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvidia.parse_compute_apps on real output of an H200 (driver 580.159.04, tests/fixtures/vllm_serve/README.md):
two torch processes, and none (empty output, exit code 0)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import nvidia

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "..", "fixtures", "vllm_serve")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def test_the_captures():
    assert nvidia.parse_compute_apps(fixture("compute-apps-h200-two.csv")) == [
        {"pid": 480, "used_mib": 1542}, {"pid": 481, "used_mib": 2566}]
    assert nvidia.parse_compute_apps(fixture("compute-apps-h200-none.csv")) == []


def test_the_query():
    assert nvidia.compute_apps_args() == ["--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"]


def test_values_with_their_unit_as_without_nounits():
    """The used_gpu_memory column of compute-apps-h200-header.csv, as --format=csv prints it: '1542 MiB'."""
    rows = fixture("compute-apps-h200-header.csv").splitlines()[1:]
    text = "\n".join("%s, %s" % (row.split(", ")[0], row.split(", ")[2]) for row in rows)
    assert nvidia.parse_compute_apps(text) == [{"pid": 480, "used_mib": 1542}, {"pid": 481, "used_mib": 2566}]


@pytest.mark.parametrize("value", ["[N/A]", "[Not Supported]", "N/A"])
def test_no_value(value):
    assert nvidia.parse_compute_apps("480, %s\n" % value) == [{"pid": 480, "used_mib": None}]


@pytest.mark.parametrize("bad", ["480", "480, 1542, x", "pid, used_memory", "-1, 5", "480, lots",
                                 "480, 1.5"])
def test_other_lines_are_refused(bad):
    with pytest.raises(ValueError):
        nvidia.parse_compute_apps(bad + "\n")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4194304), st.one_of(st.none(), st.integers(0, 10 ** 7))), max_size=16))
def test_reads_back_what_nvidia_smi_prints(rows):
    text = "".join("%d, %s\n" % (pid, "[N/A]" if used is None else used) for pid, used in rows)
    assert nvidia.parse_compute_apps(text) == [{"pid": pid, "used_mib": used} for pid, used in rows]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_reads_or_refuses_anything(text):
    try:
        apps = nvidia.parse_compute_apps(text)
    except ValueError:
        return
    assert all(isinstance(app["pid"], int) for app in apps)
