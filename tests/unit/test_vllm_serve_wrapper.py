# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A server's exit takes its whole process tree with it: the vllm_serve role's supervisord wrapper and unit.

The wrapper (templates/wrapper.sh.j2) is rendered and run as supervisord runs it (a process group of its own),
with a STAND-IN server: a shell script that starts a child and waits, as vLLM's API server starts its
engine core. Killing the server with SIGKILL, stopping the wrapper with TERM, or the server's own exit must
leave no running process of the server's group, and the wrapper must exit with the server's status.
setpriv --init-groups needs root: the run tests are skipped for other users.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import shlex
import shutil
import signal
import subprocess
import time

import jinja2
import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TEMPLATES = os.path.join(REPO, "roles", "vllm_serve", "templates")
GRACE = 2

SERVER = r"""
mode="$1"
if [ "$mode" = stubborn ]; then
  sh -c "trap '' TERM; exec sleep 1000" &
else
  sleep 1000 &
fi
echo "$$ $!" > "$2/pids.tmp"
mv "$2/pids.tmp" "$2/pids"
if [ "$mode" = exit3 ]; then
  sleep 0.3
  exit 3
fi
wait
"""


def template(name):
    with open(os.path.join(TEMPLATES, name)) as handle:
        return handle.read()


def render(name, **plan):
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.filters["quote"] = shlex.quote
    return env.from_string(template(name)).render(vllm_serve_plan=plan, ansible_managed="managed")


def stat_of(pid):
    """(state, pgid) of a process, None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            fields = handle.read().rpartition(")")[2].split()
    except (IOError, OSError):
        return None
    return fields[0], int(fields[2])


def running_in_group(pgid):
    """The processes of a process group that still run (zombies only wait for their reaper)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            found_stat = stat_of(int(name))
            if found_stat and found_stat[1] == pgid and found_stat[0] != "Z":
                found.append(int(name))
    return found


def shells():
    return [shell for shell in ("/bin/sh", "/bin/dash", "/bin/bash") if os.path.exists(shell)]


needs_root = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv") or not shutil.which("setsid"),
                                reason="setpriv --init-groups needs root, and util-linux's setsid and setpriv")


@pytest.fixture
def wrapper(tmp_path):
    """start(shell, mode) -> (wrapper process, server pid, child pid)."""
    (tmp_path / "server.sh").write_text(SERVER)
    env_file = tmp_path / "svc.env"
    env_file.write_text("VLLM_API_KEY='stand-in-key-0123456789'\n")
    script = tmp_path / "wrapper.sh"
    started = []

    def start(shell, mode):
        script.write_text(render("wrapper.sh.j2", user="root", group="root", service="vllm-tiny", stop_grace=GRACE,
                                 stop_timeout=60, files={"env_file": str(env_file)}, cache_dir=str(tmp_path),
                                 exec_shell="/bin/sh %s %s %s" % (tmp_path / "server.sh", mode, tmp_path)))
        pids = tmp_path / "pids"
        if pids.exists():
            pids.unlink()
        # supervisord starts each program in a process group of its own
        proc = subprocess.Popen([shell, str(script)], start_new_session=True, stderr=subprocess.PIPE)
        started.append(proc)
        deadline = time.time() + 20
        while not pids.exists():
            assert time.time() < deadline and proc.poll() is None, proc.stderr.read()
            time.sleep(0.05)
        server, child = (int(word) for word in pids.read_text().split())
        started.append(server)
        return proc, server, child

    yield start
    # whatever a failed test left: the wrapper's group and the server's
    for item in started:
        pgid = item if isinstance(item, int) else item.pid
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass
        if not isinstance(item, int):
            item.wait()


@needs_root
@pytest.mark.parametrize("shell", shells())
def test_kill_9_of_the_server_ends_its_group(wrapper, shell):
    proc, server, child = wrapper(shell, "plain")
    assert stat_of(server)[1] == server and stat_of(child)[1] == server  # the server leads its own group
    assert stat_of(server)[1] != os.getpgid(proc.pid)  # not supervisord's group of the wrapper
    os.kill(server, signal.SIGKILL)
    assert proc.wait(timeout=30) == 128 + signal.SIGKILL
    assert running_in_group(server) == []
    assert "the server (pid %d) exited with status 137; ending its process group" % server in proc.stderr.read().decode()


@needs_root
@pytest.mark.parametrize("shell", shells())
def test_term_to_the_wrapper_ends_the_group(wrapper, shell):
    proc, server, child = wrapper(shell, "plain")
    # supervisord's stop with stopasgroup: TERM to the wrapper's group
    os.killpg(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    assert running_in_group(server) == [] and stat_of(child) in (None, ("Z", server))


@needs_root
def test_the_server_s_own_exit_ends_the_group_and_gives_its_status(wrapper):
    proc, server, child = wrapper(shells()[0], "exit3")
    assert proc.wait(timeout=30) == 3
    assert running_in_group(server) == []


@needs_root
def test_a_child_that_ignores_term_is_killed_after_the_grace(wrapper):
    proc, server, child = wrapper(shells()[0], "stubborn")
    start = time.time()
    os.kill(server, signal.SIGKILL)
    assert proc.wait(timeout=30) == 128 + signal.SIGKILL
    assert GRACE <= time.time() - start < GRACE + 10
    assert running_in_group(server) == []
    assert "still runs %d s after TERM: KILL" % GRACE in proc.stderr.read().decode()


def test_the_wrapper_keeps_no_secret_and_stays_the_parent():
    text = render("wrapper.sh.j2", user="vllm", group="vllm", service="vllm-tiny", stop_grace=45, stop_timeout=60,
                  files={"env_file": "/etc/llm-stack/vllm/vllm-tiny.env"}, cache_dir="/opt/llm-stack/cache/vllm",
                  exec_shell="/opt/llm-stack/venv/bin/vllm serve --model /m")
    commands = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    assert not any(re.match(r"\s*exec\b", line) for line in commands)
    assert "setsid setpriv --reuid=vllm --regid=vllm --init-groups --no-new-privs -- \\" in commands
    assert "  /opt/llm-stack/venv/bin/vllm serve --model /m &" in commands
    assert "trap stop TERM INT HUP" in commands


def test_supervisord_and_systemd_end_the_whole_tree():
    program = render("program.conf.j2", service="vllm-tiny", served_model_name="tiny", cache_dir="/c", stop_grace=45,
                     stop_timeout=60, supervisor_start_secs=60, supervisor_start_retries=3,
                     files={"wrapper": "/w.sh", "log": "/l.log"}).splitlines()
    for line in ("stopasgroup=true", "killasgroup=true", "stopwaitsecs=60", "stopsignal=TERM", "exitcodes=0",
                 "autorestart=unexpected"):
        assert line in program, line
    unit = [line for line in template("vllm.service.j2").splitlines() if not line.startswith("#")]
    assert [line for line in unit if line.startswith("KillMode=")] == ["KillMode=control-group"]
    assert "TimeoutStopSec={{ vllm_serve_plan.stop_timeout }}" in unit
