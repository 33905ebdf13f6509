# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""run_logged: progress read from real captured logs, and real runs of short commands."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import stat
import subprocess
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import run_logged as R

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.abspath(os.path.join(HERE, "..", "..", "..", "fixtures", "run_logged"))
NUMPY = "numpy-2.1.3-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"


def fixture(name):
    """A capture; a .json one holds the log as one JSON string (its carriage returns kept)."""
    with open(os.path.join(FIX, name), encoding="utf-8") as handle:
        return json.load(handle) if name.endswith(".json") else handle.read()


def upto(text, marker):
    """The log as it was when the line holding marker had just been written."""
    return text[:text.index("\n", text.index(marker)) + 1]


# --- progress from captured logs ---------------------------------------------


def test_ninja_steps_inside_verbose_pip_build():
    text = fixture("pip-wheel-verbose-ninja.log")
    mid = R.progress_of(upto(text, "[4/6]"))
    assert mid["ninja"] == {"done": 4, "total": 6, "step": "part3.cpp"}
    assert R.describe(mid, 130) == "2m10s elapsed; [4/6] 66% part3.cpp"
    end = R.progress_of(text)
    assert end["ninja"]["done"] == 6 and end["line"] == "Successfully built tiny_ext"


def test_nvcc_steps_of_a_cuda_build_on_a_gpu_host():
    text = fixture("pip-wheel-verbose-nvcc-h200.log")
    mid = R.progress_of(upto(text, "[5/7]"))
    assert mid["ninja"] == {"done": 5, "total": 7, "step": "kern4.cu"}
    assert R.describe(mid, 95, eta=80) == "1m35s elapsed; [5/7] 71% kern4.cu; about 1m20s left"
    assert R.progress_of(upto(text, "[1/7]"))["ninja"]["step"] == "bindings.cpp"
    assert R.error_lines(text) == []


def test_ninja_step_names():
    assert R.ninja_step("/usr/local/cuda/bin/nvcc --generate-dependencies-with-compile -c /b/csrc/flash_fwd_hdim128_bf16_sm80.cu"
                        " -o /b/build/flash_fwd_hdim128_bf16_sm80.o -O3") == "flash_fwd_hdim128_bf16_sm80.cu"
    assert R.ninja_step("c++ -shared a.o b.o -o /b/lib/tiny.so") == "tiny.so"
    assert R.ninja_step("Linking CXX shared library libx.so") == "Linking CXX shared library libx.so"


def test_pip_raw_progress_while_downloading():
    text = fixture("pip26-download-progress-raw.log")
    mid = R.progress_of(upto(text, "Progress 5505024"))
    assert mid["transfer"] == {"file": NUMPY, "done": 5505024, "total": 16339644, "percent": 33, "unit": "B"}
    line = R.describe(mid, 3)
    assert line.startswith("3s elapsed; numpy-2.1.3-cp311") and line.endswith("5.5 MB of 16.3 MB (33%)")
    assert "last:" not in line  # the raw counter line is not repeated
    assert R.progress_of(text)["transfer"]["percent"] == 100


@pytest.mark.parametrize("name", ["pip23-download-bar.log", "pip26-download-bar.log"])
def test_pip_download_size_then_bar(name):
    text = fixture(name)
    started = R.progress_of(upto(text, "Downloading numpy"))
    assert started["transfer"] == {"file": NUMPY, "done": 0, "total": 16300000, "percent": 0, "unit": "B"}
    done = R.progress_of(upto(text, " MB/s "))["transfer"]
    assert (done["done"], done["total"], done["percent"]) == (16300000, 16300000, 100)


def test_pip_install_from_wheelhouse_has_no_transfer():
    text = fixture("pip23-install-wheelhouse.log")
    progress = R.progress_of(upto(text, "Installing collected packages"))
    assert progress["transfer"] is None and progress["ninja"] is None
    assert progress["line"].startswith("Installing collected packages: mpmath")
    assert "last: Installing collected packages: mpmath" in R.describe(progress, 61)


def test_hf_download_files_fetched():
    text = fixture("hf1.16.4-download.log.json")
    mid = R.progress_of(text[:text.index("Fetching 4 files: 100%")])
    assert mid["transfer"] == {"file": "Fetching 4 files", "done": 2, "total": 4, "percent": 50, "unit": "items"}
    assert R.describe(mid, 2) == "2s elapsed; Fetching 4 files: 2 of 4 (50%)"
    assert R.progress_of(text)["line"] == "path: /tmp/cap/dl"


def test_tqdm_bytes_bar():
    line = "model-00001-of-00004.safetensors:  42%|####2     | 2.10G/5.00G [00:20<00:28, 103MB/s]"
    progress = R.progress_of("\r" + line)
    assert progress["transfer"] == {"file": "model-00001-of-00004.safetensors", "done": 2100000000,
                                    "total": 5000000000, "percent": 42, "unit": "B"}


def test_log_lines_follow_carriage_returns_and_colours():
    assert R.log_lines("a\rb\r\n\x1b[31mred\x1b[0m\n\n  \nlast") == ["b", "red", "last"]


# --- the line shown and the estimate ----------------------------------------


def test_human_units():
    assert [R.human_seconds(s) for s in (0, 59, 75, 3725)] == ["0s", "59s", "1m15s", "1h02m05s"]
    assert [R.human_bytes(b) for b in (None, 999, 1536000, 2.5e9)] == ["?", "999 B", "1.5 MB", "2.5 GB"]
    assert R.shorten("x" * 10, 10) == "x" * 10 and len(R.shorten("abcdefghijklmnopqrstuvwxyz", 12)) == 12


def test_estimator():
    est = R.Estimator()
    assert est.add(0.0, "k", 10, 100) is None  # first reading
    assert est.add(10.0, "k", 20, 100) == pytest.approx(80.0)  # 1 step/s, 80 left
    assert est.add(20.0, "k", 40, 100) == pytest.approx(40.0)  # 30 steps in 20 s
    assert est.add(21.0, "other", 1, 10) is None  # another counter starts again
    assert est.add(22.0, "other", 1, 10) is None  # no progress, no estimate
    assert est.add(23.0, "other", 0, None) is None


def test_describe_with_estimate_and_long_line():
    progress = {"ninja": None, "transfer": None, "line": "y" * 400}
    text = R.describe(progress, 90, eta=50)
    assert text.startswith("1m30s elapsed; last: ") and len(text) < 200 and "left" not in text
    ninja = {"ninja": {"done": 1, "total": 4, "step": "a.cu"}, "transfer": None, "line": "[1/4] ..."}
    assert R.describe(ninja, 10, eta=30) == "10s elapsed; [1/4] 25% a.cu; about 30s left"


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("[]/0123456789 %|\r\n\x1b-cobBkMG:.Progressof")) | st.characters(),
               max_size=300))
def test_progress_never_raises(text):
    progress = R.progress_of(text)
    assert set(progress) == {"ninja", "transfer", "line"}
    assert isinstance(R.describe(progress, 5, eta=3), str)


# --- secrets and requests ----------------------------------------------------


def test_secret_values_and_header():
    env = {"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwx", "PIP_INDEX_URL": "https://u:p@mirror/simple", "MAX_JOBS": "4",
           "DB_PASSWORD": "", "GITHUB_API_KEY": "k-123", "HF_HUB_DISABLE_IMPLICIT_TOKEN": "0", "USE_AUTH": "true"}
    # switches named like secrets ("0", "true") are not masked: that would mask every 0 of the log
    assert R.secret_values(env) == ["k-123", "hf_abcdefghijklmnopqrstuvwx"]
    lines = R.header_lines("Fetch with k-123", ["hf", "download", "--token-file", "/run/t", "https://u:p@mirror/x"],
                           env, ["index https://u:p@mirror/simple"], R.secret_values(env), hostname="h1", now=0)
    text = "\n".join(lines)
    assert lines[0] == "# Fetch with ***" and lines[1] == "# started 1970-01-01T00:00:00Z on h1"
    assert "u:p" not in text and "https://***@mirror/x" in text and "k-123" not in text
    assert ("# environment: DB_PASSWORD GITHUB_API_KEY HF_HUB_DISABLE_IMPLICIT_TOKEN HF_TOKEN MAX_JOBS PIP_INDEX_URL"
            " USE_AUTH (values not shown)") in lines


@pytest.mark.parametrize("argv, env, log, timeout, message", [
    ([], {}, "/tmp/x.log", 10, "non-empty list"),
    (["a", 3], {}, "/tmp/x.log", 10, "non-empty list"),
    (["a\0b"], {}, "/tmp/x.log", 10, "NUL"),
    (["true"], {}, "relative.log", 10, "absolute path"),
    (["true"], {}, "/tmp/x.log", 0, "timeout"),
    (["true"], {"BAD-NAME": "1"}, "/tmp/x.log", 10, "not a variable name"),
    (["true"], {"A": "x\0y"}, "/tmp/x.log", 10, "NUL"),
])
def test_check_request_refuses(argv, env, log, timeout, message):
    with pytest.raises(R.JobError, match=message):
        R.check_request(argv, env, log, timeout)


def test_check_request_values_become_strings():
    assert R.check_request(["true"], {"A": 1, "B": True, "C": None}, "/tmp/x.log", 5) == {"A": "1", "B": "true", "C": ""}


@pytest.mark.parametrize("params, message", [
    ({"progress_interval": 61, "poll": 10, "timeout": 5, "tail_lines": 1}, "progress_interval must be 1 to 60"),
    ({"progress_interval": 0, "poll": 10, "timeout": 5, "tail_lines": 1}, "progress_interval must be 1 to 60"),
    ({"progress_interval": 30, "poll": 0, "timeout": 5, "tail_lines": 1}, "poll must be"),
    ({"progress_interval": 30, "poll": 1, "timeout": 5, "tail_lines": -1}, "tail_lines must be"),
])
def test_option_problems(params, message):
    assert message in " ".join(R.option_problems(params))


# --- real runs -----------------------------------------------------------------


def wait(log, job, limit=60):
    """Status of the run once it has ended (polls; fails the test after limit seconds)."""
    end = time.time() + limit
    while time.time() < end:
        status = R.job_status(log, job, 10)
        if not status["running"]:
            return status
        time.sleep(0.1)
    raise AssertionError("the run did not end")


def test_run_writes_masked_log_and_exit_status(tmp_path):
    log = str(tmp_path / "logs" / "step.log")
    script = 'echo "token $API_TOKEN"; echo "[1/2] -c /src/a.cu -o a.o"; echo "see https://u:pw@h/x" >&2; exit 3'
    job = R.start_job("step one", ["sh", "-c", script], {"API_TOKEN": "s3cret-value", "PLAIN": "1"}, log,
                      ["built for 9.0"], 30)
    assert job["log"] == log and job["pgid"] > 0 and job["supervisor"] > 0
    status = wait(log, job["job"])
    assert (status["rc"], status["timed_out"], status["error"]) == (3, False, None)
    with open(log) as handle:
        text = handle.read()
    assert "s3cret-value" not in text and "token ***" in text and "https://***@h/x" in text
    assert text.startswith("# step one\n# started ") and "# built for 9.0\n" in text
    assert "# environment: API_TOKEN PLAIN (values not shown)" in text
    assert text.rstrip().endswith("# exit status 3 after 0s")
    assert stat.S_IMODE(os.stat(log).st_mode) == 0o640
    assert status["tail"][-1] == "# exit status 3 after 0s" and "token ***" in status["tail"]
    assert status["progress"]["ninja"] == {"done": 1, "total": 2, "step": "a.cu"}


def test_timeout_kills_the_process_group(tmp_path):
    log = str(tmp_path / "t.log")
    marker = str(tmp_path / "child.pid")
    job = R.start_job("sleeper", ["sh", "-c", "sleep 300 & echo $! > %s; wait" % marker], {}, log, [], 1)
    status = wait(log, job["job"])
    assert status["timed_out"] is True and status["rc"] is None
    assert "the process group and its descendants were killed" in status["tail"][-1]
    with open(marker) as handle:
        child = int(handle.read())
    assert not R._alive(child) and not R._group_alive(job["pgid"])


def test_timeout_kills_a_grandchild_that_left_the_group_with_setsid(tmp_path):
    """setsid gives the grandchild its own session and group: killpg misses it, the process tree does not."""
    log = str(tmp_path / "t.log")
    marker = str(tmp_path / "grandchild.pid")
    script = "setsid sh -c 'echo $$ > %s; exec sleep 300' & sleep 300" % marker
    job = R.start_job("sleeper", ["sh", "-c", script], {}, log, [], 2)
    status = wait(log, job["job"])
    assert status["timed_out"] is True
    with open(marker) as handle:
        grandchild = int(handle.read())
    end = time.time() + 10
    while time.time() < end and R._alive(grandchild):
        time.sleep(0.1)
    assert not R._alive(grandchild)


def test_descendants_follow_the_process_tree(tmp_path):
    proc = subprocess.Popen(["sh", "-c", "setsid sleep 300 & wait"], start_new_session=True)
    try:
        end = time.time() + 10
        found = set()
        while time.time() < end and not found:
            found = R.descendants([proc.pid])
            time.sleep(0.05)
        assert found and proc.pid not in found and os.getpid() not in found
        assert found <= R.descendants([os.getpid()])
    finally:
        R._stop_group(proc.pid, proc, grace=2, root=os.getpid())
        proc.wait()
    assert not any(R._alive(pid) for pid in found)


def test_second_start_on_a_busy_log_is_refused_and_stop_ends_it(tmp_path):
    log = str(tmp_path / "busy.log")
    job = R.start_job("long", ["sleep", "300"], {}, log, [], 600)
    with pytest.raises(R.JobError, match="still being written by an earlier run"):
        R.start_job("again", ["true"], {}, log, [], 10)
    assert R.stop_job(log, job["job"], "test")["stopped"] is True
    status = wait(log, job["job"])
    assert status["rc"] == -15 and "# stopped: test" in status["tail"]
    with pytest.raises(R.JobError, match="no longer belongs"):
        R.job_status(log, "another-job")


def test_start_with_earlier_stop_ends_the_live_job_of_a_gone_run_then_starts(tmp_path):
    """A job whose run went away still writes the log (its command and a grandchild that left the group with
    setsid): earlier=stop ends all of it, then starts the new job on the same log."""
    log = str(tmp_path / "orphan.log")
    marker = str(tmp_path / "grandchild.pid")
    script = "setsid sh -c 'echo $$ > %s; exec sleep 300' & sleep 300" % marker
    old = R.start_job("old build", ["sh", "-c", script], {}, log, [], 600)
    end = time.time() + 10
    while time.time() < end and not os.path.exists(marker):
        time.sleep(0.05)
    with open(marker) as handle:
        grandchild = int(handle.read())
    with pytest.raises(R.JobError, match="still being written by an earlier run"):
        R.start_job("new build", ["true"], {}, log, [], 10)
    new = R.start_job("new build", ["sh", "-c", "echo fresh"], {}, log, [], 10, earlier="stop")
    assert new["job"] != old["job"]
    assert not R._alive(old["supervisor"]) and not R._group_alive(old["pgid"]) and not R._alive(grandchild)
    status = wait(log, new["job"])
    assert (status["rc"], status["error"]) == (0, None)
    with open(log) as handle:
        text = handle.read()
    assert text.startswith("# new build\n") and "fresh\n" in text and "old build" not in text
    with pytest.raises(R.JobError, match="no longer belongs"):
        R.job_status(log, old["job"])


@pytest.mark.parametrize("earlier", ["fail", "stop"])
def test_start_after_an_earlier_job_ended_starts_whatever_earlier_says(tmp_path, earlier):
    log = str(tmp_path / "done.log")
    old = R.start_job("old", ["sh", "-c", "echo partial; exit 1"], {}, log, [], 10)
    assert wait(log, old["job"])["rc"] == 1
    new = R.start_job("new", ["true"], {}, log, [], 10, earlier=earlier)
    assert wait(log, new["job"])["rc"] == 0
    with open(log) as handle:
        assert "partial" not in handle.read()


def test_missing_program_starts_nothing(tmp_path):
    log = str(tmp_path / "none.log")
    with pytest.raises(R.JobError, match="no-such-program-here: not found"):
        R.start_job("x", ["no-such-program-here"], {}, log, [], 10)
    assert not os.path.exists(log)


def test_log_that_is_a_symlink_is_not_followed(tmp_path):
    target = tmp_path / "elsewhere"
    target.write_text("keep\n")
    log = tmp_path / "link.log"
    log.symlink_to(target)
    with pytest.raises(R.JobError, match="cannot write the log"):
        R.start_job("x", ["true"], {}, str(log), [], 10)
    assert target.read_text() == "keep\n"


def test_job_files_and_the_log_are_never_read_through_a_link(tmp_path):
    """Root reads the .pid file, the .rc file and the log's tail: a link put in their place is not followed."""
    target = tmp_path / "elsewhere"
    target.write_text('{"job": "j", "supervisor": 1, "pgid": 1}')
    log = tmp_path / "step.log"
    os.symlink(str(target), R.pid_path(str(log)))
    assert R._read_json(R.pid_path(str(log))) is None
    assert R.running_job(str(log)) is None
    os.symlink(str(target), str(log))
    assert R.read_tail(str(log)) == ""
    os.mkfifo(str(tmp_path / "fifo.log"))
    assert R.read_tail(str(tmp_path / "fifo.log")) == ""
    assert R._read_json(str(target)) == {"job": "j", "supervisor": 1, "pgid": 1}


def test_error_lines_of_a_failed_verbose_build():
    text = fixture("pip-wheel-verbose-broken-sdist.log")
    tail = R.tail_lines(text, 40)
    assert not any("csrc/cutlass" in line for line in tail)  # pip's echo of the command pushed it up
    assert R.error_lines(text, [line.strip() for line in tail]) == [
        "Traceback (most recent call last):",
        "AssertionError: csrc/cutlass is missing, please use source distribution or git clone",
        "error: subprocess-exited-with-error",
    ]
    # a clean build's compiler command lines (-Wno-error and the like) are not errors
    assert R.error_lines(fixture("pip-wheel-verbose-ninja.log")) == []


def test_a_status_written_between_the_two_reads_is_the_status(tmp_path, monkeypatch):
    """The supervisor writes the exit status, then exits: a reader that saw no status and then no supervisor reads
    the status again instead of reporting a run that ended without one."""
    log = str(tmp_path / "race.log")
    job = R.start_job("x", ["true"], {}, log, [], 10)
    wait(log, job["job"])
    recorded = R._recorded_status(log, job["job"])
    assert recorded is not None and recorded["rc"] == 0
    reads = iter([None, recorded])
    monkeypatch.setattr(R, "_recorded_status", lambda path, job_id: next(reads))
    monkeypatch.setattr(R, "_alive", lambda pid: False)
    status = R.job_status(log, job["job"])
    assert (status["running"], status["rc"], status["error"]) == (False, 0, None)
