# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The air-gapped wheel set of a vLLM release (tests/gpu/bundle_resolve.py, run by tests/gpu/bundle.sh).

The recorded report is pip's real resolution of vllm==0.20.2 and supervisor==4.3.0 for CPython 3.12, manylinux
x86_64, against PyPI, with the H200's torch stack and transformers as constraints and
--uploaded-prior-to 2026-12-01T04:00:00Z (pip 26.3 under Python 3.12.1), trimmed with
``bundle_resolve.py --report REPORT --trim``. The freeze is the H200 venv's (tests/gpu/h200-venv-freeze.txt); the
checked-in lists (tests/gpu/vllm-0.20.2) are what bundle.sh 0.20.2 wrote from that resolution, the ones the H200
run of 0.20.2 installed (docs/validation/h200-serving.md).
"""
from __future__ import absolute_import, division, print_function

import copy
import gzip
import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
GPU = os.path.join(REPO, "tests", "gpu")
sys.path.insert(0, GPU)
import bundle_resolve as B  # noqa: E402  pylint: disable=wrong-import-position

REPORT = os.path.join(REPO, "tests", "fixtures", "vllm-bundle", "vllm-0.20.2-cp312-report.json.gz")


def report():
    with gzip.open(REPORT, "rt") as handle:
        return json.load(handle)


def freeze():
    with open(os.path.join(GPU, "h200-venv-freeze.txt")) as handle:
        return handle.read()


def pins(path):
    with open(path) as handle:
        return dict(line.strip().split("==", 1) for line in handle if "==" in line)


def as_dict(lines):
    return dict(pin.split("==", 1) for pin in lines)


def test_the_h200_set_of_0_20_2():
    result = B.wheel_set(report(), freeze(), "3.12")
    lacks, replaces = as_dict(result["lacks"]), as_dict(result["replaces"])
    assert lacks["vllm"] == "0.20.2" and lacks["supervisor"] == "4.3.0"
    assert B.render(result["lacks"], ["vllm"]).startswith("vllm==0.20.2\n")
    # The host's torch stack and transformers stay the host's: the resolution was constrained to them.
    for name in B.STACK + ("nvidia-cublas", "nvidia-nccl-cu13", "cuda-toolkit"):
        assert result["entries"][name]["decision"] == "kept", name
    # vLLM 0.20.2's own pins that the host's versions do not meet (numba==0.65.0, setuptools<81, and numpy<2.4
    # through mistral_common and numba) are replaced; nothing the host has at an accepted version is listed.
    assert replaces == {"llvmlite": "0.47.0", "numba": "0.65.0", "numpy": "2.3.5", "setuptools": "80.10.2"}
    assert "==0.65.0 (vllm 0.20.2)" in result["entries"]["numba"]["refused_by"]
    host = B.read_freeze(freeze())
    assert not set(lacks) & set(host)
    # Every Requires-Dist of the release for the host counts, those it does not import at start as well.
    for name in ("flashinfer-python", "flashinfer-cubin", "nvidia-cutlass-dsl", "quack-kernels", "tilelang"):
        assert name in lacks
    # six is required on Python 3.12 only (six>=1.16.0; python_version > "3.11"), and the host has it.
    assert result["entries"]["six"]["decision"] == "kept"
    assert result["unused"] == []


def test_the_checked_in_0_20_2_lists_are_the_commands_output():
    """tests/gpu/vllm-0.20.2 is what ``bundle.sh 0.20.2`` wrote from the recorded report: the lists the H200 run
    installed are the command's output, not a hand-made set, and resolved.txt pins every distribution of it."""
    here = os.path.join(GPU, "vllm-0.20.2")
    result = B.wheel_set(report(), freeze(), "3.12")
    with open(os.path.join(here, "vllm-requirements.txt")) as handle:
        assert handle.read() == B.render(result["lacks"], ["vllm"])
    with open(os.path.join(here, "vllm-requirements-host.txt")) as handle:
        assert handle.read() == B.render(result["replaces"], ["vllm"])
    with open(os.path.join(here, "resolution.json")) as handle:
        assert json.load(handle) == json.loads(json.dumps(result))
    resolved = pins(os.path.join(here, "resolved.txt"))
    installed = {item["metadata"]["name"].lower(): item["metadata"]["version"] for item in report()["install"]}
    assert resolved == installed
    with open(os.path.join(here, "constraints.txt")) as handle:
        assert handle.read() == B.constraints(freeze())
    with open(os.path.join(here, "vllm-wheelhouse.sha256")) as handle:
        assert handle.read().split()[1] == "wheelhouse.tar"


def test_a_host_whose_torch_the_release_refuses_is_an_error():
    text = freeze().replace("torch==2.11.0", "torch==2.10.0")
    with pytest.raises(B.BundleError, match=r"torch ==2.11.0 \(vllm 0.20.2\).*the host has 2.10.0. Fix: pick"):
        B.wheel_set(report(), text, "3.12")


def test_a_report_resolved_for_another_python_is_refused():
    """pip evaluates markers with the Python it runs under: a report made on 3.11 lacks six, which 3.12 needs."""
    data = copy.deepcopy(report())
    data["install"] = [item for item in data["install"] if item["metadata"]["name"] != "six"]
    with pytest.raises(B.BundleError, match=r"six>=1.16.0; python_version > \"3.11\", which the report does not"):
        B.wheel_set(data, freeze(), "3.12")
    # On 3.11 the marker does not hold: no six needed, and setuptools<81 neither.
    result = B.wheel_set(data, freeze(), "3.11")
    assert "six" not in result["entries"] and result["entries"]["setuptools"]["decision"] == "kept"


def test_extras_are_followed():
    """fastapi[standard] brings uvicorn[standard] and with it uvloop and httptools."""
    result = B.wheel_set(report(), freeze(), "3.12")
    assert "fastapi 0.165.0" in result["entries"]["fastapi-cli"]["required_by"]
    assert "httptools" in as_dict(result["lacks"])
    assert result["entries"]["uvloop"]["decision"] == "kept"


def test_a_package_the_host_lacks_is_listed_and_one_it_has_is_not():
    text = freeze() + "fastapi==0.165.0\n"
    lacks = as_dict(B.wheel_set(report(), text, "3.12")["lacks"])
    assert "fastapi" not in lacks and "starlette" in lacks
    text = freeze().replace("einops==0.8.2\n", "")
    assert as_dict(B.wheel_set(report(), text, "3.12")["lacks"])["einops"] == "0.8.2"


def test_constraints_are_the_hosts_stack():
    assert B.constraints(freeze()) == ("torch==2.11.0\ntorchaudio==2.11.0\ntorchvision==0.26.0\n"
                                       "transformers==5.17.0\ntriton==3.6.0\n")


@pytest.mark.parametrize("text, match", [
    ("torch>=2.0\n", "is not NAME==VERSION"),
])
def test_bad_freeze_lines(text, match):
    with pytest.raises(B.BundleError, match=match):
        B.read_freeze(text)


def test_freeze_with_urls_and_comments():
    text = "# c\n-e git+x#egg=y\nfoo @ file:///x.whl\nBar_Baz==1.0\n"
    assert B.read_freeze(text) == {"foo": None, "bar-baz": "1.0"}


def test_bad_python_version():
    with pytest.raises(B.BundleError, match="--python-version"):
        B.environment("3")


def test_trim_keeps_what_is_read():
    data = {"version": "1", "pip_version": "26.3", "environment": {}, "install": [
        {"metadata": {"name": "a", "version": "1", "requires_dist": ["b"], "summary": "x"}, "requested": True,
         "download_info": {"url": "https://x/a.whl", "archive_info": {}}, "is_direct": False}]}
    trimmed = B.trim(data)
    assert trimmed["install"][0] == {"metadata": {"name": "a", "version": "1", "requires_dist": ["b"]},
                                     "requested": True, "download_info": {"url": "https://x/a.whl"}}
    assert B.read_report(trimmed) == B.read_report(data)


def test_main_writes_the_lists(tmp_path):
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report()))
    out = tmp_path / "out"
    assert B.main(["--report", str(path), "--freeze", os.path.join(GPU, "h200-venv-freeze.txt"),
                   "--python-version", "3.12", "--out", str(out)]) == 0
    lines = (out / "vllm-requirements.txt").read_text().splitlines()
    assert lines[0] == "vllm==0.20.2" and lines[1:] == sorted(lines[1:])
    assert (out / "vllm-requirements-host.txt").read_text() == (
        "llvmlite==0.47.0\nnumba==0.65.0\nnumpy==2.3.5\nsetuptools==80.10.2\n")
    assert json.loads((out / "resolution.json").read_text())["entries"]["vllm"]["decision"] == "lacks"
    assert B.main(["--report", str(path), "--freeze", os.path.join(GPU, "h200-venv-freeze.txt"),
                   "--python-version", "3", "--out", str(out)]) == 2


def test_the_0_26_0_set_has_what_its_engine_imports_at_start():
    """bundle.sh 0.26.0's lists (tests/gpu/vllm-0.26.0) pin FlashInfer as the 0.26.0 wheel's METADATA does: its
    sampler imports it at start on CUDA, and the role's start check names that pin when it is missing."""
    here = os.path.join(GPU, "vllm-0.26.0")
    lacks = pins(os.path.join(here, "vllm-requirements.txt"))
    replaces = pins(os.path.join(here, "vllm-requirements-host.txt"))
    metadata = os.path.join(REPO, "tests", "fixtures", "vllm-wheels",
                            "vllm-0.26.0-cp38-abi3-manylinux_2_28_x86_64.whl.METADATA.gz")
    with gzip.open(metadata, "rt") as handle:
        requires = [line.split(":", 1)[1].strip() for line in handle if line.startswith("Requires-Dist:")]
    assert "flashinfer-python==0.6.14" in requires and lacks["flashinfer-python"] == "0.6.14"
    assert lacks["vllm"] == "0.26.0" and lacks["supervisor"] == "4.3.0"
    with open(os.path.join(here, "resolution.json")) as handle:
        resolution = json.load(handle)
    assert sorted(resolution["lacks"]) == sorted("%s==%s" % item for item in lacks.items())
    assert sorted(resolution["replaces"]) == sorted("%s==%s" % item for item in replaces.items())
    host = B.read_freeze(freeze())
    assert not set(lacks) & set(host) and set(replaces) <= set(host)
    assert not set(replaces) & set(B.STACK)
    with open(os.path.join(here, "vllm-wheelhouse.sha256")) as handle:
        assert handle.read().split()[1] == "wheelhouse.tar"
