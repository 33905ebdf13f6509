# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The wheel_build filters as the role calls them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.llm_stack.plugins.filter.wheel_build import FilterModule

F = FilterModule().filters()


def test_filters_are_exposed():
    assert sorted(F) == ["wheel_build_builder", "wheel_build_cache_problem", "wheel_build_plan", "wheel_build_push_missing"]


def test_plan_errors_name_the_variable(tmp_path):
    with pytest.raises(AnsibleFilterError, match="wheel_build_requirement"):
        F["wheel_build_plan"]({"name": "x", "key": {"a": "1"}, "cache_dir": str(tmp_path)})
    with pytest.raises(AnsibleFilterError, match="must be a dict"):
        F["wheel_build_plan"]("x")
    plan = F["wheel_build_plan"]({"name": "x", "key": {"a": "1"}, "requirement": "x==1", "cache_dir": str(tmp_path)})
    assert plan["needs_build"] is True


def test_builder_reads_each_hosts_state():
    hostvars = {"a": {"wheel_build_state": {"entry": "e", "needs_build": True, "preferred": False}},
                "b": {"wheel_build_state": {"entry": "e", "needs_build": True, "preferred": True}},
                "c": {}}
    assert F["wheel_build_builder"](["c", "a", "b"], hostvars, "e") == "b"
    assert F["wheel_build_builder"](["c", "a"], hostvars, "e") == "a"
    assert F["wheel_build_builder"](["c"], hostvars, "e") == ""
    with pytest.raises(AnsibleFilterError, match="ansible_play_batch"):
        F["wheel_build_builder"]("a", hostvars, "e")


@pytest.mark.parametrize("batch, hostvars, entry", [
    ([{"name": "a"}], {}, "e"),          # a host that is no name (was: unhashable type)
    (["a", None], {}, "e"),
    (["a"], ["not", "hostvars"], "e"),   # (was: a list index error hidden as 'no state')
    (["a"], {}, {"entry": "e"}),
])
def test_builder_of_wrong_types_is_a_clear_error(batch, hostvars, entry):
    with pytest.raises(AnsibleFilterError, match="wheel_build_builder"):
        F["wheel_build_builder"](batch, hostvars, entry)


def test_cache_problem():
    state = {"cache_entry": "/c/e", "needs_build": False}
    assert F["wheel_build_cache_problem"](state, ["/c/e/x.whl"], "flash-attn") == ""
    assert F["wheel_build_cache_problem"](state, [], "flash-attn").startswith("No flash-attn wheel in /c/e")
    with pytest.raises(AnsibleFilterError):
        F["wheel_build_cache_problem"](state, "x.whl", "flash-attn")


@pytest.mark.parametrize("state, wheels, name", [
    ({"needs_build": True}, [], "flash-attn"),              # no cache_entry (was: KeyError)
    ({"cache_entry": 5}, [], "flash-attn"),
    ({"cache_entry": "/c/e"}, [], ["flash-attn"]),
    ("plan", [], "flash-attn"),
])
def test_cache_problem_of_wrong_types_is_a_clear_error(state, wheels, name):
    with pytest.raises(AnsibleFilterError, match="wheel_build_cache_problem"):
        F["wheel_build_cache_problem"](state, wheels, name)


def test_push_missing_filter():
    f = FilterModule().filters()["wheel_build_push_missing"]
    local = [{"path": "/c/a.whl", "size": 1}, {"path": "/c/b.whl", "size": 2}]
    assert f(local, [{"path": "/h/a.whl", "size": 1}]) == [{"path": "/c/b.whl", "size": 2}]
    with pytest.raises(AnsibleFilterError, match="two lists"):
        f("x", [])
    with pytest.raises(AnsibleFilterError, match="needs a path"):
        f([{}], [])
