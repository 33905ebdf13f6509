#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: llm_monitoring_state
short_description: Work out what the fleet's Prometheus scrapes, from the serving hosts' facts and the inventory
version_added: "0.3.0"
description:
  - The check and plan of role C(gpufleet.llm_stack.llm_monitoring) before any change, as an action plugin that runs
    in the controller's worker. It reads and changes nothing on any host.
  - Reads, for each host of O(hosts), only preflight's fact C(ansible_facts.llm_stack_host) (C(ok) and C(services)),
    and each service becomes a target of job C(vllm) (its C(/metrics)) and of job C(vllm-health) (its C(/health)), with
    the labels C(host), C(service), C(served_model) and C(unit).
  - Each host of group O(router_group) becomes a target of job C(llm-router) (HAProxy's exporter), at its
    C(llm_router_bind_address) (its C(ansible_host) for a wildcard) and C(llm_router_metrics_port) (default 8405;
    0 leaves it out).
  - Each host of O(exporter_hosts) whose C(llm_monitoring_node_exporter) is not false becomes a target of job C(node)
    at its C(llm_monitoring_node_exporter_address) (its C(ansible_host) when empty) and
    C(llm_monitoring_node_exporter_port) (default 9100).
  - Checks the role's settings; any problem fails the task, every problem listed, each naming the
    C(llm_monitoring_*) variable and the fix.
  - The decisions are in C(plugins/module_utils/_monitoring.py).
author:
  - gpufleet maintainers (@gpufleet)
options:
  settings:
    description:
      - The role's settings, named as its variables without C(llm_monitoring_) - C(port), C(listen_address),
        C(scrape_interval), C(evaluation_interval), C(retention), C(ttft_p95_target), C(ttft_p95_targets),
        C(rules_dir); optional C(host) and C(host_address) (default the monitoring host's name and C(ansible_host)).
    type: dict
    required: true
  hosts:
    description: The serving hosts whose services are scraped; default every inventory host.
    type: list
    elements: str
  exporter_hosts:
    description: The hosts whose node-exporter is scraped; default every inventory host.
    type: list
    elements: str
  router_group:
    description: The inventory group of the routers.
    type: str
    default: llm_router
  part:
    description:
      - C(prometheus) - the monitoring host's plan (the default). C(exporter) - an exporter host's plan instead - its
        O(settings) are the role's exporter variables without C(llm_monitoring_) (C(node_exporter_address),
        C(node_exporter_port), C(textfile_dir), C(gpu_collector), C(gpu_collector_interval),
        C(gpu_collector_timeout)); the host's GPU count (filter C(host_gpus) of its facts - preflight's, else
        M(gpufleet.llm_stack.gpu_facts)'s) and service manager (fact C(service_mgr)) are read from its facts unless
        O(settings) gives C(gpu_count) and C(service_mgr). It returns RV(collector), RV(args) and RV(listen).
    type: str
    default: prometheus
    choices: [prometheus, exporter]
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.read_only
notes:
  - The task fails with the message C(llm_monitoring on HOST:) followed by every problem.
seealso:
  - module: gpufleet.llm_stack.llm_monitoring_targets
"""

EXAMPLES = r"""
- name: Work out what Prometheus scrapes
  gpufleet.llm_stack.llm_monitoring_state:
    settings:
      port: 9090
      listen_address: 0.0.0.0
      scrape_interval: 15s
      evaluation_interval: 15s
      retention: 15d
      ttft_p95_target: 2.0
      ttft_p95_targets: {chat: 1.5}
      rules_dir: /etc/prometheus/llm-stack
  register: llm_monitoring_plan
"""

RETURN = r"""
config:
  description: The text of C(prometheus.yml).
  returned: success
  type: str
targets_rules:
  description: The text of C(llm-stack-targets.rules.yml), each service's TTFT p95 target as a recording rule.
  returned: success
  type: str
targets:
  description: Per job, the target groups (C(targets), C(labels)).
  returned: success
  type: dict
summary:
  description: Per job, the C(address:port) of every target, sorted (what the gate expects up).
  returned: success
  type: dict
url:
  description: Where Prometheus answers for the fleet (its listen address, or the host's address for a wildcard).
  returned: success
  type: str
local_url:
  description: Where the monitoring host reaches Prometheus (loopback for a wildcard).
  returned: success
  type: str
listen:
  description: Prometheus's C(--web.listen-address) (with O(part=exporter), node-exporter's).
  returned: success
  type: str
collector:
  description: With O(part=exporter), whether the GPU collector runs on the host (C(auto) - where it has GPUs).
  returned: success
  type: bool
args:
  description: With O(part=exporter), node-exporter's arguments (its C(ARGS) in C(/etc/default/prometheus-node-exporter)).
  returned: success
  type: str
msg:
  description: On failure, C(llm_monitoring on HOST:) and every problem.
  returned: on failure
  type: str
"""
