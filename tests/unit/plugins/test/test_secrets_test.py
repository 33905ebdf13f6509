# -*- coding: utf-8 -*-
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

import pytest

from ansible_collections.gpufleet.llm_stack.plugins.test import secrets as test_plugin
from ansible_collections.gpufleet.llm_stack.plugins.test.secrets import has_credentials

# What the roles' no_log used before this test: ``value is ansible.builtin.search('@')``.
CASES = ["", None, "https://a:b@host/x", "https://a@host", "https://host/x@y", "git@github.com:org/r.git",
         "user:tok@github.com:org/r.git", "user:pass@host/simple", "https://h/simple?token=a@b",
         "https://github.com/vllm-project/vllm.git", "/srv/wheels/vllm.whl", "file:///w@x/a.whl", "ssh://git@github.com/x"]


def test_registered_under_its_name():
    assert test_plugin.TestModule().tests()["has_credentials"] is has_credentials


@pytest.mark.parametrize("url, expected", [
    ("https://a:b@host/x", True), ("https://a@host", True), ("ssh://git@github.com/x", True),
    ("https://host/x@y", False), ("git@github.com:org/r.git", False), ("", False), (None, False),
])
def test_strict_is_userinfo_only(url, expected):
    assert has_credentials(url) is expected


@pytest.mark.parametrize("url", CASES)
def test_loose_masks_whatever_search_at_masked(url):
    assert has_credentials(url, loose=True) is bool(re.search("@", "" if url is None else str(url)))


def test_a_list_is_any_of_its_urls():
    # vllm_source joined its three URLs with spaces and searched the whole for "@"
    for a in CASES:
        for b in CASES:
            joined = "%s %s %s" % (a, b, "")
            assert has_credentials([a, b, ""], loose=True) is ("@" in joined)
    assert has_credentials([]) is False
    assert has_credentials(("https://h", "https://u:p@h")) is True
