# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The torch role's step around its reading: torch_info's options, the gate's options and the verdict."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import torch_state as T

H200_FACTS = {"gpu_count": 1, "gpu_compute_caps": ["9.0"], "gpu_driver_version": "580.95.05"}
PREFLIGHT = {"llm_stack_host": {"gpu": {"count": 2, "compute_caps": ["8.0", "9.0"], "driver_version": "570.86.15"}},
             "gpu_count": 1, "gpu_compute_caps": ["7.5"]}


def test_reading_options_take_the_gpus_from_the_play():
    options = T.reading_options({"venv": "/v", "wheelhouse": None, "import_torch": False}, H200_FACTS)
    assert options == {"venv": "/v", "import_torch": False, "set_facts": False, "read_gpus": False, "gpu_count": 1,
                       "compute_caps": ["9.0"], "driver_version": "580.95.05"}
    # preflight's report wins over the GPU facts
    assert T.reading_options({"venv": "/v"}, PREFLIGHT)["compute_caps"] == ["8.0", "9.0"]


def test_reading_options_read_the_gpus_where_the_play_has_none():
    assert T.reading_options({"venv": "/v"}, {}) == {"venv": "/v", "set_facts": False, "read_gpus": True}
    # no driver known: none is passed
    assert "driver_version" not in T.reading_options({"venv": "/v"}, {"gpu_count": 0, "gpu_compute_caps": []})


def test_reading_options_in_preflight_import_no_torch_and_read_no_record():
    options = T.reading_options({"venv": "/v", "use_record": True}, H200_FACTS, collect=True)
    assert (options["import_torch"], options["use_record"]) == (False, False)
    plain = T.reading_options({"venv": "/v"}, H200_FACTS, collect=False)
    assert "import_torch" not in plain and "use_record" not in plain


@pytest.mark.parametrize("wheelhouse, source", [("/ctl/wheelhouse", "wheelhouse"), ("", "index"), (None, "index")])
def test_pip_source_and_the_readings_wheelhouse_follow_the_controllers_wheelhouse(wheelhouse, source):
    gate = {"torch_wheelhouse": wheelhouse}
    assert T.pip_source(gate) == source
    assert T.pip_source({}) == "index"
    assert T.reading_wheelhouse(gate, "/opt/wheelhouse") == ("/opt/wheelhouse" if source == "wheelhouse" else None)


def test_fail_as_is_empty_in_preflight():
    assert T.fail_as("torch on h", collect=True) == ""
    assert T.fail_as("torch on h", collect=False) == "torch on h"
    assert T.fail_as("torch on h") == "torch on h"


def test_gate_options_come_from_the_facts_and_the_reading():
    reading = {"interpreter": {"found": True, "version": "3.12.3"}, "venv": {"python_version": "3.12.3"}}
    options = T.gate_options({"cuda_version": "13.0.2", "torch_venv": "/v", "torch_wheelhouse": None}, H200_FACTS,
                             reading, " torch on h ")
    assert options == {"cuda_version": "13.0.2", "torch_venv": "/v", "parts": ["torch"], "gpus": ["9.0"],
                       "driver_version": "580.95.05", "interpreter": reading["interpreter"],
                       "venv_python": "3.12.3", "fail_as": "torch on h"}
    bare = T.gate_options({"cuda_version": "13.0.2"}, {}, {"venv": None}, None)
    assert bare == {"cuda_version": "13.0.2", "parts": ["torch"], "gpus": [], "interpreter": None, "fail_as": ""}


@pytest.mark.parametrize("call, match", [
    (lambda: T.reading_options({"venv": "/v", "read_gpus": False}, {}), "read_gpus"),
    (lambda: T.reading_options(["venv"], {}), "read must be a dict"),
    (lambda: T.gate_options({"gpus": ["9.0"]}, {}, {}), "gpus"),
    (lambda: T.gate_options({"show_warnings": True, "parts": []}, {}, {}), "parts, show_warnings"),
    (lambda: T.gate_options({}, {}, None), "reading must be"),
])
def test_what_the_action_sets_itself_is_refused(call, match):
    with pytest.raises(T.TorchStateError, match=match):
        call()


@pytest.mark.parametrize("reading, after_install, last", [
    ({"needs_install": False, "record_stale": False}, False, True),
    ({"needs_install": True, "record_stale": False}, False, False),
    ({"needs_install": False, "record_stale": True}, False, False),
    ({"needs_install": True, "record_stale": True}, True, True),
])
def test_last_reading(reading, after_install, last):
    assert T.last_reading(reading, after_install) is last


@settings(max_examples=100, deadline=None)
@given(st.booleans(), st.booleans(), st.booleans(), st.one_of(st.none(), st.text(max_size=30)))
def test_verdict(ok, needs_install, check_mode, failure):
    """Right, or in check mode still to be installed: no failure; else the host and every problem."""
    found = T.verdict({"ok": ok, "needs_install": needs_install, "failure": failure}, "h1", check_mode)
    if ok or (check_mode and needs_install):
        assert found is None
    else:
        assert found == "h1: %s" % (failure or "the venv's torch is not right")


def test_a_planned_proxy_is_marked_only_in_preflight_where_the_cache_host_runs_it():
    asked = {"url": "https://cache-1:8081/root/cu128/+simple/", "answered": False, "error": "refused", "build": "cu128"}
    reading = T.mark_planned_proxy({"package_index": dict(asked)}, True)
    assert reading["package_index"]["planned"] is True
    assert "planned" not in T.mark_planned_proxy({"package_index": dict(asked)}, False)["package_index"]
    # Nothing asked (no proxy, or a wheelhouse): nothing to mark.
    assert T.mark_planned_proxy({}, True) == {}
    options = T.gate_options({}, {}, reading, "torch on h1")
    assert options["package_index"]["planned"] is True
