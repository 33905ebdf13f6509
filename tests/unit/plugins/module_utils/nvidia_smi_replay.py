# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The captured nvidia-smi outputs (tests/fixtures/gpu) and a runner that replays them, for the nvidia tests."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "..", "fixtures")
GPU = os.path.join(FIXTURES, "gpu")
FAKE = os.path.join(FIXTURES, "bin", "nvidia-smi")


def read(cls, name):
    """A captured output of GPU class ``cls`` (a directory of tests/fixtures/gpu)."""
    with open(os.path.join(GPU, cls, name)) as handle:
        return handle.read()


def fake_runner(cls):
    """run_command stand-in that executes the test-only nvidia-smi replay and logs the calls."""
    calls = []

    def run(args):
        calls.append(list(args[1:]))
        env = dict(os.environ, NVIDIA_SMI_FAKE_CLASS=cls)
        proc = subprocess.run([FAKE] + list(args[1:]), env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, check=False)
        return proc.returncode, proc.stdout, proc.stderr

    return run, calls
