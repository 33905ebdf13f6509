# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of gpufleet.llm_stack.fleet_report (documented in plugins/modules/fleet_report.py).

Runs on the controller: reads the documented facts of each host from
hostvars (module_utils/fleet_report.py says which), builds the report and
writes its JSON and Markdown forms under O(dest). The routers (group
llm_router) are not hosts of the report play: their llm_router_result is
read from their hostvars too.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.action import ActionBase
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import fleet_report
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._fs import write_atomic

OPTIONS = dict(
    hosts=dict(type="list", elements="str", required=True),
    phases=dict(type="list", elements="str", default=list(fleet_report.PHASES)),
    dest=dict(type="path"),
    cache_host=dict(type="str", default=""),
    records=dict(type="dict"),
    routers=dict(type="dict"),
    monitoring=dict(type="dict"),
)

RECORD_FACTS = ("llm_stack_phases_done",) + tuple(fleet_report.RESULT_FACTS.values()) + (fleet_report.SERVICES_FACT,)


def read_record(hostvars, name):
    """The record of one host (see fleet_report.host_state) from its hostvars."""
    try:
        host = hostvars[name]
    except KeyError:
        return {}
    record = {}
    facts = host.get("ansible_facts") or {}
    record["llm_stack_host"] = facts.get("llm_stack_host")
    for key in RECORD_FACTS:
        value = host.get(key)
        if value is not None:
            record[key] = value
    record["phases_done"] = record.pop("llm_stack_phases_done", [])
    return record


def read_group_results(hostvars, groups, group, fact):
    """{host: its fact, or None} of every host of group (none without the group): the routers' llm_router_result
    and the monitoring hosts' llm_monitoring_result, hosts that are not in the report's play."""
    found = {}
    for name in groups.get(group) or []:
        try:
            host = hostvars[name]
        except KeyError:
            host = {}
        found[name] = host.get(fact)
    return found


def default_cache_host(groups):
    """llm_stack_cache_host's default: the first host of group llm_cache, else ""."""
    hosts = groups.get("llm_cache") or []
    return hosts[0] if hosts else ""


def write_if_changed(path, text):
    """Write text to path atomically when it differs; True when written."""
    return write_atomic(path, text, only_if_changed=True)


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        validation, params = self.validate_argument_spec(argument_spec=OPTIONS)
        del validation
        unknown = [p for p in params["phases"] if p not in fleet_report.PHASES]
        if unknown:
            raise AnsibleActionFail("phases: unknown phase(s) %s; known: %s"
                                    % (", ".join(unknown), ", ".join(fleet_report.PHASES)))
        records = params["records"]
        if records is None:
            hostvars = (task_vars or {}).get("hostvars", {})
            records = dict((name, read_record(hostvars, name)) for name in params["hosts"])
        else:
            records = dict((name, records.get(name) or {}) for name in params["hosts"])
        groups = (task_vars or {}).get("groups") or {}
        routers = params["routers"]
        if routers is None:
            routers = read_group_results((task_vars or {}).get("hostvars", {}), groups, "llm_router",
                                         fleet_report.ROUTER_FACT)
        monitoring = params["monitoring"]
        if monitoring is None:
            monitoring = read_group_results((task_vars or {}).get("hostvars", {}), groups, "llm_monitoring",
                                            fleet_report.MONITORING_FACT)
        cache_host = params["cache_host"] or default_cache_host(groups)
        report = fleet_report.build_report(records, params["phases"], cache_host, routers, monitoring)
        text = fleet_report.to_json(report)
        markdown = fleet_report.to_markdown(report)
        written = []
        paths = {}
        if params["dest"]:
            dest = params["dest"]
            try:
                if not os.path.isdir(dest):
                    os.makedirs(dest)
                for name, content in (("report.json", text), ("report.md", markdown)):
                    path = os.path.join(dest, name)
                    paths[name] = path
                    if write_if_changed(path, content):
                        written.append(path)
            except (IOError, OSError) as e:
                raise AnsibleActionFail("cannot write the fleet report under %s (llm_stack_report_dir): %s"
                                        % (dest, to_native(e)))
        # The report describes the fleet; writing it on the controller changes no host.
        result.update(changed=False, report=report, markdown=markdown, summary=report["summary"],
                      json_path=paths.get("report.json"), markdown_path=paths.get("report.md"), written=written)
        return result
