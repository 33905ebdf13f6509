#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: fleet_report
short_description: The fleet report of a site run, as Markdown for people and JSON for tools
version_added: "0.1.0"
description:
  - Runs on the controller (action plugin). For each host of O(hosts) it reads what the run left in hostvars
    (preflight's C(ansible_facts['llm_stack_host']), the roles' result facts C(cuda_toolkit_result),
    C(torch_result), C(flash_attn_build_result), C(vllm_source_result), C(qwen_model_fetch_result),
    C(vllm_serve_result), C(vllm_serve_results) (every service of the host; C(vllm_serve_result) is the first),
    and C(llm_stack_phases_done), the phases the host came through) and works out its state, C(served),
    C(installed), C(failed_preflight), C(unreachable) or C(failed), and what is installed.
  - A host is C(served) only when every one of its services passed its health gate in this run. A host without
    C(vllm_serve_results) is read from C(vllm_serve_result) alone, as one service.
  - The routers (group C(llm_router)) are not hosts of the report's play; the action reads their
    C(llm_router_result) (C(endpoint), C(healthy), C(models), the server names each lists per served model) from
    their hostvars, and says for each service which routers list its server (C(listed)), which do not
    (C(not in router)) and which did not run (C(not run)); a service kept out of the routers says so.
  - The monitoring hosts (group C(llm_monitoring)) are read the same way, their C(llm_monitoring_result)
    (Prometheus's C(url), C(healthy), the C(targets) with the state of each one's last scrape); each service links
    to its series in Prometheus with the state of its last scrape (C(metrics)), C(not scraped) where no monitoring
    host scraped it in this run.
  - A role whose result fact is absent did not run on that host in this run (skipped by tags, or the host
    stopped before it); the report says C(not run).
  - The fleet summary counts hosts per state, lists the build keys, the compiles of this run and the wheels
    reused from the fleet index or the controller cache, and the model bytes downloaded in this run.
  - With O(dest), writes C(report.json) (sorted keys, no time stamps, so two runs' reports can be diffed)
    and C(report.md) there, also in check mode (the report is a controller file, not a change to a host).
    It never reports C(changed); RV(written) lists the files whose content changed.
  - The logic is in C(plugins/module_utils/fleet_report.py).
author:
  - gpufleet maintainers (@gpufleet)
options:
  hosts:
    description: The hosts the run targeted (C(ansible_play_hosts_all) of the report play).
    type: list
    elements: str
    required: true
  phases:
    description: The phases this run went through, a subset of C(preflight), C(cuda_toolkit), C(torch),
      C(flash_attn), C(vllm), C(model), C(serve). A host is C(installed) or C(served) only when it came through
      all of them.
    type: list
    elements: str
    default: [preflight, cuda_toolkit, torch, flash_attn, vllm, model, serve]
  dest:
    description: Directory on the controller for C(report.json) and C(report.md); created when missing.
      Without it nothing is written.
    type: path
  cache_host:
    description:
      - The fleet cache host's inventory name, shown in the report (C(llm_stack_cache_host)).
      - When empty, the action plugin shows the first host of group C(llm_cache), if any.
    type: str
    default: ""
  records:
    description:
      - Per host, the facts named above, with C(phases_done) for C(llm_stack_phases_done). For tests and for
        callers that collected them elsewhere; without it they are read from hostvars.
    type: dict
  routers:
    description:
      - Per router, its C(llm_router_result) (null where the role did not run on it). For tests and for callers
        that collected them elsewhere; without it the action reads them from the hostvars of the hosts of group
        C(llm_router) (no routers without the group).
    type: dict
  monitoring:
    description:
      - Per monitoring host, its C(llm_monitoring_result) (null where the role did not run on it). For tests; without
        it the action reads them from the hostvars of the hosts of group C(llm_monitoring).
    type: dict
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.read_only
notes:
  - The module form (without the action plugin) needs O(records); it reads no routers without O(routers).
"""

EXAMPLES = r"""
- name: Write the fleet report
  gpufleet.llm_stack.fleet_report:
    hosts: "{{ ansible_play_hosts_all }}"
    dest: "{{ llm_stack_report_dir }}"
  run_once: true
  register: fleet

- name: Hand the summary to AWX as an artifact
  ansible.builtin.set_stats:
    data:
      llm_stack_fleet_report: "{{ fleet.summary }}"
"""

RETURN = r"""
report:
  description: The whole report, C(format), C(phases), C(cache_host), C(hosts) (per host C(state),
    C(stopped_after), C(stack), C(arch_list), C(toolkit), C(flash_attn), C(vllm), C(model), C(serving) (the
    host's first service; its C(health) is over all of them, C(services) their unit names)) and C(summary).
  returned: always
  type: dict
summary:
  description:
    - The fleet summary, C(hosts), C(states) (count per state), C(hosts_by_state), C(build_keys),
      C(compiles) (flash-attn compiles in this run, a build host's builds for the other hosts included),
      C(compiles_by_key) (the compiles of each build key, one per key where every host found its key built),
      C(cache_hits), C(files_downloaded), C(bytes_downloaded), C(endpoints) (every service of the served hosts),
      C(services), C(routers) and C(monitoring).
    - C(services) lists every service of every host (hosts sorted, each host's services in its order), each with
      C(host), C(service) (unit), C(name), C(gpus) (null where the service pins none), C(model),
      C(served_model_name), C(port), C(endpoint) (as clients reach it), C(tensor_parallel_size), C(gate)
      (C(healthy), C(unhealthy) or C(not run)), C(benchmark) (or null), C(router_server) (null when the service
      is kept out of the routers), C(routers) (per router C(listed), C(not in router) or C(not run); empty
      when out of the routers) and C(metrics) (C(url) of its series in Prometheus, C(scrape) the state of its last
      scrape - C(up), C(down), C(unknown) or C(not scraped) - and C(last_error)).
    - C(routers) lists the routers, sorted, each with C(host), C(endpoint), C(healthy) (null where llm_router did
      not run on it in this run) and C(models) (per served model name the server names it lists).
    - C(monitoring) lists the monitoring hosts, sorted, each with C(host), C(url) (Prometheus), C(healthy) (null
      where llm_monitoring did not run on it in this run) and C(targets) (C(job), C(instance), C(host),
      C(service), C(health), C(last_error), C(last_scrape) of each).
  returned: always
  type: dict
  sample:
    hosts: 3
    states: {served: 1, installed: 2, failed_preflight: 0, unreachable: 0, failed: 0}
    compiles: 2
    compiles_by_key: {flash-attn-2.8.3-torch2.10.0_cu128-cp312-cxx11abiTRUE-sm80-3f2a9c1d7e00: 1,
                      flash-attn-2.8.3-torch2.10.0_cu128-cp312-cxx11abiTRUE-sm90-9b1e0c2d4f11: 1}
    cache_hits: 1
    services:
      - {host: gpu-1, service: vllm-qwen, name: qwen, gpus: [0, 1], model: /srv/models/Qwen3-8B,
         served_model_name: qwen, port: 8000, endpoint: "http://gpu-1:8000", tensor_parallel_size: 2,
         gate: healthy, benchmark: null, router_server: gpu-1_qwen, routers: {router-1: listed},
         metrics: {url: "http://mon-1:9090/graph?g0.expr=...", scrape: up, last_error: ""}}
    routers:
      - {host: router-1, endpoint: "http://router-1:8080", healthy: true, models: {qwen: [gpu-1_qwen]}}
markdown:
  description: The Markdown form of the report.
  returned: always
  type: str
json_path:
  description: Where C(report.json) is, with O(dest).
  returned: always
  type: str
markdown_path:
  description: Where C(report.md) is, with O(dest).
  returned: always
  type: str
written:
  description: The files of O(dest) whose content changed.
  returned: always
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import fleet_report


def main():
    module = AnsibleModule(
        argument_spec=dict(
            hosts=dict(type="list", elements="str", required=True),
            phases=dict(type="list", elements="str", default=list(fleet_report.PHASES)),
            dest=dict(type="path"),
            cache_host=dict(type="str", default=""),
            records=dict(type="dict"),
            routers=dict(type="dict"),
            monitoring=dict(type="dict"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if params["records"] is None:
        module.fail_json(msg="records is required when fleet_report runs as a module (the action plugin reads hostvars)")
    records = dict((name, params["records"].get(name) or {}) for name in params["hosts"])
    report = fleet_report.build_report(records, params["phases"], params["cache_host"], params["routers"],
                                       params["monitoring"])
    text = fleet_report.to_json(report)
    markdown = fleet_report.to_markdown(report)
    written = []
    paths = {}
    if params["dest"]:
        if not os.path.isdir(params["dest"]):
            os.makedirs(params["dest"])
        for name, content in (("report.json", text), ("report.md", markdown)):
            path = os.path.join(params["dest"], name)
            paths[name] = path
            old = None
            if os.path.exists(path):
                with open(path) as f:
                    old = f.read()
            if old != content:
                with open(path, "w") as f:
                    f.write(content)
                written.append(path)
    module.exit_json(changed=False, report=report, summary=report["summary"], markdown=markdown,
                     json_path=paths.get("report.json"), markdown_path=paths.get("report.md"), written=written)


if __name__ == "__main__":
    main()
