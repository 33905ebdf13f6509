# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: the router (HAProxy 2.6) at run time, as pure functions; the modules llm_router_member and
llm_router_health do only the I/O.

- ``parse_servers_state``: the runtime API's ``show servers state`` (format version 1) as rows;
- ``state_name`` / ``admin_name`` / ``op_name``: a server's states as words (ready, drain, maint, down);
- ``member_plan``: the ``set server <backend>/<server> state <s>`` commands that put servers into a state in every
  backend that has them, and what changes;
- ``command_ok``: whether the runtime API accepted a command;
- ``health_verdict``: the router's health gate from its checks.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.llm_stack.plugins.module_utils._readers import as_dict as _dict, text as _text
# The verdict of checks, shared with vllm_serve's health gate.
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._serve_health import verdict

STATES = ("ready", "drain", "maint")
# The columns of `show servers state` in HAProxy 2.6 (format version 1); later columns may be added.
COLUMNS = ("be_id", "be_name", "srv_id", "srv_name", "srv_addr", "srv_op_state", "srv_admin_state")
# srv_admin_state is a bit field (HAProxy include/haproxy/server-t.h, enum srv_admin):
# SRV_ADMF_FMAINT 0x01 (forced: `set server ... state maint`), IMAINT 0x02 (inherited through `track`),
# CMAINT 0x04 (`disabled` in the config), FDRAIN 0x08 (forced: `state drain`), IDRAIN 0x10 (inherited),
# RMAINT 0x20 (DNS resolution failed), HMAINT 0x40 (`set server ... fqdn` pending).
ADMIN_MAINT = 0x01 | 0x02 | 0x04 | 0x20 | 0x40
ADMIN_DRAIN = 0x08 | 0x10
# srv_op_state (enum srv_state): 0 SRV_ST_STOPPED, 1 SRV_ST_STARTING, 2 SRV_ST_RUNNING, 3 SRV_ST_STOPPING.
OP_NAMES = {0: "down", 1: "starting", 2: "up", 3: "stopping"}
# What HAProxy takes as a proxy or server name (proxy.c / server.c: invalid_char): letters, digits, - _ . :
_NAME_RE = re.compile(r"[A-Za-z0-9._:-]+", re.ASCII)


def parse_servers_state(text):
    """``show servers state`` as {rows: [...], error}.

    Each row: backend, server, address, port (int or None), op (int), admin (int), state (state_name()), admin_state
    (admin_name()), op_state (op_name()). error is '' or why the text is not version 1 of the format (the first line
    is the version, the second the '# be_id be_name ...' header).
    """
    lines = [line.strip() for line in _text(text).splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        return {"rows": [], "error": "empty answer to 'show servers state'"}
    if lines[0] != "1":
        return {"rows": [], "error": "'show servers state' answered %r, not format version 1" % lines[0][:120]}
    header = None
    rows = []
    for line in lines[1:]:
        if line.startswith("#"):
            header = line.lstrip("#").split()
            continue
        if header is None:
            return {"rows": [], "error": "'show servers state' has no '# be_id be_name ...' header line"}
        if tuple(header[:len(COLUMNS)]) != COLUMNS:
            return {"rows": [], "error": "'show servers state' has the columns %s, not %s"
                    % (" ".join(header[:len(COLUMNS)]), " ".join(COLUMNS))}
        fields = line.split()
        if len(fields) < len(COLUMNS):
            return {"rows": [], "error": "'show servers state' line %r has %d fields, fewer than %d"
                    % (line[:120], len(fields), len(COLUMNS))}
        row = dict(zip(header, fields))
        try:
            op, admin = int(row["srv_op_state"]), int(row["srv_admin_state"])
        except ValueError:
            return {"rows": [], "error": "'show servers state' line %r has a state that is not a number" % line[:120]}
        port = row.get("srv_port", "")
        rows.append({"backend": row["be_name"], "server": row["srv_name"], "address": row["srv_addr"],
                     "port": int(port) if port.isdigit() else None, "op": op, "admin": admin,
                     "state": state_name(op, admin), "admin_state": admin_name(admin), "op_state": op_name(op)})
    if header is None:
        return {"rows": [], "error": "'show servers state' has no '# be_id be_name ...' header line"}
    return {"rows": rows, "error": ""}


def admin_name(admin):
    """The administrative state that `set server ... state` sets: maint, drain or ready."""
    if admin & ADMIN_MAINT:
        return "maint"
    if admin & ADMIN_DRAIN:
        return "drain"
    return "ready"


def op_name(op):
    return OP_NAMES.get(op, "unknown(%s)" % op)


def state_name(op, admin):
    """One word for a server: maint or drain (set by an operator, whatever its checks say), else down while its
    checks fail (op state stopped), else ready (up, starting or stopping)."""
    name = admin_name(admin)
    if name == "ready" and op == 0:
        return "down"
    return name


def set_command(backend, server, state):
    """The runtime API command that sets a server's administrative state."""
    if state not in STATES:
        raise ValueError("state must be one of %s, got %r" % (", ".join(STATES), state))
    for name in (backend, server):
        if not _NAME_RE.fullmatch(_text(name)):
            raise ValueError("%r is not an HAProxy backend or server name" % (name,))
    return "set server %s/%s state %s" % (backend, server, state)


def _summary(states):
    """One word for a server's backends: their state where they agree; ready where it is ready in some and down in
    the others (its checks fail only where it does not serve the backend's model); else mixed."""
    found = sorted(set(states.values()))
    if found == ["down", "ready"]:
        return "ready"
    return found[0] if len(found) == 1 else "mixed" if found else None


def member_plan(rows, servers, state):
    """What putting servers into state means, from parse_servers_state()' rows.

    Returns {commands: [(backend, server, command)], servers: {name: {backends, before, after, states}},
    missing: [name]}; a server is changed in a backend only where its administrative state is not state already.
    before/after are one word when every backend agrees (state_name; ready where it is ready in some backends and down
    in the others), else 'mixed'; states holds each backend's {before, after}. missing: the names in no backend.
    """
    if state not in STATES:
        raise ValueError("state must be one of %s, got %r" % (", ".join(STATES), state))
    commands, found, missing = [], {}, []
    for name in [_text(server) for server in servers or []]:
        if name in found or name in missing:
            continue
        own = [row for row in rows or [] if row.get("server") == name]
        if not own:
            missing.append(name)
            continue
        states = {}
        for row in own:
            after = row["state"]
            if row["admin_state"] != state:
                commands.append((row["backend"], name, set_command(row["backend"], name, state)))
                after = state_name(row["op"], 0) if state == "ready" else state
            states[row["backend"]] = {"before": row["state"], "after": after}
        found[name] = {"backends": sorted(states), "states": states,
                       "before": _summary(dict((be, s["before"]) for be, s in states.items())),
                       "after": _summary(dict((be, s["after"]) for be, s in states.items()))}
    return {"commands": commands, "servers": found, "missing": missing}


def apply_after(plan, rows):
    """plan's servers with after read from rows (parse_servers_state() after the commands ran)."""
    servers = {}
    for name, entry in _dict(plan.get("servers")).items():
        states = {}
        for backend, reading in entry["states"].items():
            row = next((r for r in rows or [] if r["backend"] == backend and r["server"] == name), None)
            states[backend] = {"before": reading["before"], "after": row["state"] if row else "gone"}
        servers[name] = dict(entry, states=states,
                             after=_summary(dict((be, s["after"]) for be, s in states.items())))
    return servers


def command_ok(answer):
    """(ok, message) of the runtime API's answer to `set server`: nothing (blank lines) when it was done."""
    message = _text(answer)
    return not message, message


# --- the router's health gate -------------------------------------------------------------

def health_verdict(models, checks):
    """The router's gate: {ok, failed: [check names], summary}.

    models: the served models of the config; checks: {name: {ok, detail}} with 'models' (GET /v1/models through
    the router with a client key lists every model), 'completion <model>' for each model (200 with a choice) and
    'unauthenticated' (a request without a key gets 401).
    """
    return verdict(checks, ["models"] + ["completion %s" % model for model in sorted(models or [])] + ["unauthenticated"])


def key_from_lines(text):
    """The first client key of the router's ACL file (lines 'Bearer <key>'), or ''."""
    for line in _text(text).splitlines():
        parts = line.strip().split(None, 1)
        if len(parts) == 2 and parts[0] == "Bearer" and parts[1].strip():
            return parts[1].strip()
    return ""


# --- HAProxy from .deb files ------------------------------------------------------------------

def debs_to_install(debs, installed, packages, variable="llm_router_debs"):
    """{install: [paths], versions: {package: deb version}, problems: [...]}.

    debs: {path: (package, version)} of the .deb files (dpkg-deb's fields); installed: {package: version or ''}
    (dpkg-query's); packages: what must be installed. Every .deb file is installed (the libraries come with them)
    when any of packages is not installed at its .deb's version; a package without a .deb file is a problem, naming
    variable (the role's setting of the .deb directory).
    """
    versions = {}
    for path in sorted(debs or {}):
        package, version = debs[path]
        versions[_text(package)] = _text(version)
    problems = ["no .deb file of %s in %s. Fix: add it (apt-get download %s, with the libraries it"
                " needs) or set %s to \"\" to install from the apt sources" % (name, variable, name, variable)
                for name in packages or [] if name not in versions]
    stale = [name for name in packages or [] if name in versions and _text(_dict(installed).get(name)) != versions[name]]
    return {"install": sorted(debs or {}) if stale and not problems else [], "versions": versions,
            "problems": problems, "stale": stale}
