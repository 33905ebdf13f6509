#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: llm_router_health
short_description: The health gate of the LLM router (HAProxy), run on its host
version_added: "0.2.0"
description:
  - Polls the router until all of these pass, or until O(timeout) seconds have passed (the vLLM servers behind it may
    still be starting) - C(GET /v1/models) with a client key lists every model of O(models) (the union of O(probes) answers); one completion of
    O(max_tokens) tokens per model, with the key, answers 200 with a choice; C(GET /v1/models) without a key is
    refused with 401.
  - The client key is read on the host from the router's ACL file (O(key_file), lines C(Bearer <key>); the first
    key is used); it is never an argument of the module, and it is masked in anything returned.
  - Requests go to O(url) directly, never through a proxy; each has its own timeout.
  - The verdict is C(_router_runtime.health_verdict).
author:
  - gpufleet maintainers (@gpufleet)
options:
  url:
    description: Base URL of the router, such as C(http://127.0.0.1:8080).
    type: str
    required: true
  models:
    description: The served models of the router's config.
    type: list
    elements: str
    required: true
  probes:
    description:
      - C(GET /v1/models) requests per attempt; the router answers each from one server of C(be_any) (in turn among
        the idle ones), so the models listed are the union of the answers. The role gives its number of servers.
    type: int
    default: 1
  key_file:
    description: The router's client key ACL file (readable by root only).
    type: path
    required: true
  timeout:
    description: Longest wait, in seconds, for the whole gate to pass.
    type: int
    default: 300
  poll:
    description: Seconds between two attempts.
    type: int
    default: 3
  request_timeout:
    description: Seconds one HTTP request may take.
    type: int
    default: 60
  max_tokens:
    description: Tokens each test completion asks for.
    type: int
    default: 1
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.read_only
notes:
  - Runs the same in check mode (it only reads).
seealso:
  - module: gpufleet.llm_stack.llm_router_member
"""

EXAMPLES = r"""
- name: Check the router
  gpufleet.llm_stack.llm_router_health:
    url: http://127.0.0.1:8080
    models: [qwen3-chat]
    key_file: /etc/llm-router/api_keys.lst
    timeout: 300
"""

RETURN = r"""
ok:
  description: Whether every check passed.
  returned: always
  type: bool
checks:
  description: For C(models), C(completion <model>) of each model and C(unauthenticated), C(ok) and C(detail) of the
    last attempt.
  returned: always
  type: dict
summary:
  description: The checks in one line.
  returned: always
  type: str
waited:
  description: Seconds the gate waited.
  returned: always
  type: float
"""

import json
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _router_runtime as R
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._serve_health import models_listed
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.local_http import http
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import mask_credentials


def attempt(p, key):
    """One round of the gate: {name: {ok, detail}}."""
    base, timeout = p["url"].rstrip("/"), p["request_timeout"]
    checks = {}
    # be_any answers each GET from one server (leastconn: in turn among the idle ones): the union of probes answers.
    listed, statuses = set(), []
    for dummy in range(max(1, p["probes"])):
        status, text = http("GET", base + "/v1/models", timeout, key=key)
        statuses.append(status or text[:200])
        listed.update((models_listed(text) or []) if status == 200 else [])
        if set(p["models"]) <= listed:
            break
    absent = sorted(set(p["models"]) - listed)
    good = all(status == 200 for status in statuses) and not absent
    checks["models"] = {"ok": good, "detail": "GET /v1/models: %s%s" % (
        ", ".join(str(status) for status in statuses), ", not listed: %s" % ", ".join(absent) if absent else "")}
    for model in p["models"]:
        body = {"model": model, "prompt": "Hello", "max_tokens": p["max_tokens"], "temperature": 0}
        status, text = http("POST", base + "/v1/completions", timeout, body=body, key=key)
        good = False
        if status == 200:
            try:
                choices = json.loads(text).get("choices")
                good = isinstance(choices, list) and bool(choices)
            except (ValueError, AttributeError):
                good = False
        checks["completion %s" % model] = {"ok": good, "detail": "POST /v1/completions: %s%s" % (
            status or text[:200], "" if good or status != 200 else ", no choices in the answer")}
    status, text = http("GET", base + "/v1/models", timeout)
    checks["unauthenticated"] = {"ok": status == 401, "detail": "GET /v1/models without a key: %s" % (
        status or text[:200])}
    return checks


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", required=True),
            models=dict(type="list", elements="str", required=True),
            key_file=dict(type="path", required=True, no_log=False),
            timeout=dict(type="int", default=300),
            poll=dict(type="int", default=3),
            request_timeout=dict(type="int", default=60),
            max_tokens=dict(type="int", default=1, no_log=False),
            probes=dict(type="int", default=1),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        with open(p["key_file"]) as handle:
            key = R.key_from_lines(handle.read())
    except (IOError, OSError) as exc:
        module.fail_json(msg="Cannot read the router's key file %s: %s" % (p["key_file"], exc), ok=False)
    if not key:
        module.fail_json(msg="No 'Bearer <key>' line in %s. Fix: set llm_router_api_keys" % p["key_file"], ok=False)
    start = time.time()
    while True:
        checks = attempt(p, key)
        verdict = R.health_verdict(p["models"], checks)
        waited = round(time.time() - start, 1)
        if verdict["ok"] or waited + p["poll"] > p["timeout"]:
            break
        time.sleep(p["poll"])
    masked = json.loads(mask_credentials(json.dumps(checks), [key]))
    result = dict(changed=False, ok=verdict["ok"], checks=masked, waited=waited,
                  summary=mask_credentials(verdict["summary"], [key]))
    if not verdict["ok"]:
        module.fail_json(msg="The router at %s failed %s after %.0f s: %s" % (
            p["url"], ", ".join(verdict["failed"]), waited, result["summary"]), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
