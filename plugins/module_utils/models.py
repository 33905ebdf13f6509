# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The models the serving checks know without their weights: Qwen3, Qwen3.5 and Qwen3.5-MoE.

Each row of ``MODELS`` holds the values of the model's ``config.json`` that
the checks of ``serve_fit`` need, each with the source it was read from
(``SOURCES``). A value that could not be checked against a public source is
left out of its row; the check that needs it then says it was not checked.
``model_facts`` merges a row with the fetched ``config.json`` where the host
has one (the fetched file wins: it is the model served).

Parameter counts:

- Qwen3 (dense and MoE): computed from the row by ``qwen3_params`` (the
  formula is in its docstring); the unit tests hold it to the counts vLLM's
  recipes give (8.2B for Qwen3-8B, 30.5B total and 3.3B active for
  Qwen3-30B-A3B).
- Qwen3.5: the counts of vLLM's recipes (``models/Qwen/Qwen3.5-*.yaml``,
  ``parameter_count`` and ``active_parameters``), which are rounded; the
  overhead margin of the memory check covers the rounding.

Qwen3.5's layers are hybrid: Gated DeltaNet (linear attention) layers with a
fixed-size state, and one full-attention layer in four (transformers'
``Qwen3_5TextConfig`` builds ``layer_types`` with ``full_attention_interval``
4 when a config gives none). Only the full-attention layers hold a KV cache
that grows with the context.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

SOURCES = {
    "recipes": {
        "url": "https://github.com/vllm-project/recipes/tree/45f3c8c0fce4d1b43ae328e454c8414410605c70/models/Qwen",
        "note": "vLLM's recipes, models/Qwen/<model>.yaml: parameter_count, active_parameters, context_length (the"
                " model's max_position_embeddings), the default variant's precision, the features (reasoning and"
                " tool-call parsers, --language-model-only)",
    },
    "slime": {
        "url": "https://github.com/THUDM/slime/tree/a73a1496634f78f499ae399666c5c92853c653ff/scripts/models",
        "note": "THUDM/slime scripts/models/<model>.sh, the Megatron arguments that load the model's checkpoint:"
                " --num-attention-heads, --num-query-groups (KV heads), --kv-channels (head_dim), --num-layers,"
                " --hidden-size, --ffn-hidden-size, --vocab-size, --untie-embeddings-and-output-weights,"
                " --num-experts, --moe-router-topk, --moe-ffn-hidden-size",
    },
    "slime-qwen35-2b": {
        "url": "https://github.com/THUDM/slime/blob/148be654eaa11acdc5e0216bb2c1f26e3346aa9f/scripts/models/"
               "qwen3.5-2B.sh",
        "note": "THUDM/slime pull request #1801: the Megatron arguments of Qwen3.5-2B",
    },
    "slime-qwen35-397b": {
        "url": "https://github.com/THUDM/slime/blob/cb18b2a4d43770d8531ce009021fc4aac076487e/scripts/models/"
               "qwen3.5-397B-A17B.sh",
        "note": "THUDM/slime (pull request branch): the Megatron arguments of Qwen3.5-397B-A17B",
    },
    "qwen3-configs": {
        "url": "https://github.com/citsjtu2020/LLM-Prof/blob/8434c8d19c396b2f95d92a67845a7c0a0e0dd512/sglang/"
               "Model_Config.md",
        "note": "the config.json files of Qwen3-4B, Qwen3-8B, Qwen3-14B, Qwen3-32B and Qwen3-30B-A3B, copied whole:"
                " max_position_embeddings 40960, torch_dtype bfloat16, architectures, model_type",
    },
    "transformers-qwen35": {
        "url": "https://github.com/huggingface/transformers/blob/v5.5.4/src/transformers/models/qwen3_5/"
               "configuration_qwen3_5.py",
        "note": "transformers 5.5.4 (the wheel on PyPI): model_type qwen3_5 and qwen3_5_moe, the classes"
                " Qwen3_5ForConditionalGeneration and Qwen3_5MoeForConditionalGeneration, layer_types built with"
                " full_attention_interval 4 (one full-attention layer in four)",
    },
}

# The keys of a row, as config.json names them (heads and sizes of the text model).
KEYS = ("model_type", "architectures", "torch_dtype", "num_attention_heads", "num_key_value_heads", "head_dim",
        "num_hidden_layers", "max_position_embeddings", "hidden_size", "intermediate_size", "vocab_size",
        "tie_word_embeddings", "num_experts", "num_experts_per_tok", "moe_intermediate_size")

_QWEN3 = {"family": "qwen3", "model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"], "vocab_size": 151936}
_QWEN3_MOE = {"family": "qwen3", "model_type": "qwen3_moe", "architectures": ["Qwen3MoeForCausalLM"],
              "vocab_size": 151936}
_QWEN35 = {"family": "qwen3_5", "model_type": "qwen3_5", "architectures": ["Qwen3_5ForConditionalGeneration"],
           "max_position_embeddings": 262144, "torch_dtype": "bfloat16", "hybrid": True}
_QWEN35_MOE = {"family": "qwen3_5", "model_type": "qwen3_5_moe",
               "architectures": ["Qwen3_5MoeForConditionalGeneration"], "max_position_embeddings": 262144,
               "torch_dtype": "bfloat16", "hybrid": True}


def _row(base, sources, **values):
    row = dict(base)
    row.update(values)
    row["sources"] = list(sources)
    return row


# The models. params_b / active_params_b: billions of parameters (Qwen3.5: the recipes' rounded counts).
MODELS = {
    # Qwen3: attention and sizes from slime; max_position_embeddings, torch_dtype, model_type and
    # architectures from the copied config.json files (qwen3-configs) or, for 1.7B, the recipe
    # (context_length 40960, precision bf16). Qwen3-0.6B and Qwen3-235B-A22B: no source of their
    # max_position_embeddings and torch_dtype was read, so they are left out.
    "Qwen/Qwen3-0.6B": _row(_QWEN3, ["slime"], num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                            num_hidden_layers=28, hidden_size=1024, intermediate_size=3072,
                            tie_word_embeddings=True),
    "Qwen/Qwen3-1.7B": _row(_QWEN3, ["slime", "recipes"], num_attention_heads=16, num_key_value_heads=8,
                            head_dim=128, num_hidden_layers=28, hidden_size=2048, intermediate_size=6144,
                            tie_word_embeddings=True, max_position_embeddings=40960, torch_dtype="bfloat16"),
    "Qwen/Qwen3-4B": _row(_QWEN3, ["slime", "qwen3-configs", "recipes"], num_attention_heads=32,
                          num_key_value_heads=8, head_dim=128, num_hidden_layers=36, hidden_size=2560,
                          intermediate_size=9728, tie_word_embeddings=True, max_position_embeddings=40960,
                          torch_dtype="bfloat16"),
    "Qwen/Qwen3-8B": _row(_QWEN3, ["slime", "qwen3-configs", "recipes"], num_attention_heads=32,
                          num_key_value_heads=8, head_dim=128, num_hidden_layers=36, hidden_size=4096,
                          intermediate_size=12288, tie_word_embeddings=False, max_position_embeddings=40960,
                          torch_dtype="bfloat16"),
    "Qwen/Qwen3-14B": _row(_QWEN3, ["slime", "qwen3-configs"], num_attention_heads=40, num_key_value_heads=8,
                           head_dim=128, num_hidden_layers=40, hidden_size=5120, intermediate_size=17408,
                           tie_word_embeddings=False, max_position_embeddings=40960, torch_dtype="bfloat16"),
    "Qwen/Qwen3-32B": _row(_QWEN3, ["slime", "qwen3-configs", "recipes"], num_attention_heads=64,
                           num_key_value_heads=8, head_dim=128, num_hidden_layers=64, hidden_size=5120,
                           intermediate_size=25600, tie_word_embeddings=False, max_position_embeddings=40960,
                           torch_dtype="bfloat16"),
    "Qwen/Qwen3-30B-A3B": _row(_QWEN3_MOE, ["slime", "qwen3-configs", "recipes"], num_attention_heads=32,
                               num_key_value_heads=4, head_dim=128, num_hidden_layers=48, hidden_size=2048,
                               tie_word_embeddings=False, num_experts=128, num_experts_per_tok=8,
                               moe_intermediate_size=768, max_position_embeddings=40960, torch_dtype="bfloat16"),
    "Qwen/Qwen3-235B-A22B": _row(_QWEN3_MOE, ["slime"], num_attention_heads=64, num_key_value_heads=4,
                                 head_dim=128, num_hidden_layers=94, hidden_size=4096, tie_word_embeddings=False,
                                 num_experts=128, num_experts_per_tok=8, moe_intermediate_size=1536),
    # Qwen3.5: attention from slime, context, precision and counts from the recipes, model_type,
    # architectures and the layer pattern from transformers. Qwen3.5-122B-A10B: no source of its
    # attention heads was read, so they are left out.
    "Qwen/Qwen3.5-0.8B": _row(_QWEN35, ["slime", "recipes", "transformers-qwen35"], num_attention_heads=8,
                              num_key_value_heads=2, head_dim=256, num_hidden_layers=24, params_b=0.8),
    "Qwen/Qwen3.5-2B": _row(_QWEN35, ["slime-qwen35-2b", "recipes", "transformers-qwen35"], num_attention_heads=8,
                            num_key_value_heads=2, head_dim=256, num_hidden_layers=24, params_b=2.0),
    "Qwen/Qwen3.5-4B": _row(_QWEN35, ["slime", "recipes", "transformers-qwen35"], num_attention_heads=16,
                            num_key_value_heads=4, head_dim=256, num_hidden_layers=32, params_b=4.0),
    "Qwen/Qwen3.5-9B": _row(_QWEN35, ["slime", "recipes", "transformers-qwen35"], num_attention_heads=16,
                            num_key_value_heads=4, head_dim=256, num_hidden_layers=32, params_b=9.0),
    "Qwen/Qwen3.5-27B": _row(_QWEN35, ["slime", "recipes", "transformers-qwen35"], num_attention_heads=24,
                             num_key_value_heads=4, head_dim=256, num_hidden_layers=64, params_b=27.0),
    "Qwen/Qwen3.5-35B-A3B": _row(_QWEN35_MOE, ["slime", "recipes", "transformers-qwen35"], num_attention_heads=16,
                                 num_key_value_heads=2, head_dim=256, num_hidden_layers=40, params_b=35.0,
                                 active_params_b=3.0),
    "Qwen/Qwen3.5-122B-A10B": _row(_QWEN35_MOE, ["recipes", "transformers-qwen35"], params_b=122.0,
                                   active_params_b=10.0),
    "Qwen/Qwen3.5-397B-A17B": _row(_QWEN35_MOE, ["slime-qwen35-397b", "recipes", "transformers-qwen35"],
                                   num_attention_heads=32, num_key_value_heads=2, head_dim=256, num_hidden_layers=60,
                                   params_b=397.0, active_params_b=17.0),
}

# Variants of a row that share its architecture: FP8 checkpoints (weights of one byte) and base
# models (no chat template, so no preset).
VARIANT_SUFFIXES = ("-FP8", "-Base")
FULL_ATTENTION_INTERVAL = 4

_DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "half": 2, "bf16": 2, "fp16": 2, "float32": 4, "float": 4,
                "fp32": 4, "float8_e4m3fn": 1, "fp8": 1}


def _int(value):
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def dtype_bytes(name):
    """Bytes per value of a dtype name as config.json or vLLM's --dtype spell it (None when not known)."""
    return _DTYPE_BYTES.get(str(name or "").strip().lower())


def lookup(model_id):
    """(row, variant) of a model id: the row of the id itself or of its base id without -FP8 / -Base; (None, '')."""
    text = str(model_id or "").strip()
    if text in MODELS:
        return MODELS[text], ""
    for suffix in VARIANT_SUFFIXES:
        if text.endswith(suffix) and text[:-len(suffix)] in MODELS:
            return MODELS[text[:-len(suffix)]], suffix[1:].lower()
    return None, ""


def qwen3_params(row):
    """(total, active) parameters of a Qwen3 row, or (None, None) when a size is missing.

    Per layer: attention q, k, v, o (hidden x heads x head_dim, no bias) and the q/k norms
    (2 x head_dim), two RMSNorms (2 x hidden); the MLP is SwiGLU (3 x hidden x intermediate), for
    MoE E experts of 3 x hidden x moe_intermediate and a router (hidden x E), of which k are
    active. Plus the embedding (vocab x hidden), the LM head unless tied, and the final norm.
    """
    try:
        hidden, layers = row["hidden_size"], row["num_hidden_layers"]
        heads, kv, head_dim, vocab = (row["num_attention_heads"], row["num_key_value_heads"], row["head_dim"],
                                      row["vocab_size"])
    except KeyError:
        return None, None
    attention = hidden * head_dim * (2 * heads + 2 * kv) + 2 * head_dim + 2 * hidden
    embedding = vocab * hidden * (1 if row.get("tie_word_embeddings") else 2) + hidden
    if row.get("num_experts"):
        expert = 3 * hidden * row["moe_intermediate_size"]
        router = hidden * row["num_experts"]
        total = embedding + layers * (attention + row["num_experts"] * expert + router)
        active = embedding + layers * (attention + row["num_experts_per_tok"] * expert + router)
        return total, active
    if "intermediate_size" not in row:
        return None, None
    total = embedding + layers * (attention + 3 * hidden * row["intermediate_size"])
    return total, total


def _text_part(config):
    """The part of a config.json that describes the language model (text_config of multimodal models)."""
    config = config if isinstance(config, dict) else {}
    for key in ("text_config", "llm_config"):
        part = config.get(key)
        if isinstance(part, dict) and _int(part.get("num_attention_heads")):
            return part
    return config


def _full_attention_layers(part, layers, hybrid):
    types = part.get("layer_types")
    if isinstance(types, list) and types and all(isinstance(item, str) for item in types):
        return sum(1 for item in types if item == "full_attention")
    if layers is None:
        return None
    interval = _int(part.get("full_attention_interval"))
    if interval or hybrid:
        return layers // (interval or FULL_ATTENTION_INTERVAL)
    return layers


def _rope_factor(part):
    """The RoPE scaling factor a config sets (rope_scaling, or transformers 5's rope_parameters), or None."""
    for key in ("rope_scaling", "rope_parameters"):
        value = part.get(key)
        if isinstance(value, dict) and isinstance(value.get("factor"), (int, float)) \
                and not isinstance(value.get("factor"), bool) and value.get("factor") > 1:
            return float(value["factor"])
    return None


def model_facts(model_id, config=None):
    """What the checks know of a model: the table row, overridden by the fetched config.json where given.

    Returns a dict: known (a row or a config was found), source ('table', 'config', 'table+config' or
    ''), family ('qwen3', 'qwen3_5' or ''), variant ('fp8', 'base' or ''), and the values
    num_attention_heads, num_key_value_heads, head_dim, num_hidden_layers, full_attention_layers,
    max_position_embeddings, torch_dtype, model_type, architectures, params, active_params, rope_factor
    (None where unknown), sources (the row's), missing (names of the values left unknown).
    """
    row, variant = lookup(model_id)
    part = _text_part(config)
    facts = {"known": bool(row) or bool(part), "source": "", "family": (row or {}).get("family", ""),
             "variant": variant, "sources": list((row or {}).get("sources", []))}
    if row and part:
        facts["source"] = "table+config"
    elif row:
        facts["source"] = "table"
    elif part:
        facts["source"] = "config"
    row = row or {}
    top = config if isinstance(config, dict) else {}
    for key in ("num_attention_heads", "num_key_value_heads", "head_dim", "num_hidden_layers",
                "max_position_embeddings"):
        facts[key] = _int(part.get(key)) or row.get(key)
    if facts["num_attention_heads"] and not facts["num_key_value_heads"] and part:
        facts["num_key_value_heads"] = facts["num_attention_heads"]  # no GQA, as in transformers
    if not facts["head_dim"] and _int(part.get("hidden_size")) and facts["num_attention_heads"]:
        facts["head_dim"] = part["hidden_size"] // facts["num_attention_heads"]
    dtype = part.get("torch_dtype") or part.get("dtype") or top.get("torch_dtype") or top.get("dtype")
    facts["torch_dtype"] = dtype if dtype_bytes(dtype) else row.get("torch_dtype")
    facts["model_type"] = top.get("model_type") or row.get("model_type")
    facts["architectures"] = top.get("architectures") or row.get("architectures")
    hybrid = bool(row.get("hybrid")) or str(part.get("model_type") or "").startswith("qwen3_5")
    facts["full_attention_layers"] = _full_attention_layers(part, facts["num_hidden_layers"], hybrid)
    facts["rope_factor"] = _rope_factor(part)
    quant = top.get("quantization_config")
    facts["quant_method"] = str(quant.get("quant_method")) if isinstance(quant, dict) and quant.get("quant_method") \
        else ("fp8" if variant == "fp8" else "")
    if "params_b" in row:
        facts["params"] = int(row["params_b"] * 1e9)
        facts["active_params"] = int(row.get("active_params_b", row["params_b"]) * 1e9)
    else:
        facts["params"], facts["active_params"] = qwen3_params(row) if row else (None, None)
    facts["missing"] = [key for key in ("num_attention_heads", "num_key_value_heads", "head_dim", "num_hidden_layers",
                                        "max_position_embeddings", "torch_dtype", "params")
                        if not facts.get(key)]
    return facts


def family_models(family):
    """The table's model ids of a family, largest first."""
    found = [(model_facts(model)["params"] or 0, model) for model, row in MODELS.items() if row["family"] == family]
    return [model for dummy, model in sorted(found, reverse=True)]
