# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Property tests: every generated version, arch list, cu tag or stack either parses to a value that
round-trips, or gives the module's own clean error; never another exception."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat, gate
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.compat import StackInputError
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.cuda_arch import (
    ARCH_SPECIFIC,
    ArchError,
    caps_of,
    format_arch_list,
    parse_arch_list,
)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.versions import (
    Version,
    VersionError,
    satisfies,
)

SETTINGS = settings(max_examples=200, deadline=None)

# Text that looks like versions and arch lists, with the odd characters that break naive parsers.
VERSIONISH = st.text(alphabet=st.sampled_from(list(u"0123456789.+-_vVabrcpostdevPTXf;, \t\n") +
                                              [u"\uff10", u"\u0661", u"\u00b2", u"\u2024"]), max_size=40)
ANY_TEXT = st.one_of(VERSIONISH, st.text(max_size=80), st.integers().map(str),
                     st.text(alphabet="0123456789", min_size=60, max_size=6000))

RELEASE = st.lists(st.integers(min_value=0, max_value=99999), min_size=1, max_size=5)
PRE = st.one_of(st.none(), st.tuples(st.sampled_from(["a", "b", "rc"]), st.integers(min_value=0, max_value=99)))
POST = st.one_of(st.none(), st.integers(min_value=0, max_value=99))
LOCAL = st.one_of(st.none(), st.from_regex(r"[a-z0-9]{1,6}(\.[a-z0-9]{1,6}){0,2}", fullmatch=True))


@st.composite
def versions(draw):
    text = ".".join(str(part) for part in draw(RELEASE))
    pre, post, local = draw(PRE), draw(POST), draw(LOCAL)
    if pre:
        text += draw(st.sampled_from(["", "-", ".", "_"])) + pre[0] + str(pre[1])
    if post is not None:
        text += draw(st.sampled_from([".", "-", ""])) + "post" + str(post)
    if local:
        text += "+" + local
    return draw(st.sampled_from(["", "v", " ", "\t"])) + text + draw(st.sampled_from(["", " ", "\n"]))


@SETTINGS
@given(versions())
def test_generated_versions_parse_and_round_trip(text):
    version = Version(text)
    canonical = version.canonical()
    again = Version(canonical)
    assert again.canonical() == canonical
    assert again == version
    assert canonical.strip() == canonical and not canonical.startswith("v")


@SETTINGS
@given(ANY_TEXT)
def test_any_text_is_a_version_or_a_clean_error(text):
    try:
        version = Version(text)
    except VersionError:
        return
    canonical = version.canonical()
    assert Version(canonical).canonical() == canonical
    assert all(ch in "0123456789.abrcpostdev+" or ch.isalnum() and ord(ch) < 128 for ch in canonical)
    assert satisfies(canonical, ">=0") in (True, False)


@st.composite
def arch_entries(draw):
    cap = draw(st.sampled_from(["5.0", "6.0", "6.1", "7.0", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "10.3",
                                "11.0", "12.0", "12.1"]))
    suffixes = [""] + (["a"] if cap in ARCH_SPECIFIC else []) + (["f"] if float(cap) >= 10 else [])
    return {"cap": cap, "suffix": draw(st.sampled_from(suffixes)), "ptx": draw(st.booleans())}


@SETTINGS
@given(st.lists(arch_entries(), min_size=1, max_size=8),
       st.lists(st.sampled_from([";", " ", " ; ", ";;", "  "]), min_size=8, max_size=8))
def test_generated_arch_lists_parse_and_round_trip(entries, separators):
    text = entries and format_arch_list(entries)
    spaced = "".join(format_arch_list([entry]) + separators[i] for i, entry in enumerate(entries))
    assert parse_arch_list(text) == entries
    assert parse_arch_list(spaced) == entries
    assert parse_arch_list(format_arch_list(parse_arch_list(spaced))) == entries
    assert caps_of(spaced) == sorted(set(e["cap"] for e in entries), key=lambda c: tuple(int(x) for x in c.split(".")))


@SETTINGS
@given(ANY_TEXT)
def test_any_text_is_an_arch_list_or_a_clean_error(text):
    try:
        entries = parse_arch_list(text)
    except ArchError as exc:
        assert str(exc)
        return
    assert entries and parse_arch_list(format_arch_list(entries)) == entries


@SETTINGS
@given(st.one_of(ANY_TEXT, st.from_regex(r"(cu|CU)?[0-9]{2}\.?[0-9]{1,2}", fullmatch=True)))
def test_cu_tags_round_trip_or_refuse(text):
    try:
        tag = compat.torch_cuda_tag(text)
    except StackInputError as exc:
        assert exc.option == "torch_cuda"
        return
    if tag == "cpu":
        return
    assert compat.torch_cuda_tag(compat.torch_cuda_version(tag)) == tag
    assert len(tag) == 5


PIN_TEXT = st.one_of(versions(), ANY_TEXT, st.sampled_from(["", "12.8.1", "2.10.0", "cu128", "3.12", "v0.19.1"]))


@settings(max_examples=150, deadline=None)
@given(st.fixed_dictionaries({
    "cuda_version": PIN_TEXT, "torch_version": PIN_TEXT, "torch_cuda": PIN_TEXT, "python_version": PIN_TEXT,
    "flash_attn_version": PIN_TEXT, "vllm_version": PIN_TEXT, "transformers_version": PIN_TEXT,
    "model": st.one_of(st.text(max_size=40), st.sampled_from(["Qwen/Qwen3.5", "Qwen/Qwen3.5-7B", "Qwen/Qwen3.5-9B"])),
    "driver_version": st.one_of(st.none(), PIN_TEXT),
    "gpus": st.lists(st.one_of(st.sampled_from(["7.0", "8.0", "9.0", "10.0", "0.0", "13.5"]), VERSIONISH), max_size=3),
    "arch_list": st.one_of(st.none(), VERSIONISH),
}))
def test_the_gate_answers_or_names_the_option(params):
    params = dict(params, parts=list(gate.PARTS), flash_attn_arch_list=params["arch_list"])
    try:
        result = gate.run_gate(params)
    except StackInputError as exc:
        assert exc.option in params or exc.option in ("parts",)
        return
    assert result["ok"] is (not result["errors"])
    for problem in result["problems"]:
        assert problem["variables"], problem["msg"]
        if problem["severity"] == "error":
            assert "Fix: " in problem["msg"]
    if result["suggested"]:
        assert gate.evaluate(dict(params, **result["suggested"]))[1] is not None
