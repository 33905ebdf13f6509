# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller-side test fixtures: each build owns its directory, under a lock.

A first `make site` once failed on a machine with no .cache/: its loop of builds set one model fixture's directory
for every build, so the vLLM build rebuilt that venv while the model build was filling it. tests/ci/fixtures.sh now
gives each build its directory and its environment on its own command line, and every builder holds DIR.lock
(tests/ci/fixture_lock.sh) for its check and its build. These tests run the lock and a real builder (offline, on a
temporary directory) two at a time, and read the fixture list the callers share.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fcntl
import os
import subprocess
import sys
import time
import zipfile

import pytest
import yaml

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
LOCK_HELPER = os.path.join(REPO, "tests", "ci", "fixture_lock.sh")
BUILDERS = ("tests/runfile/build.sh", "tests/wheelhouse/build", "tests/wheelhouse/download", "tests/vllm/build",
            "tests/model/testbed.sh", "tests/router/build", "tests/monitoring/build")
# Every caller of tests/ci/fixtures.sh, and each task file where a scenario builds a fixture.
CALLERS = ("tests/testfleet/prepare.yml", "tests/awx/prepare.yml", "molecule/fleet_cache/prepare.yml")
PLAYBOOKS_THAT_BUILD = CALLERS + ("molecule/qwen_model_fetch/prepare.yml", "molecule/vllm/prepare.yml",
                                  "molecule/torch_flash_attn/prepare.yml", "molecule/cuda_toolkit/prepare.yml")


def hold(path):
    """Take DIR.lock the way flock(1) does, from this process."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    handle = open(path + ".lock", "w")
    fcntl.flock(handle, fcntl.LOCK_EX)
    return handle


def lock_then(directory, command, env=None):
    script = 'source "$1"; fixture_lock "$2"; %s' % command
    return subprocess.Popen(["bash", "-c", script, "lock", LOCK_HELPER, directory], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, universal_newlines=True, env=dict(os.environ, **(env or {})))


def test_a_second_caller_waits_for_the_lock_then_runs(tmp_path):
    directory = str(tmp_path / "fixture")
    holder = hold(directory)
    proc = lock_then(directory, 'echo "ran"')
    time.sleep(0.5)
    assert proc.poll() is None, "ran while the lock was held: %r" % (proc.communicate(),)
    holder.close()
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert out == "ran\n"
    assert "waiting for the build of %s that holds %s.lock" % (directory, directory) in err
    assert "got %s.lock after" % directory in err


def test_the_lock_lies_next_to_the_directory_and_outlives_its_replacement(tmp_path):
    directory = str(tmp_path / "fixture")
    # The holder replaces the directory as a builder does; the lock is not in it.
    first = lock_then(directory, 'echo locked; mkdir -p "$2.new"; sleep 0.5; rm -rf "$2"; mv "$2.new" "$2"; echo first')
    assert first.stdout.readline() == "locked\n"
    second = lock_then(directory, 'test -d "$2" && echo second')
    out1, err1 = first.communicate(timeout=10)
    out2, err2 = second.communicate(timeout=10)
    assert (first.returncode, out1) == (0, "first\n"), err1
    assert (second.returncode, out2) == (0, "second\n"), err2
    assert "waiting for the build of" in err2
    assert os.path.isfile(directory + ".lock")
    assert not os.path.exists(os.path.join(directory, ".lock"))


def test_a_caller_gives_up_after_fixture_lock_wait(tmp_path):
    directory = str(tmp_path / "fixture")
    holder = hold(directory)
    try:
        proc = lock_then(directory, 'echo "ran"', env={"FIXTURE_LOCK_WAIT": "1"})
        out, err = proc.communicate(timeout=10)
    finally:
        holder.close()
    assert proc.returncode == 1
    assert out == ""
    assert "another build of %s still holds %s.lock after 1 s" % (directory, directory) in err
    assert "FIXTURE_LOCK_WAIT" in err


def tiny_wheel(folder):
    """A valid pure-Python wheel, so that pip resolves it from --find-links without a network."""
    os.makedirs(folder)
    path = os.path.join(folder, "fixturelocktest-1.0-py3-none-any.whl")
    dist = "fixturelocktest-1.0.dist-info"
    files = {
        "fixturelocktest.py": "",
        dist + "/METADATA": "Metadata-Version: 2.1\nName: fixturelocktest\nVersion: 1.0\n",
        dist + "/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[dist + "/RECORD"] = "".join("%s,,\n" % name for name in sorted(files)) + dist + "/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in sorted(files.items()):
            archive.writestr(name, text)
    return folder


def test_two_builds_of_one_directory_at_once_build_it_once(tmp_path):
    """tests/wheelhouse/download, two copies on one directory, offline: one builds, the other finds it done."""
    links = tiny_wheel(str(tmp_path / "links"))
    dest = str(tmp_path / "cache" / "wheels")
    env = dict(os.environ, PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", PIP_FIND_LINKS=links,
               PIP_DISABLE_PIP_VERSION_CHECK="1", LLM_STACK_TEST_PYTHON=sys.executable)
    holder = hold(dest)
    procs = [subprocess.Popen([os.path.join(REPO, "tests", "wheelhouse", "download"), dest, "fixturelocktest==1.0"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env)
             for dummy in range(2)]
    time.sleep(0.5)
    assert [p.poll() for p in procs] == [None, None], "a build ran while the lock was held"
    holder.close()
    results = [p.communicate(timeout=60) + (p.returncode,) for p in procs]
    assert [rc for _out, _err, rc in results] == [0, 0], results
    outs = sorted(out.split(":")[0] for out, _err, _rc in results)
    assert outs == ["wheels downloaded", "wheels up to date"], results
    assert sorted(os.listdir(dest)) == [".complete", "fixturelocktest-1.0-py3-none-any.whl"]
    assert sorted(os.listdir(os.path.dirname(dest))) == ["wheels", "wheels.lock"]
    # And a third call, alone, is a no-op.
    again = subprocess.run([os.path.join(REPO, "tests", "wheelhouse", "download"), dest, "fixturelocktest==1.0"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env,
                           check=True)
    assert again.stdout.startswith("wheels up to date: %s" % dest)
    assert again.stderr == ""


SHARED_LOCKS = {"tests/model/testbed.sh": ('fixture_lock "${venvs}"',)}


@pytest.mark.parametrize("builder", BUILDERS)
def test_every_builder_locks_its_directory_before_its_check(builder):
    with open(os.path.join(REPO, builder)) as handle:
        lines = handle.read().splitlines()
    code = [n for n, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#")]
    locks = [n for n in code if lines[n].lstrip().startswith("fixture_lock ")]
    # A lock of a directory several fixtures share (the model fixtures' venvs) is taken after the builder's own,
    # always in that order (no two builders wait on each other), in a subshell that releases it when done.
    shared = [n for n in locks if lines[n].strip() in SHARED_LOCKS.get(builder, ())]
    own = [n for n in locks if n not in shared]
    assert len(own) == 1, "%s must call fixture_lock on its directory once" % builder
    assert all(n > own[0] and lines[n - 1].strip() == "(" for n in shared), shared
    locks = own
    sources = [n for n in code if "tests/ci/fixture_lock.sh" in lines[n] and lines[n].lstrip().startswith((".", "source"))]
    assert sources and sources[0] < locks[0], "%s must source tests/ci/fixture_lock.sh before it locks" % builder
    # The check of the stamp (or of the venv) comes after the lock.
    checks = [n for n in code if "up to date" in lines[n].lower() or "readlink" in lines[n]]
    assert checks and min(checks) > locks[0], "%s checks whether it is up to date before it holds the lock" % builder


@pytest.fixture(scope="module")
def fixture_list():
    env = dict(os.environ, CI_VENV=sys.prefix, QWEN_MODEL_FETCH_FIXTURE="/elsewhere/ambient",
               LLM_STACK_TEST_VLLM="/elsewhere/vllm")
    out = subprocess.run([os.path.join(REPO, "tests", "ci", "fixtures.sh"), "--list"], stdout=subprocess.PIPE,
                         universal_newlines=True, env=env, check=True).stdout
    rows = [line.split("\t") for line in out.splitlines()]
    return {row[0]: (row[1], row[2:]) for row in rows}


def test_each_build_owns_its_directory_and_gets_its_own_environment(fixture_list):
    cache = os.path.join(REPO, ".cache")
    dirs = [directory for directory, _argv in fixture_list.values()]
    assert len(fixture_list) >= 8
    assert len(set(dirs)) == len(dirs), "two fixtures share a directory"
    for name, (directory, argv) in fixture_list.items():
        assert directory.startswith(cache + os.sep), name
        assert "/elsewhere/" not in " ".join(argv), "%s takes its directory from the caller's environment" % name
        builder = [word for word in argv if word.startswith("tests/")][0]
        assert builder in BUILDERS, name
        if builder == "tests/model/testbed.sh":
            # testbed.sh reads its directory from the environment: this build's own, set for it alone.
            assert argv[:2] == ["env", "QWEN_MODEL_FETCH_FIXTURE=%s" % directory], name
        else:
            assert argv[argv.index(builder) + 1] == directory, name
    vllm = fixture_list["vllm"][1]
    model = vllm[vllm.index("tests/vllm/build") + 2]
    testbeds = [d for d, argv in fixture_list.values() if "tests/model/testbed.sh" in argv]
    assert model in testbeds, "tests/vllm/build must be given the model fixture whose venv it uses"


def fixture_tasks(path):
    def walk(tasks):
        for task in tasks or []:
            yield task
            for key in ("block", "rescue", "always"):
                yield from walk(task.get(key))
    with open(os.path.join(REPO, path)) as handle:
        plays = yaml.safe_load(handle)
    return [task for play in plays for task in walk(play.get("tasks"))]


@pytest.mark.parametrize("path", CALLERS)
def test_the_callers_build_known_fixtures_through_the_one_script(path, fixture_list):
    calls = [t["ansible.builtin.command"]["argv"] for t in fixture_tasks(path)
             if "tests/ci/fixtures.sh" in str((t.get("ansible.builtin.command") or {}).get("argv", [""])[0])]
    assert len(calls) == 1, path
    names = calls[0][1:]
    assert names and set(names) <= set(fixture_list), names


@pytest.mark.parametrize("path", PLAYBOOKS_THAT_BUILD)
def test_no_loop_of_builds_shares_an_environment(path):
    for task in fixture_tasks(path):
        if "QWEN_MODEL_FETCH_FIXTURE" in (task.get("environment") or {}):
            assert not any(key == "loop" or key.startswith("with_") for key in task), \
                "%s: %s sets one fixture directory for a loop of builds" % (path, task.get("name"))
