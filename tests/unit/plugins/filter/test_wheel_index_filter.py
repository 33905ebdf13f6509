# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""wheel_index filters: the wheel's name on the index, the settings' problems."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.llm_stack.plugins.filter.wheel_index import FilterModule

F = FilterModule().filters()


def test_filename():
    assert F["wheel_index_filename"]("flash_attn-2.8.3-py3-none-any.whl", "x-ef7beb2c6e35") == \
        "flash_attn-2.8.3-0ef7beb2c6e35-py3-none-any.whl"
    with pytest.raises(AnsibleFilterError):
        F["wheel_index_filename"]("flash_attn-2.8.3.tar.gz", "x-ef7beb2c6e35")


def test_problems():
    assert F["wheel_index_problems"]("http://c:8080", "c", ["c", "g"], "fleet", "pw") == []
    assert len(F["wheel_index_problems"]("http://c:8080", "", ["c"], "fleet", "")) == 2
    with pytest.raises(AnsibleFilterError):
        F["wheel_index_problems"]("http://c:8080", "c", "c", "fleet", "pw")


def test_server_problems():
    settings = {"port": 8080, "username": "fleet", "password": "pw", "data_dir": "/var/lib/fleet-cache",
                "wheelhouse": "", "service_mgr": ""}
    assert F["wheel_index_server_problems"](settings) == []
    assert "fleet_cache_index_port" in F["wheel_index_server_problems"](dict(settings, port=99999))[0]
    with pytest.raises(AnsibleFilterError):
        F["wheel_index_server_problems"]("8080")
