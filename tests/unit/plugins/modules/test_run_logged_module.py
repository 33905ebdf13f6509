# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run_logged module's operations (start, status, stop) on real short commands."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

import pytest

from ansible_collections.gpufleet.llm_stack.plugins.modules import run_logged


def status_until_done(run_module, args, job, limit=60):
    end = time.time() + limit
    while time.time() < end:
        kind, result, dummy = run_module(run_logged.main, dict(args, operation="status", job=job))
        assert kind == "exit", result
        if not result["running"]:
            return result
        time.sleep(0.1)
    raise AssertionError("the run did not end")


def test_start_then_status(run_module, tmp_path):
    args = {"name": "count", "argv": ["sh", "-c", "for i in 1 2 3; do echo \"[$i/3] step$i\"; done; echo \"$INDEX\""],
            "environment": {"INDEX": "https://user:pa55@mirror/simple", "MAX_JOBS": 2},
            "log": str(tmp_path / "count.log"), "log_header": ["index: https://***@mirror/simple"]}
    kind, started, warnings = run_module(run_logged.main, args)
    assert kind == "exit" and warnings == []
    assert started["changed"] is True and started["ran"] is True and started["job"]
    assert started["cmd"] == "sh -c 'for i in 1 2 3; do echo \"[$i/3] step$i\"; done; echo \"$INDEX\"'"
    done = status_until_done(run_module, args, started["job"])
    assert done["changed"] is False and done["rc"] == 0 and done["timed_out"] is False
    assert done["progress"]["ninja"] == {"done": 3, "total": 3, "step": "step3"}
    assert "https://***@mirror/simple" in done["tail"] and not any("pa55" in line for line in done["tail"])


def test_check_mode_runs_nothing(run_module, tmp_path):
    log = tmp_path / "c.log"
    kind, result, dummy = run_module(run_logged.main, {"argv": ["touch", str(tmp_path / "made")], "log": str(log),
                                                       "_ansible_check_mode": True})
    assert kind == "exit" and result["changed"] is True and result["ran"] is False
    assert "check mode: touch would run" in result["msg"]
    assert not log.exists() and not (tmp_path / "made").exists()


def test_creates_skips_the_run(run_module, tmp_path):
    (tmp_path / "done").write_text("")
    kind, result, dummy = run_module(run_logged.main, {"argv": ["false"], "log": str(tmp_path / "c.log"),
                                                       "creates": str(tmp_path / "done")})
    assert kind == "exit" and result["changed"] is False and result["ran"] is False
    assert not (tmp_path / "c.log").exists()


@pytest.mark.parametrize("extra, message", [
    ({"progress_interval": 90}, "progress_interval must be 1 to 60 seconds, got 90"),
    ({"environment": {"1X": "y"}}, "not a variable name"),
    ({"log": "logs/rel.log"}, "log must be an absolute path"),
    ({"argv": ["/no/such/prog"]}, "/no/such/prog: not found or not executable"),
])
def test_bad_arguments_fail_before_any_change(run_module, tmp_path, extra, message):
    args = dict({"name": "x", "argv": ["true"], "log": str(tmp_path / "x.log")}, **extra)
    kind, result, dummy = run_module(run_logged.main, args)
    assert kind == "fail" and message in result["msg"]
    assert not (tmp_path / "x.log").exists()


def test_status_of_an_unknown_run_fails(run_module, tmp_path):
    kind, result, dummy = run_module(run_logged.main, {"argv": ["true"], "log": str(tmp_path / "x.log"),
                                                       "operation": "status", "job": "nope"})
    assert kind == "fail" and "no longer belongs to this run" in result["msg"]


def test_earlier_stop_ends_a_job_left_running_then_starts(run_module, tmp_path):
    log = str(tmp_path / "b.log")
    kind, old, dummy = run_module(run_logged.main, {"name": "old", "argv": ["sleep", "300"], "log": log})
    assert kind == "exit" and old["ran"] is True
    kind, refused, dummy = run_module(run_logged.main, {"name": "new", "argv": ["true"], "log": log})
    assert kind == "fail" and "still being written by an earlier run" in refused["msg"]
    args = {"name": "new", "argv": ["true"], "log": log, "earlier": "stop"}
    kind, started, dummy = run_module(run_logged.main, args)
    assert kind == "exit" and started["ran"] is True and started["job"] != old["job"]
    assert status_until_done(run_module, args, started["job"])["rc"] == 0
