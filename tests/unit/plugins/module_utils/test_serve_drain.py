# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drain wait (module_utils/_serve_drain.py): one poll's reading, on the real /metrics captures of vLLM 0.20.2
on an H200 (tests/fixtures/vllm_serve/README.md), and the wait itself on a fake clock."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _serve_drain as D

HERE = os.path.dirname(os.path.abspath(__file__))
CAPTURES = os.path.join(HERE, "..", "..", "..", "fixtures", "vllm_serve", "metrics-0.20.2-h200")


def capture(name):
    with open(os.path.join(CAPTURES, name)) as handle:
        return handle.read()


# --- reading() ---------------------------------------------------------------------------

def test_reading_of_the_real_captures():
    for name in ("idle.txt", "after-load.txt"):
        found = D.reading(200, capture(name))
        assert found["idle"] and (found["running"], found["waiting"]) == (0.0, 0.0), name
        assert found["problem"] == "" and found["note"] == "" and not found["final"]
    found = D.reading(200, capture("load.txt"))
    assert not found["idle"] and (found["running"], found["waiting"]) == (8.0, 4.0) and found["problem"] == ""


def test_reading_without_an_answer():
    found = D.reading(0, error="[Errno 111] Connection refused", refused=True, url="http://127.0.0.1:9/metrics")
    assert found["idle"] and found["running"] is None and found["problem"] == ""
    assert found["note"] == "nothing answers at http://127.0.0.1:9/metrics (connection refused): no request is in" \
                            " flight there"
    found = D.reading(0, error="timed out")
    assert not found["idle"] and found["problem"] == "GET /metrics: no answer (timed out)"
    found = D.reading(503, error="Service Unavailable")
    assert not found["idle"] and found["problem"] == "GET /metrics answered 503: Service Unavailable"
    # A 200 that is not vLLM's /metrics is not idle.
    found = D.reading(200, "<html>hello</html>")
    assert not found["idle"] and "no sample of" in found["problem"]
    assert not D.reading(None, None)["idle"] and not D.reading(True, "")["idle"]


def test_request_timeout_is_bounded_by_what_is_left():
    assert D.request_timeout(100) == D.REQUEST_TIMEOUT
    assert D.request_timeout(3.5) == 3.5
    assert D.request_timeout(0.2) == D.MIN_REQUEST_TIMEOUT
    assert D.request_timeout(-5) == D.MIN_REQUEST_TIMEOUT


# --- wait_idle() on a fake clock ----------------------------------------------------------------

IDLE = D.reading(200, "vllm:num_requests_running 0\nvllm:num_requests_waiting 0\n")
BUSY = D.reading(200, "vllm:num_requests_running 2\nvllm:num_requests_waiting 1\n")


class Fake(object):
    """A clock, a sleep and a poll that answers the given readings in turn (the last one again at the end).

    Each poll takes durations[i] seconds, or the request timeout it was given when that is shorter (a request
    honours its timeout)."""

    def __init__(self, readings, durations=None, start=1000.0):
        self.now = start
        self.readings = list(readings)
        self.durations = list(durations or [])
        self.calls = []  # (time the poll started, its request timeout)
        self.sleeps = []

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds

    def poll(self, timeout):
        index = len(self.calls)
        self.calls.append((self.now, timeout))
        duration = self.durations[index] if index < len(self.durations) else 0.0
        self.now += min(duration, timeout)
        found = self.readings[min(index, len(self.readings) - 1)]
        return dict(found) if isinstance(found, dict) else found

    def wait(self, timeout, poll, settle):
        return D.wait_idle(self.poll, self.clock, self.sleep, timeout, poll, settle)


def test_idle_after_settle_consecutive_idle_polls():
    fake = Fake([IDLE])
    result = fake.wait(timeout=60, poll=2, settle=3)
    assert result == {"idle": True, "waited": 4.0, "polls": 3, "timed_out": False, "streak": 3,
                      "last": {"running": 0.0, "waiting": 0.0, "problem": ""}, "note": "", "failed": ""}
    assert fake.sleeps == [2.0, 2.0]


def test_a_busy_reading_starts_the_count_again():
    fake = Fake([IDLE, IDLE, BUSY, IDLE, IDLE, BUSY, IDLE, IDLE, IDLE, BUSY])
    result = fake.wait(timeout=60, poll=1, settle=3)
    assert result["idle"] and result["polls"] == 9 and result["waited"] == 8.0


def test_timeout_returns_the_last_reading():
    fake = Fake([BUSY])
    result = fake.wait(timeout=10, poll=3, settle=2)
    assert not result["idle"] and result["timed_out"] and not result["failed"]
    # polls at 0, 3, 6, 9; the next would start at 12, past the deadline
    assert [start - 1000.0 for start, dummy in fake.calls] == [0.0, 3.0, 6.0, 9.0]
    assert result["waited"] == 9.0 and result["last"] == {"running": 2.0, "waiting": 1.0, "problem": ""}
    assert "not idle after 9.0s (4 polls): running 2, waiting 1" in D.summary(result, "http://x")


def test_timeout_zero_polls_once():
    result = Fake([IDLE]).wait(timeout=0, poll=5, settle=3)
    assert result["polls"] == 1 and result["timed_out"] and not result["idle"]
    result = Fake([IDLE]).wait(timeout=0, poll=5, settle=1)
    assert result["polls"] == 1 and result["idle"] and not result["timed_out"]


def test_refused_counts_as_idle_with_a_note():
    refused = D.reading(0, error="Connection refused", refused=True, url="http://127.0.0.1:9/metrics")
    result = Fake([refused]).wait(timeout=60, poll=1, settle=2)
    assert result["idle"] and result["polls"] == 2 and "connection refused" in result["note"]
    assert result["last"] == {"running": None, "waiting": None, "problem": ""}
    assert "idle after 1.0s (2 polls); nothing answers" in D.summary(result, "http://127.0.0.1:9")


def test_a_final_reading_stops_the_wait():
    final = dict(D.reading(401), problem="the key is refused", final=True)
    fake = Fake([BUSY, final, IDLE])
    result = fake.wait(timeout=60, poll=1, settle=1)
    assert result["failed"] == "the key is refused" and not result["idle"] and not result["timed_out"]
    assert result["polls"] == 2
    assert D.summary(result, "http://x") == "http://x: the key is refused"


def test_odd_arguments_never_raise():
    result = Fake([None]).wait(timeout=-1, poll=-1, settle=0)
    assert result["polls"] == 1 and not result["idle"] and result["timed_out"]
    assert result["last"]["problem"] == "GET /metrics: no answer (no reading)"
    result = Fake([IDLE]).wait(timeout="x", poll=None, settle="y")
    assert result["polls"] == 1 and result["idle"]


@settings(max_examples=300, deadline=None)
@given(pattern=st.lists(st.booleans(), min_size=1, max_size=40),
       durations=st.lists(st.floats(min_value=0, max_value=30, allow_nan=False), max_size=40),
       timeout=st.floats(min_value=0, max_value=120, allow_nan=False),
       poll=st.floats(min_value=0.01, max_value=20, allow_nan=False),
       settle=st.integers(min_value=1, max_value=6))
def test_wait_properties(pattern, durations, timeout, poll, settle):
    fake = Fake([IDLE if idle else BUSY for idle in pattern], durations)
    result = fake.wait(timeout, poll, settle)
    seen = [bool(pattern[min(i, len(pattern) - 1)]) for i in range(result["polls"])]
    # Exactly one way out, and never failed here (no final reading).
    assert [result["idle"], result["timed_out"]].count(True) == 1 and result["failed"] == ""
    # The streak is the run of idle readings at the end; any busy reading starts it again.
    run = 0
    for idle in seen:
        run = run + 1 if idle else 0
    assert result["streak"] == run
    # Never idle before settle consecutive idle readings, and idle as soon as there are.
    first = next((i + 1 for i in range(len(seen)) if i + 1 >= settle and all(seen[i + 1 - settle:i + 1])), None)
    if result["idle"]:
        assert run >= settle and first == result["polls"]
    else:
        assert first is None
    # The timeout bound: no poll starts after the deadline, none is given longer than what is left (at least
    # MIN_REQUEST_TIMEOUT), and the wait ends by timeout + MIN_REQUEST_TIMEOUT.
    deadline = 1000.0 + timeout
    for start, given_timeout in fake.calls:
        assert start < deadline or start == 1000.0
        assert given_timeout <= max(D.MIN_REQUEST_TIMEOUT, deadline - start) + 1e-6
    assert result["waited"] <= timeout + D.MIN_REQUEST_TIMEOUT + 1e-3
    assert len(fake.sleeps) == result["polls"] - 1
    if result["timed_out"]:
        assert fake.now + poll >= deadline
