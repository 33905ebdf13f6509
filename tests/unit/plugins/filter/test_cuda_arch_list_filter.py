# -*- coding: utf-8 -*-
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.llm_stack.plugins.filter.cuda_arch_list import FilterModule, cuda_arch_list


def test_registered_under_its_name():
    assert FilterModule().filters()["cuda_arch_list"] is cuda_arch_list


@pytest.mark.parametrize("caps, kwargs, expected", [
    (["9.0", "8.0"], {}, "8.0;9.0"),
    (["8.0", "8.9", "9.0"], {}, "8.0;8.9;9.0"),
    (["8.0", "8.9", "9.0"], {"ptx": True}, "8.0;8.9;9.0+PTX"),
    (["9.0", "8.0"], {"arch_specific": True}, "8.0;9.0a"),
    ([9.0, "sm_80"], {}, "8.0;9.0"),
    ("8.0;9.0", {}, "8.0;9.0"),
    ("9.0a 8.0+PTX", {}, "8.0;9.0"),
    ("10.0f;8.6", {"ptx": True}, "8.6;10.0+PTX"),
    ([], {}, ""),
])
def test_filter(caps, kwargs, expected):
    assert cuda_arch_list(caps, **kwargs) == expected


@pytest.mark.parametrize("caps, bad", [
    (["9.0", "Hopper"], "'Hopper'"),
    (["9.0+PTX"], "'9.0+PTX'"),
    (["nine"], "'nine'"),
    ({"gpu": "9.0"}, "{'gpu': '9.0'}"),
    ([["9.0"]], "['9.0']"),
    (["9.0", None], "None"),
])
def test_garbage_names_the_bad_value(caps, bad):
    with pytest.raises(AnsibleFilterError) as err:
        cuda_arch_list(caps)
    assert bad in str(err.value)
    assert "cuda_arch_list" in str(err.value)


@pytest.mark.parametrize("kwargs", [{"ptx": "yes"}, {"arch_specific": 1}])
def test_options_must_be_bool(kwargs):
    with pytest.raises(AnsibleFilterError) as err:
        cuda_arch_list(["9.0"], **kwargs)
    assert list(kwargs)[0] in str(err.value)
