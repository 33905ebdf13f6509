# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One long command on the host, detached, with a log; and what its log says about its progress.

Host side (the ``run_logged`` module calls these):

* ``start_job`` writes the log's header and starts a supervisor process
  that is detached from the module (its own session, no inherited file
  descriptors). The supervisor runs the command in a process group of its
  own, copies its output into the log with credentials masked, kills the
  whole group when the time limit passes, and writes the exit status to
  ``<log>.rc``. ``<log>.pid`` names the job, the supervisor and the group.
  The command's environment lives only in the supervisor's memory: it is
  on no command line and in no file.
* ``job_status`` reads those files and the end of the log.
* ``stop_job`` ends a job's process group.

Pure functions (the action plugin and the unit tests use them):

* ``progress_of(text)``: ninja's ``[N/M]``, the bytes or percent of a pip
  or ``hf download`` transfer, and the last line of a log's end.
* ``Estimator``: the rate and the time left, from successive readings.
* ``describe(...)``: the progress line the play output shows.

The progress readers live in ``_run_logged_progress`` (private) and are imported from here.

Standard library only, Python 3.8+ (it runs on the managed host).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import json
import os
import re
import select
import signal
import socket
import stat
import subprocess
import time

try:
    from shlex import quote as _quote
except ImportError:  # pragma: no cover
    from pipes import quote as _quote  # type: ignore

from ansible_collections.gpufleet.llm_stack.plugins.module_utils._run_logged_progress import (  # noqa: F401 pylint: disable=unused-import
    ERROR_LINE_MAX, Estimator, describe, error_lines, human_bytes, human_seconds, log_lines, ninja_step, progress_of,
    shorten, tail_lines)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.proc import _group_alive
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import mask_credentials

LOG_MODE = 0o640
KILL_GRACE = 5
# What the end of the log is read for: progress and the tail.
TAIL_BYTES = 64 * 1024
# Environment variables whose values are masked wherever they would appear:
# named like a secret, whatever the value (a key of 3 characters, of digits
# only, or the word none is still the key), unless the name says it is a
# switch (HF_HUB_DISABLE_IMPLICIT_TOKEN=0: masking every "0" would wreck the
# log, and the name tells it is no secret).
SECRET_NAME_RE = re.compile(r"TOKEN|PASSW|SECRET|CREDENTIAL|AUTH|COOKIE|API_?KEY|PRIVATE|(^|_)KEY$", re.IGNORECASE)
SWITCH_NAME_RE = re.compile(r"(^|_)(DISABLE|ENABLE|USE|NO|SKIP|ALLOW|ON|OFF)(_|$)", re.IGNORECASE)
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# The options of the run_logged action (the module adds operation and job).
OPTIONS = dict(
    name=dict(type="str"),
    argv=dict(type="list", elements="str", required=True),
    environment=dict(type="dict", default={}),
    log=dict(type="path", required=True),
    log_header=dict(type="list", elements="str", default=[]),
    timeout=dict(type="int", default=3600),
    poll=dict(type="int", default=10),
    progress_interval=dict(type="int", default=30),
    tail_lines=dict(type="int", default=40),
    creates=dict(type="path"),
    earlier=dict(type="str", choices=["fail", "stop"], default="fail"),
)
MAX_PROGRESS_INTERVAL = 60


def option_problems(params):
    """What is wrong with the timing options, as messages naming the option."""
    problems = []
    if not 1 <= (params.get("progress_interval") or 0) <= MAX_PROGRESS_INTERVAL:
        problems.append("progress_interval must be 1 to %d seconds, got %r"
                        % (MAX_PROGRESS_INTERVAL, params.get("progress_interval")))
    if (params.get("poll") or 0) < 1:
        problems.append("poll must be 1 or more seconds, got %r" % (params.get("poll"),))
    if (params.get("timeout") or 0) < 1:
        problems.append("timeout must be 1 or more seconds, got %r" % (params.get("timeout"),))
    if (params.get("tail_lines") is None) or params["tail_lines"] < 0:
        problems.append("tail_lines must be 0 or more, got %r" % (params.get("tail_lines"),))
    return problems


class JobError(Exception):
    """A job cannot be started or read; the message says why and what to do."""


# ---------------------------------------------------------------------------
# Secrets


def secret_values(environment):
    """Values of the environment that must never be shown: those of variables named like a secret, of any
    length, but for the switches named so (mask_credentials adds the base64 of a user:password)."""
    found = []
    for name, value in sorted((environment or {}).items()):
        text = "" if value is None else str(value)
        if text and SECRET_NAME_RE.search(str(name)) and not SWITCH_NAME_RE.search(str(name)):
            found.append(text)
    return found


def mask(text, secrets=()):
    """mask_credentials over text (URL userinfo, bearer values, hub tokens, and the given secrets)."""
    return mask_credentials(text, secrets)


def command_line(argv, secrets=()):
    """The command as a shell would read it, credentials masked."""
    return mask(" ".join(_quote(str(arg)) for arg in argv), secrets)


# ---------------------------------------------------------------------------
# Job files


def pid_path(log):
    return log + ".pid"


def rc_path(log):
    return log + ".rc"


def _write_json(path, data):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o644)
    with os.fdopen(fd, "w") as handle:
        json.dump(data, handle, sort_keys=True)
    os.rename(tmp, path)


def _open_read(path):
    """A file opened for reading, never through a link (O_NOFOLLOW), and only a regular one."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    handle = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        handle.close()
        raise OSError(errno.EINVAL, "not a regular file: %s" % path)
    return handle


def _read_json(path):
    try:
        with _open_read(path) as handle:
            data = json.loads(handle.read(1024 * 1024).decode("utf-8"))
    except (IOError, OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _alive(pid):
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno == errno.EPERM
    # a zombie is not running; /proc says so on Linux
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except (IOError, OSError, IndexError):
        return True


def read_tail(path, max_bytes=TAIL_BYTES):
    """The last max_bytes of a file as text (invalid UTF-8 replaced), '' when it cannot be read."""
    try:
        with _open_read(path) as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(size - max_bytes, 0))
            data = handle.read()
    except (IOError, OSError):
        return ""
    text = data.decode("utf-8", "replace")
    if size > max_bytes and "\n" in text:
        text = text.split("\n", 1)[1]
    return text


def which(program, path_env):
    """Where program runs from with this PATH (None when it does not), like the shell would find it."""
    if os.sep in program:
        return program if os.path.isfile(program) and os.access(program, os.X_OK) else None
    for folder in (path_env or os.defpath).split(os.pathsep):
        candidate = os.path.join(folder or ".", program)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


# ---------------------------------------------------------------------------
# Host side: start, status, stop


def header_lines(name, argv, environment, extra, secrets, hostname=None, now=None):
    """The lines written at the top of the log."""
    now = time.time() if now is None else now
    lines = ["# %s" % mask(name, secrets),
             "# started %s on %s" % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
                                     hostname or socket.gethostname())]
    lines += ["# %s" % mask(str(line), secrets) for line in extra or []]
    if environment:
        lines.append("# environment: %s (values not shown)" % " ".join(sorted(environment)))
    lines.append("# $ %s" % command_line(argv, secrets))
    return [line.replace("\n", " ") for line in lines]


def check_request(argv, environment, log, timeout):
    """Refuse what cannot run, before anything is written. Returns the environment as strings."""
    if not argv or not all(isinstance(arg, str) for arg in argv):
        raise JobError("argv must be a non-empty list of strings (the program, then its arguments), got %r" % (argv,))
    if any("\0" in arg for arg in argv):
        raise JobError("argv must not contain NUL characters")
    if not log or not os.path.isabs(log):
        raise JobError("log must be an absolute path on the host, got %r" % (log,))
    if timeout is None or timeout < 1:
        raise JobError("timeout must be 1 or more seconds, got %r" % (timeout,))
    env = {}
    for name, value in (environment or {}).items():
        name = str(name)
        if not ENV_NAME_RE.match(name):
            raise JobError("environment: %r is not a variable name (letters, digits and _, not starting with a digit)"
                           % (name,))
        value = "" if value is None else (str(value).lower() if isinstance(value, bool) else str(value))
        if "\0" in value:
            raise JobError("environment: the value of %s contains a NUL character" % name)
        env[name] = value
    return env


def running_job(log):
    """The job recorded for this log if its supervisor still runs, else None."""
    job = _read_json(pid_path(log))
    if job and not os.path.exists(rc_path(log)) and _alive(job.get("supervisor")):
        return job
    return None


def start_job(name, argv, environment, log, header=(), timeout=3600, hostname=None, earlier="fail"):
    """Start argv detached with its output in log; return {job, supervisor, pgid, started, log}.

    earlier: what to do with a job of an earlier run still writing log: "fail" refuses, "stop" ends it first
    (its process group and descendants, the reason noted in its log) and then starts.
    Raises JobError, with the reason and the fix, when it cannot start
    (nothing runs then).
    """
    env_extra = check_request(argv, environment, log, timeout)
    secrets = secret_values(env_extra)
    env = dict(os.environ)
    env.update(env_extra)
    program = which(argv[0], env.get("PATH"))
    if program is None:
        raise JobError("%s: not found or not executable on this host (PATH=%s)" % (argv[0], env.get("PATH", os.defpath)))
    other = running_job(log)
    if other and earlier == "stop":
        try:
            stop_job(log, other.get("job"), "a new run on this log ends this one (the run that started it is gone)")
        except JobError:  # another job took the log meanwhile: it is read again below
            pass
        other = running_job(log)
    if other:
        raise JobError("%s is still being written by an earlier run (supervisor pid %s, started %s). Fix: wait for it, "
                       "or end it (kill -- -%s) and run again" % (log, other.get("supervisor"), time.strftime(
                           "%Y-%m-%dT%H:%M:%SZ", time.gmtime(other.get("started") or 0)), other.get("pgid")))
    folder = os.path.dirname(log)
    try:
        if not os.path.isdir(folder):
            os.makedirs(folder, 0o755)
        for path in (rc_path(log), pid_path(log)):
            if os.path.lexists(path):
                os.unlink(path)
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0), LOG_MODE)
    except OSError as exc:
        raise JobError("cannot write the log %s: %s" % (log, exc.strerror or exc))
    os.fchmod(fd, LOG_MODE)
    started = time.time()
    os.write(fd, ("\n".join(header_lines(name, argv, env_extra, header, secrets, hostname, started)) + "\n")
             .encode("utf-8"))
    job_id = "%d-%d-%s" % (int(started), os.getpid(), os.urandom(4).hex())
    read_end, write_end = os.pipe()
    first = os.fork()
    if first == 0:  # pragma: no cover - runs in the detached child (tested through start_job)
        try:
            os.close(read_end)
            os.setsid()
            if os.fork() != 0:
                os._exit(0)
            _supervise(job_id, argv, env, log, fd, write_end, timeout, secrets, started)
        finally:
            os._exit(0)
    os.close(write_end)
    os.close(fd)
    chunks = []
    while True:
        data = os.read(read_end, 4096)
        if not data:
            break
        chunks.append(data)
    os.close(read_end)
    try:
        os.waitpid(first, 0)
    except OSError:
        pass
    try:
        answer = json.loads(b"".join(chunks).decode("utf-8") or "null")
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise JobError("the supervisor of %s did not start (see %s)" % (argv[0], log))
    if answer.get("error"):
        raise JobError(answer["error"])
    answer["log"] = log
    return answer


def _detach_stdio(keep):
    devnull = os.open(os.devnull, os.O_RDWR)
    for target in (0, 1, 2):
        os.dup2(devnull, target)
    if devnull > 2:
        os.close(devnull)
    try:
        limit = min(os.sysconf("SC_OPEN_MAX"), 1 << 20)
    except (ValueError, OSError):
        limit = 1024
    low = 3
    for fd in sorted(keep) + [limit]:
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1


def _supervise(job_id, argv, env, log, log_fd, sync_fd, timeout, secrets, started):  # pragma: no cover - child
    """The detached supervisor: run, copy masked output to the log, enforce the time limit, write the rc file."""
    _detach_stdio(keep=(log_fd, sync_fd))
    os.chdir("/")
    os.umask(0o022)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    log_file = os.fdopen(log_fd, "ab", 0)

    def tell(data):
        try:
            os.write(sync_fd, json.dumps(data).encode("utf-8"))
        finally:
            os.close(sync_fd)

    _become_subreaper()
    try:
        # A detached child in its own process group whose output streams into
        # the log: AnsibleModule.run_command waits for the command and has no
        # process group, so it cannot do this.
        proc = subprocess.Popen(  # pylint: disable=ansible-bad-function
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            env=env, close_fds=True, start_new_session=True, cwd="/")
    except (OSError, ValueError) as exc:
        message = "%s: cannot start: %s" % (argv[0], getattr(exc, "strerror", None) or exc)
        log_file.write(("# %s\n" % message).encode("utf-8"))
        _write_json(rc_path(log), {"job": job_id, "rc": None, "error": message, "timed_out": False,
                                   "elapsed": 0, "finished": time.time()})
        tell({"error": message})
        return
    job = {"job": job_id, "supervisor": os.getpid(), "pgid": proc.pid, "started": started, "timeout": timeout}
    try:
        _write_json(pid_path(log), job)
    except OSError as exc:
        _stop_group(proc.pid, proc)
        proc.wait()
        tell({"error": "cannot write %s: %s; the command was stopped" % (pid_path(log), exc.strerror or exc)})
        return
    tell(job)

    deadline = time.time() + timeout
    pending = b""
    timed_out = False
    stream = proc.stdout.fileno()
    while True:
        left = deadline - time.time()
        if left <= 0:
            timed_out = True
            break
        ready, _w, _x = select.select([stream], [], [], min(left, 1.0))
        if not ready:
            continue
        data = os.read(stream, 65536)
        if not data:
            break
        pending += data
        cut = max(pending.rfind(b"\n"), pending.rfind(b"\r"))
        if cut < 0 and len(pending) < 65536:
            continue
        if cut < 0:
            cut = len(pending) - 1
        chunk, pending = pending[:cut + 1], pending[cut + 1:]
        log_file.write(mask(chunk.decode("utf-8", "replace"), secrets).encode("utf-8"))
    if pending:
        log_file.write(mask(pending.decode("utf-8", "replace"), secrets).encode("utf-8"))
    if timed_out:
        _stop_group(proc.pid, proc, root=os.getpid())
    try:
        proc.stdout.close()
    except OSError:
        pass
    rc = proc.wait()
    elapsed = time.time() - started
    if timed_out:
        trailer = ("# timed out after %s (timeout %d s): the process group and its descendants were killed"
                   % (human_seconds(elapsed), timeout))
    elif rc < 0:
        trailer = "# killed by signal %d after %s" % (-rc, human_seconds(elapsed))
    else:
        trailer = "# exit status %d after %s" % (rc, human_seconds(elapsed))
    log_file.write(("\n%s\n" % trailer).encode("utf-8"))
    log_file.close()
    _write_json(rc_path(log), {"job": job_id, "rc": None if timed_out else rc, "timed_out": timed_out,
                               "elapsed": round(elapsed, 1), "finished": time.time(), "error": None})


def _parents():
    """{pid: parent pid} of every process, from /proc/<pid>/stat (its fourth field)."""
    found = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[-1].split()
            found[int(name)] = int(fields[1])
        except (IOError, OSError, IndexError, ValueError):
            continue
    return found


def descendants(roots):
    """The pids below roots in the process tree (roots themselves left out): a command's children that left
    its process group or session (setsid) are still its descendants, and, under the supervisor (a child
    subreaper), so are those whose parent has ended."""
    children = {}
    for pid, parent in _parents().items():
        children.setdefault(parent, []).append(pid)
    found, todo = set(), [root for root in roots if isinstance(root, int) and root > 0]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found and child not in roots:
                found.add(child)
                todo.append(child)
    return found


def _become_subreaper():  # pragma: no cover - runs in the detached supervisor
    """Orphans of the command are re-parented to this process instead of init (prctl PR_SET_CHILD_SUBREAPER)."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)
    except (OSError, AttributeError, ImportError):
        pass


def _reap():
    """Collect the exit status of ended children (orphans re-parented to the supervisor); never blocks."""
    while True:
        try:
            pid, dummy = os.waitpid(-1, os.WNOHANG)
        except OSError:
            return
        if pid == 0:
            return


def _stop_group(pgid, proc=None, grace=KILL_GRACE, root=None):
    """SIGTERM the group and every descendant of root and of the group's leader, SIGKILL them after grace seconds.

    root: the job's supervisor (never signalled itself); a grandchild started with setsid has left the group
    but not the tree.
    """
    roots = set(pid for pid in (pgid, root) if isinstance(pid, int) and pid > 0)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        targets = descendants(roots) - set([root])
        try:
            os.killpg(pgid, sig)
        except OSError:
            pass
        for pid in sorted(targets):
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        end = time.time() + grace
        while time.time() < end:
            if proc is not None:
                proc.poll()
            if root == os.getpid():
                _reap()
            if not _group_alive(pgid) and not any(_alive(pid) for pid in targets):
                return
            time.sleep(0.1)


def _recorded_status(log, job_id):
    """The exit status the supervisor of job_id recorded, or None."""
    done = _read_json(rc_path(log))
    return done if done is not None and done.get("job") == job_id else None


def job_status(log, job_id, tail_count=40):
    """{running, rc, timed_out, elapsed, error, progress, tail, log_bytes} of the job job_id writing log."""
    job = _read_json(pid_path(log))
    if job is None or job.get("job") != job_id:
        raise JobError("%s no longer belongs to this run (another run started on it?); see the log" % pid_path(log))
    done = _recorded_status(log, job_id)
    alive = done is None and _alive(job.get("supervisor"))
    if done is None and not alive:
        # The supervisor writes the status, then exits: read it again, in case both happened since the first read.
        done = _recorded_status(log, job_id)
    text = read_tail(log)
    result = {"running": False, "rc": None, "timed_out": False, "error": None, "progress": progress_of(text),
              "tail": None, "elapsed": round(time.time() - (job.get("started") or time.time()), 1)}
    try:
        result["log_bytes"] = os.path.getsize(log)
    except OSError:
        result["log_bytes"] = None
    if done is not None:
        result.update(rc=done.get("rc"), timed_out=bool(done.get("timed_out")), error=done.get("error"),
                      elapsed=done.get("elapsed", result["elapsed"]))
    elif alive:
        result["running"] = True
    else:
        result["error"] = "the supervisor of this run (pid %s) ended without an exit status; see %s" % (
            job.get("supervisor"), log)
        if _group_alive(job.get("pgid")) or descendants([job.get("pgid")]):
            _stop_group(job["pgid"])
    if not result["running"]:
        result["tail"] = tail_lines(text, tail_count)
        failed = result["rc"] != 0 or result["timed_out"] or result["error"]
        result["error_lines"] = error_lines(read_tail(log, 4 * TAIL_BYTES), [line.strip() for line in result["tail"]]) \
            if failed else []
    return result


def stop_job(log, job_id, reason):
    """End the job's process group (the supervisor then records the status); note why in the log."""
    job = _read_json(pid_path(log))
    if job is None or job.get("job") != job_id:
        raise JobError("%s no longer belongs to this run" % pid_path(log))
    stopped = False
    supervisor = job.get("supervisor") if _alive(job.get("supervisor")) else None
    if _group_alive(job.get("pgid")) or descendants([job.get("pgid"), supervisor]):
        try:
            fd = os.open(log, os.O_WRONLY | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
            with os.fdopen(fd, "ab") as handle:
                if stat.S_ISREG(os.fstat(fd).st_mode):
                    handle.write(("\n# stopped: %s\n" % reason).encode("utf-8"))
        except (IOError, OSError):
            pass
        _stop_group(job["pgid"], root=supervisor)
        stopped = True
    # give the supervisor a moment to write the exit status
    end = time.time() + KILL_GRACE
    while time.time() < end and not os.path.exists(rc_path(log)) and _alive(job.get("supervisor")):
        time.sleep(0.1)
    return {"stopped": stopped}
