# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run one program with a deadline: the only subprocess helper of the collection's modules.

``run(argv, timeout=30, env=None, cwd=None, data=None) -> ProcResult``

- The program runs in its own process group (``start_new_session``), so a
  timeout ends it and everything it started: SIGTERM to the group, then
  SIGKILL after ``KILL_GRACE`` seconds.
- A program that is missing or cannot be started gives rc 127 (missing) or
  126 (not executable, other OS errors) and a readable ``error``; nothing
  here raises for OS errors.
- Output is decoded as UTF-8 with ``errors="replace"``; ``decode_errors``
  says whether a byte was not UTF-8, so callers can name the program that
  printed it instead of failing on it later.

Standard library only, Python 3.8+ (it runs on the managed host).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import signal
import subprocess
import time

KILL_GRACE = 2


class ProcResult(object):
    """What one run gave: rc, stdout, stderr, timed_out, argv, timeout, error, decode_errors."""

    __slots__ = ("rc", "stdout", "stderr", "timed_out", "argv", "timeout", "error", "decode_errors")

    def __init__(self, rc=None, stdout="", stderr="", timed_out=False, argv=None, timeout=None,
                 error=None, decode_errors=False):
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        self.timed_out = timed_out
        self.argv = list(argv or [])
        self.timeout = timeout
        self.error = error
        self.decode_errors = decode_errors

    @property
    def ok(self):
        """True when the program ran to the end with exit code 0."""
        return self.rc == 0 and not self.timed_out

    def as_dict(self):
        return dict((name, getattr(self, name)) for name in self.__slots__)

    def __repr__(self):
        return "ProcResult(%s)" % ", ".join("%s=%r" % (name, getattr(self, name)) for name in self.__slots__)


def _decode(data):
    """(text, had_errors) for bytes from a pipe."""
    if data is None:
        return "", False
    if isinstance(data, str):
        return data, False
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace"), True


def _program(argv):
    return str(argv[0]) if argv else "(empty command)"


def _one_line(text, limit=400):
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    joined = " ".join(lines)
    return joined if len(joined) <= limit else joined[:limit - 3] + "..."


def _kill_group(proc):
    """SIGTERM the process group of proc, SIGKILL it after KILL_GRACE seconds; reap proc."""
    try:
        pgid = os.getpgid(proc.pid)
    except OSError:
        pgid = None
    for sig, wait in ((signal.SIGTERM, KILL_GRACE), (signal.SIGKILL, None)):
        try:
            if pgid is not None:
                os.killpg(pgid, sig)
            else:
                proc.send_signal(sig)
        except OSError:
            pass
        if wait is None:
            break
        deadline = time.time() + wait
        # the leader may be gone while other members of the group still run:
        # wait for the whole group, not only for proc
        while time.time() < deadline:
            proc.poll()
            if not _group_alive(pgid):
                return
            time.sleep(0.05)


def _group_alive(pgid):
    """Whether process group pgid still has a member (one we may not signal counts: EPERM).

    The guard: anything but a positive int (None when the group could not be read, a pgid read back from a
    job file that is missing or bad) is no group, and is never signalled: 0 or a negative pgid would name the
    caller's own group or another one. run_logged uses this one too.
    """
    if not isinstance(pgid, int) or pgid <= 0:
        return False
    try:
        os.killpg(pgid, 0)
    except OSError as exc:
        return exc.errno == errno.EPERM
    return True


def _collect(proc, data):
    """communicate() after the group was killed: pipes held by grandchildren are closed by now."""
    try:
        out, err = proc.communicate(input=data if data is not None else None, timeout=KILL_GRACE + 1)
    except (subprocess.TimeoutExpired, OSError, ValueError):
        out, err = b"", b""
        for stream in (proc.stdout, proc.stderr, proc.stdin):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        try:
            proc.wait(timeout=1)
        except (subprocess.TimeoutExpired, OSError):
            pass
    return out, err


def run(argv, timeout=30, env=None, cwd=None, data=None):
    """Run argv (a list, no shell) with a deadline; never raises for OS errors.

    timeout: seconds (int > 0); env: the whole environment (dict) or None to
    inherit; cwd: working directory or None; data: str or bytes for stdin, or
    None for no stdin (/dev/null).
    """
    argv = [str(arg) for arg in (argv or [])]
    prog = _program(argv)
    result = ProcResult(argv=argv, timeout=timeout)
    if not argv:
        result.rc = 127
        result.error = "no program to run (empty command)"
        return result
    if isinstance(data, str):
        data = data.encode("utf-8")
    try:
        # AnsibleModule.run_command has no timeout and cannot kill a process
        # group, which is what this function is for.
        proc = subprocess.Popen(  # pylint: disable=ansible-bad-function
            argv,
            stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            close_fds=True,
            start_new_session=True,
        )
    except OSError as exc:
        if exc.errno == errno.ENOENT and cwd and not os.path.isdir(cwd):
            result.rc = 126
            result.error = "%s: cannot run in %s: no such directory" % (prog, cwd)
        elif exc.errno == errno.ENOENT:
            result.rc = 127
            result.error = "%s: not found" % prog
        else:
            result.rc = 126
            result.error = "%s: cannot run: %s" % (prog, exc.strerror or exc)
        return result
    except (ValueError, TypeError) as exc:
        result.rc = 126
        result.error = "%s: cannot run: %s" % (prog, exc)
        return result

    timed_out = False
    try:
        out, err = proc.communicate(input=data, timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
        out, err = _collect(proc, None)
    except OSError:
        # a broken pipe on stdin and the like: let the program finish, keep what it said
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
            out, err = _collect(proc, None)
        except OSError:
            out, err = b"", b""

    result.stdout, bad_out = _decode(out)
    result.stderr, bad_err = _decode(err)
    result.decode_errors = bad_out or bad_err
    if timed_out:
        result.timed_out = True
        result.rc = None
        result.error = "%s did not answer within %s seconds" % (prog, timeout)
        return result
    result.rc = proc.returncode
    if result.rc != 0:
        if result.rc is not None and result.rc < 0:
            status = "was killed by signal %d" % -result.rc
        else:
            status = "exited with %s" % result.rc
        said = _one_line(result.stderr) or _one_line(result.stdout) or "no output"
        result.error = "%s %s: %s" % (prog, status, said)
    return result


def call(run_command, argv):
    """run_command(argv) as a ProcResult; a (rc, stdout, stderr) tuple is accepted too.

    The fact modules take a run_command callable (proc.run with the
    timeout bound, or a stand-in in the tests) and read its answer here.
    """
    result = run_command(argv)
    if isinstance(result, ProcResult):
        return result
    rc, out, err = result
    return ProcResult(rc=rc, stdout=out or "", stderr=err or "", argv=argv)
