# -*- coding: utf-8 -*-
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpufleet.llm_stack.plugins.module_utils.cuda_arch import (
    ArchError,
    arch_list,
    covered_by,
    normalize_caps,
    parse_cap,
)


@pytest.mark.parametrize("value, expected", [
    ("9.0", (9, 0)),
    (" 8.9 ", (8, 9)),
    (9.0, (9, 0)),
    (12.0, (12, 0)),
    ("sm_90", (9, 0)),
    ("sm90", (9, 0)),
    ("sm_120", (12, 0)),
    ("SM_86", (8, 6)),
])
def test_parse_cap(value, expected):
    assert parse_cap(value) == expected


@pytest.mark.parametrize("value", ["9", "9.0a", "9.0+PTX", "Hopper", "", "0.5", "9.10", "sm_9", True, None, 90, [9, 0], 8.95])
def test_parse_cap_rejects(value):
    with pytest.raises(ArchError) as err:
        parse_cap(value)
    assert repr(value) in str(err.value)


def test_normalize_sorts_numerically_and_dedups():
    assert normalize_caps(["10.0", "9.0", "8.0", "9.0", "12.0", "8.9"]) == ["8.0", "8.9", "9.0", "10.0", "12.0"]
    assert normalize_caps("9.0;8.0, 8.6 8.0") == ["8.0", "8.6", "9.0"]
    assert normalize_caps([]) == []
    assert normalize_caps(None) == []


@pytest.mark.parametrize("caps, kwargs, expected", [
    (["9.0"], {}, "9.0"),
    (["9.0", "8.0"], {}, "8.0;9.0"),
    (["8.0", "8.9", "9.0"], {"ptx": True}, "8.0;8.9;9.0+PTX"),
    (["8.0", "9.0"], {"arch_specific": True}, "8.0;9.0a"),
    (["9.0", "10.0", "12.0"], {"arch_specific": True}, "9.0a;10.0a;12.0a"),
    (["8.6", "10.3"], {"arch_specific": True}, "8.6;10.3a"),
    (["9.0"], {"ptx": True, "arch_specific": True}, "9.0a;9.0+PTX"),
    (["8.0", "8.9"], {"ptx": True, "arch_specific": True}, "8.0;8.9+PTX"),
    ([], {"ptx": True}, ""),
])
def test_arch_list(caps, kwargs, expected):
    assert arch_list(caps, **kwargs) == expected


@pytest.mark.parametrize("cap, sass, ptx, expected", [
    ("8.9", ["8.0", "8.6"], [], True),  # sm_86 cubin runs on 8.9
    ("9.0", ["8.0", "8.6"], [], False),  # no cubin of major 9, no PTX
    ("9.0", ["8.0"], ["8.0"], True),  # PTX JIT
    ("10.3", ["10.0"], [], True),
    ("10.0", ["5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "9.0"], [], False),  # cu126 torch on a B200
    ("7.0", ["7.5", "8.0"], [], False),  # V100 with a cu128 torch
    ("12.1", ["12.0"], [], True),
    ("11.0", ["10.0", "12.0"], ["12.0"], False),
])
def test_covered_by(cap, sass, ptx, expected):
    assert covered_by(cap, sass, ptx) is expected


from ansible_collections.gpufleet.llm_stack.plugins.module_utils.cuda_arch import (  # noqa: E402
    caps_of,
    format_arch_list,
    parse_arch_list,
)


@pytest.mark.parametrize("text, entries", [
    ("8.0;9.0+PTX", [{"cap": "8.0", "suffix": "", "ptx": False}, {"cap": "9.0", "suffix": "", "ptx": True}]),
    ("9.0a 10.0", [{"cap": "9.0", "suffix": "a", "ptx": False}, {"cap": "10.0", "suffix": "", "ptx": False}]),
    ("8.6 9.0", [{"cap": "8.6", "suffix": "", "ptx": False}, {"cap": "9.0", "suffix": "", "ptx": False}]),
    ("10.0f", [{"cap": "10.0", "suffix": "f", "ptx": False}]),
    (" 12.0a+PTX ;; 8.0 ", [{"cap": "12.0", "suffix": "a", "ptx": True}, {"cap": "8.0", "suffix": "", "ptx": False}]),
])
def test_parse_arch_list(text, entries):
    assert parse_arch_list(text) == entries
    assert parse_arch_list(format_arch_list(entries)) == entries


def test_caps_of_sorts_and_dedups():
    assert caps_of("9.0a;8.0+PTX 9.0 10.0f") == ["8.0", "9.0", "10.0"]


@pytest.mark.parametrize("text, why", [
    ("", "empty"),
    (" ; ", "empty"),
    ("8.0,9.0", "'8.0,9.0' is not a compute capability"),
    ("Hopper", "is not a compute capability"),
    ("8.0a", "has no arch-specific variant"),
    ("9.0f", "has no family-specific variant"),
    ("0.0", "major version 0"),
    ("9.0+ptx", "is not a compute capability"),
    (u"\uff19.0", "is not a compute capability"),
    ("8." + "0" * 600, "characters long"),
    (None, "is not a TORCH_CUDA_ARCH_LIST"),
    (["8.0"], "is not a TORCH_CUDA_ARCH_LIST"),
])
def test_parse_arch_list_refuses_clearly(text, why):
    with pytest.raises(ArchError) as err:
        parse_arch_list(text)
    assert why in str(err.value)
