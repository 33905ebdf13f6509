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


def test_server_problems_of_the_user_and_the_directories():
    settings = {"port": 8080, "listen_host": "0.0.0.0", "data_dir": "/var/lib/fleet-cache", "wheelhouse": "",
                "tls_cert": "", "tls_key": "", "service_mgr": "", "user": "fleet-index", "prefix": "/opt/fleet-cache",
                "wheelhouse_dest": "/opt/fleet-cache/wheelhouse"}
    assert F["wheel_index_server_problems"](settings) == []
    found = F["wheel_index_server_problems"](dict(settings, user="root", data_dir="/var/lib/../fleet-cache"))
    assert [p.split(" ")[0] for p in found] == ["fleet_cache_data_dir", "fleet_cache_user"]


def test_server_warnings():
    assert F["wheel_index_server_warnings"]({"listen_host": "0.0.0.0", "index_url": "https://cache-1:8080"}) == []
    found = F["wheel_index_server_warnings"]({"listen_host": "0.0.0.0", "index_url": "https://10.0.0.5:8080"})
    assert len(found) == 1 and "fleet_cache_index_listen_host" in found[0] and "10.0.0.5" in found[0]
    with pytest.raises(AnsibleFilterError, match="wheel_index_server_warnings"):
        F["wheel_index_server_warnings"](["0.0.0.0"])
