# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel check of vllm_source on a release wheel, as the H200 run exposed it.

The wheel method installs no toolkit, so the plan names the host's toolkit
only for cuobjdump to list the installed kernels; where there is none, the
kernels are not listed and the install is not failed for it. A listing that
lacks the host's arch still fails it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm as V
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.host_gpus import host_gpus

# vllm_info's reading of vLLM 0.20.2's release wheel on the H200 host (docs/validation/h200-serving.md): the kernels of
# vllm/_C.abi3.so as cuobjdump listed them there; the libraries the release's loader loads at start are those of its
# vllm/platforms/cuda.py (tests/unit/plugins/modules/test_vllm_info_layouts.py runs the probe over that layout).
H200_ARCHS = ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"]
H200_AFTER = {"info": {
    "distributions": {"vllm": {"version": "0.20.2", "requires_torch": "2.11.0", "direct_url": None}},
    "torch": {"version": "2.11.0", "record_sha256": "9f37c46b1da1d9d38305b030b432631083aaecc0b19a3b70fcf870326a81b337",
              "files_checked": 11846, "file_problems": [], "verified": True},
    "vllm": {"version": "0.20.2", "error": None, "registry": {"Qwen3_5ForConditionalGeneration": True},
             "extension": {"platform": "cuda", "loader": "vllm.platforms.cuda.CudaPlatform.import_kernels()",
                           "error": None, "warnings": [],
                           "loaded": ["_C.abi3.so", "_C_stable_libtorch.abi3.so", "_moe_C.abi3.so"],
                           "shipped": ["_C.abi3.so", "_C_stable_libtorch.abi3.so", "_moe_C.abi3.so"],
                           "kernels": {"_C.abi3.so": {"archs": H200_ARCHS, "error": None}}}},
    "cli": None,
    "start": {"ran": True, "ok": True, "user": "nobody", "platform": "CudaPlatform", "device_type": "cuda",
              "steps": [], "missing": [], "error": None},
}}
# The same reading of vLLM 0.26.0's release wheel on that host, whole (tests/fixtures/vllm_source): the release's
# loader loads _qutlass_C, whose kernels are for sm_100 alone.
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "fixtures", "vllm_source")
with open(os.path.join(FIXTURES, "h200-0.26.0-extension.json"), encoding="utf-8") as _handle:
    H200_0260_EXTENSION = json.load(_handle)
BEFORE = {"info": {"torch": {"version": "2.11.0",
                             "record_sha256": "9f37c46b1da1d9d38305b030b432631083aaecc0b19a3b70fcf870326a81b337"}}}


def wheel_plan(**extra):
    inputs = {"method": "wheel", "version": "0.20.2", "distribution": "vllm", "venv": "/opt/torch/.venv",
              "target_device": "cuda", "cuda_version": "13.0.2", "hostname": "gpu-validate",
              "model_architecture": "Qwen3_5ForConditionalGeneration", "log_dir": "/var/log/llm-stack",
              "cache_dir": "/tmp/cache", "work_dir": "/opt/llm-stack/build"}
    inputs.update(extra)
    return V.plan(inputs, facts={"gpu_compute_caps": ["9.0"], "gpu_count": 1})


def test_wheel_method_names_the_toolkit_for_the_kernel_listing():
    plan = wheel_plan()
    assert plan["cuda_home"] == "/usr/local/cuda"


def test_kernels_of_the_h200_wheel_pass_for_sm90():
    result = V.verdict(wheel_plan(), BEFORE, H200_AFTER, host_caps=["9.0"])
    assert result["checks"]["extension"]["kernels"]["_C.abi3.so"] == H200_ARCHS
    assert result["checks"]["extension"]["ok"] and result["checks"]["start"]["ok"]
    assert not [p for p in result["problems"] if "kernels" in p]


def test_unlisted_kernels_are_noted_not_failed():
    after = {"info": dict(H200_AFTER["info"])}
    ext = dict(after["info"]["vllm"]["extension"])
    ext.pop("kernels")
    after["info"]["vllm"] = dict(after["info"]["vllm"], extension=ext)
    result = V.verdict(wheel_plan(), BEFORE, after, host_caps=["9.0"])
    assert result["checks"]["extension"]["kernels"] is None
    assert "not listed" in result["checks"]["extension"]["note"]
    assert not [p for p in result["problems"] if "kernels" in p]


def test_a_listing_without_the_hosts_arch_fails():
    after = {"info": dict(H200_AFTER["info"])}
    ext = dict(after["info"]["vllm"]["extension"], kernels={"_C.abi3.so": {"archs": ["sm_80", "sm_86"]}})
    after["info"]["vllm"] = dict(after["info"]["vllm"], extension=ext)
    result = V.verdict(wheel_plan(), BEFORE, after, host_caps=["9.0"])
    assert not result["ok"]
    assert any("vllm/_C.abi3.so has no kernels for sm_90" in p for p in result["problems"])


# gpufleet.llm_stack.vllm_source_state reads the host's capabilities as every role does (module_utils/host_gpus).

def test_verdict_takes_the_caps_from_preflight_or_gpu_facts():
    after = {"info": dict(H200_AFTER["info"])}
    ext = dict(after["info"]["vllm"]["extension"], kernels={"_C.abi3.so": {"archs": ["sm_80", "sm_86"]}})
    after["info"]["vllm"] = dict(after["info"]["vllm"], extension=ext)
    for facts in ({"llm_stack_host": {"gpu": {"compute_caps": ["9.0"], "count": 1}}},
                  {"gpu_compute_caps": ["9.0"], "gpu_count": 1}):
        result = V.verdict(wheel_plan(), BEFORE, after, list(host_gpus(facts)["compute_caps"]))
        assert any("no kernels for sm_90" in p for p in result["problems"])
    assert V.verdict(wheel_plan(), BEFORE, H200_AFTER, list(host_gpus({})["compute_caps"]))["checks"]["extension"]["ok"]
    explicit = V.verdict(wheel_plan(), BEFORE, after, host_caps=["8.6"])
    assert not any("no kernels" in p for p in explicit["problems"])


def after_0260(**changes):
    after = copy.deepcopy(H200_AFTER)
    ext = dict(H200_0260_EXTENSION, **changes)
    ext.pop("source")
    after["info"]["distributions"]["vllm"]["version"] = "0.26.0"
    after["info"]["vllm"].update(version="0.26.0", extension=ext)
    return after


def test_the_026_wheel_passes_on_the_h200_its_arch_specific_libraries_listed():
    """0.26.0 loads _qutlass_C (sm_100 only) on the H200: vLLM uses it on Blackwell alone, so it is no problem."""
    result = V.verdict(wheel_plan(version="0.26.0"), BEFORE, after_0260(), host_caps=["9.0"])
    ext = result["checks"]["extension"]
    assert ext["ok"], result["problems"]
    assert not [p for p in result["problems"] if "kernels" in p]
    # FlashAttention 2's sm_80 kernels do not run on sm_90 either: vLLM takes FlashAttention 3 there
    assert ext["arch_specific"] == {"_qutlass_C.abi3.so": ["sm_100"], "vllm_flash_attn/_vllm_fa2_C.abi3.so": ["sm_80"]}


def test_the_026_wheel_fails_where_its_own_kernels_lack_the_arch():
    kernels = copy.deepcopy(H200_0260_EXTENSION["kernels"])
    kernels["_moe_C_stable_libtorch.abi3.so"]["archs"] = ["sm_80", "sm_100"]
    result = V.verdict(wheel_plan(version="0.26.0"), BEFORE, after_0260(kernels=kernels), host_caps=["9.0"])
    assert not result["ok"]
    assert any("vllm/_moe_C_stable_libtorch.abi3.so has no kernels for sm_90" in p for p in result["problems"])
    # on a Blackwell host every library it loads has kernels
    blackwell = V.verdict(wheel_plan(version="0.26.0"), BEFORE, after_0260(), host_caps=["10.0"])
    assert blackwell["checks"]["extension"]["ok"]
    assert "_qutlass_C.abi3.so" not in blackwell["checks"]["extension"]["arch_specific"]


def test_a_load_of_only_arch_specific_libraries_is_a_layout_not_known():
    result = V.verdict(wheel_plan(version="0.26.0"), BEFORE, after_0260(loaded=["_qutlass_C.abi3.so"]),
                       host_caps=["10.0"])
    assert not result["ok"]
    assert any("a layout this collection does not know" in p for p in result["problems"])
