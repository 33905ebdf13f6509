# -*- coding: utf-8 -*-
"""The test-only nvidia-smi stand-in replays recordings byte for byte, with nvidia-smi's exit codes."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import subprocess
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures")
FAKE = os.path.join(FIXTURES, "bin", "nvidia-smi")
QUERY = ["--query-gpu=index,name,uuid,compute_cap,driver_version,memory.total,pci.bus_id", "--format=csv,noheader,nounits"]
CLASSES = sorted(d for d in os.listdir(os.path.join(FIXTURES, "gpu")) if os.path.isdir(os.path.join(FIXTURES, "gpu", d)))


def smi(args, cls="h200", root=None, timeout=None):
    env = dict(os.environ)
    env.pop("NVIDIA_SMI_FAKE_CLASS", None)
    env.pop("NVIDIA_SMI_FAKE_ROOT", None)
    if cls:
        env["NVIDIA_SMI_FAKE_CLASS"] = cls
    if root:
        env["NVIDIA_SMI_FAKE_ROOT"] = root
    proc = subprocess.run([FAKE] + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False,
                          timeout=timeout or 60)
    return proc.returncode, proc.stdout, proc.stderr


def recording(cls, name):
    with open(os.path.join(FIXTURES, "gpu", cls, name), "rb") as handle:
        return handle.read()


def test_is_executable_and_labelled_test_only():
    assert os.access(FAKE, os.X_OK)
    with open(FAKE) as handle:
        assert "TEST-ONLY" in handle.read()


@pytest.mark.parametrize("args, name", [
    ([], "nvidia-smi.txt"),
    (["-L"], "smi-L.txt"),
    (["-q", "-x"], "smi-q.xml"),
    (QUERY, "query.csv"),
    (["--query-gpu=index,name,compute_cap,driver_version,memory.total", "--format=csv"], "query_header.csv"),
])
def test_replays_real_h200_byte_for_byte(args, name):
    assert smi(args) == (0, recording("h200", name), b"")


@pytest.mark.parametrize("cls", [c for c in CLASSES if c not in ("driver-fail", "no-devices", "t4-470", "wedged")])
def test_every_gpu_class_answers_the_gpu_facts_calls(cls):
    assert smi(QUERY, cls)[0] == 0
    assert smi([], cls)[0] == 0
    assert smi(["-L"], cls)[0] == 0
    assert smi(["-q", "-x"], cls)[0] == 0


def test_old_driver_rejects_compute_cap_like_nvidia_smi():
    assert smi(QUERY, "t4-470") == (2, b'Field "compute_cap" is not a valid field to query.\n\n', b"")
    rc, out, dummy = smi(["--query-gpu=index,name,uuid,driver_version,memory.total,pci.bus_id",
                          "--format=csv,noheader,nounits"], "t4-470")
    assert rc == 0 and out == recording("t4-470", "query-nocap.csv")


@pytest.mark.parametrize("cls, rc", [("driver-fail", 9), ("no-devices", 6)])
def test_failing_classes_fail_every_call(cls, rc):
    for args in ([], QUERY, ["-L"], ["-q", "-x"]):
        assert smi(args, cls) == (rc, recording(cls, "fail.txt"), b"")


@pytest.mark.parametrize("args", [["--foo"], ["-q"], QUERY[:1], ["--query-gpu=name", "--format=csv"], QUERY + ["-i", "0"]])
def test_unknown_arguments_are_refused(args):
    rc, out, err = smi(args)
    assert rc == 2 and out == b"" and b"test stand-in" in err


def test_without_class_it_refuses(tmp_path):
    # no env and (on a dev machine) no /etc/nvidia-smi-fake/class
    if os.path.exists("/etc/nvidia-smi-fake/class"):
        pytest.skip("this machine has an installed stand-in class")
    rc, out, err = smi([], cls=None)
    assert rc == 2 and b"no GPU class" in err


def test_root_override(tmp_path):
    target = tmp_path / "custom"
    target.mkdir()
    (target / "nvidia-smi.txt").write_bytes(b"recorded\n")
    assert smi([], "custom", str(tmp_path)) == (0, b"recorded\n", b"")
    rc, dummy, err = smi([], "missing-class", str(tmp_path))
    assert rc == 2 and b"no recordings" in err


@pytest.mark.parametrize("cls", ["h200", "h100-590", "b200-610", "header-unknown"])
def test_version_is_replayed(cls):
    assert smi(["--version"], cls) == (0, recording(cls, "version.txt"), b"")


def test_version_without_recording_is_refused():
    rc, out, err = smi(["--version"], "l40s")
    assert rc == 2 and out == b"" and b"no recording version.txt" in err


def test_wedged_class_hangs(tmp_path):
    cls = tmp_path / "briefly-wedged"
    cls.mkdir()
    (cls / "hang").write_text("2\n")
    started = time.time()
    assert smi([], "briefly-wedged", str(tmp_path)) == (0, b"", b"")
    assert time.time() - started >= 1.5
    with pytest.raises(subprocess.TimeoutExpired):
        smi(["-L"], "wedged", timeout=1)


def test_wedged_class_still_refuses_unknown_arguments():
    rc, dummy, err = smi(["--foo"], "wedged", timeout=10)
    assert rc == 2 and b"test stand-in" in err
