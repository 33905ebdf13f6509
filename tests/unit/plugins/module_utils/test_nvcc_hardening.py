# -*- coding: utf-8 -*-
"""nvcc discovery against hostile trees and answers: dangling links, hung nvcc, odd bytes, absurd versions."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import nvcc
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.proc import run

HERE = os.path.dirname(os.path.abspath(__file__))
H200_NVCC = os.path.join(HERE, "..", "..", "..", "fixtures", "gpu", "h200", "nvcc-version.txt")
SETTINGS = settings(max_examples=200, deadline=None)


def runner(timeout=10):
    calls = []

    def call(argv):
        calls.append(argv)
        return run(argv, timeout=timeout)

    return call, calls


def script(path, body):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write("#!/bin/sh\n# test-only stand-in for nvcc\n" + body)
    os.chmod(path, 0o755)
    return path


def version_json(path, sdk, nvcc_build=None):
    os.makedirs(path, exist_ok=True)
    data = {"cuda": {"name": "CUDA SDK", "version": sdk}}
    if nvcc_build:
        data["cuda_nvcc"] = {"name": "CUDA NVCC", "version": nvcc_build}
    with open(os.path.join(path, "version.json"), "w") as handle:
        json.dump(data, handle)


# --- the /usr/local/cuda link ---------------------------------------------------------

def test_dangling_home_link_is_null_and_its_target_is_reported(tmp_path):
    # regression: a dangling link reported its missing target as cuda_home_link
    root = str(tmp_path)
    os.symlink("cuda-12.9", os.path.join(root, "cuda"))
    facts, warnings = nvcc.read_nvcc(runner()[0], None, None, root, [])
    assert facts["cuda_home_link"] is None
    assert facts["cuda_home_link_dangling"] == os.path.join(root, "cuda-12.9")
    assert warnings == ["%s is a dangling link to %s (cuda_home_link is null): the toolkit it named is gone."
                        " Fix: point it at an installed toolkit or remove it"
                        % (os.path.join(root, "cuda"), os.path.join(root, "cuda-12.9"))]


def test_dangling_absolute_link_and_link_loop(tmp_path):
    root = str(tmp_path)
    os.symlink("/nonexistent/cuda-13.0", os.path.join(root, "cuda"))
    assert nvcc.home_link(root) is None
    assert nvcc.home_link_dangling(root) == "/nonexistent/cuda-13.0"
    os.remove(os.path.join(root, "cuda"))
    os.symlink("cuda", os.path.join(root, "cuda"))  # a link to itself
    assert nvcc.home_link(root) is None
    assert nvcc.home_link_dangling(root) == os.path.join(root, "cuda")


def test_live_home_link_has_no_dangling_target(tmp_path):
    root = str(tmp_path)
    version_json(os.path.join(root, "cuda-13.0"), "13.0.2", "13.0.88")
    os.symlink("cuda-13.0", os.path.join(root, "cuda"))
    facts, warnings = nvcc.read_nvcc(runner()[0], None, None, root, [])
    assert facts["cuda_home_link"] == os.path.realpath(os.path.join(root, "cuda-13.0"))
    assert facts["cuda_home_link_dangling"] is None and warnings == []


def test_home_that_is_a_directory(tmp_path):
    root = str(tmp_path)
    os.makedirs(os.path.join(root, "cuda"))
    assert nvcc.home_link(root) == os.path.realpath(os.path.join(root, "cuda"))
    assert nvcc.home_link_dangling(root) is None


# --- a hung nvcc ---------------------------------------------------------------------

def test_hung_nvcc_is_an_nvcc_error_and_is_stopped(tmp_path):
    # regression: nvcc_facts waited forever on an nvcc that hangs
    pidfile = tmp_path / "pid"
    hung = script(str(tmp_path / "bin" / "nvcc"), "echo $$ > %s\nexec sleep 60\n" % pidfile)
    started = time.time()
    facts, warnings = nvcc.read_nvcc(runner(timeout=1)[0], hung, None, str(tmp_path), [])
    assert time.time() - started < 10
    assert facts["nvcc_error"].startswith("%s did not answer within 1 seconds" % hung)
    assert facts["nvcc_version"] is None
    pid = int(pidfile.read_text())
    with pytest.raises(OSError):
        for dummy in range(50):
            os.kill(pid, 0)
            time.sleep(0.1)


def test_hung_toolkit_nvcc_is_a_warning(tmp_path):
    root = str(tmp_path)
    script(os.path.join(root, "cuda-12.1", "bin", "nvcc"), "exec sleep 60\n")
    toolkits, warnings = nvcc.find_toolkits(root, [], runner(timeout=1)[0])
    assert toolkits == []
    assert len(warnings) == 1 and "did not answer within 1 seconds" in warnings[0]


def test_nvcc_failure_text_is_bounded(tmp_path):
    noisy = script(str(tmp_path / "nvcc"), "yes 'error while loading shared libraries' | head -n 2000 >&2\nexit 127\n")
    facts = nvcc.read_nvcc(runner()[0], noisy, None, str(tmp_path), [])[0]
    assert facts["nvcc_error"].startswith("%s --version exited with 127: error while loading" % noisy)
    assert len(facts["nvcc_error"]) < 800


# --- odd bytes and absurd values ------------------------------------------------------------

def test_non_utf8_nvcc_output_still_parses_and_is_named(tmp_path):
    with open(H200_NVCC, "rb") as handle:
        banner = handle.read().replace(b"NVIDIA Corporation", b"NVIDIA Corpora\xff\xfetion")
    out = tmp_path / "banner"
    out.write_bytes(banner)
    odd = script(str(tmp_path / "nvcc"), "cat '%s'\n" % out)
    facts, warnings = nvcc.read_nvcc(runner()[0], odd, None, str(tmp_path), [])
    assert (facts["nvcc_version"], facts["nvcc_build"], facts["nvcc_error"]) == ("13.0", "13.0.88", None)
    assert warnings == ["%s --version printed bytes that are not UTF-8 (shown as U+FFFD)" % odd]
    json.dumps(facts, ensure_ascii=False).encode("utf-8")


def test_non_utf8_garbage_is_a_clean_nvcc_error(tmp_path):
    odd = script(str(tmp_path / "nvcc"), "printf '\\377\\376 nothing\\n'\n")
    facts = nvcc.read_nvcc(runner()[0], odd, None, str(tmp_path), [])[0]
    assert facts["nvcc_error"] == ("%s --version printed no 'release X.Y, VX.Y.Z' line (it printed bytes that"
                                   " are not UTF-8 (shown as U+FFFD))" % odd)


@pytest.mark.parametrize("sdk", ["1" * 5000 + ".0", "12." + "9" * 5000, "\uff11\uff12.8", "12.8.1.2.3", "", "v12.8"])
def test_absurd_sdk_versions_are_clean_errors(sdk):
    with pytest.raises(ValueError):
        nvcc.normalize_sdk_version(sdk)


def test_absurd_version_json_skips_the_dir_with_a_warning(tmp_path):
    root = str(tmp_path)
    version_json(os.path.join(root, "cuda-12.8"), "12." + "9" * 5000)
    toolkits, warnings = nvcc.find_toolkits(root, [os.path.join(root, "cuda-12.8")], runner()[0])
    assert toolkits == []
    assert any("not a CUDA version" in warning for warning in warnings)


def test_deeply_nested_version_json_is_a_clean_error(tmp_path):
    root = str(tmp_path)
    os.makedirs(os.path.join(root, "cuda-12.8"))
    with open(os.path.join(root, "cuda-12.8", "version.json"), "w") as handle:
        handle.write("[" * 100000 + "]" * 100000)
    toolkits, warnings = nvcc.find_toolkits(root, [], runner()[0])
    assert toolkits == [] and "nested too deeply" in warnings[0]


def test_huge_integer_in_version_json(tmp_path):
    root = str(tmp_path)
    os.makedirs(os.path.join(root, "cuda-12.8"))
    with open(os.path.join(root, "cuda-12.8", "version.json"), "w") as handle:
        handle.write('{"cuda": {"version": %s}}' % ("7" * 6000))
    toolkits, dummy = nvcc.find_toolkits(root, [], runner()[0])
    assert toolkits == []


def test_non_utf8_version_txt(tmp_path):
    root = str(tmp_path)
    os.makedirs(os.path.join(root, "cuda-11.0"))
    with open(os.path.join(root, "cuda-11.0", "version.txt"), "wb") as handle:
        handle.write(b"\xff\xfeCUDA Version 11.0.228\n")
    toolkits, warnings = nvcc.find_toolkits(root, [], runner()[0])
    assert [t["version"] for t in toolkits] == ["11.0.228"] and warnings == []


def test_release_of_thousands_of_digits_is_not_a_version():
    assert nvcc.parse_nvcc_version("Cuda compilation tools, release %s.0, V1.0.1" % ("1" * 5000)) == (None, None)


# --- property tests ---------------------------------------------------------------------

BANNER = ("nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\n"
          "Built on Wed_Aug_20_01:58:59_PM_PDT_2025\nCuda compilation tools, release {release}, V{build}\n"
          "Build cuda_{release}.r{release}/compiler.36424714_0\n")


@SETTINGS
@given(st.integers(0, 999), st.integers(0, 999), st.integers(0, 999999))
def test_nvcc_banner_round_trips(major, minor, patch):
    release, build = "%d.%d" % (major, minor), "%d.%d.%d" % (major, minor, patch)
    assert nvcc.parse_nvcc_version(BANNER.format(release=release, build=build)) == (release, build)


def test_real_banner_matches_the_template():
    with open(H200_NVCC) as handle:
        assert handle.read() == BANNER.format(release="13.0", build="13.0.88")


@SETTINGS
@given(st.text(max_size=300))
def test_nvcc_banner_any_text_gives_a_version_or_none(text):
    release, build = nvcc.parse_nvcc_version(text)
    assert (release is None) == (build is None)
    if release is not None:
        assert re.match(r"^\d{1,3}\.\d{1,3}$", release) and build.startswith(release + ".")


@SETTINGS
@given(st.text(max_size=60))
def test_sdk_version_any_text_normalizes_or_is_a_clean_error(text):
    try:
        version = nvcc.normalize_sdk_version(text)
    except ValueError as exc:
        assert str(exc).startswith("not a CUDA version")
        return
    assert re.match(r"^\d{1,3}\.\d{1,3}(\.\d{1,3})?$", version)
    assert nvcc.normalize_sdk_version(version) == version  # normalizing twice changes nothing


@SETTINGS
@given(st.integers(0, 99), st.integers(0, 99), st.integers(0, 999))
def test_sdk_version_round_trips(major, minor, patch):
    version = "%d.%d.%d" % (major, minor, patch)
    assert nvcc.normalize_sdk_version(version) == version
    assert nvcc.normalize_sdk_version("%d.%d.20241114" % (major, minor)) == "%d.%d" % (major, minor)


@SETTINGS
@given(st.text(max_size=200))
def test_version_json_any_text_parses_or_is_a_clean_error(text):
    try:
        nvcc.read_version_json(text)
    except ValueError:
        pass


@SETTINGS
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                    lambda children: st.lists(children, max_size=3) | st.dictionaries(
                        st.sampled_from(["cuda", "version", "cuda_nvcc", "name"]), children, max_size=3),
                    max_leaves=10))
def test_version_json_any_structure_parses_or_is_a_clean_error(data):
    try:
        version, build = nvcc.read_version_json(json.dumps(data))
    except ValueError:
        return
    assert re.match(r"^\d{1,3}\.\d{1,3}(\.\d{1,3})?$", version)


def test_python_is_the_one_the_tests_expect():
    assert sys.version_info >= (3, 8)
