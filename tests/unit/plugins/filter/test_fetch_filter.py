# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fetch_command filter over module_utils/fetch_url.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.llm_stack.plugins.filter.fetch import FilterModule

F = FilterModule().filters()["fetch_command"]


def test_filter_returns_the_run_logged_command():
    cmd = F("https://u:p@mirror/cuda.run", "/var/cache/cuda.run")
    assert cmd["argv"][0] == "python3" and cmd["argv"][-1] == "/var/cache/cuda.run"
    assert cmd["environment"] == {"LLM_STACK_FETCH_URL": "https://u:p@mirror/cuda.run"}
    assert cmd["no_log"] is True


def test_filter_errors_are_filter_errors():
    with pytest.raises(AnsibleFilterError, match="absolute path"):
        F("https://mirror/cuda.run", "cuda.run")
