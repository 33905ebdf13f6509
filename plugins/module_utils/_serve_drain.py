# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: the drain wait of one vLLM service (module vllm_serve_drain), as pure functions.

- ``reading``: one poll of ``<url>/metrics`` (its HTTP status, body, error) read as idle or not, with
  ``_serve_services.metrics_idle``; nothing answering (connection refused) is idle: nothing is in flight;
- ``wait_idle``: polls until ``settle`` consecutive readings are idle, or until ``timeout`` seconds have passed;
  the clock, the sleep and the poll itself are arguments, so tests drive it without a server or real time.

Bad input never raises.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

from ansible_collections.gpufleet.llm_stack.plugins.module_utils._serve_services import metrics_idle

# The longest one request of /metrics may take (seconds); less when less of the wait is left.
REQUEST_TIMEOUT = 10.0
# The shortest request timeout, even past the deadline (a last poll gets at least this long).
MIN_REQUEST_TIMEOUT = 1.0
# The shortest pause between two polls.
MIN_POLL = 0.01
REFUSED_NOTE = "nothing answers at %s (connection refused): no request is in flight there"


def reading(status, text="", error="", refused=False, url=""):
    """One poll read for the drain wait: {idle, running, waiting, problem, note, final, status}.

    status: the HTTP status (0 when there was no answer; error says why, refused whether the connection was
    refused). A refused connection is idle (note says so); any other missing answer, an answer other than 200, or
    a /metrics that metrics_idle cannot read is not idle (problem says why). ``final`` is left False here: the
    caller marks readings that no later poll can change (a key that the server refuses).
    """
    base = {"idle": False, "running": None, "waiting": None, "problem": "", "note": "", "final": False,
            "status": status if isinstance(status, int) and not isinstance(status, bool) else 0}
    if refused:
        base.update(idle=True, note=REFUSED_NOTE % (url or "the URL"))
        return base
    if base["status"] == 0:
        base["problem"] = "GET /metrics: no answer (%s)" % (error or "unknown error")
        return base
    if base["status"] != 200:
        base["problem"] = "GET /metrics answered %d%s" % (base["status"], (": %s" % error) if error else "")
        return base
    found = metrics_idle(text)
    base.update(idle=bool(found["idle"]), running=found["running"], waiting=found["waiting"],
                problem=found["problem"])
    return base


def _last(found):
    found = found if isinstance(found, dict) else {}
    return {"running": found.get("running"), "waiting": found.get("waiting"),
            "problem": found.get("problem") or ""}


def _number(value, default):
    try:
        value = float(value)
    except (TypeError, ValueError):
        return default
    return default if math.isnan(value) or math.isinf(value) else value


def request_timeout(remaining):
    """The timeout of the next request: REQUEST_TIMEOUT, or what is left of the wait, at least MIN_REQUEST_TIMEOUT."""
    return max(MIN_REQUEST_TIMEOUT, min(REQUEST_TIMEOUT, remaining))


def wait_idle(poll_once, clock, sleep, timeout, poll, settle):
    """Polls until ``settle`` consecutive idle readings, or until ``timeout`` seconds have passed.

    poll_once(request_timeout) -> a reading() dict; clock() -> seconds (monotonic); sleep(seconds).
    A reading that is not idle starts the count again. After the first poll, none starts (no sleep ends) at or
    after the deadline (start + timeout), and each request's timeout is at most what is left of the wait (at least
    MIN_REQUEST_TIMEOUT): the wait ends by timeout + MIN_REQUEST_TIMEOUT, plus the time poll_once overruns its
    timeout. A ``final`` reading that is not idle stops the wait at once (``failed`` holds its problem).

    Returns {idle, waited, polls, timed_out, streak, last: {running, waiting, problem}, note, failed}; ``note``
    is that of the last reading (nothing answered), ``failed`` is empty unless a final reading stopped the wait.
    """
    timeout = max(0.0, _number(timeout, 0.0))
    poll = max(MIN_POLL, _number(poll, MIN_POLL))
    settle = max(1, int(_number(settle, 1)))
    start = clock()
    deadline = start + timeout
    streak, polls, found = 0, 0, None
    while True:
        found = poll_once(request_timeout(deadline - clock()))
        found = found if isinstance(found, dict) else reading(0, error="no reading")
        polls += 1
        streak = streak + 1 if found.get("idle") else 0
        done = streak >= settle
        failed = (found.get("problem") or "stopped") if found.get("final") and not found.get("idle") else ""
        now = clock()
        timed_out = not done and not failed and now + poll >= deadline
        if done or failed or timed_out:
            return {"idle": done, "waited": round(max(0.0, now - start), 3), "polls": polls,
                    "timed_out": timed_out, "streak": streak, "last": _last(found),
                    "note": found.get("note") or "", "failed": failed}
        sleep(poll)


def summary(result, url):
    """One line on a wait_idle result, for messages."""
    last = _last(result.get("last"))
    if result.get("failed"):
        return "%s: %s" % (url, result["failed"])
    state = ("running %s, waiting %s" % (_count(last["running"]), _count(last["waiting"]))
             if not last["problem"] else last["problem"])
    if result.get("idle"):
        note = ("; " + result["note"]) if result.get("note") else ""
        return "%s idle after %ss (%d polls)%s" % (url, result.get("waited"), result.get("polls"), note)
    return "%s not idle after %ss (%d polls): %s" % (url, result.get("waited"), result.get("polls"), state)


def _count(value):
    if value is None:
        return "unknown"
    return "%d" % value if float(value).is_integer() else "%s" % value
