# -*- coding: utf-8 -*-
"""nvcc and toolkit discovery, against the real H200 nvcc output and toolkit trees built in tmp dirs."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess

import pytest

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import nvcc

HERE = os.path.dirname(os.path.abspath(__file__))
H200_NVCC = os.path.join(HERE, "..", "..", "..", "fixtures", "gpu", "h200", "nvcc-version.txt")

NVCC_12_1 = """nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2023 NVIDIA Corporation
Built on Mon_Apr__3_17:16:06_PDT_2023
Cuda compilation tools, release 12.1, V12.1.105
Build cuda_12.1.r12.1/compiler.32688072_0
"""


def version_json(sdk, nvcc_version=None):
    data = {"cuda": {"name": "CUDA SDK", "version": sdk},
            "cuda_cudart": {"name": "CUDA Runtime (cudart)", "version": sdk.rsplit(".", 1)[0] + ".77"}}
    if nvcc_version:
        data["cuda_nvcc"] = {"name": "CUDA NVCC", "version": nvcc_version}
    return json.dumps(data, indent=3)


def make_toolkit(path, sdk=None, nvcc_version=None, nvcc_output=None, version_txt=None):
    os.makedirs(path)
    if sdk:
        with open(os.path.join(path, "version.json"), "w") as handle:
            handle.write(version_json(sdk, nvcc_version))
    if version_txt:
        with open(os.path.join(path, "version.txt"), "w") as handle:
            handle.write(version_txt)
    if nvcc_output:
        os.makedirs(os.path.join(path, "bin"))
        out = os.path.join(path, "nvcc-output.txt")
        with open(out, "w") as handle:
            handle.write(nvcc_output)
        script = os.path.join(path, "bin", "nvcc")
        with open(script, "w") as handle:
            handle.write("#!/bin/sh\n# test-only stand-in: prints a recorded nvcc --version\ncat '%s'\n" % out)
        os.chmod(script, 0o755)


def runner():
    calls = []

    def run(args):
        calls.append(args)
        proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
        return proc.returncode, proc.stdout, proc.stderr

    return run, calls


def h200_nvcc_text():
    with open(H200_NVCC) as handle:
        return handle.read()


def test_parse_real_h200_nvcc():
    assert nvcc.parse_nvcc_version(h200_nvcc_text()) == ("13.0", "13.0.88")


def test_parse_nvcc_12_1_and_garbage():
    assert nvcc.parse_nvcc_version(NVCC_12_1) == ("12.1", "12.1.105")
    assert nvcc.parse_nvcc_version("bash: nvcc: command not found") == (None, None)
    assert nvcc.parse_nvcc_version(None) == (None, None)


@pytest.mark.parametrize("raw, expected", [
    ("12.8.1", "12.8.1"),
    ("13.0.2", "13.0.2"),
    ("12.6.20241114", "12.6"),
    ("11.8.20220929", "11.8"),
    ("12.1", "12.1"),
])
def test_normalize_sdk_version(raw, expected):
    assert nvcc.normalize_sdk_version(raw) == expected


@pytest.mark.parametrize("raw", ["", "12", "twelve.8", "12.x.1"])
def test_normalize_sdk_version_rejects(raw):
    with pytest.raises(ValueError):
        nvcc.normalize_sdk_version(raw)


def test_read_version_json_layout():
    assert nvcc.read_version_json(version_json("12.8.1", "12.8.93")) == ("12.8.1", "12.8.93")
    assert nvcc.read_version_json(version_json("12.6.20241114")) == ("12.6", None)
    with pytest.raises(ValueError):
        nvcc.read_version_json('{"cuda_nvcc": {"version": "12.8.93"}}')
    with pytest.raises(ValueError):
        nvcc.read_version_json("not json")


def test_read_version_txt():
    assert nvcc.read_version_txt("CUDA Version 11.0.228\n") == "11.0.228"
    with pytest.raises(ValueError):
        nvcc.read_version_txt("nothing here")


@pytest.fixture
def tree(tmp_path):
    root = str(tmp_path / "usr-local")
    os.makedirs(root)
    make_toolkit(os.path.join(root, "cuda-13.0"), sdk="13.0.2", nvcc_version="13.0.88", nvcc_output=h200_nvcc_text())
    os.symlink("cuda-13.0", os.path.join(root, "cuda-13"))
    os.symlink("cuda-13.0", os.path.join(root, "cuda"))
    make_toolkit(os.path.join(root, "cuda-12.6"), sdk="12.6.20241114", nvcc_version="12.6.85")
    make_toolkit(os.path.join(root, "cuda-12.1"), nvcc_output=NVCC_12_1)
    make_toolkit(os.path.join(root, "cuda-11.0"), version_txt="CUDA Version 11.0.228\n")
    os.makedirs(os.path.join(root, "cuda-junk"))
    extra = str(tmp_path / "opt" / "cuda-12.8")
    make_toolkit(extra, sdk="12.8.1", nvcc_version="12.8.93")
    return root, extra, str(tmp_path)


def test_find_toolkits(tree):
    root, extra, dummy = tree
    run, calls = runner()
    toolkits, warnings = nvcc.find_toolkits(root, [extra], run)
    assert warnings == []
    assert [(t["path"], t["version"], t["source"]) for t in toolkits] == [
        (os.path.join(root, "cuda-11.0"), "11.0.228", "version.txt"),
        (os.path.join(root, "cuda-12.1"), "12.1", "nvcc"),
        (os.path.join(root, "cuda-12.6"), "12.6", "version.json"),
        (extra, "12.8.1", "version.json"),
        (os.path.join(root, "cuda-13.0"), "13.0.2", "version.json"),
    ]
    by_path = dict((t["path"], t) for t in toolkits)
    assert by_path[os.path.join(root, "cuda-13.0")]["nvcc"] == os.path.join(root, "cuda-13.0", "bin", "nvcc")
    assert by_path[os.path.join(root, "cuda-13.0")]["release"] == "13.0"
    assert by_path[os.path.join(root, "cuda-12.1")]["nvcc_build"] == "12.1.105"
    assert by_path[os.path.join(root, "cuda-12.6")]["nvcc"] is None
    # version.json already names the nvcc build: nvcc is run only for cuda-12.1
    assert calls == [[os.path.join(root, "cuda-12.1", "bin", "nvcc"), "--version"]]


def test_prefix_problems_are_warnings(tree):
    root, dummy, tmp = tree
    missing = os.path.join(tmp, "nowhere")
    not_toolkit = os.path.join(root, "cuda-junk")
    toolkits, warnings = nvcc.find_toolkits(root, [missing, not_toolkit], runner()[0])
    assert len(toolkits) == 4
    assert sorted(warnings) == sorted(["prefix %s is not a directory; skipped" % missing,
                                       "prefix %s has no version.json, version.txt or bin/nvcc; not a CUDA toolkit"
                                       % not_toolkit])


def test_home_link(tree, tmp_path):
    root = tree[0]
    assert nvcc.home_link(root) == os.path.realpath(os.path.join(root, "cuda-13.0"))
    assert nvcc.home_link(str(tmp_path / "empty")) is None


def test_read_nvcc_uses_root_cuda_when_not_on_path(tree):
    root = tree[0]
    run, calls = runner()
    facts, warnings = nvcc.read_nvcc(run, None, None, root, [])
    assert facts["nvcc_path"] == os.path.join(root, "cuda", "bin", "nvcc")
    assert (facts["nvcc_version"], facts["nvcc_build"], facts["nvcc_error"]) == ("13.0", "13.0.88", None)
    assert facts["cuda_home_link"] == os.path.realpath(os.path.join(root, "cuda-13.0"))
    assert [t["version"] for t in facts["cuda_toolkits"]] == ["11.0.228", "12.1", "12.6", "13.0.2"]


def test_read_nvcc_prefers_explicit_then_path(tree):
    root = tree[0]
    nvcc_121 = os.path.join(root, "cuda-12.1", "bin", "nvcc")
    facts, dummy = nvcc.read_nvcc(runner()[0], nvcc_121, "/elsewhere/nvcc", root, [])
    assert facts["nvcc_path"] == nvcc_121 and facts["nvcc_version"] == "12.1"
    facts, dummy = nvcc.read_nvcc(runner()[0], None, nvcc_121, root, [])
    assert facts["nvcc_path"] == nvcc_121


def test_read_nvcc_without_any_toolkit(tmp_path):
    run, calls = runner()
    facts, warnings = nvcc.read_nvcc(run, None, None, str(tmp_path), [])
    assert facts == {"nvcc_path": None, "nvcc_version": None, "nvcc_build": None, "nvcc_error": None,
                     "cuda_toolkits": [], "cuda_home_link": None, "cuda_home_link_dangling": None}
    assert calls == [] and warnings == []


def test_read_nvcc_failure_is_reported(tmp_path):
    broken = str(tmp_path / "nvcc")
    with open(broken, "w") as handle:
        handle.write("#!/bin/sh\necho 'error while loading shared libraries: libnvrtc.so' >&2\nexit 127\n")
    os.chmod(broken, 0o755)
    facts, dummy = nvcc.read_nvcc(runner()[0], broken, None, str(tmp_path), [])
    assert facts["nvcc_version"] is None
    assert facts["nvcc_error"] == "%s --version exited with 127: error while loading shared libraries: libnvrtc.so" % broken
