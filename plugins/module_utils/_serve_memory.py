# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: serve_fit's memory estimate (see serve_fit's docstring) and the reading of a flag's value it takes
its dtypes from. serve_fit re-exports these names.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import models
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._readers import text

MIB = 1024 * 1024
GIB = 1024 * MIB
# Reserved per GPU besides the weights and the KV cache (see serve_fit's docstring).
OVERHEAD_MIB_PER_GPU = 2048


# --- flags ---------------------------------------------------------------------------------

def flag_name(arg):
    """The flag an argument sets ('--dtype=half' -> '--dtype'), '' for a value."""
    return arg.split("=", 1)[0] if arg.startswith("-") else ""


def flag_value(args, names):
    """The value given to one of the flags in args (the last one wins, as in argparse), None when absent."""
    found = None
    for index, arg in enumerate(args):
        name = flag_name(arg)
        if name in names:
            if "=" in arg:
                found = arg.split("=", 1)[1]
            elif index + 1 < len(args) and not args[index + 1].startswith("-"):
                found = args[index + 1]
            else:
                found = ""
    return found


# --- memory --------------------------------------------------------------------------------

def _weight_bytes(facts, args):
    """(bytes per parameter, what) of the served weights, or (None, why not)."""
    quant = text(flag_value(args, ("--quantization", "-q"))).lower() or facts.get("quant_method", "")
    if quant:
        if quant.startswith("fp8"):
            return 1, "fp8"
        return None, "the weights of quantization %s are not estimated" % quant
    dtype = text(flag_value(args, ("--dtype",))).lower()
    if dtype and dtype != "auto":
        size = models.dtype_bytes(dtype)
        return (size, dtype) if size else (None, "--dtype %s is not known" % dtype)
    size = models.dtype_bytes(facts.get("torch_dtype"))
    return (size, facts["torch_dtype"]) if size else (None, "the model's torch_dtype is not known")


def _kv_bytes(facts, args):
    kv_dtype = text(flag_value(args, ("--kv-cache-dtype",))).lower()
    if kv_dtype.startswith("fp8"):
        return 1
    dtype = text(flag_value(args, ("--dtype",))).lower()
    if dtype and dtype != "auto" and models.dtype_bytes(dtype):
        return max(2, models.dtype_bytes(dtype))
    return max(2, models.dtype_bytes(facts.get("torch_dtype")) or 2)


def kv_per_token(facts, tp, args):
    """Bytes of KV cache per token of one sequence, or None when the attention is not known."""
    layers, kv, head_dim = facts.get("full_attention_layers"), facts.get("num_key_value_heads"), facts.get("head_dim")
    if not (layers and kv and head_dim):
        return None
    return 2 * layers * max(kv, tp or 1) * head_dim * _kv_bytes(facts, args)


def memory_need(facts, tp, tokens, args, model_size=None):
    """{weights, kv, per_token, what} in bytes for serving the model; None values where unknown."""
    size, what = _weight_bytes(facts, args)
    weights = None
    if size and facts.get("params"):
        weights = facts["params"] * size
    elif model_size and not flag_value(args, ("--dtype", "--quantization", "-q")):
        weights, what = int(model_size), "the size of the fetched files"
    per_token = kv_per_token(facts, tp, args)
    kv = per_token * tokens if per_token and tokens else None
    return {"weights": weights, "kv": kv, "per_token": per_token, "what": what}


def memory_budget(gpu_memory_mib, gpus_used, gmu):
    """Bytes vLLM may fill on the GPUs it uses, less the overhead margin; None when the memory is unknown."""
    sizes = [int(m) for m in gpu_memory_mib or [] if isinstance(m, (int, float)) and not isinstance(m, bool) and m > 0]
    if not sizes or len(sizes) < gpus_used or gmu is None:
        return None
    return int(min(sizes) * MIB * gmu * gpus_used) - OVERHEAD_MIB_PER_GPU * MIB * gpus_used


def _gib(value):
    return "%.1f GiB" % (float(value) / GIB)


def _fits(facts, tp, pp, tokens, args, memory, gmu, model_size=None):
    need = memory_need(facts, tp, tokens, args, model_size)
    budget = memory_budget(memory, tp * pp, gmu)
    if need["weights"] is None or need["kv"] is None or budget is None:
        return None
    return need["weights"] + need["kv"] <= budget
