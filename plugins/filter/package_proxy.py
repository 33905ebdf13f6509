# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The package_index_url, package_pip_environment and proxy_first_fetchers filters; documentation in the .yml files next to this file. The
code is module_utils/package_proxy.py (imported when a filter runs, as the other filters of the collection do)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError


def package_index_url(base, build):
    """<base>/root/<build>/+simple/, '' where base is empty."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import package_proxy
    try:
        return package_proxy.index_url(base, build)
    except package_proxy.PackageProxyError as exc:
        raise AnsibleFilterError("package_index_url: %s" % exc)


def package_pip_environment(base, build=None, ca_cert="", ca_path="", own_source=""):
    """PIP_INDEX_URL and PIP_CERT of the cache host's package proxy for a pip, {} where it is not used."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import package_proxy
    try:
        return package_proxy.pip_environment(base, build, ca_cert, ca_path, own_source)
    except package_proxy.PackageProxyError as exc:
        raise AnsibleFilterError("package_pip_environment: %s" % exc)


def proxy_first_fetchers(hostvars, hosts, variable):
    """The hosts of hosts (in play order) that install first through the proxy, one per value of variable."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import package_proxy
    if not isinstance(hosts, (list, tuple)) or not isinstance(variable, str):
        raise AnsibleFilterError("proxy_first_fetchers: want hostvars | proxy_first_fetchers(ansible_play_batch, "
                                 "'<variable>')")
    pairs = []
    for host in hosts:
        values = hostvars[host]
        key = values[variable] if variable in values else ""
        pairs.append([host, key if isinstance(key, str) else ""])
    try:
        return package_proxy.first_fetchers(pairs)
    except package_proxy.PackageProxyError as exc:
        raise AnsibleFilterError("proxy_first_fetchers: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {"package_index_url": package_index_url, "package_pip_environment": package_pip_environment,
                "proxy_first_fetchers": proxy_first_fetchers}
