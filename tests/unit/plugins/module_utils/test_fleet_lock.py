# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fleet_lock: one holder per key (also under concurrent takers), stale and dead holders' locks, release, the ledger,
the published wheels (one key, one wheel, checked against the builder's sha256), the verdict."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
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


# --- A holder that is provably dead (item: a killed build held its key for 4 h 15 min) ---

def fake_proc(root, boot="boot-1", ns="pid:[4026531836]", processes=None):
    """A /proc with a boot id, this process's pid namespace and processes {pid: start time}."""
    (root / "sys" / "kernel" / "random").mkdir(parents=True, exist_ok=True)
    (root / "sys" / "kernel" / "random" / "boot_id").write_text(boot + "\n")
    (root / "self" / "ns").mkdir(parents=True, exist_ok=True)
    link = root / "self" / "ns" / "pid"
    if link.is_symlink():
        link.unlink()
    os.symlink(ns, str(link))
    for pid, start in (processes or {}).items():
        (root / str(pid)).mkdir(exist_ok=True)
        # field 2 may hold spaces and parentheses; the start time is field 22
        fields = ["S"] + ["0"] * 18 + [str(start)] + ["0"] * 10
        (root / str(pid) / "stat").write_text("%d (ansible-play (x) y) %s\n" % (pid, " ".join(fields)))
    return str(root)


def test_process_identity_reads_start_boot_and_namespace(tmp_path):
    proc = fake_proc(tmp_path, processes={4242: 987654})
    assert L.process_identity(4242, "ctl-1", proc) == {"controller": "ctl-1", "pid": 4242, "pid_start": 987654,
                                                       "boot_id": "boot-1", "pid_ns": "pid:[4026531836]"}
    assert L.process_start(4243, proc) is None and L.process_start("4242", proc) is None


def test_the_real_process_identity_of_this_process():
    me = L.process_identity(os.getpid(), "here")
    if me["boot_id"] is None:
        pytest.skip("no /proc here")
    assert me["pid_start"] == L.process_start(os.getpid()) and L.holder_is_dead(me, "here") == (
        False, "its process %d on here is running" % os.getpid())


@pytest.mark.parametrize("owner, dead, why", [
    ({"controller": "ctl-1", "pid": 4242, "pid_start": 987654, "boot_id": "boot-1", "pid_ns": "pid:[4026531836]"},
     False, "is running"),
    ({"controller": "ctl-1", "pid": 4243, "pid_start": 5, "boot_id": "boot-1", "pid_ns": "pid:[4026531836]"},
     True, "is gone"),
    ({"controller": "ctl-1", "pid": 4242, "pid_start": 5, "boot_id": "boot-1", "pid_ns": "pid:[4026531836]"},
     True, "another process now"),
    # nothing is proven for another controller, another boot, another container, or an older record
    ({"controller": "ctl-2", "pid": 4243, "pid_start": 5, "boot_id": "boot-1", "pid_ns": "pid:[4026531836]"},
     False, "another controller"),
    ({"controller": "ctl-1", "pid": 4243, "pid_start": 5, "boot_id": "boot-0", "pid_ns": "pid:[4026531836]"},
     False, "another boot"),
    ({"controller": "ctl-1", "pid": 4243, "pid_start": 5, "boot_id": "boot-1", "pid_ns": "pid:[1]"},
     False, "another pid namespace"),
    ({"controller": "ctl-1", "pid": 4243}, False, "another boot"),
    ({"controller": "ctl-1", "boot_id": "boot-1", "pid_ns": "pid:[4026531836]"}, False, "no process id"),
    ({}, False, "no holder"),
    (None, False, "no holder"),
])
def test_holder_is_dead_only_when_proven(tmp_path, owner, dead, why):
    proc = fake_proc(tmp_path, processes={4242: 987654})
    verdict, reason = L.holder_is_dead(owner, "ctl-1", proc)
    assert verdict is dead and why in reason


def test_a_dead_holders_lock_is_taken_over_at_once_and_only_that_one(tmp_path):
    locks = str(tmp_path / "locks")
    dead = {"host": "a", "job": "1", "controller": "ctl-1", "pid": 4243}
    taken = L.acquire(locks, ENTRY, dead, 15300, now=1000.0)["holder"]
    # long before stale_after, a live holder keeps it
    assert not L.acquire(locks, ENTRY, {"host": "b"}, 15300, now=1060.0)["acquired"]
    # a record that is not the holder's (the lock changed hands since it was judged) takes nothing over
    other = dict(taken, epoch=999.0)
    assert not L.acquire(locks, ENTRY, {"host": "b"}, 15300, now=1060.0, dead_holder=other)["acquired"]
    result = L.acquire(locks, ENTRY, {"host": "b", "job": "2"}, 15300, now=1060.0, dead_holder=taken)
    assert result["acquired"] and result["broken"]["host"] == "a" and result["broken"]["taken_over"] == "holder dead"
    assert L.holder(locks, ENTRY)["host"] == "b"
    # the new holder is not the dead one: the same record takes nothing over again
    assert not L.acquire(locks, ENTRY, {"host": "c"}, 15300, now=1070.0, dead_holder=taken)["acquired"]


# --- The ledger is the authority on each key's wheel ---

NAME = "flash-attn"
WHEEL = "flash_attn-2.8.3-0ef7beb2c6e35-py3-none-any.whl"


def incoming(tmp_path, content, name=WHEEL):
    path = tmp_path / "incoming" / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(content)
    return str(path), hashlib.sha256(content).hexdigest()


def record(host="a", job="1"):
    return {"build_key": ENTRY, "name": NAME, "host": host, "job": job, "started": "s", "finished": "f"}


@pytest.fixture
def index(tmp_path):
    packages = tmp_path / "packages"
    packages.mkdir()
    return str(tmp_path / "ledger.jsonl"), str(packages)


def test_publish_checks_the_builders_sha256_and_records_it(tmp_path, index):
    ledger, packages = index
    path, sha = incoming(tmp_path, b"PK built on a")
    done = L.publish(ledger, packages, path, sha.upper(), record())
    assert done["published"] and done["wheel"]["sha256"] == sha
    assert open(os.path.join(packages, WHEEL), "rb").read() == b"PK built on a"
    assert oct(os.stat(os.path.join(packages, WHEEL)).st_mode & 0o777) == "0o644"
    assert not [n for n in os.listdir(packages) if n != WHEEL]
    line = L.read_ledger(ledger)[-1]
    assert (line["result"], line["wheel"], line["sha256"], line["host"]) == ("built", WHEEL, sha, "a")
    wheel = L.index_wheel(packages, "https://cache-1:8443/", L.recorded_wheel(L.read_ledger(ledger), ENTRY))
    assert wheel == {"filename": WHEEL, "url": "https://cache-1:8443/packages/" + WHEEL, "sha256": sha,
                     "path": os.path.join(packages, WHEEL), "built_on": "a", "job": "1", "finished": "f"}


def test_a_wheel_changed_on_its_way_is_not_published(tmp_path, index):
    ledger, packages = index
    path, _sha = incoming(tmp_path, b"PK changed")
    with pytest.raises(L.FleetLockError, match="has sha256 .* but its builder a built one with sha256 0{64}"):
        L.publish(ledger, packages, path, "0" * 64, record())
    assert os.listdir(packages) == [] and L.read_ledger(ledger) == []


@pytest.mark.parametrize("name, expect", [
    ("flash_attn-2.8.3-0aaaaaaaaaaaa-py3-none-any.whl", "build tag of key"),
    ("vllm-0.19.1-0ef7beb2c6e35-py3-none-any.whl", "is not a wheel of flash-attn"),
    ("flash_attn-2.8.3.tar.gz", "not the file name of a wheel"),
])
def test_publish_takes_only_the_keys_wheel(tmp_path, index, name, expect):
    ledger, packages = index
    path, sha = incoming(tmp_path, b"PK", name)
    with pytest.raises(L.FleetLockError, match=expect):
        L.publish(ledger, packages, path, sha, record())


def test_one_key_one_wheel_a_second_one_is_refused_and_does_not_block_the_key(tmp_path, index):
    ledger, packages = index
    first, sha = incoming(tmp_path, b"PK first build")
    L.publish(ledger, packages, first, sha, record("a", "1"))
    # another build of the key, even under another wheel name with the same build tag
    for name in (WHEEL, "flash_attn-2.8.3-0ef7beb2c6e35-cp311-cp311-linux_x86_64.whl"):
        second, other = incoming(tmp_path, b"PK second build", name)
        done = L.publish(ledger, packages, second, other, record("b", "2"))
        assert not done["published"] and "one key has one wheel" in done["msg"]
        assert done["wheel"]["sha256"] == sha
    assert open(os.path.join(packages, WHEEL), "rb").read() == b"PK first build"
    records = L.read_ledger(ledger)
    assert [r["result"] for r in records] == ["built", "refused", "refused"]
    # the key still installs: the ledger's wheel, whatever else carries its build tag
    assert L.recorded_wheel(records, ENTRY)["sha256"] == sha
    assert L.index_wheel(packages, "http://c:1", L.recorded_wheel(records, ENTRY))["sha256"] == sha
    # the same wheel again (a build that made the same bytes) is fine
    again, same = incoming(tmp_path, b"PK first build")
    assert L.publish(ledger, packages, again, same, record("c", "3"))["published"]


def test_a_removed_wheel_lets_the_key_be_built_anew(tmp_path, index):
    ledger, packages = index
    first, sha = incoming(tmp_path, b"PK first build")
    L.publish(ledger, packages, first, sha, record())
    os.unlink(os.path.join(packages, WHEEL))
    assert L.index_wheel(packages, "http://c:1", L.recorded_wheel(L.read_ledger(ledger), ENTRY)) is None
    second, other = incoming(tmp_path, b"PK rebuilt")
    assert L.publish(ledger, packages, second, other, record("b", "2"))["published"]
    assert L.recorded_wheel(L.read_ledger(ledger), ENTRY)["sha256"] == other


def test_an_unrecorded_file_of_the_name_is_replaced(tmp_path, index):
    """A file the ledger does not know (put there by hand, or by the upload of an older release) is no key's wheel."""
    ledger, packages = index
    with open(os.path.join(packages, WHEEL), "wb") as handle:
        handle.write(b"evil build")
    assert L.index_wheel(packages, "http://c:1", L.recorded_wheel(L.read_ledger(ledger), ENTRY)) is None
    path, sha = incoming(tmp_path, b"PK built on a")
    assert L.publish(ledger, packages, path, sha, record())["published"]
    assert open(os.path.join(packages, WHEEL), "rb").read() == b"PK built on a"


def test_ledger_outcome_is_the_word_of_the_line_publish_writes(tmp_path, index):
    """publish returns the result word of the ledger line it wrote; the builder's host records that word itself."""
    assert (L.ledger_outcome(True), L.ledger_outcome(False)) == ("built", "refused")
    ledger, packages = index
    outcomes = []
    for host, content in (("a", b"PK first build"), ("b", b"PK first build"), ("c", b"PK another build")):
        path, sha = incoming(tmp_path, content)
        done = L.publish(ledger, packages, path, sha, record(host))
        outcomes.append((done["published"], done["ledger_outcome"], L.read_ledger(ledger)[-1]["result"]))
    # a's wheel is published; b's is the same file (the index has it already); c's is refused, the key keeps a's
    assert outcomes == [(True, "built", "built"), (True, "built", "built"), (False, "refused", "refused")]


def test_recorded_wheel_needs_a_wheel_and_a_sha256():
    records = [dict(record(), result="built", wheel=WHEEL, sha256="1" * 64),
               dict(record(), result="built", wheel=WHEEL),
               dict(record(), result="refused", wheel=WHEEL, sha256="2" * 64),
               dict(record(), result="built", wheel=WHEEL, sha256="not-a-sha"),
               dict(record(), build_key="other-ef7beb2c6e35", result="built", wheel=WHEEL, sha256="3" * 64)]
    assert L.recorded_wheel(records, ENTRY)["sha256"] == "1" * 64
    assert L.recorded_wheel([], ENTRY) is None
