# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run_logged action's loop, with the module's answers given and a clock that only moves when it sleeps."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from unittest import mock

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.gpufleet.llm_stack.plugins.action import run_logged as action_mod

SECRET = "pa55w0rd-value"


class Host(object):
    """Stands in for the module on the host: a run that prints ninja steps for `steps` polls, then ends."""

    def __init__(self, steps=20, rc=0, seconds_per_call=0.5, fail_start=None, running_forever=False):
        self.calls = []
        self.steps = steps
        self.rc = rc
        self.seconds_per_call = seconds_per_call
        self.fail_start = fail_start
        self.running_forever = running_forever
        self.now = 1000.0
        self.stopped = False

    def clock(self):
        return self.now

    def sleep(self, seconds):
        assert seconds >= 0
        self.now += seconds

    def execute(self, module_name=None, module_args=None, task_vars=None, **kwargs):
        assert module_name == "gpufleet.llm_stack.run_logged"
        assert task_vars["ansible_no_target_syslog"] is True
        self.now += self.seconds_per_call
        self.calls.append(dict(module_args))
        op = module_args["operation"]
        base = {"invocation": {"module_args": dict(module_args)}, "log": module_args["log"], "cmd": "pip install x"}
        if op == "start":
            if self.fail_start:
                return dict(base, failed=True, msg=self.fail_start)
            if module_args.get("creates"):
                return dict(base, changed=False, ran=False, msg="%s exists: x was not run" % module_args["creates"])
            return dict(base, changed=True, ran=True, job="job-1", pgid=42, supervisor=41)
        if op == "stop":
            self.stopped = True
            return dict(base, changed=True, stopped=True)
        polls = len([c for c in self.calls if c["operation"] == "status"])
        done = min(polls, self.steps)
        progress = {"ninja": {"done": done, "total": self.steps, "step": "f%d.cu" % done}, "transfer": None,
                    "line": "[%d/%d] nvcc -c f%d.cu" % (done, self.steps, done)}
        if (polls < self.steps or self.running_forever) and not self.stopped:
            return dict(base, changed=False, running=True, rc=None, progress=progress, elapsed=self.now - 1000, tail=None)
        if self.stopped:
            return dict(base, changed=False, running=False, rc=None, timed_out=True, progress=progress,
                        elapsed=self.now - 1000, tail=["# stopped: timeout"])
        tail = ["[%d/%d] nvcc -c f%d.cu" % (done, self.steps, done)] + ([] if self.rc == 0 else ["error: boom"])
        errors = [] if self.rc == 0 else ["f1.cu(3): error: identifier \"x\" is undefined"]
        return dict(base, changed=False, running=False, rc=self.rc, timed_out=False, error=None, progress=progress,
                    elapsed=self.now - 1000, tail=tail, error_lines=errors)


def make_action(args, host, check_mode=False, no_log=False):
    task = mock.MagicMock()
    task.args = args
    task.async_val = 0
    task.check_mode = check_mode
    task.no_log = no_log
    task.action = "gpufleet.llm_stack.run_logged"
    connection = mock.MagicMock()
    connection._shell.tmpdir = "/tmp/remote"
    action = action_mod.ActionModule(task, connection, mock.MagicMock(), loader=None, templar=None)
    action._execute_module = host.execute
    action.clock = host.clock
    action.sleep = host.sleep
    return action


@pytest.fixture
def shown():
    """The progress lines shown, with the host's clock when each was shown (filled by run())."""
    return []


def run(args, host, shown, **kw):
    action = make_action(args, host, **kw)
    original = action_mod.display.display

    def stamp(msg, *a, **k):  # remember when each line was shown, on the host's clock
        shown.append((msg, host.now))

    action_mod.display.display = stamp
    try:
        return action.run(task_vars={"inventory_hostname": "gpu-01"})
    finally:
        action_mod.display.display = original


ARGS = {"name": "Build flash-attn", "argv": ["/venv/bin/python", "-m", "pip", "wheel", "-v", "flash-attn==2.8.3"],
        "environment": {"PIP_INDEX_URL": "https://user:%s@mirror/simple" % SECRET, "HF_TOKEN": SECRET, "MAX_JOBS": 4},
        "log": "/var/log/llm-stack/fa.log", "poll": 10, "progress_interval": 30}


def test_progress_lines_at_least_every_interval(shown):
    host = Host(steps=40)
    result = run(dict(ARGS), host, shown)
    assert result["changed"] is True and result["rc"] == 0 and not result.get("failed")
    assert "invocation" not in result
    times = [when for dummy, when in shown]
    assert len(shown) >= 5
    assert all(later - earlier <= 30 for earlier, later in zip(times, times[1:]))
    texts = [msg for msg, dummy in shown]
    assert texts[0] == "progress [gpu-01] Build flash-attn: started, log /var/log/llm-stack/fa.log on the host"
    assert re.match(r"^progress \[gpu-01\] Build flash-attn: \d+m\d\ds elapsed; \[\d+/40\] \d+% f\d+\.cu; about \S+ left$",
                    texts[2]), texts[2]
    assert texts[-1].endswith("done after %s (exit status 0)" % action_mod.R.human_seconds(result["elapsed"]))
    # first polls come quickly, then every poll seconds
    status_calls = [c for c in host.calls if c["operation"] == "status"]
    assert status_calls[0]["job"] == "job-1" and len(status_calls) == 40


def test_secrets_never_shown_or_returned(shown):
    result = run(dict(ARGS, name="Fetch with %s" % SECRET), Host(steps=3, rc=1), shown, no_log=False)
    everything = repr(result) + repr(shown)
    assert SECRET not in everything and "Fetch with ***" in everything


def test_failure_gives_the_log_tail(shown):
    host = Host(steps=3, rc=2)
    result = run(dict(ARGS), host, shown)
    assert result["failed"] is True and result["rc"] == 2 and result["tail"][-1] == "error: boom"
    assert result["msg"].startswith("Build flash-attn failed on gpu-01 after ")
    assert ("(exit status 2). Full log: /var/log/llm-stack/fa.log on gpu-01.\nLines that report errors:\n"
            "f1.cu(3): error: identifier \"x\" is undefined\nLast 2 lines:\n[3/3] nvcc -c f3.cu\nerror: boom") in result["msg"]
    assert result["error_lines"] == ["f1.cu(3): error: identifier \"x\" is undefined"]
    assert not any("FAILED" in msg for msg, dummy in shown)  # the result shows it


def test_failure_under_no_log_still_shows_the_masked_tail(shown):
    result = run(dict(ARGS), Host(steps=2, rc=1), shown, no_log=True)
    assert result["failed"] is True
    assert any("FAILED (exit status 1); from /var/log/llm-stack/fa.log (credentials masked)" in msg and "error: boom" in msg
               for msg, dummy in shown)


def test_timeout_backstop_stops_the_run(shown):
    host = Host(steps=5, running_forever=True)
    result = run(dict(ARGS, timeout=100, poll=10), host, shown)
    assert host.stopped is True
    assert result["failed"] is True and result["timed_out"] is True
    assert "ran past its timeout of 100 s and was killed" in result["msg"]


def test_check_mode_and_creates_do_not_poll(shown):
    host = Host()
    result = run(dict(ARGS, creates="/opt/done"), host, shown)
    assert result["changed"] is False and "exists" in result["msg"]
    assert [c["operation"] for c in host.calls] == ["start"] and shown == []


def test_start_failure(shown):
    result = run(dict(ARGS), Host(fail_start="Build flash-attn: /venv/bin/python: not found"), shown)
    assert result["failed"] is True and result["msg"] == "Build flash-attn: /venv/bin/python: not found"


def test_bad_interval_is_refused_before_the_host_is_asked(shown):
    host = Host()
    with pytest.raises(AnsibleActionFail, match="progress_interval must be 1 to 60"):
        run(dict(ARGS, progress_interval=120), host, shown)
    assert host.calls == []
