#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: fleet_lock
short_description: Build locks and the build ledger of the fleet cache host
description:
  - Runs on the fleet cache host (C(delegate_to) it). One lock per build key, a directory made with mkdir under
    I(lock_dir), so that across jobs and job slices one host at a time builds a key; its C(owner.json) names the
    holder (host, job, controller, process id, since when).
  - C(state=query) says whether the package index has the key's wheel and who holds the key's lock; it changes
    nothing.
  - C(state=acquire) looks on the index first; when the wheel is there, RV(verdict) is C(install). Else, with
    I(may_build), it takes the lock when it is free and no build of the key failed since I(since), looks on the index
    once more (the previous holder may just have uploaded it) and says C(build). Else C(wait) while another host
    holds the lock, C(fail) when nobody holds it (the build failed, RV(msg) says where, with the end of its log).
  - A lock older than I(stale_after) seconds was left by a job that died; it is moved aside and taken anew
    (RV(broken)).
  - C(state=release), when I(owner) holds the lock, appends the build's line to the ledger (JSON lines at
    I(ledger)) and removes the lock; else it does nothing.
  - The decisions are in C(plugins/module_utils/fleet_lock.py) and C(plugins/module_utils/wheel_index.py).
version_added: "0.2.0"
author:
  - gpufleet maintainers (@gpufleet)
options:
  state:
    description: What to do.
    type: str
    choices: [query, acquire, release]
    default: query
  entry:
    description: The build key's cache entry (C(<label>-<12 hex digits>), wheel_build's C(wheel_build_state.entry)).
    type: str
    required: true
  name:
    description: The distribution built (pip name), e.g. C(flash-attn).
    type: str
    required: true
  lock_dir:
    description: Directory of the locks on the cache host.
    type: path
    required: true
  ledger:
    description: The build ledger (JSON lines) on the cache host.
    type: path
    required: true
  index_url:
    description: Base URL of the package index, as the cache host reaches it (C(query), C(acquire)).
    type: str
  validate_certs:
    description: Check the index's TLS certificate.
    type: bool
    default: true
  owner:
    description:
      - Who takes or releases the lock; C(host) (required for C(acquire) and C(release)), C(job), C(controller), C(pid).
    type: dict
    default: {}
  may_build:
    description: This host is its play's builder of the key (C(acquire) takes the lock only then).
    type: bool
    default: false
  since:
    description:
      - When this host began to work on the key (C(%Y-%m-%dT%H:%M:%SZ), UTC); a failed build recorded before it
        is an older run's and does not stop this one. Empty considers every failure.
    type: str
    default: ""
  stale_after:
    description: Seconds after which a lock counts as left by a dead job. C(0) never.
    type: int
    default: 15300
  record:
    description:
      - "C(release) the ledger line's fields besides C(build_key), C(name), C(host), C(job) and C(finished):
        C(result) (C(built), C(failed), C(none)), C(started), C(wheel), C(sha256), C(log), C(tail). C(none) records
        nothing (a holder that found the wheel after all)."
    type: dict
    default: {}
attributes:
  check_mode:
    support: full
    description: C(query) reads; C(acquire) and C(release) report what they would do and change nothing.
  diff_mode:
    support: none
    description: No diff.
notes:
  - Take the lock with C(until) for a wait with a line at every retry, see the wheel_build role.
"""

EXAMPLES = r"""
- name: Take the build lock of the key, or wait for the host that holds it
  gpufleet.llm_stack.fleet_lock:
    state: acquire
    entry: "{{ wheel_build_state.entry }}"
    name: flash-attn
    lock_dir: /var/lib/fleet-cache/locks
    ledger: /var/lib/fleet-cache/ledger.jsonl
    index_url: http://cache-1:8080
    owner: {host: "{{ inventory_hostname }}", job: "{{ awx_job_id | default('') }}"}
    may_build: true
  delegate_to: cache-1
  register: lock
  until: lock.verdict != 'wait'
  retries: 500
  delay: 30
"""

RETURN = r"""
verdict:
  description: C(install) (the index has the wheel), C(build) (this host holds the lock), C(wait) or C(fail).
  returned: query, acquire
  type: str
acquired:
  description: This call took the lock.
  returned: query, acquire
  type: bool
wheel:
  description: The key's wheel on the index, C(filename), C(url) and C(sha256); null when it has none.
  returned: query, acquire
  type: dict
holder:
  description: The owner record of the lock (null when the key is not locked).
  returned: always
  type: dict
broken:
  description: The owner record of a stale lock moved aside by this call, else null.
  returned: acquire
  type: dict
failure:
  description: The ledger's record of a failed build of the key since I(since), else null.
  returned: query, acquire
  type: dict
released:
  description: The lock was removed.
  returned: release
  type: bool
now:
  description: The cache host's time (C(%Y-%m-%dT%H:%M:%SZ)), for I(since) of later calls.
  returned: query, acquire
  type: str
msg:
  description: What the verdict means, and for C(fail) where the build failed, with the end of its log.
  returned: always
  type: str
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import fetch_url
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import fleet_lock as L
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_index as W


def index_getter(module):
    def get(url):
        response, info = fetch_url(module, url, method="GET", timeout=30, use_proxy=False)
        status = info.get("status", -1)
        if response is not None:
            return status, response.read().decode("utf-8", "replace")
        return status, info.get("body", b"").decode("utf-8", "replace") if isinstance(info.get("body"), bytes) else ""
    return get


def look(module, p):
    if not p["index_url"]:
        module.fail_json(msg="fleet_lock state=%s needs index_url (llm_stack_wheel_index_url)" % p["state"])
    try:
        found = W.lookup(p["index_url"], p["name"], p["entry"], index_getter(module))
    except W.WheelIndexError as exc:
        module.fail_json(msg=str(exc))
    if found["problem"]:
        module.fail_json(msg=found["problem"], holder=None)
    return found


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["query", "acquire", "release"], default="query"),
            entry=dict(type="str", required=True),
            name=dict(type="str", required=True),
            lock_dir=dict(type="path", required=True),
            ledger=dict(type="path", required=True),
            index_url=dict(type="str"),
            validate_certs=dict(type="bool", default=True),
            owner=dict(type="dict", default={}),
            may_build=dict(type="bool", default=False),
            since=dict(type="str", default=""),
            stale_after=dict(type="int", default=15300),
            record=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    p = module.params
    owner = dict(p["owner"] or {})
    try:
        L.lock_path(p["lock_dir"], p["entry"])
    except L.FleetLockError as exc:
        module.fail_json(msg=str(exc))
    if p["state"] in ("acquire", "release") and not owner.get("host"):
        module.fail_json(msg="fleet_lock state=%s needs owner.host" % p["state"])

    if p["state"] == "release":
        holder = L.holder(p["lock_dir"], p["entry"])
        record = dict(p["record"] or {})
        result = record.get("result") or "none"
        if module.check_mode:
            module.exit_json(changed=L.holds(holder, owner["host"], owner.get("job") or ""), released=False,
                             holder=holder, msg="check mode: nothing released")
        changed = False
        if result != "none" and L.holds(holder, owner["host"], owner.get("job") or ""):
            record.update(build_key=p["entry"], name=p["name"], host=owner["host"], job=owner.get("job") or "",
                          finished=L.iso(time.time()))
            L.append_ledger(p["ledger"], record)
            changed = True
        done = L.release(p["lock_dir"], p["entry"], owner["host"], owner.get("job") or "")
        module.exit_json(changed=changed or done["released"], released=done["released"], holder=done["holder"],
                         msg="released the lock of %s" % p["entry"] if done["released"] else "this host held no lock of %s" % p["entry"])

    found = look(module, p)
    failure = L.failure_since(L.read_ledger(p["ledger"]), p["entry"], p["since"])
    lock = {"acquired": False, "holder": L.holder(p["lock_dir"], p["entry"]), "broken": None}
    changed = False
    if p["state"] == "acquire" and p["may_build"] and not found["found"] and not failure and not module.check_mode:
        lock = L.acquire(p["lock_dir"], p["entry"], owner, p["stale_after"])
        changed = lock["acquired"] or lock["broken"] is not None
        if lock["acquired"]:
            again = look(module, p)
            if again["found"]:
                L.release(p["lock_dir"], p["entry"], owner["host"], owner.get("job") or "")
                found, lock = again, {"acquired": False, "holder": None, "broken": lock["broken"]}
    verdict = L.decide(found["found"], lock)
    if p["state"] == "query" and verdict == "fail" and not failure:
        verdict = "wait"
    holder = lock.get("holder")
    msgs = {
        "install": "the index has %s" % ((found["wheel"] or {}).get("filename")),
        "build": "this host holds the lock of %s and builds it" % p["entry"],
        "wait": "%s holds the lock of %s (job %s, since %s); waiting for its wheel" % (
            (holder or {}).get("host", "another host"), p["entry"], (holder or {}).get("job") or "-",
            (holder or {}).get("since", "?")) if holder is not None else "nobody builds %s yet" % p["entry"],
        "fail": L.failure_message(p["entry"], p["name"], failure) if failure else (
            "Nobody built %s for key %s and the index does not have it: its builder in this play failed before the "
            "build (see its error above). Fix: solve that problem and run again." % (p["name"], p["entry"])),
    }
    module.exit_json(changed=changed, verdict=verdict, acquired=lock["acquired"], wheel=found["wheel"], holder=holder,
                     broken=lock.get("broken"), failure=failure, msg=msgs[verdict], now=L.iso(time.time()))


if __name__ == "__main__":
    main()
