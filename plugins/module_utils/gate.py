# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gate: every check that preflight or a role makes before it changes a host.

``run_gate(params)`` applies the parts that ``params['parts']`` names:

- ``matrix``: the compatibility matrix over the versions (compat.check_matrix);
- ``host``: what preflight checks on the host itself (GPUs, arch list
  override, free space, pins given as YAML numbers);
- ``cuda_toolkit``, ``torch``, ``flash_attn``: the inputs of each installing
  role, with exactly the checks the role would stop on;
- ``serve``: the vllm_serve role's checks that need no fetched weights
  (module_utils/serve_fit.py, which the role's plan runs too).

Preflight runs every part, each role runs its own, with the same inputs,
so preflight passes exactly where no role's own validation refuses. Each
part is one function ``part_<name>(p, params, report)``. Nothing here
changes anything; the only reads are ``stat``/``listdir`` of controller
paths given in the options (the module runs on the controller).

The parts are defined in private modules (``_gate_parts_host``, ``_gate_parts_toolkit``, ``_gate_parts_python``,
``_gate_parts_vllm``, with what they share in ``_gate_common``) and run by ``_gate_core.evaluate``; every name
is imported here, where the plugins and the tests import it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat
# At the top, not in run_gate: the strategy loads the stack_compat action plugin in the controller's main process,
# so what it imports there is compiled once per run, not in each worker (each host and task) that runs a gate.
# The parts and their evaluation live in private modules (_gate_core, _gate_parts_*) that import neither this
# module nor gate_suggest: gate -> gate_suggest -> _gate_core -> _gate_parts_* -> _gate_common.
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import gate_suggest
# Every name of the gate stays importable from here.
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._gate_common import PARTS  # noqa: F401  pylint: disable=unused-import
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._gate_core import (  # noqa: F401  pylint: disable=unused-import
    NOT_INPUTS,
    PART_FUNCTIONS,
    evaluate,
    inputs_of,
    part_matrix,
    parts_of,
    role_gate_inputs,
)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._gate_parts_host import (  # noqa: F401  pylint: disable=unused-import
    host_arch_list,
    part_host,
)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._gate_parts_python import (  # noqa: F401  pylint: disable=unused-import
    flash_attn_arch_list,
    part_flash_attn,
    part_torch,
)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._gate_parts_toolkit import (  # noqa: F401  pylint: disable=unused-import
    cuda_runfile,
    part_cuda_toolkit,
)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._gate_parts_vllm import (  # noqa: F401  pylint: disable=unused-import
    SERVE_OPTIONS,
    part_serve,
    part_vllm,
    vllm_binary_cuda,
    vllm_method,
)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.compat import PINS, StackInputError, torch_cuda_version
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.cuda_arch import arch_list


def vllm_choice(params):
    """(method, reason) of the vllm part this call runs, itself or in a role gate (preflight), or (None, None)."""
    for inputs in [params] + role_gate_inputs(params):
        if "vllm" in parts_of(inputs):
            p = compat.validate(inputs)
            return vllm_method(p, inputs) if p["vllm_version"] is not None else (None, None)
    return None, None


# --- the gate ----------------------------------------------------------------

def normalized(p):
    """The pins in their canonical spelling, with cuda_major_minor and torch_cuda_version."""
    pins = compat.normalized_pins(p)
    result = dict(pins)
    result["cuda_major_minor"] = p["cuda_version"].major_minor()
    result["torch_cuda_version"] = torch_cuda_version(pins["torch_cuda"]) or "" if pins["torch_cuda"] else ""
    return result


def run_gate(params):
    """The gate's full result (everything stack_compat returns, without ansible_facts)."""
    p, problems = evaluate(params)
    errors = [problem["msg"] for problem in problems if problem["severity"] == "error"]
    warnings = [problem["msg"] for problem in problems if problem["severity"] == "warning"]
    suggested = gate_suggest.suggest(params, p, problems) if errors else None
    choice = vllm_choice(params)
    return {
        "ok": not errors,
        "errors": errors,
        "compat_warnings": warnings,
        "problems": problems,
        "torch_cuda_arch_list": arch_list(p["gpus"]),
        "suggested": suggested,
        "suggested_group_vars": gate_suggest.group_vars(suggested, normalized(p), params) if suggested else "",
        "normalized": normalized(p),
        "cuda_runfile": cuda_runfile(p, params),
        "vllm_method": choice[0],
        "vllm_method_reason": choice[1],
        "inputs": inputs_of(params),
    }


def host_facts(params, result):
    """ansible_facts.llm_stack_host: the contract given, merged with the gate's verdict."""
    p = compat.validate(params)
    contract = params.get("contract") or {}
    if not isinstance(contract, dict):
        raise StackInputError("contract", "expected a dict, got %s" % compat._short(contract))
    facts = dict(contract)
    arch, source = host_arch_list(p, params)
    pins = compat.normalized_pins(p)
    facts.update({
        "ok": result["ok"],
        "errors": result["errors"],
        "warnings": result["compat_warnings"],
        "suggested": result["suggested"],
        "stack": dict((pin, pins[pin]) for pin in PINS),
        "arch_list": arch,
        "arch_list_source": source,
        "vllm_method": result.get("vllm_method"),
        "vllm_method_reason": result.get("vllm_method_reason"),
    })
    return facts
