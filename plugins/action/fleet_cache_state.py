# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of gpufleet.llm_stack.fleet_cache_state (documented in plugins/modules/fleet_cache_state.py).

The fleet_cache role's check before any change: the cache host's settings
of the index (every problem listed, the task fails naming the host), what
they allow that the fleet does not need (the warnings), and what the role's
tasks run (pip's command, the URL the index is probed at), and the same for
the package proxy where fleet_cache_proxy is set (package_proxy.host_problems
and server_plan). The decisions are wheel_index.server_problems,
server_warnings and server_plan, and package_proxy's; this file
only runs them, in the controller's worker. Nothing on the host is read or
changed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import package_proxy
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_index
from ansible_collections.gpufleet.llm_stack.plugins.plugin_utils._role_action import RoleAction

OPTIONS = dict(
    # The index URL may hold credentials.
    inputs=dict(type="dict", required=True, no_log=True),
)


class ActionModule(RoleAction):
    OPTIONS = OPTIONS

    def decide(self, result, args, task_vars):
        task_vars = task_vars or {}
        facts = task_vars.get("ansible_facts") or {}
        settings = dict(args["inputs"])
        index_url = settings.pop("index_url", "")
        proxy = dict(settings.pop("proxy", None) or {})
        # Only whether it is set: the URL may hold credentials, the plan names the variable that carries it.
        settings["pip_index"] = bool(settings.pop("pip_index_url", ""))
        # Facts not gathered: no service manager, taken as systemd.
        settings["service_mgr"] = facts.get("service_mgr", "")
        try:
            problems = wheel_index.server_problems(settings)
        except wheel_index.WheelIndexError as exc:
            result.update(failed=True, msg="wheel_index_server_problems: %s" % exc)
            return result
        try:
            warnings = wheel_index.server_warnings({"listen_host": settings.get("listen_host"), "index_url": index_url})
        except wheel_index.WheelIndexError as exc:
            result.update(failed=True, msg="wheel_index_server_warnings: %s" % exc)
            return result
        result["changed"] = False
        if proxy.get("enabled"):
            proxy.update(config_dir=settings.get("config_dir"), index_port=settings.get("port"),
                         index_user=settings.get("user"), wheelhouse=settings.get("wheelhouse"),
                         wheelhouse_dest=settings.get("wheelhouse_dest"), listen_host=settings.get("listen_host"),
                         tls=bool(settings.get("tls_cert")))
            try:
                problems = problems + package_proxy.host_problems(proxy)
            except package_proxy.PackageProxyError as exc:
                result.update(failed=True, msg="package_proxy_host_problems: %s" % exc)
                return result
        if problems:
            host = task_vars.get("inventory_hostname", "")
            result.update(failed=True, msg="fleet_cache on %s: %s" % (host, " ".join(problems)))
            return result
        result["setting_warnings"] = warnings
        result.update(wheel_index.server_plan(settings))
        result["proxy"] = package_proxy.server_plan(proxy) if proxy.get("enabled") else None
        return result
