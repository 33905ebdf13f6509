# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build locks and the build ledger on the fleet cache host.

One build key, one lock: a directory ``<lock_dir>/<entry>`` made with
mkdir, which either creates it or fails, also when several jobs try at the
same moment. The holder's ``owner.json`` inside says who holds it (host,
job, controller and its process id, since when). A lock older than
``stale_after`` seconds is taken to be left by a job that died: it is moved
aside (rename, so that one taker wins) and taken anew.

The ledger is ``ledger.jsonl`` next to the locks: one JSON line per
finished build {build_key, name, host, job, started, finished, result,
wheel, log, tail}, appended under an flock.

``decide`` is the one rule that tells a host what to do about its key:
install the wheel the index has, build it (it holds the lock), wait for
the holder, or stop because nobody builds it (its build failed; a failed
build recorded in the ledger since the host began, ``failure_since``,
names the cause and keeps the play's builder from taking the lock again).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import json
import os
import re
import shutil
import time

try:
    import fcntl
except ImportError:  # pragma: no cover - not on the POSIX hosts the collection supports
    fcntl = None

OWNER = "owner.json"
VERDICTS = ("install", "build", "wait", "fail")
_ENTRY = re.compile(r"^[A-Za-z0-9._-]+-[0-9a-f]{12}$")


class FleetLockError(ValueError):
    """A lock request the module cannot serve; the message says why and the fix."""


def iso(epoch):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def parse_iso(text):
    """Epoch seconds of a '%Y-%m-%dT%H:%M:%SZ' time; None when it is not one."""
    try:
        return float(time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ")) - time.mktime(time.gmtime(0)))
    except (TypeError, ValueError):
        return None


def lock_path(lock_dir, entry):
    if not isinstance(lock_dir, str) or not lock_dir.startswith("/"):
        raise FleetLockError("lock_dir=%r must be an absolute path (fleet_cache_lock_dir)" % (lock_dir,))
    if not isinstance(entry, str) or not _ENTRY.match(entry):
        raise FleetLockError("%r is not a build key's cache entry (<label>-<12 hex digits>)" % (entry,))
    return os.path.join(lock_dir, entry)


def read_owner(path):
    """The holder of the lock at path: its owner.json, or {} while it is being written (or unreadable)."""
    try:
        with open(os.path.join(path, OWNER)) as handle:
            data = json.load(handle)
        return data if isinstance(data, dict) else {}
    except (IOError, OSError, ValueError):
        return {}


def lock_age(path, owner, now):
    """Seconds since the lock was taken: from owner.json's epoch, else the directory's mtime; None if it is gone."""
    since = owner.get("epoch") if isinstance(owner, dict) else None
    if isinstance(since, (int, float)):
        return now - since
    try:
        return now - os.stat(path).st_mtime
    except OSError:
        return None


def is_stale(age, stale_after):
    return age is not None and stale_after > 0 and age > stale_after


def acquire(lock_dir, entry, owner, stale_after, now=None):
    """Try once to take the key's lock. Returns {acquired, holder, broken}.

    holder: the owner record of whoever holds it now (this caller when
    acquired). broken: the record of a stale lock that was moved aside, or
    None. owner: {host, job, controller, pid}.
    """
    now = time.time() if now is None else now
    path = lock_path(lock_dir, entry)
    if not os.path.isdir(lock_dir):
        os.makedirs(lock_dir, 0o755)
    record = dict(owner or {}, epoch=now, since=iso(now))
    broken = None
    for _attempt in range(2):
        try:
            os.mkdir(path, 0o755)
        except OSError as exc:
            if exc.errno != errno.EEXIST:
                raise
            holder = read_owner(path)
            if not is_stale(lock_age(path, holder, now), stale_after) or broken is not None:
                return {"acquired": False, "holder": holder, "broken": broken}
            aside = "%s.stale-%d-%d" % (path, int(now), os.getpid())
            try:
                os.rename(path, aside)
            except OSError:
                continue  # another taker moved it first: try mkdir again
            shutil.rmtree(aside, ignore_errors=True)
            broken = holder or {"since": "unknown"}
            continue
        tmp = os.path.join(path, ".%s.%d" % (OWNER, os.getpid()))
        with open(tmp, "w") as handle:
            json.dump(record, handle, sort_keys=True)
        os.rename(tmp, os.path.join(path, OWNER))
        return {"acquired": True, "holder": record, "broken": broken}
    return {"acquired": False, "holder": read_owner(path), "broken": broken}


def holder(lock_dir, entry):
    """The owner record of the key's lock, {} while being written, None when the key is not locked."""
    path = lock_path(lock_dir, entry)
    if not os.path.isdir(path):
        return None
    return read_owner(path)


def holds(owner, host, job=""):
    """Whether the owner record (None: no lock) is that of host and job (a record without a job matches any)."""
    if not isinstance(owner, dict) or owner.get("host") != host:
        return False
    return not (job and owner.get("job") and owner.get("job") != job)


def release(lock_dir, entry, host, job=""):
    """Remove the key's lock when host (and job) hold it. Returns {released, holder}: the holder found (None: no lock)."""
    path = lock_path(lock_dir, entry)
    if not os.path.isdir(path):
        return {"released": False, "holder": None}
    owner = read_owner(path)
    if not holds(owner, host, job):
        return {"released": False, "holder": owner}
    aside = "%s.released-%d" % (path, os.getpid())
    os.rename(path, aside)
    shutil.rmtree(aside, ignore_errors=True)
    return {"released": True, "holder": owner}


def append_ledger(ledger, record):
    """Append one JSON line to the ledger under an exclusive flock (several jobs write it)."""
    directory = os.path.dirname(ledger)
    if directory and not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    line = json.dumps(record, sort_keys=True) + "\n"
    fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, line.encode("utf-8"))
    finally:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def read_ledger(ledger):
    """The ledger's records (lines that are no JSON object are skipped); [] when there is none."""
    records = []
    try:
        with open(ledger) as handle:
            for line in handle:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict):
                    records.append(record)
    except (IOError, OSError):
        return []
    return records


def failure_since(records, entry, since):
    """The last 'failed' record of entry finished at or after since (ISO time; '' means any time), else None."""
    start = parse_iso(since) if since else None
    found = None
    for record in records or []:
        if record.get("build_key") != entry or record.get("result") != "failed":
            continue
        finished = parse_iso(record.get("finished"))
        if start is not None and (finished is None or finished < start):
            continue
        found = record
    return found


def decide(wheel_found, lock):
    """What a host does about its key, from what the cache host says now.

    wheel_found: the index has the key's wheel. lock: the acquire result
    when the host tried (its play's builder of the key), else
    {'acquired': False, 'holder': <owner record, or None when the key is not
    locked>}. Returns one of VERDICTS:
    install, build (this host holds the lock), wait (another host holds it)
    or fail (nobody builds the key and the index does not have it: its build
    failed, or its builder left the play before it started).
    """
    if wheel_found:
        return "install"
    if lock and lock.get("acquired"):
        return "build"
    if lock and lock.get("holder") is not None:
        return "wait"
    return "fail"


def failure_message(entry, name, record):
    """What a host of a key says when the key's build failed on another host of the fleet."""
    record = record or {}
    tail = record.get("tail") or []
    text = ("The build of %s for key %s failed on %s (job %s, finished %s); nothing was installed on this host. See %s "
            "on %s. Fix: solve the build problem and run again (the next run builds the key once more)."
            % (name, entry, record.get("host", "?"), record.get("job") or "-", record.get("finished", "?"),
               record.get("log") or "the build log", record.get("host", "the builder")))
    if record.get("error"):
        text += "\nIts error: %s" % record["error"]
    if tail:
        text += "\nLast %d lines of its log:\n%s" % (len(tail), "\n".join(tail))
    return text
