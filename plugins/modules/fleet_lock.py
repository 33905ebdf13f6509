#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: fleet_lock
short_description: Build locks, the build ledger and the published wheels of the fleet cache host
description:
  - Runs on the fleet cache host (C(delegate_to) it, over the inventory's connection). One lock per build key, a
    directory made with mkdir under I(lock_dir), so that across jobs and job slices one host at a time builds a key;
    its C(owner.json) names the holder (host, job, controller, the process id of its ansible-playbook and that
    process's start time, since when).
  - The ledger (JSON lines at I(ledger)) is the authority on each key's wheel. C(state=query) says whether the ledger
    records the key's wheel and its file is in the index's I(packages_dir), and who holds the key's lock; it changes
    nothing. RV(wheel) carries the sha256 the ledger recorded, which the installing hosts check the file they
    download against (M(gpufleet.llm_stack.wheel_index_download)); the index's listing is never read.
  - C(state=acquire) looks at the ledger first; when the key's wheel is there, RV(verdict) is C(install). Else, with
    I(may_build), it takes the lock when it is free and no build of the key failed since I(since), looks once more
    (the previous holder may just have published the wheel) and says C(build). Else C(wait) while another host
    holds the lock, C(fail) when nobody holds it (the build failed, RV(msg) says where, with the end of its log).
  - A lock older than I(stale_after) seconds was left by a job that died; it is moved aside and taken anew
    (RV(broken)). The action plugin takes over sooner the lock of a holder that is provably dead (same controller,
    boot and pid namespace, and its process is gone or is another process now); it passes that holder's record as
    I(dead_holder), and the lock is moved aside only while that same record holds it.
  - C(state=publish), when I(owner) holds the lock, takes the builder's wheel, copied to the cache host at
    I(incoming) (its file name is the name on the index), checks its sha256 against I(record.sha256) (what the
    builder read of it), puts it into I(packages_dir) and appends its C(built) line with that sha256 to the ledger,
    then releases the lock. When the ledger records another wheel of the key that is still on the index, the key
    keeps it; this one is not published (a C(refused) line), and RV(wheel) is the recorded one. The index itself
    takes no uploads.
  - C(state=release), when I(owner) holds the lock, appends a C(failed) line to the ledger (I(record.result) C(failed);
    C(none) records nothing) and removes the lock; else it does nothing. A C(built) line is written by C(publish)
    only.
  - The decisions are in C(plugins/module_utils/fleet_lock.py) and C(plugins/module_utils/wheel_index.py).
version_added: "0.2.0"
author:
  - gpufleet maintainers (@gpufleet)
options:
  state:
    description: What to do.
    type: str
    choices: [query, acquire, publish, release]
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
  packages_dir:
    description: The index's packages directory on the cache host (C(query), C(acquire), C(publish)).
    type: path
  index_url:
    description: Base URL of the package index as the fleet reaches it, for the C(url) of RV(wheel) (C(query), C(acquire), C(publish)).
    type: str
  owner:
    description:
      - Who takes, publishes or releases the lock; C(host) (required for C(acquire), C(publish) and C(release)),
        C(job), and, added by the action plugin, C(controller), C(pid), C(pid_start), C(boot_id), C(pid_ns).
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
  dead_holder:
    description:
      - C(acquire) the owner record of a holder proven dead (set by the action plugin, not by tasks); its lock is
        moved aside and taken when that record still holds it.
    type: dict
  incoming:
    description: C(publish) the wheel on the cache host, named as the index keeps it.
    type: path
  record:
    description:
      - "C(publish) and C(release) the ledger line's fields besides C(build_key), C(name), C(host), C(job) and
        C(finished): C(result) (C(release): C(failed) or C(none); C(none) records nothing, for a holder that found
        the wheel after all), C(started), C(sha256) (C(publish): the builder's sha256 of the wheel), C(log),
        C(error), C(tail)."
    type: dict
    default: {}
attributes:
  check_mode:
    support: full
    description: C(query) reads; C(acquire), C(publish) and C(release) report what they would do and change nothing.
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
    packages_dir: /var/lib/fleet-cache/packages
    index_url: https://cache-1:8443
    owner: {host: "{{ inventory_hostname }}", job: "{{ awx_job_id | default('') }}"}
    may_build: true
  delegate_to: cache-1
  register: lock
  until: lock.verdict != 'wait'
  retries: 500
  delay: 30

- name: Publish the wheel the builder built (copied to the cache host through the controller)
  gpufleet.llm_stack.fleet_lock:
    state: publish
    entry: "{{ wheel_build_state.entry }}"
    name: flash-attn
    lock_dir: /var/lib/fleet-cache/locks
    ledger: /var/lib/fleet-cache/ledger.jsonl
    packages_dir: /var/lib/fleet-cache/packages
    index_url: https://cache-1:8443
    incoming: /var/lib/fleet-cache/incoming/flash_attn-2.8.3-0ef7beb2c6e35-cp312-cp312-linux_x86_64.whl
    owner: {host: "{{ inventory_hostname }}", job: "{{ awx_job_id | default('') }}"}
    record: {sha256: "{{ built.stat.checksum }}", started: "{{ started }}", log: /var/log/llm-stack/build.log}
  delegate_to: cache-1
"""

RETURN = r"""
verdict:
  description: C(install) (the ledger records the key's wheel and the index has it), C(build) (this host holds the lock), C(wait) or C(fail).
  returned: query, acquire
  type: str
acquired:
  description: This call took the lock.
  returned: query, acquire
  type: bool
wheel:
  description:
    - The key's wheel, C(filename), C(url), C(sha256) (the ledger's), C(path) (in I(packages_dir)), C(built_on),
      C(job), C(finished); null when there is none.
  returned: query, acquire, publish
  type: dict
published:
  description: C(publish) put this build's wheel on the index (false when the key keeps its recorded wheel).
  returned: publish
  type: bool
ledger_outcome:
  description:
    - The result word of the ledger line C(publish) wrote for this build, for the builder's own ledger to record the
      same - C(built) (RV(published) true) or C(refused) (the key keeps its recorded wheel). In check mode, where
      nothing is published or recorded, C(refused).
  returned: publish
  type: str
  sample: built
holder:
  description: The owner record of the lock (null when the key is not locked).
  returned: always
  type: dict
broken:
  description: The owner record of a stale or dead holder's lock moved aside by this call (with C(taken_over)), else null.
  returned: acquire
  type: dict
failure:
  description: The ledger's record of a failed build of the key since I(since), else null.
  returned: query, acquire
  type: dict
released:
  description: The lock was removed.
  returned: publish, release
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

import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import fleet_lock as L
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_index as W


def needs(module, p, *names):
    missing = [name for name in names if not p.get(name)]
    if missing:
        module.fail_json(msg="fleet_lock state=%s needs %s" % (p["state"], ", ".join(missing)))


def look(p):
    """The key's wheel as the ledger records it and the index holds it, or None."""
    return L.index_wheel(p["packages_dir"], p["index_url"], L.recorded_wheel(L.read_ledger(p["ledger"]), p["entry"]))


def line(p, owner, **fields):
    record = dict(p["record"] or {})
    record.update(fields)
    record.update(build_key=p["entry"], name=p["name"], host=owner["host"], job=owner.get("job") or "",
                  finished=L.iso(time.time()))
    return record


def release(module, p, owner):
    holder = L.holder(p["lock_dir"], p["entry"])
    result = (p["record"] or {}).get("result") or "none"
    if result not in ("failed", "none"):
        module.fail_json(msg="fleet_lock state=release records result failed or none; a built wheel is recorded by "
                             "state=publish, which checks and publishes it", holder=holder)
    if module.check_mode:
        module.exit_json(changed=L.holds(holder, owner["host"], owner.get("job") or ""), released=False,
                         holder=holder, msg="check mode: nothing released")
    changed = False
    if result != "none" and L.holds(holder, owner["host"], owner.get("job") or ""):
        L.append_ledger(p["ledger"], line(p, owner, result=result))
        changed = True
    done = L.release(p["lock_dir"], p["entry"], owner["host"], owner.get("job") or "")
    module.exit_json(changed=changed or done["released"], released=done["released"], holder=done["holder"],
                     msg="released the lock of %s" % p["entry"] if done["released"] else "this host held no lock of %s" % p["entry"])


def publish(module, p, owner):
    needs(module, p, "packages_dir", "index_url", "incoming")
    holder = L.holder(p["lock_dir"], p["entry"])
    if not L.holds(holder, owner["host"], owner.get("job") or ""):
        module.fail_json(msg="%s (job %s) does not hold the lock of %s (held by %s), so its wheel is not published. "
                             "Fix: run again." % (owner["host"], owner.get("job") or "-", p["entry"],
                                                  (holder or {}).get("host", "nobody")), holder=holder)
    if not os.path.isfile(p["incoming"]):
        module.fail_json(msg="the wheel to publish, %s, is not on the cache host" % p["incoming"], holder=holder)
    if module.check_mode:
        module.exit_json(changed=True, published=False, ledger_outcome=L.ledger_outcome(False), released=False,
                         holder=holder, wheel=look(p), msg="check mode: nothing published")
    record = line(p, owner)
    sha = record.pop("sha256", "")
    try:
        done = L.publish(p["ledger"], p["packages_dir"], p["incoming"], sha, record)
    except L.FleetLockError as exc:
        module.fail_json(msg=str(exc), holder=holder)
    os.unlink(p["incoming"])
    released = L.release(p["lock_dir"], p["entry"], owner["host"], owner.get("job") or "")["released"]
    wheel = L.index_wheel(p["packages_dir"], p["index_url"], done["wheel"])
    if not done["published"]:
        module.warn(done["msg"])
    module.exit_json(changed=True, published=done["published"], ledger_outcome=done["ledger_outcome"],
                     released=released, holder=holder, wheel=wheel, msg=done["msg"])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["query", "acquire", "publish", "release"], default="query"),
            entry=dict(type="str", required=True),
            name=dict(type="str", required=True),
            lock_dir=dict(type="path", required=True),
            ledger=dict(type="path", required=True),
            packages_dir=dict(type="path"),
            index_url=dict(type="str"),
            owner=dict(type="dict", default={}),
            may_build=dict(type="bool", default=False),
            since=dict(type="str", default=""),
            stale_after=dict(type="int", default=15300),
            dead_holder=dict(type="dict"),
            incoming=dict(type="path"),
            record=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    p = module.params
    owner = dict(p["owner"] or {})
    try:
        L.lock_path(p["lock_dir"], p["entry"])
        W.build_tag(p["entry"])
    except (L.FleetLockError, W.WheelIndexError) as exc:
        module.fail_json(msg=str(exc))
    if p["state"] in ("acquire", "publish", "release") and not owner.get("host"):
        module.fail_json(msg="fleet_lock state=%s needs owner.host" % p["state"])
    if p["state"] == "release":
        release(module, p, owner)
    if p["state"] == "publish":
        publish(module, p, owner)

    needs(module, p, "packages_dir", "index_url")
    problem = W.check_index_url(p["index_url"])
    if problem:
        module.fail_json(msg=problem)
    found = look(p)
    failure = L.failure_since(L.read_ledger(p["ledger"]), p["entry"], p["since"])
    lock = {"acquired": False, "holder": L.holder(p["lock_dir"], p["entry"]), "broken": None}
    changed = False
    if p["state"] == "acquire" and p["may_build"] and not found and not failure and not module.check_mode:
        lock = L.acquire(p["lock_dir"], p["entry"], owner, p["stale_after"], dead_holder=p["dead_holder"])
        changed = lock["acquired"] or lock["broken"] is not None
        if lock["acquired"]:
            again = look(p)
            if again:
                L.release(p["lock_dir"], p["entry"], owner["host"], owner.get("job") or "")
                found, lock = again, {"acquired": False, "holder": None, "broken": lock["broken"]}
    verdict = L.decide(bool(found), lock)
    if p["state"] == "query" and verdict == "fail" and not failure:
        verdict = "wait"
    holder = lock.get("holder")
    msgs = {
        "install": "the ledger records %s for %s and the index has it" % ((found or {}).get("filename"), p["entry"]),
        "build": "this host holds the lock of %s and builds it%s" % (p["entry"], (
            " (it moved aside the lock of %s, job %s, since %s: %s)" % (
                lock["broken"].get("host", "?"), lock["broken"].get("job") or "-", lock["broken"].get("since", "?"),
                lock["broken"].get("taken_over", "stale"))) if lock.get("broken") else ""),
        "wait": "%s holds the lock of %s (job %s, since %s); waiting for its wheel" % (
            (holder or {}).get("host", "another host"), p["entry"], (holder or {}).get("job") or "-",
            (holder or {}).get("since", "?")) if holder is not None else "nobody builds %s yet" % p["entry"],
        "fail": L.failure_message(p["entry"], p["name"], failure) if failure else (
            "Nobody built %s for key %s and the index does not have it: its builder in this play failed before the "
            "build (see its error above). Fix: solve that problem and run again." % (p["name"], p["entry"])),
    }
    module.exit_json(changed=changed, verdict=verdict, acquired=lock["acquired"], wheel=found, holder=holder,
                     broken=lock.get("broken"), failure=failure, msg=msgs[verdict], now=L.iso(time.time()))


if __name__ == "__main__":
    main()
