#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: llm_monitoring_targets
short_description: The llm_monitoring role's gate - Prometheus answers and scrapes every target it should
version_added: "0.3.0"
description:
  - Polls Prometheus at O(url), on the monitoring host, until C(/-/ready) answers 200 and C(/api/v1/targets) shows
    every C(address:port) of O(expected) as an active target whose last scrape was up, or until O(timeout) seconds
    have passed; returns every active target with the state of its last scrape (for the fleet report).
  - With O(require_up) false, a target that is down is reported but does not fail the task; Prometheus not ready
    still does.
  - Requests go to O(url) directly, never through a proxy. Changes nothing (check mode included).
  - The reading is C(_monitoring.read_targets) and C(_monitoring.targets_verdict).
author:
  - gpufleet maintainers (@gpufleet)
options:
  url:
    description: Prometheus's base URL as the monitoring host reaches it, such as C(http://127.0.0.1:9090).
    type: str
    required: true
  expected:
    description: Per job, the C(address:port) of each target that must be up (the plan's C(summary)).
    type: dict
    required: true
  require_up:
    description: Whether a target that is not up fails the task.
    type: bool
    default: true
  timeout:
    description: Seconds to wait at most.
    type: int
    default: 120
  poll:
    description: Seconds between two readings.
    type: int
    default: 3
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.read_only
"""

EXAMPLES = r"""
- name: Check that Prometheus scrapes every target
  gpufleet.llm_stack.llm_monitoring_targets:
    url: http://127.0.0.1:9090
    expected: "{{ llm_monitoring_plan.summary }}"
    timeout: 120
  register: llm_monitoring_targets
"""

RETURN = r"""
ok:
  description: Whether Prometheus is ready and every expected target is up.
  returned: always
  type: bool
targets:
  description: Every active target - C(job), C(instance), C(host), C(service), C(health), C(last_error), C(last_scrape).
  returned: always
  type: list
  elements: dict
problems:
  description: Each expected target that is not up, and why.
  returned: always
  type: list
  elements: str
waited:
  description: Seconds waited.
  returned: always
  type: float
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _monitoring as M
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import local_http


def reading(url, expected):
    """(ready, targets, problems) of one reading."""
    status, text = local_http.http("GET", url + "/-/ready", 10)
    if status != 200:
        return False, [], ["Prometheus at %s is not ready: %s %s" % (url, status or "no answer", text.strip()[:200])]
    status, text = local_http.http("GET", url + "/api/v1/targets?state=active", 10)
    if status != 200:
        return True, [], ["the targets API answered %s: %s" % (status or "nothing", text.strip()[:200])]
    try:
        found = M.read_targets(text)
    except ValueError as exc:
        return True, [], [str(exc)]
    dummy, problems = M.targets_verdict(found, expected)
    return True, found, problems


def main():
    module = AnsibleModule(
        argument_spec=dict(url=dict(type="str", required=True), expected=dict(type="dict", required=True),
                           require_up=dict(type="bool", default=True), timeout=dict(type="int", default=120),
                           poll=dict(type="int", default=3)),
        supports_check_mode=True,
    )
    p = module.params
    url = p["url"].rstrip("/")
    start = time.time()
    while True:
        ready, found, problems = reading(url, p["expected"])
        waited = round(time.time() - start, 1)
        if (ready and (not problems or not p["require_up"])) or waited + p["poll"] > p["timeout"]:
            break
        time.sleep(p["poll"])
    ok = ready and not problems
    result = dict(changed=False, ok=ok, targets=found, problems=problems, waited=waited)
    if not ready or (problems and p["require_up"]):
        module.fail_json(msg="Prometheus at %s after %.0f s: %s" % (url, waited, "; ".join(problems)), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
