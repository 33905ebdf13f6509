# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build locks and the build ledger on the fleet cache host.

One build key, one lock: a directory ``<lock_dir>/<entry>`` made with
mkdir, which either creates it or fails, also when several jobs try at the
same moment. The holder's ``owner.json`` inside says who holds it (host,
job, controller, the process id of its ansible-playbook with that
process's start time, the controller's boot id and pid namespace, since
when). A lock older than ``stale_after`` seconds is taken to be left by a
job that died: it is moved aside (rename, so that one taker wins) and
taken anew. Sooner, a lock whose holder is provably dead is taken over:
``holder_is_dead`` runs on the controller (the action plugin), and proves
it only for a holder of the same controller, boot and pid namespace whose
process is gone or is another process now (another start time);
``acquire`` then moves aside exactly that holder's lock (``dead_holder``).

The ledger is ``ledger.jsonl`` next to the locks: one JSON line per
finished build {build_key, name, host, job, started, finished, result,
wheel, sha256, log, tail}, appended under an flock. It is the authority on
each key's wheel: ``publish`` puts the builder's wheel into the index's
packages directory only after checking its sha256 against the builder's,
and only when the ledger records no other wheel of the key that is still
there (one key, one wheel); ``recorded_wheel`` gives the installing hosts
the name and the sha256 the ledger recorded, which they check the file they
download against.

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

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_index
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.hf_local import sha256_file

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


def same_holder(record, other):
    """Whether two owner records are the one taking of a lock (host, job, controller, pid and the time it was taken)."""
    if not isinstance(record, dict) or not isinstance(other, dict) or not record:
        return False
    return all(record.get(key) == other.get(key) for key in ("host", "job", "controller", "pid", "epoch"))


def acquire(lock_dir, entry, owner, stale_after, now=None, dead_holder=None):
    """Try once to take the key's lock. Returns {acquired, holder, broken}.

    holder: the owner record of whoever holds it now (this caller when
    acquired). broken: the record of a stale lock (older than stale_after)
    or of the dead holder named by dead_holder (the record holder_is_dead
    judged, taken over only while that same record holds the lock) that was
    moved aside, or None. owner: {host, job, controller, pid, pid_start,
    boot_id, pid_ns}.
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
            dead = dead_holder is not None and same_holder(holder, dead_holder)
            if broken is not None or not (dead or is_stale(lock_age(path, holder, now), stale_after)):
                return {"acquired": False, "holder": holder, "broken": broken}
            aside = "%s.stale-%d-%d" % (path, int(now), os.getpid())
            try:
                os.rename(path, aside)
            except OSError:
                continue  # another taker moved it first: try mkdir again
            shutil.rmtree(aside, ignore_errors=True)
            broken = dict(holder or {"since": "unknown"}, taken_over="holder dead" if dead else "stale")
            continue
        tmp = os.path.join(path, ".%s.%d" % (OWNER, os.getpid()))
        with open(tmp, "w") as handle:
            json.dump(record, handle, sort_keys=True)
        os.rename(tmp, os.path.join(path, OWNER))
        return {"acquired": True, "holder": record, "broken": broken}
    return {"acquired": False, "holder": read_owner(path), "broken": broken}


def _read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def process_start(pid, proc="/proc"):
    """The start time of process pid (field 22 of /proc/PID/stat, clock ticks since boot), None when there is none."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return None
    text = _read(os.path.join(proc, str(pid), "stat"))
    if not text or ")" not in text:
        return None
    # The command name (field 2) is in parentheses and may hold spaces and ')': count from the last ')'.
    fields = text[text.rindex(")") + 1:].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def boot_id(proc="/proc"):
    text = _read(os.path.join(proc, "sys", "kernel", "random", "boot_id"))
    return text.strip() if text and text.strip() else None


def pid_namespace(proc="/proc"):
    """The pid namespace of this process (``pid:[4026531836]``), None when it cannot be read."""
    try:
        return os.readlink(os.path.join(proc, "self", "ns", "pid"))
    except OSError:
        return None


def process_identity(pid, controller, proc="/proc"):
    """What a lock records of the process that holds it: controller, pid, pid_start, boot_id and pid_ns."""
    return {"controller": controller, "pid": pid, "pid_start": process_start(pid, proc), "boot_id": boot_id(proc),
            "pid_ns": pid_namespace(proc)}


def holder_is_dead(owner, controller, proc="/proc"):
    """(dead, why): whether the holder of a lock is provably dead, judged on the controller that runs this.

    Only a holder of this controller (its name), of this boot (boot id) and
    of this pid namespace can be judged: its ansible-playbook process (pid)
    is gone, or the pid is another process now (another start time). For
    any other holder nothing is proven (dead False): the lock is then taken
    over only once it is older than stale_after.
    """
    if not isinstance(owner, dict) or not owner:
        return False, "the lock names no holder yet"
    if not controller or owner.get("controller") != controller:
        return False, "held from another controller (%s)" % (owner.get("controller") or "unknown")
    current_boot, current_ns = boot_id(proc), pid_namespace(proc)
    if not owner.get("boot_id") or owner.get("boot_id") != current_boot:
        return False, "held from another boot of %s, or it does not record one" % controller
    if not owner.get("pid_ns") or owner.get("pid_ns") != current_ns:
        return False, "held from another pid namespace on %s (another container), or it does not record one" % controller
    pid = owner.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False, "the lock records no process id"
    start = process_start(pid, proc)
    if start is None:
        return True, "its process %d on %s is gone" % (pid, controller)
    if owner.get("pid_start") is not None and owner.get("pid_start") != start:
        return True, "process %d on %s is another process now (started at %s, the holder at %s)" % (
            pid, controller, start, owner.get("pid_start"))
    return False, "its process %d on %s is running" % (pid, controller)


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


class _LedgerLock(object):
    """The ledger's exclusive flock, held from a reading of the ledger to the line appended after it."""

    def __init__(self, ledger):
        directory = os.path.dirname(ledger)
        if directory and not os.path.isdir(directory):
            os.makedirs(directory, 0o755)
        self.fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def __enter__(self):
        if fcntl is not None:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def append(self, record):
        os.write(self.fd, (json.dumps(record, sort_keys=True) + "\n").encode("utf-8"))

    def __exit__(self, *exc):
        if fcntl is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)
        return False


def append_ledger(ledger, record):
    """Append one JSON line to the ledger under an exclusive flock (several jobs write it)."""
    with _LedgerLock(ledger) as locked:
        locked.append(record)


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


def recorded_wheel(records, entry):
    """The ledger's last 'built' record of entry that names a wheel and its sha256 (the key's wheel), else None."""
    found = None
    for record in records or []:
        if (record.get("build_key") == entry and record.get("result") == "built" and isinstance(record.get("wheel"), str)
                and isinstance(record.get("sha256"), str) and re.match(r"^[0-9a-f]{64}$", record["sha256"])):
            found = record
    return found


def index_wheel(packages_dir, index_url, record):
    """The key's wheel as installing hosts fetch it: {filename, url, sha256, path, built_on, job, finished}.

    record: the ledger's record of the key (recorded_wheel). None when there
    is none or its file is not in the index's packages directory (a key whose
    file was removed is built anew). The sha256 is the ledger's, never the
    index's listing: the hosts check the downloaded file against it.
    """
    if not record or not os.path.isfile(os.path.join(packages_dir, record["wheel"])):
        return None
    return {"filename": record["wheel"], "url": "%s/packages/%s" % (index_url.rstrip("/"), record["wheel"]),
            "sha256": record["sha256"], "path": os.path.join(packages_dir, record["wheel"]),
            "built_on": record.get("host") or "", "job": record.get("job") or "", "finished": record.get("finished") or ""}


def check_wheel_name(filename, entry, name):
    """'' when filename is the name of a wheel of name (a distribution) with entry's build tag, else the problem."""
    parts = wheel_index.parse_wheel(filename) if isinstance(filename, str) and "/" not in filename else None
    if not parts:
        return "%r is not the file name of a wheel" % (filename,)
    if parts["build"] != wheel_index.build_tag(entry) or wheel_index.normalize(parts["name"]) != wheel_index.normalize(name):
        return "%s is not a wheel of %s with the build tag of key %s (%s)" % (filename, name, entry, wheel_index.build_tag(entry))
    return ""


def _place(incoming, packages_dir, filename):
    """Put incoming into packages_dir as filename: written next to it under a name the index does not list, then
    renamed into place, so that the index never serves part of a wheel."""
    if not os.path.isdir(packages_dir):
        raise FleetLockError("the index's packages directory %s does not exist (role fleet_cache makes it)" % packages_dir)
    tmp = os.path.join(packages_dir, ".%s.%d.part" % (filename, os.getpid()))
    try:
        shutil.copyfile(incoming, tmp)
        os.chmod(tmp, 0o644)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, os.path.join(packages_dir, filename))
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def ledger_outcome(published):
    """The result word of the ledger line of a publish: 'built' when this build's wheel is the key's (published),
    'refused' when the key keeps the wheel it had (the builder's host records the same word in its own ledger)."""
    return "built" if published else "refused"


def publish(ledger, packages_dir, incoming, builder_sha256, record):
    """Publish the lock holder's wheel of one key, under the ledger's flock. Returns {published, ledger_outcome, wheel,
    msg}; ledger_outcome is the result word of the ledger line written (ledger_outcome()).

    incoming: the wheel as it reached the cache host (from the builder through
    the controller), its file name the name on the index. builder_sha256: the
    sha256 the builder read of the file it built. record: the ledger line's
    fields (build_key, name, host, job, started, finished, log). A file whose
    sha256 is not the builder's is refused (FleetLockError): nothing is
    published. When the ledger records another wheel of the key and that file
    is still on the index, the key keeps it: this one is refused, recorded as
    'refused', and the hosts of the key install the recorded wheel
    (published False). Otherwise the file is put on the index (an unrecorded
    file of the same name is replaced) and recorded as 'built' with its sha256.
    """
    entry, name = record.get("build_key"), record.get("name")
    filename = os.path.basename(incoming or "")
    problem = check_wheel_name(filename, entry, name)
    if problem:
        raise FleetLockError("publish: %s" % problem)
    expected = (builder_sha256 or "").strip().lower()
    if not re.match(r"^[0-9a-f]{64}$", expected):
        raise FleetLockError("publish: the builder's sha256 of %s is %r, not a sha256" % (filename, builder_sha256))
    got = sha256_file(incoming)
    if got != expected:
        raise FleetLockError(
            "The wheel of key %s that reached the cache host (%s) has sha256 %s, but its builder %s built one with "
            "sha256 %s: it changed on its way, and nothing was published. Fix: run again (the key is built anew)."
            % (entry, filename, got, record.get("host") or "?", expected))
    with _LedgerLock(ledger) as locked:
        current = recorded_wheel(read_ledger(ledger), entry)
        if current and os.path.isfile(os.path.join(packages_dir, current["wheel"])):
            if current["wheel"] == filename and current["sha256"] == got:
                locked.append(dict(record, result=ledger_outcome(True), wheel=filename, sha256=got))
                return {"published": True, "ledger_outcome": ledger_outcome(True), "wheel": current,
                        "msg": "the index has this wheel of %s already" % entry}
            why = ("key %s has its wheel already: %s (sha256 %s), built on %s (job %s, finished %s); one key has one "
                   "wheel, which is never replaced. This build's %s (sha256 %s) was not published; the hosts of the "
                   "key install the recorded wheel." % (entry, current["wheel"], current["sha256"], current.get("host") or "?",
                                                        current.get("job") or "-", current.get("finished") or "?",
                                                        filename, got))
            locked.append(dict(record, result=ledger_outcome(False), wheel=filename, sha256=got, error=why))
            return {"published": False, "ledger_outcome": ledger_outcome(False), "wheel": current, "msg": why}
        _place(incoming, packages_dir, filename)
        line = dict(record, result=ledger_outcome(True), wheel=filename, sha256=got)
        locked.append(line)
    return {"published": True, "ledger_outcome": ledger_outcome(True), "wheel": line,
            "msg": "published %s (sha256 %s)" % (filename, got)}


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
