# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The package_index_url and proxy_first_fetchers filters: module_utils/package_proxy.py for the roles' tasks."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.llm_stack.plugins.filter import package_proxy as F


def test_filters_are_registered():
    assert set(F.FilterModule().filters()) == {"package_index_url", "package_pip_environment", "proxy_first_fetchers"}


def test_package_index_url():
    assert F.package_index_url("https://cache-1:8081", "cu130") == "https://cache-1:8081/root/cu130/+simple/"
    assert F.package_index_url("", "cu130") == ""
    with pytest.raises(AnsibleFilterError, match="package_index_url"):
        F.package_index_url("https://cache-1:8081", "cu 130")


def test_package_pip_environment():
    assert F.package_pip_environment("https://cache-1:8081", ca_cert="/ctl/ca.pem", ca_path="/opt/ca.pem") == {
        "PIP_INDEX_URL": "https://cache-1:8081/root/pypi/+simple/", "PIP_CERT": "/opt/ca.pem"}
    assert F.package_pip_environment("https://cache-1:8081", own_source="--index-url https://pypi.internal/simple") == {}
    with pytest.raises(AnsibleFilterError, match="package_pip_environment"):
        F.package_pip_environment("https://cache-1:8081", "cu 130")


def test_proxy_first_fetchers_in_play_order():
    """The first host of each key in the batch's order; a host without the variable (it installs nothing) or with
    an empty key is never first."""
    key = "https://cache-1:8081/root/cu128/+simple/ torch==2.10.0+cu128"
    hostvars = {"h3": {"torch_proxy_key": key}, "h1": {"torch_proxy_key": ""}, "h2": {"torch_proxy_key": key},
                "h4": {}, "h5": {"torch_proxy_key": key.replace("cu128", "cu130")}}
    assert F.proxy_first_fetchers(hostvars, ["h1", "h2", "h3", "h4", "h5"], "torch_proxy_key") == ["h2", "h5"]
    assert F.proxy_first_fetchers(hostvars, ["h3", "h2"], "torch_proxy_key") == ["h3"]
    assert F.proxy_first_fetchers(hostvars, [], "torch_proxy_key") == []
    with pytest.raises(AnsibleFilterError):
        F.proxy_first_fetchers(hostvars, "h1", "torch_proxy_key")
