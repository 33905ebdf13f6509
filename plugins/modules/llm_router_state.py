#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: llm_router_state
short_description: Work out the LLM router's HAProxy config from the serving hosts' facts
version_added: "0.2.0"
description:
  - The check and plan of role C(gpufleet.llm_stack.llm_router) before any change, as an action plugin that runs in
    the controller's worker. It reads and changes nothing on any host.
  - Reads, for each host of O(hosts), only preflight's fact C(ansible_facts.llm_stack_host) (C(ok) and C(services));
    keeps the services with C(router) true and puts each behind the router, in the backend of its served model and
    in C(be_any). Without O(hosts), every inventory host whose fact has C(ok) true.
  - Checks the role's settings and keys; any problem fails the task, every problem listed, each naming the
    C(llm_router_*) variable and the fix. No backend at all is a problem.
  - The decisions are in C(plugins/module_utils/_router_plan.py); the config is
    C(_serve_services.haproxy_config).
author:
  - gpufleet maintainers (@gpufleet)
options:
  hosts:
    description: The serving hosts to put behind the router (C(llm_router_backend_hosts)).
    type: list
    elements: str
  settings:
    description:
      - The role's settings, named as its variables without C(llm_router_) - C(port), C(bind_address), C(socket),
        C(state_file), C(config_dir), C(request_timeout), C(health_check_interval), C(health_check_fall),
        C(health_check_rise), C(bufsize), C(metrics_port); optional C(host_address), the endpoint's host where
        C(bind_address) is a wildcard (default the router host's C(ansible_host), else its name).
    type: dict
    required: true
  api_keys:
    description: The client keys (C(llm_router_api_keys)), checked only; declared C(no_log).
    type: list
    elements: raw
  backend_api_key:
    description: The vLLM servers' key (C(llm_router_backend_api_key)), checked only; declared C(no_log).
    type: str
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.read_only
notes:
  - The task fails with the message C(llm_router on HOST:) followed by every problem.
seealso:
  - module: gpufleet.llm_stack.llm_router_member
"""

EXAMPLES = r"""
- name: Work out the router's config
  gpufleet.llm_stack.llm_router_state:
    settings:
      port: 8080
      bind_address: 0.0.0.0
      socket: /run/llm-router/admin.sock
      state_file: /var/lib/llm-router/server-state
      config_dir: /etc/llm-router
      request_timeout: 600
      health_check_interval: 2s
      health_check_fall: 2
      health_check_rise: 2
      bufsize: 65536
    api_keys: "{{ llm_router_api_keys }}"
    backend_api_key: "{{ llm_router_backend_api_key }}"
  register: llm_router_plan
"""

RETURN = r"""
config:
  description: The text of haproxy.cfg (no secret in it).
  returned: success
  type: str
models_map:
  description: The text of the models map, one C(<served_model_name> <backend>) line per model.
  returned: success
  type: str
models:
  description: The served models, sorted.
  returned: success
  type: list
  elements: str
summary:
  description: Each served model and its servers (C(<host>_<service name>)).
  returned: success
  type: dict
  sample: {qwen3-chat: [gpu1_chat, gpu2_chat]}
servers:
  description: Every server name, sorted.
  returned: success
  type: list
  elements: str
hosts:
  description: The backend hosts read.
  returned: success
  type: list
  elements: str
skipped:
  description: The hosts of O(hosts) left out, and why (no fact, not ok, no service with C(router) true).
  returned: success
  type: dict
endpoint:
  description: The URL clients reach the router at.
  returned: success
  type: str
health_url:
  description: The URL the router host checks the router at (loopback where it listens on a wildcard).
  returned: success
  type: str
metrics_url:
  description: Where HAProxy's Prometheus exporter answers (empty when C(llm_router_metrics_port) is 0).
  returned: success
  type: str
msg:
  description: On failure, C(llm_router on HOST:) and every problem.
  returned: on failure
  type: str
"""
