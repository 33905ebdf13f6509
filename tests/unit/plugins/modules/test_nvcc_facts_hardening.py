# -*- coding: utf-8 -*-
"""nvcc_facts with a hung nvcc, a dangling /usr/local/cuda link and a bad timeout, through AnsibleModule."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import time

import pytest

from ansible_collections.gpufleet.llm_stack.plugins.modules import nvcc_facts


@pytest.fixture
def root(tmp_path, monkeypatch):
    base = tmp_path / "usr-local"
    base.mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    return str(base)


def test_hung_nvcc_is_an_nvcc_error_not_a_hang(run_module, root, tmp_path):
    # regression: nvcc_facts waited forever on an nvcc that hangs
    hung = tmp_path / "bin" / "nvcc"
    hung.parent.mkdir()
    hung.write_text("#!/bin/sh\n# test-only stand-in for a hung nvcc\nexec /bin/sleep 60\n")
    hung.chmod(0o755)
    started = time.time()
    kind, result, dummy = run_module(nvcc_facts.main, {"toolkit_root": root, "nvcc_path": str(hung), "timeout": 1})
    assert time.time() - started < 10
    assert kind == "exit" and result["changed"] is False
    assert result["ansible_facts"]["nvcc_error"].startswith("%s did not answer within 1 seconds" % hung)


def test_dangling_cuda_link_gives_null_and_the_target(run_module, root):
    # regression: a dangling link reported its missing target as cuda_home_link, where the docs say null
    os.symlink("cuda-12.9", os.path.join(root, "cuda"))
    kind, result, warnings = run_module(nvcc_facts.main, {"toolkit_root": root})
    facts = result["ansible_facts"]
    assert kind == "exit"
    assert facts["cuda_home_link"] is None
    assert facts["cuda_home_link_dangling"] == os.path.join(root, "cuda-12.9")
    assert len(warnings) == 1 and "dangling link" in warnings[0]


@pytest.mark.parametrize("timeout", [0, -1])
def test_timeout_must_be_positive(run_module, root, timeout):
    kind, result, dummy = run_module(nvcc_facts.main, {"toolkit_root": root, "timeout": timeout})
    assert kind == "fail" and result["msg"].startswith("timeout=%d: give the seconds" % timeout)


def test_default_timeout_is_documented_and_used(run_module, root, tmp_path, monkeypatch):
    nvcc = tmp_path / "bin" / "nvcc"
    nvcc.parent.mkdir()
    nvcc.write_text("#!/bin/sh\n# test-only stand-in\necho 'Cuda compilation tools, release 12.8, V12.8.93'\n")
    nvcc.chmod(0o755)
    seen = []
    real_run = nvcc_facts.run
    monkeypatch.setattr(nvcc_facts, "run", lambda argv, timeout, env: seen.append(timeout) or real_run(argv, timeout, env=env))
    facts = run_module(nvcc_facts.main, {"toolkit_root": root, "nvcc_path": str(nvcc)})[1]["ansible_facts"]
    assert seen == [20] and facts["nvcc_version"] == "12.8"
    assert "default: 20" in nvcc_facts.DOCUMENTATION


def test_non_utf8_nvcc_is_not_ansibles_utf8_error(run_module, root, tmp_path):
    nvcc = tmp_path / "bin" / "nvcc"
    nvcc.parent.mkdir()
    nvcc.write_text("#!/bin/sh\n# test-only stand-in\nprintf 'Cuda compilation tools, release 12.8, V12.8.93 \\377\\n'\n")
    nvcc.chmod(0o755)
    kind, result, warnings = run_module(nvcc_facts.main, {"toolkit_root": root, "nvcc_path": str(nvcc)})
    assert kind == "exit" and result["ansible_facts"]["nvcc_build"] == "12.8.93"
    assert warnings == ["%s --version printed bytes that are not UTF-8 (shown as U+FFFD)" % nvcc]
    json.dumps(result, ensure_ascii=False).encode("utf-8")
