#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: vllm_serve_drain
short_description: Waits until a vLLM service has no request running or waiting, run on its host
description:
  - Polls C(GET <url>/metrics) every I(poll) seconds and sums vLLM's gauges C(vllm:num_requests_running) and
    C(vllm:num_requests_waiting) (every engine of a data parallel server). The service is idle once I(settle)
    consecutive polls read both at 0; any other reading starts the count again.
  - Meant for the drain of a service behind the router, after the router stopped sending it new requests and
    before the service is stopped or restarted.
  - A service that does not answer at all (connection refused) has nothing in flight and counts as idle; RV(note)
    says so. Any other missing answer, an answer other than 200, or a C(/metrics) without the two gauges (not a
    vLLM server, or its metrics are off) is not idle.
  - C(/metrics) is asked without the API key. Only when it answers 401 is the key read on the host from
    I(key_file) (the service's environment file, mode 0600, its C(VLLM_API_KEY=) line), and sent again to the
    same URL only (never along a redirect). The key is never an argument of the module and never returned.
  - Stops waiting after I(timeout) seconds and returns RV(timed_out) true, with a warning; it fails then only with
    I(fail_on_timeout). It fails at once when C(/metrics) answers 401 and the key cannot be read or is refused.
  - Requests go to the URL directly, never through a proxy; each has its own timeout of at most 10 seconds, and
    no longer than what is left of the wait (at least 1 second).
version_added: "0.2.0"
author:
  - gpufleet maintainers (@gpufleet)
options:
  url:
    description: Base URL of the service, such as C(http://127.0.0.1:28201); C(/metrics) is added to it.
    type: str
    required: true
  key_file:
    description:
      - The service's environment file with the C(VLLM_API_KEY=) line (readable by root only).
      - Read only when C(/metrics) answers 401.
    type: path
  timeout:
    description: Longest wait, in seconds.
    type: float
    default: 300.0
  poll:
    description: Seconds between two polls (more than 0).
    type: float
    default: 2.0
  settle:
    description: Consecutive idle polls needed (at least 1).
    type: int
    default: 3
  fail_on_timeout:
    description: Fail when the service is not idle after I(timeout) seconds; by default the module returns RV(timed_out).
    type: bool
    default: false
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.read_only
notes:
  - Runs the same in check mode (it only reads).
seealso:
  - module: gpufleet.llm_stack.vllm_health
"""

EXAMPLES = r"""
- name: Wait until the chat service has finished its requests
  gpufleet.llm_stack.vllm_serve_drain:
    url: http://127.0.0.1:28201
    key_file: /etc/llm-stack/vllm/vllm-chat.env
    timeout: 600
    poll: 2
    settle: 3
  register: drained

- name: Stop the service only once it is idle
  ansible.builtin.systemd_service:
    name: vllm-chat
    state: stopped
  when: drained.idle
"""

RETURN = r"""
idle:
  description: Whether I(settle) consecutive polls read no request running or waiting (or nothing answered).
  returned: always
  type: bool
waited:
  description: Seconds the wait took.
  returned: always
  type: float
polls:
  description: How many times C(/metrics) was asked.
  returned: always
  type: int
timed_out:
  description: Whether the wait ended at I(timeout) without the service being idle.
  returned: always
  type: bool
last:
  description: The last reading.
  returned: always
  type: dict
  contains:
    running:
      description: The sum of C(vllm:num_requests_running), null when not known.
      type: float
    waiting:
      description: The sum of C(vllm:num_requests_waiting), null when not known.
      type: float
    problem:
      description: Why the last reading was not readable as idle or busy (no answer, its status, no gauges), else empty.
      type: str
note:
  description: Set when the last poll found nothing answering (connection refused), else empty.
  returned: always
  type: str
summary:
  description: The wait in one line.
  returned: always
  type: str
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _serve_drain as D
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import local_http
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.vllm_serve import read_env_key

# The most of an answer read (vLLM's /metrics is some 40 KiB).
MAX_BODY = 4 * 1024 * 1024


def http_get(url, timeout, key=None):
    """(status, text, error, refused); status 0 with the reason when there is no answer."""
    return local_http.request(url, timeout, key=key, max_body=MAX_BODY)


class Poller(object):
    """One poll of <url>/metrics at a time; asks with the key (read once from key_file) after a 401."""

    def __init__(self, module, url, key_file):
        self.module = module
        self.url = url.rstrip("/") + "/metrics"
        self.key_file = key_file
        self.key = None

    def _read_key(self):
        if not self.key_file:
            return None, "/metrics answered 401 and no key_file is given. Fix: set key_file to the service's env file"
        try:
            with open(self.key_file, "r") as handle:
                key = read_env_key(handle.read())
        except (IOError, OSError) as exc:
            return None, ("/metrics answered 401 and the API key cannot be read from %s: %s. Fix: run the vllm_serve"
                          " role, which writes it" % (self.key_file, exc))
        if not key:
            return None, "/metrics answered 401 and %s has no VLLM_API_KEY line" % self.key_file
        self.module.no_log_values.add(key)
        return key, ""

    def __call__(self, timeout):
        status, text, error, refused = http_get(self.url, timeout, self.key)
        if status == 401 and self.key is None:
            self.key, problem = self._read_key()
            if problem:
                found = D.reading(status, error=error)
                found.update(problem=problem, final=True)
                return found
            status, text, error, refused = http_get(self.url, timeout, self.key)
        found = D.reading(status, text, error, refused, url=self.url)
        if status == 401:
            found.update(problem="/metrics refused the API key of %s (401)" % self.key_file, final=True)
        return found


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", required=True),
            key_file=dict(type="path", no_log=False),
            timeout=dict(type="float", default=300.0),
            poll=dict(type="float", default=2.0),
            settle=dict(type="int", default=3),
            fail_on_timeout=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    p = module.params
    url = p["url"].strip()
    if not url.startswith(("http://", "https://")):
        module.fail_json(msg="url must be an http:// or https:// URL, got %r" % url)
    if p["poll"] <= 0 or p["settle"] < 1 or p["timeout"] < 0:
        module.fail_json(msg="poll must be more than 0, settle at least 1 and timeout at least 0; got poll %s, settle"
                         " %s, timeout %s" % (p["poll"], p["settle"], p["timeout"]))
    result = D.wait_idle(Poller(module, url, p["key_file"]), time.monotonic, time.sleep, p["timeout"], p["poll"],
                         p["settle"])
    shown = D.summary(result, url)
    out = dict(changed=False, idle=result["idle"], waited=result["waited"], polls=result["polls"],
               timed_out=result["timed_out"], last=result["last"], note=result["note"], summary=shown)
    if result["failed"]:
        module.fail_json(msg="The drain wait of %s stopped: %s" % (url, result["failed"]), **out)
    if result["timed_out"]:
        if p["fail_on_timeout"]:
            module.fail_json(msg="vLLM service %s" % shown, **out)
        module.warn("vLLM service %s" % shown)
    module.exit_json(**out)


if __name__ == "__main__":
    main()
