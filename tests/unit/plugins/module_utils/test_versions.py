# -*- coding: utf-8 -*-
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpufleet.llm_stack.plugins.module_utils.versions import (
    Version,
    VersionError,
    in_range,
    is_version,
    parse_specifier,
    satisfies,
)

VLLM_0191_TRANSFORMERS = "!=5.0.*,!=5.1.*,!=5.2.*,!=5.3.*,!=5.4.*,!=5.5.0,>=4.56.0"


@pytest.mark.parametrize("low, high", [
    ("2.9.1", "2.10.0"),
    ("2.10", "2.10.1"),
    ("0.9.2", "0.19.1"),
    ("2.8.3", "2.8.3.post1"),
    ("2.8.3.post1", "2.8.3.post2"),
    ("5.0.0rc1", "5.0.0"),
    ("5.0.0a1", "5.0.0b1"),
    ("5.0.0.dev1", "5.0.0a1"),
    ("12.8", "12.8.1"),
    ("525.60.13", "580.159.04"),
    ("550.54.15", "570.124.06"),
])
def test_order(low, high):
    assert Version(low) < Version(high)
    assert Version(high) > Version(low)
    assert Version(low) != Version(high)


def test_equal_ignores_trailing_zeros_and_local_is_kept():
    assert Version("2.10") == Version("2.10.0")
    torch = Version("2.10.0+cu128")
    assert torch.local == "cu128"
    assert torch.public() == "2.10.0"
    assert torch.major_minor() == "2.10"
    assert Version("580.159.04").release == (580, 159, 4)


@pytest.mark.parametrize("text", ["", "latest", "2.x", "1..2", "v", "2.10.0+", "12.8.1 13.0", None, 12])
def test_not_a_version(text):
    assert not is_version(text)
    with pytest.raises(VersionError):
        Version(text)


@pytest.mark.parametrize("version, expected", [
    ("5.5.0", False),  # excluded by vLLM 0.19.1
    ("5.5.4", True),
    ("5.5.1", True),
    ("5.2.0", False),
    ("5.4.0", False),
    ("5.24.0", True),
    ("4.57.6", True),
    ("4.41.2", False),
    ("4.56.0", True),
])
def test_vllm_0191_transformers_spec(version, expected):
    assert satisfies(version, VLLM_0191_TRANSFORMERS) is expected


@pytest.mark.parametrize("version, spec, expected", [
    ("3.12", ">=3.10,<3.14", True),
    ("3.13", ">=3.10,<3.14", True),
    ("3.14", ">=3.10,<3.14", False),
    ("3.9", ">=3.10,<3.14", False),
    ("4.57.6", ">=4.56.0,<5", True),
    ("5.0.0", ">=4.56.0,<5", False),
    ("5.0.0rc1", "<5", False),
    ("2.10.0+cu128", "==2.10.0", True),
    ("2.10.1", "==2.10.*", True),
    ("2.11.0", "==2.10.*", False),
    ("2.2.1", "~=2.2", True),
    ("3.0", "~=2.2", False),
    ("1.0", ">0.9", True),
    ("1.0", "<=1.0.0", True),
])
def test_satisfies(version, spec, expected):
    assert satisfies(version, spec) is expected


@pytest.mark.parametrize("spec", [">=", "=>3.1", ">=3.1,foo", ">=3.*", "~=3"])
def test_bad_specifier(spec):
    with pytest.raises(VersionError):
        if spec == "~=3":
            satisfies("3.1", spec)
        else:
            parse_specifier(spec)


def test_in_range_compares_major_minor():
    assert in_range("3.12.4", "3.10", "3.14")
    assert in_range("3.14", "3.10", "3.14")
    assert not in_range("3.15", "3.10", "3.14")
    assert not in_range("3.9", "3.10", "3.14")


from ansible_collections.gpufleet.llm_stack.plugins.module_utils.versions import normalize_version  # noqa: E402


@pytest.mark.parametrize("text, canonical", [
    ("v0.19.1", "0.19.1"),
    (" 2.10.0\n", "2.10.0"),
    ("V2.10.0+CU128", "2.10.0+cu128"),
    ("1.0-rc1", "1.0rc1"),
    ("2.8.3post2", "2.8.3.post2"),
    ("580.159.04", "580.159.4"),
])
def test_normalize_version(text, canonical):
    assert normalize_version(text) == canonical
    assert Version(text) == Version(canonical)


@pytest.mark.parametrize("text", [u"\uff12.10.0", u"2.\u0661\u0660", "1" * 65, "2.10.0\n2.11.0", "vv1", "2.10.0 +cu128"])
def test_normalize_refuses(text):
    with pytest.raises(VersionError):
        normalize_version(text)


def test_prefixed_is_remembered():
    assert Version("v0.19.1").prefixed and not Version("0.19.1").prefixed
    assert str(Version("v0.19.1")) == "0.19.1"
