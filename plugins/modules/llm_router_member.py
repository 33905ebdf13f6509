#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: llm_router_member
short_description: Put servers of the LLM router (HAProxy) into ready, drain or maint in every backend
version_added: "0.2.0"
description:
  - Runs on a router host (role C(gpufleet.llm_stack.llm_router); use C(delegate_to) from a serving host) and talks
    to HAProxy's runtime API on its admin socket (AF_UNIX, one command per connection, each with a timeout).
  - Reads C(show servers state), finds every backend that has each server of O(servers) (a server is in its model's
    backend and in C(be_any)) and sends C(set server <backend>/<server> state <state>) where the server's
    administrative state is not O(state) already. Changed only where a state actually changed; in check mode
    nothing is sent.
  - C(drain) takes no new requests while the ones in flight (streams included) finish and the health checks go on;
    C(maint) also stops the checks; C(ready) gives the server back, to take requests once its checks pass.
  - After a change it writes the whole C(show servers state) to O(state_file), which HAProxy loads at a reload or
    start (C(load-server-state-from-file global)), so a drain survives both and a stale file never brings an old
    drain back. With an empty O(servers) the module only writes that file (the role does so before each reload).
  - The decisions are in C(plugins/module_utils/_router_runtime.py).
author:
  - gpufleet maintainers (@gpufleet)
options:
  socket:
    description: HAProxy's admin socket (C(stats socket ... level admin)).
    type: path
    default: /run/llm-router/admin.sock
  servers:
    description: Server names, C(<inventory_hostname>_<service name>) as the role names them.
    type: list
    elements: str
    required: true
  state:
    description: The administrative state to set.
    type: str
    choices: [ready, drain, maint]
    default: ready
  missing_ok:
    description:
      - A router that does not run (no socket, connection refused) or a server in no backend is not an error; it is
        reported in RV(missing). With C(false) either fails the task.
    type: bool
    default: true
  state_file:
    description:
      - The server-state file of the router's config (C(server-state-file)), written after every change. Empty, it
        is never written.
    type: path
    default: /var/lib/llm-router/server-state
  timeout:
    description: Seconds one command on the socket may take (connect, send and read).
    type: float
    default: 10
  wait_up:
    description:
      - With O(state=ready), seconds to wait until the router's health checks have each server up again (none of
        them C(down)); past them the task fails, naming the servers. C(0) does not wait. A rolling change waits, so
        that the next host's drain never leaves a model without a server.
    type: float
    default: 0
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.changes
notes:
  - In check mode it reads the servers' states and reports what would change; it sends no command and writes no file.
  - A request in flight on a drained server finishes; wait for the drain (module C(gpufleet.llm_stack.vllm_serve_drain))
    before stopping the service.
seealso:
  - module: gpufleet.llm_stack.llm_router_health
"""

EXAMPLES = r"""
- name: Drain this host's services in every router
  gpufleet.llm_stack.llm_router_member:
    servers: ["{{ inventory_hostname }}_chat"]
    state: drain
  delegate_to: "{{ item }}"
  loop: "{{ groups['llm_router'] | default([]) }}"
"""

RETURN = r"""
servers:
  description: Each server found, with its backends, its state before and after (ready, drain, maint, or down where
    its checks fail in every backend; ready where it is ready in some and down in the others; C(mixed) when the
    backends differ otherwise) and each backend's (C(states)).
  returned: always
  type: dict
  sample:
    web1_chat:
      backends: [be_any, be_qwen3_chat]
      before: ready
      after: drain
      states:
        be_any: {before: ready, after: drain}
        be_qwen3_chat: {before: ready, after: drain}
missing:
  description: The servers in no backend; all of them where the router does not run.
  returned: always
  type: list
  elements: str
router:
  description: C(running), or why the router was not reached (C(not running) and the reason).
  returned: always
  type: str
waited_up:
  description: Seconds waited for the servers to be up again (O(wait_up)).
  returned: when O(wait_up) is above 0 and O(state=ready)
  type: float
commands:
  description: The runtime API commands sent (in check mode, the ones that would be).
  returned: always
  type: list
  elements: str
"""

import errno
import os
import socket
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_text

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _router_runtime as R
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._fs import write_atomic


class NotRunning(Exception):
    """The admin socket is absent or nobody listens on it."""


def runtime_command(path, command, timeout):
    """One command on HAProxy's admin socket: connect, send, read until HAProxy closes; the answer's text.

    Without `prompt` mode HAProxy answers one command per connection and closes it.
    """
    if not os.path.exists(path):
        raise NotRunning("no socket at %s" % path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        try:
            sock.connect(path)
        except socket.error as exc:
            if exc.errno in (errno.ECONNREFUSED, errno.ENOENT):
                raise NotRunning("nothing listens on %s (%s)" % (path, exc))
            raise
        sock.sendall(to_bytes(command + "\n"))
        chunks = []
        while True:
            data = sock.recv(65536)
            if not data:
                break
            chunks.append(data)
        return to_text(b"".join(chunks), errors="surrogate_or_strict")
    finally:
        sock.close()


def save_state(path, text):
    """Write the state file atomically (mode 0600). Returns whether its content changed."""
    return write_atomic(path, text, mode=0o600, only_if_changed=True)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            socket=dict(type="path", default="/run/llm-router/admin.sock"),
            servers=dict(type="list", elements="str", required=True),
            state=dict(type="str", choices=list(R.STATES), default="ready"),
            missing_ok=dict(type="bool", default=True),
            state_file=dict(type="path", default="/var/lib/llm-router/server-state"),
            timeout=dict(type="float", default=10),
            wait_up=dict(type="float", default=0),
        ),
        supports_check_mode=True,
    )
    params = module.params
    path, timeout, servers = params["socket"], params["timeout"], params["servers"]
    result = dict(changed=False, servers={}, missing=[], router="running", commands=[])

    def read_state():
        parsed = R.parse_servers_state(runtime_command(path, "show servers state", timeout))
        if parsed["error"]:
            module.fail_json(msg="HAProxy at %s: %s" % (path, parsed["error"]), **result)
        return parsed

    try:
        before = read_state()
    except NotRunning as exc:
        result.update(router="not running: %s" % exc, missing=list(servers))
        if params["missing_ok"] or not servers:
            module.exit_json(**result)
        module.fail_json(msg="The router does not run: %s. Fix: start it (role gpufleet.llm_stack.llm_router), or"
                             " set missing_ok: true" % exc, **result)
    except (socket.error, OSError) as exc:
        module.fail_json(msg="HAProxy's admin socket %s: %s" % (path, exc), **result)

    try:
        plan = R.member_plan(before["rows"], servers, params["state"])
    except ValueError as exc:
        module.fail_json(msg=str(exc), **result)
    result.update(servers=plan["servers"], missing=plan["missing"],
                  commands=[command for dummy, dummy2, command in plan["commands"]])
    if plan["missing"] and not params["missing_ok"]:
        module.fail_json(msg="Not in any backend of the router: %s. Fix: run role gpufleet.llm_stack.llm_router so"
                             " that its config lists them, or set missing_ok: true" % ", ".join(plan["missing"]),
                         **result)
    if module.check_mode:
        result["changed"] = bool(plan["commands"])
        module.exit_json(**result)

    errors = []
    done = 0
    for dummy, dummy2, command in plan["commands"]:
        try:
            ok, message = R.command_ok(runtime_command(path, command, timeout))
        except (NotRunning, socket.error, OSError) as exc:
            ok, message = False, str(exc)
        if ok:
            done += 1
        else:
            errors.append("%s: %s" % (command, message))
    result["changed"] = done > 0
    if done or not servers:
        try:
            dump = runtime_command(path, "show servers state", timeout)
            parsed = R.parse_servers_state(dump)
            if not parsed["error"]:
                result["servers"] = R.apply_after(plan, parsed["rows"])
                if params["state_file"]:
                    changed = save_state(params["state_file"], dump)
                    result["changed"] = result["changed"] or (changed and not servers)
        except (NotRunning, socket.error, OSError, IOError) as exc:
            errors.append("saving the servers' state to %s: %s" % (params["state_file"], exc))
    if errors:
        module.fail_json(msg="HAProxy refused: %s" % "; ".join(errors), **result)
    if params["state"] == "ready" and params["wait_up"] > 0 and servers:
        wait_until_up(module, path, timeout, plan, servers, params["wait_up"], result)
    module.exit_json(**result)


def wait_until_up(module, path, timeout, plan, servers, limit, result):
    """Poll show servers state until no server of servers reads down (R.apply_after), at most limit seconds."""
    start = time.time()
    while True:
        down = [name for name in servers if (result["servers"].get(name) or {}).get("after") == "down"]
        result["waited_up"] = round(time.time() - start, 1)
        if not down:
            return
        if time.time() - start >= limit:
            module.fail_json(msg="The router's health checks did not take %s back within %g s. Fix: look at the"
                                 " service's log and at the router's checks (show servers state on %s)"
                                 % (", ".join(down), limit, path), **result)
        time.sleep(1)
        try:
            parsed = R.parse_servers_state(runtime_command(path, "show servers state", timeout))
        except (NotRunning, socket.error, OSError) as exc:
            module.fail_json(msg="HAProxy's admin socket %s: %s" % (path, exc), **result)
        if not parsed["error"]:
            result["servers"] = R.apply_after(plan, parsed["rows"])


if __name__ == "__main__":
    main()
