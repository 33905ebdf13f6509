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


@pytest.mark.parametrize("filename, entry", [(7, "x-ef7beb2c6e35"), ("flash_attn-2.8.3-py3-none-any.whl", 7),
                                             (["a.whl"], "x-ef7beb2c6e35"), ("flash_attn-2.8.3-py3-none-any.whl", None)])
def test_filename_of_wrong_types_is_a_clear_error(filename, entry):
    with pytest.raises(AnsibleFilterError, match="wheel_index_filename"):
        F["wheel_index_filename"](filename, entry)


def test_problems():
    assert F["wheel_index_problems"]("http://c:8080", "c", ["c", "g"]) == []
    assert len(F["wheel_index_problems"]("http://c:8080", "", ["c"])) == 1
    with pytest.raises(AnsibleFilterError):
        F["wheel_index_problems"]("http://c:8080", "c", "c")


def test_server_problems():
    settings = {"port": 8080, "listen_host": "0.0.0.0", "data_dir": "/var/lib/fleet-cache", "wheelhouse": "",
                "tls_cert": "", "tls_key": "", "service_mgr": ""}
    assert F["wheel_index_server_problems"](settings) == []
    assert "fleet_cache_index_port" in F["wheel_index_server_problems"](dict(settings, port=99999))[0]
    with pytest.raises(AnsibleFilterError):
        F["wheel_index_server_problems"]("8080")
