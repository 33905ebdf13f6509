# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""meta/runtime.yml's action groups: every member is a module of the collection with the options its group
shares, so ``module_defaults: {group/gpufleet.llm_stack.<group>: {...}}`` sets them for each member."""
from __future__ import absolute_import, division, print_function

import os
import re

import pytest
import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SHARED = {"hub": {"endpoint", "token", "timeout"},
          "serving": {"service", "mode", "supervisorctl", "timeout"},
          "facts": {"timeout"}}


def groups():
    with open(os.path.join(REPO, "meta", "runtime.yml")) as handle:
        return yaml.safe_load(handle)["action_groups"]


def options(module):
    with open(os.path.join(REPO, "plugins", "modules", module + ".py")) as handle:
        text = handle.read()
    doc = re.search(r"DOCUMENTATION\s*=\s*r?(['\"]{3})(.*?)\1", text, re.S).group(2)
    return set(yaml.safe_load(doc).get("options") or {})


def test_the_groups_are_the_documented_ones():
    assert set(groups()) == set(SHARED)


@pytest.mark.parametrize("group", sorted(SHARED))
def test_each_member_has_the_shared_options(group):
    members = groups()[group]
    assert members and len(members) == len(set(members))
    for member in members:
        assert "." not in member, "a member is a short name of this collection's module: %s" % member
        missing = SHARED[group] - options(member)
        assert not missing, "%s in group %s lacks %s" % (member, group, sorted(missing))
