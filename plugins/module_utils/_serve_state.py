# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: the service's state as systemctl and supervisorctl print it, and the log lines of a failed start;
part of vllm_serve, which re-exports these names."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

SYSTEMD_UP = ("active", "activating", "reloading")
SUPERVISOR_UP = ("RUNNING", "STARTING", "BACKOFF")
SUPERVISOR_GAVE_UP = ("FATAL",)


def parse_systemctl_show(text):
    """`systemctl show -p ...` output (KEY=VALUE lines) as a dict."""
    found = {}
    for line in (text or "").splitlines():
        if "=" in line:
            key, value = line.split("=", 1)
            found[key.strip()] = value.strip()
    return found


def systemd_state(text):
    """{up, gave_up, state, pid, restarts} of a unit from `systemctl show -p ActiveState,SubState,MainPID,NRestarts`."""
    shown = parse_systemctl_show(text)
    state = shown.get("ActiveState", "")
    try:
        pid = int(shown.get("MainPID") or 0)
    except ValueError:
        pid = 0
    try:
        restarts = int(shown.get("NRestarts") or 0)
    except ValueError:
        restarts = 0
    return {"up": state in SYSTEMD_UP, "gave_up": state == "failed", "state": "%s/%s" % (state, shown.get("SubState", "")),
            "pid": pid or None, "restarts": restarts}


_SUP_LINE_RE = re.compile(r"(?P<name>\S+)\s+(?P<state>[A-Z]+)(?:\s+pid (?P<pid>[0-9]+))?")


def supervisor_state(text, name):
    """{up, gave_up, state, pid, restarts} of a program from `supervisorctl status NAME` output."""
    for line in (text or "").splitlines():
        match = _SUP_LINE_RE.match(line.strip())
        if match and match.group("name") in (name, "%s:%s" % (name, name)):
            state = match.group("state")
            pid = int(match.group("pid")) if match.group("pid") else None
            return {"up": state in SUPERVISOR_UP, "gave_up": state in SUPERVISOR_GAVE_UP, "state": state,
                    "pid": pid, "restarts": None}
    return {"up": False, "gave_up": False, "state": "absent", "pid": None, "restarts": None}


_ERROR_LINE_RE = re.compile(r"\b(ERROR|Error|error|Traceback|CRITICAL|Killed|FATAL)\b")


def log_excerpt(lines, tail=60, errors=12):
    """The lines a failed start is read from: the last distinct lines that report errors, then the tail.

    vLLM prints the root cause of a failed start well before the traceback
    of its API server, which is all a plain tail shows.
    """
    lines = [line.rstrip("\n") for line in lines]
    tail_lines = lines[-tail:] if tail > 0 else []
    earlier = lines[:len(lines) - len(tail_lines)]
    seen, found = set(), []
    for line in reversed(earlier):
        if _ERROR_LINE_RE.search(line):
            text = line.split("]", 1)[-1].strip() if "]" in line else line.strip()
            if text and text not in seen:
                seen.add(text)
                found.append(line)
        if len(found) >= errors:
            break
    found.reverse()
    if not found:
        return tail_lines
    return ["--- lines that report errors, earlier in the log ---"] + found + ["--- last lines ---"] + tail_lines
