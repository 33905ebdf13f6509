# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fleet_lock: one holder per key (also under concurrent takers), stale locks, release, the ledger, the verdict."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import multiprocessing
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import fleet_lock as L

ENTRY = "flash-attn-2.8.3-sm80-ef7beb2c6e35"


def test_first_taker_wins_and_owner_is_written(tmp_path):
    locks = str(tmp_path / "locks")
    first = L.acquire(locks, ENTRY, {"host": "a", "job": "1"}, 100, now=1000.0)
    second = L.acquire(locks, ENTRY, {"host": "b", "job": "2"}, 100, now=1010.0)
    assert first["acquired"] and not second["acquired"]
    assert second["holder"]["host"] == "a" and second["holder"]["since"] == "1970-01-01T00:16:40Z"
    assert json.loads((tmp_path / "locks" / ENTRY / "owner.json").read_text())["job"] == "1"


def test_stale_lock_is_taken_over_once(tmp_path):
    locks = str(tmp_path)
    L.acquire(locks, ENTRY, {"host": "a"}, 100, now=1000.0)
    taken = L.acquire(locks, ENTRY, {"host": "b"}, 100, now=1200.0)
    assert taken["acquired"] and taken["broken"]["host"] == "a"
    assert L.holder(locks, ENTRY)["host"] == "b"
    assert not L.acquire(locks, ENTRY, {"host": "c"}, 0, now=99999.0)["acquired"]  # 0: never stale


def test_release_only_by_its_holder(tmp_path):
    locks = str(tmp_path)
    L.acquire(locks, ENTRY, {"host": "a", "job": "7"}, 100)
    assert L.release(locks, ENTRY, "b")["released"] is False
    assert L.release(locks, ENTRY, "a", "8")["released"] is False
    assert L.release(locks, ENTRY, "a", "7")["released"] is True
    assert L.holder(locks, ENTRY) is None
    assert L.release(locks, ENTRY, "a") == {"released": False, "holder": None}
    assert not os.listdir(locks)


@pytest.mark.parametrize("lock_dir, entry", [("relative", ENTRY), ("/x", "no-hash"), ("/x", "../x-ef7beb2c6e35"), ("/x", None)])
def test_bad_lock_requests(lock_dir, entry):
    with pytest.raises(L.FleetLockError):
        L.lock_path(lock_dir, entry)


def _take(args):
    locks, host = args
    return host if L.acquire(locks, ENTRY, {"host": host}, 3600)["acquired"] else ""


def test_concurrent_takers_get_one_holder(tmp_path):
    hosts = ["h%d" % i for i in range(16)]
    pool = multiprocessing.Pool(8)
    try:
        winners = [h for h in pool.map(_take, [(str(tmp_path), h) for h in hosts]) if h]
    finally:
        pool.close()
        pool.join()
    assert len(winners) == 1 and L.holder(str(tmp_path), ENTRY)["host"] == winners[0]


def test_ledger_append_read_and_failures(tmp_path):
    ledger = str(tmp_path / "sub" / "ledger.jsonl")
    assert L.read_ledger(ledger) == []
    L.append_ledger(ledger, {"build_key": ENTRY, "result": "failed", "finished": "2026-12-01T07:00:00Z", "host": "a"})
    L.append_ledger(ledger, {"build_key": "other-ef7beb2c6e35", "result": "failed", "finished": "2026-12-01T07:05:00Z"})
    with open(ledger, "a") as handle:
        handle.write("not json\n[1]\n")
    records = L.read_ledger(ledger)
    assert len(records) == 2
    assert L.failure_since(records, ENTRY, "2026-12-01T06:59:59Z")["host"] == "a"
    assert L.failure_since(records, ENTRY, "2026-12-01T07:00:01Z") is None
    assert L.failure_since(records, ENTRY, "")["host"] == "a"
    msg = L.failure_message(ENTRY, "flash-attn", dict(records[0], tail=["boom"], log="/var/log/x.log", error="cc1: bad"))
    assert "failed on a" in msg and "boom" in msg and "/var/log/x.log" in msg and "cc1: bad" in msg


@given(st.booleans(), st.booleans(), st.sampled_from([None, {}, {"host": "x"}]))
def test_decide(found, acquired, holder):
    lock = {"acquired": acquired and holder is not None, "holder": holder}
    verdict = L.decide(found, lock)
    assert verdict in L.VERDICTS
    if found:
        assert verdict == "install"
    elif lock["acquired"]:
        assert verdict == "build"
    elif holder is not None:
        assert verdict == "wait"
    else:
        # nobody builds the key and the wheel is not there
        assert verdict == "fail"


def test_iso_round_trip():
    assert L.parse_iso(L.iso(1764572400)) == 1764572400
    assert L.parse_iso("yesterday") is None
