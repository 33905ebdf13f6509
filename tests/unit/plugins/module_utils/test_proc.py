# -*- coding: utf-8 -*-
"""proc.run: deadlines that kill the whole process group, missing programs, odd bytes, env and cwd."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys
import time

import pytest

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import proc
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.proc import ProcResult, run


def _alive(pid):
    """True while pid runs (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (IOError, OSError):
        return False


def _wait_gone(pid, seconds=5.0):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_success_fields():
    result = run(["sh", "-c", "echo out; echo err >&2"], timeout=10)
    assert isinstance(result, ProcResult)
    assert (result.rc, result.stdout, result.stderr) == (0, "out\n", "err\n")
    assert result.timed_out is False and result.error is None and result.decode_errors is False
    assert result.argv == ["sh", "-c", "echo out; echo err >&2"] and result.timeout == 10
    assert result.ok


def test_nonzero_exit_has_a_readable_error():
    result = run(["sh", "-c", "echo 'it broke' >&2; exit 3"], timeout=10)
    assert result.rc == 3 and not result.timed_out and not result.ok
    assert result.error == "sh exited with 3: it broke"


def test_real_sleep_times_out_and_is_gone():
    started = time.time()
    result = run(["sleep", "60"], timeout=1)
    assert time.time() - started < 10
    assert result.timed_out is True and result.rc is None
    assert result.error == "sleep did not answer within 1 seconds"
    assert result.timeout == 1


def test_timeout_kills_the_whole_group_including_grandchildren(tmp_path):
    pidfile = tmp_path / "child.pid"
    # sh starts a background sleep (a grandchild of ours), records its pid, then waits
    script = "sleep 60 & echo $! > %s; wait" % pidfile
    result = run(["sh", "-c", script], timeout=1)
    assert result.timed_out
    child = int(pidfile.read_text().strip())
    assert _wait_gone(child), "the sleep started by the timed-out program still runs"


def test_sigterm_ignored_gets_sigkill(tmp_path):
    pidfile = tmp_path / "pid"
    script = "trap '' TERM; echo $$ > %s; while :; do sleep 0.1; done" % pidfile
    started = time.time()
    result = run(["sh", "-c", script], timeout=1)
    took = time.time() - started
    assert result.timed_out
    assert took >= 1 + proc.KILL_GRACE - 0.5, "SIGKILL came before the grace period"
    assert took < 1 + proc.KILL_GRACE + 5
    assert _wait_gone(int(pidfile.read_text().strip()))


def test_output_before_the_timeout_is_kept():
    result = run(["sh", "-c", "echo partial; exec sleep 60"], timeout=1)
    assert result.timed_out and result.stdout == "partial\n"


def test_missing_program_rc_127():
    result = run(["/nonexistent/dir/no-such-program", "--version"], timeout=5)
    assert result.rc == 127 and not result.timed_out
    assert result.error == "/nonexistent/dir/no-such-program: not found"
    assert result.stdout == "" and result.stderr == ""


def test_missing_program_on_path_rc_127():
    result = run(["no-such-program-llm-stack"], timeout=5)
    assert result.rc == 127 and result.error == "no-such-program-llm-stack: not found"


def test_not_executable_is_not_a_traceback(tmp_path):
    script = tmp_path / "plain.txt"
    script.write_text("echo hi\n")
    result = run([str(script)], timeout=5)
    assert result.rc == 126 and "cannot run" in result.error


def test_empty_argv():
    result = run([], timeout=5)
    assert result.rc == 127 and result.error


def test_non_utf8_output_is_replaced_and_flagged():
    result = run([sys.executable, "-c", "import sys; sys.stdout.buffer.write(b'GPU \\xff\\xfe name\\n')"], timeout=10)
    assert result.rc == 0
    assert result.decode_errors is True
    assert result.stdout == u"GPU \ufffd\ufffd name\n"


def test_non_utf8_on_stderr_is_flagged():
    result = run([sys.executable, "-c", "import sys; sys.stderr.buffer.write(b'\\x80')"], timeout=10)
    assert result.decode_errors is True and result.stderr == u"\ufffd"


def test_valid_utf8_is_not_flagged():
    result = run([sys.executable, "-c", "import sys; sys.stdout.buffer.write(u'caf\\u00e9'.encode('utf-8'))"],
                 timeout=10)
    assert result.stdout == u"caf\u00e9" and result.decode_errors is False


def test_env_replaces_the_environment():
    result = run(["/bin/sh", "-c", "echo \"$LLM_STACK_X|${HOME-unset}\""], timeout=5,
                 env={"LLM_STACK_X": "42", "PATH": "/usr/bin:/bin"})
    assert result.stdout == "42|unset\n"


def test_cwd(tmp_path):
    result = run(["pwd"], timeout=5, cwd=str(tmp_path))
    assert os.path.realpath(result.stdout.strip()) == os.path.realpath(str(tmp_path))


def test_missing_cwd_is_a_clean_error(tmp_path):
    result = run(["pwd"], timeout=5, cwd=str(tmp_path / "missing"))
    assert result.rc == 126 and "no such directory" in result.error


def test_data_goes_to_stdin():
    assert run(["cat"], timeout=5, data="hello").stdout == "hello"
    assert run(["cat"], timeout=5, data=b"\x00bytes").stdout == "\x00bytes"


def test_no_data_means_empty_stdin():
    # a program that reads stdin must not wait for a terminal
    result = run(["cat"], timeout=5)
    assert result.rc == 0 and result.stdout == "" and not result.timed_out


def test_killed_by_signal_is_described():
    result = run(["sh", "-c", "kill -9 $$"], timeout=5)
    assert result.rc == -9 and "killed by signal 9" in result.error


@pytest.mark.parametrize("field", ["rc", "stdout", "stderr", "timed_out", "argv", "timeout", "error",
                                   "decode_errors"])
def test_result_has_the_agreed_fields(field):
    assert field in run(["true"], timeout=5).as_dict()


def test_group_alive_guard_and_own_group():
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import run_logged
    assert run_logged._group_alive is proc._group_alive
    assert not any(proc._group_alive(pgid) for pgid in (None, 0, -1, "12", 1.5))
    assert proc._group_alive(os.getpgid(0))
