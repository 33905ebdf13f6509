# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: the gate's evaluation (module_utils/gate.py): the parts of a call and of its role gates, run on their
inputs. gate_suggest runs candidate stacks through it, and gate returns its verdict; neither is imported here.
Not part of the public API.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._gate_parts_host import part_host
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._gate_parts_python import part_flash_attn, part_torch
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._gate_parts_toolkit import part_cuda_toolkit
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._gate_parts_vllm import part_serve, part_vllm
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._gate_common import PARTS
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._readers import text as _text
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.compat import Report, StackInputError
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import mask_credentials


def part_matrix(p, params, report):
    """The compatibility matrix over the versions."""
    compat.check_matrix(p, report)


PART_FUNCTIONS = {
    "matrix": part_matrix,
    "host": part_host,
    "cuda_toolkit": part_cuda_toolkit,
    "torch": part_torch,
    "flash_attn": part_flash_attn,
    "vllm": part_vllm,
    "serve": part_serve,
}


def parts_of(params):
    parts = params.get("parts")
    if parts is None:
        return ["matrix"]
    if not isinstance(parts, (list, tuple)):
        raise StackInputError("parts", "expected a list such as [matrix, host], got %s" % compat._short(parts))
    unknown = [part for part in parts if part not in PARTS]
    if unknown:
        raise StackInputError("parts", "%s: not a part; use some of %s" % (", ".join(compat._short(u) for u in unknown),
                                                                           ", ".join(PARTS)))
    return [part for part in PARTS if part in parts]


def _strings(option, values):
    if values is None:
        return []
    if not isinstance(values, (list, tuple)):
        raise StackInputError(option, "expected a list of messages, got %s" % compat._short(values))
    return [value if isinstance(value, str) else str(value) for value in values]


# Options that are not inputs of a part (returned as ``inputs`` without them).
NOT_INPUTS = ("facts", "contract", "extra_errors", "extra_warnings", "role_gates", "fail_as", "show_warnings")


def inputs_of(params):
    """The options of this call that its parts read (what ``role_gates`` takes back), without empty ones.

    A URL's credentials are masked (the runfile URL is only ever shown).
    """
    found = dict((key, value) for key, value in params.items()
                 if key not in NOT_INPUTS and value is not None and value != "" and value != [])
    if isinstance(found.get("runfile_url"), str):
        found["runfile_url"] = mask_credentials(found["runfile_url"])
    return found


def role_gate_inputs(params):
    """The ``inputs`` of each result in ``role_gates`` (a role's own stack_compat call), validated as dicts."""
    gates = params.get("role_gates") or []
    if not isinstance(gates, (list, tuple)):
        raise StackInputError("role_gates", "expected a list of registered stack_compat results, got %s"
                                            % compat._short(gates))
    found = []
    for index, result in enumerate(gates):
        inputs = result.get("inputs") if isinstance(result, dict) else None
        if inputs is None and isinstance(result, dict) and result.get("skipped"):
            continue
        if not isinstance(inputs, dict) or not inputs.get("parts"):
            raise StackInputError("role_gates", "item %d is not a registered stack_compat result (it has no"
                                                " 'inputs' with 'parts'): %s" % (index, compat._short(result)))
        found.append(inputs)
    return found


def _run_parts(parts, params, problems, seen, below_sm80=None):
    p = compat.validate(params)
    p["flash_attn_below_sm80"] = _text(params.get("flash_attn_below_sm80")) or below_sm80
    for part in parts:
        report = Report(part)
        PART_FUNCTIONS[part](p, params, report)
        for problem in report.problems:
            if problem["msg"] not in seen:
                seen.add(problem["msg"])
                problems.append(problem)
    return p


def evaluate(params):
    """Run the parts, then the parts of each role gate with that role's inputs; returns (p, problems).

    Raises StackInputError naming the option on malformed input.
    """
    parts = parts_of(params)
    problems = []
    seen = set()
    gates = role_gate_inputs(params)
    # The matrix's flash-attn-below-sm80 rule reads flash_attn_build_below_sm80: a call that does not run part
    # flash_attn itself (preflight's own) takes it from the role gate that does, with that part's default.
    below_sm80 = next((_text(inputs.get("flash_attn_below_sm80")) or "skip" for inputs in gates
                       if "flash_attn" in (inputs.get("parts") or [])), None)
    p = _run_parts(parts, params, problems, seen, below_sm80)
    for inputs in gates:
        try:
            _run_parts(parts_of(inputs), inputs, problems, seen)
        except StackInputError as exc:
            raise StackInputError("role_gates", "the inputs of a role's gate (parts %s): %s"
                                                % (", ".join(parts_of(inputs)), exc))
    extra = Report("extra")
    for message in _strings("extra_errors", params.get("extra_errors")):
        extra.problems.append({"rule": "role-check", "part": "extra", "severity": "error",
                               "variables": compat.variables_in(message), "msg": message})
    for message in _strings("extra_warnings", params.get("extra_warnings")):
        extra.problems.append({"rule": "role-check", "part": "extra", "severity": "warning",
                               "variables": compat.variables_in(message), "msg": message})
    for problem in extra.problems:
        if problem["msg"] not in seen:
            seen.add(problem["msg"])
            problems.append(problem)
    return p, problems
