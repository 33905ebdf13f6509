# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

import pytest
from hypothesis import given, strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _readers as R


@pytest.mark.parametrize("value, want", [(None, ""), (" a ", "a"), (3, "3"), ("", "")])
def test_text(value, want):
    assert R.text(value) == want


def test_raw_and_str_text():
    assert R.raw_text(" a ") == " a " and R.raw_text(None) == ""
    assert R.str_text(" a ") == "a" and R.str_text(3) == "" and R.str_text(None) == ""


def test_as_dict():
    assert R.as_dict({"a": 1}) == {"a": 1} and R.as_dict(None) == {} and R.as_dict([1]) == {}


@pytest.mark.parametrize("value, want", [
    (True, True), ("yes", True), ("on", True), (1, True), ("1", True),
    (False, False), ("no", False), ("off", False), (0, False),
])
def test_as_bool(value, want):
    assert R.as_bool(value) is want
    assert R.as_bool(value, default=not want) is want


@pytest.mark.parametrize("value", [None, "", "maybe", [1], 2])
def test_as_bool_default(value):
    assert R.as_bool(value) is False and R.as_bool(value, default=True) is True


@given(st.text())
def test_text_is_stripped_str(value):
    out = R.text(value)
    assert out == value.strip() and R.str_text(value) == out
