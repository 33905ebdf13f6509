# -*- coding: utf-8 -*-
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.llm_stack.plugins.filter.secrets import FilterModule, mask_credentials


def test_registered_under_its_name():
    assert FilterModule().filters()["mask_credentials"] is mask_credentials


def test_filter_masks_urls_and_secrets():
    assert mask_credentials("https://u:p@h/x and tok", ["tok"]) == "https://***@h/x and ***"
    assert mask_credentials("a tok b", "tok") == "a *** b"
    assert mask_credentials("plain") == "plain"


def test_filter_refuses_bad_secrets():
    with pytest.raises(AnsibleFilterError, match="secrets must be a list"):
        mask_credentials("x", {"a": 1})
