# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""qwen_model_fetch's input checks (hf_download.fetch_problems): the hub modules' own rules, a message per variable."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import hf_download as H
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import hf_hub

TOKEN = "hf_" + "y" * 30
# The role's defaults with the test fleet's mirror, as the inventory hands them over (numbers as strings too).
GOOD = {"model": "Qwen/Qwen3.5-9B", "revision": "main", "models_dir": "/opt/llm-stack/models",
        "hf_endpoint": "http://127.0.0.1:18090", "max_workers": "8", "keep_revisions": 2, "disk_margin_gb": "10",
        "checksum": "auto", "seed_host": "", "token": "", "upstream_endpoint": "https://huggingface.co",
        "hf_ca_cert": ""}
HOSTS = ["gpu-1", "gpu-2"]


def test_the_defaults_pass():
    assert H.fetch_problems(GOOD, HOSTS) == []
    assert H.fetch_problems(dict(GOOD, seed_host="gpu-2", token=TOKEN, revision="a" * 40), HOSTS) == []
    assert H.fetch_problems(dict(GOOD, token=None)) == []


@pytest.mark.parametrize("change, start", [
    ({"model": "Qwen3.5-9B"}, "qwen_model_fetch_model: 'Qwen3.5-9B' is not a model repository id"),
    ({"model": "Qwen/Qwen3.5--9B"}, "qwen_model_fetch_model: 'Qwen/Qwen3.5--9B' is not a valid repository id"),
    ({"model": ["Qwen/Qwen3.5-9B"]}, "qwen_model_fetch_model"),
    ({"revision": ""}, "qwen_model_fetch_revision: the revision is empty"),
    ({"revision": "--help"}, "qwen_model_fetch_revision: '--help' is not a branch"),
    ({"hf_endpoint": "cache-01:8090"}, "qwen_model_fetch_hf_endpoint: 'cache-01:8090' is not an http"),
    ({"upstream_endpoint": "huggingface.co"}, "qwen_model_fetch_upstream_endpoint: 'huggingface.co' is not an http"),
    ({"hf_ca_cert": "/no/such/ca.pem"}, "qwen_model_fetch_hf_ca_cert is '/no/such/ca.pem', not a file"),
    ({"hf_ca_cert": "ca.pem"}, "qwen_model_fetch_hf_ca_cert is 'ca.pem'"),
    ({"models_dir": "models"}, "qwen_model_fetch_models_dir is 'models'"),
    ({"max_workers": 0}, "qwen_model_fetch_max_workers is 0"),
    ({"max_workers": "many"}, "qwen_model_fetch_max_workers is 'many'"),
    ({"max_workers": True}, "qwen_model_fetch_max_workers is True"),
    ({"keep_revisions": "0"}, "qwen_model_fetch_keep_revisions is '0'"),
    ({"disk_margin_gb": -1}, "qwen_model_fetch_disk_margin_gb is -1"),
    ({"disk_margin_gb": "nan"}, "qwen_model_fetch_disk_margin_gb is 'nan'"),
    ({"checksum": "sometimes"}, "qwen_model_fetch_checksum is 'sometimes'"),
    ({"seed_host": "gpu-9"}, "qwen_model_fetch_seed_host is 'gpu-9', which is not a host of this play"),
    ({"token": TOKEN + "\n"}, "qwen_model_fetch_token contains white space"),
])
def test_each_problem_names_its_variable_and_the_fix(change, start):
    problems = H.fetch_problems(dict(GOOD, **change), HOSTS)
    assert len(problems) == 1 and problems[0].startswith(start) and "Fix:" in problems[0]
    assert TOKEN not in problems[0]


def test_secrets_never_reach_a_message():
    problems = H.fetch_problems(dict(GOOD, hf_endpoint="http://user:s3cr3t-pass@mirror:80/ x", token="a b"), HOSTS)
    assert len(problems) == 2 and all("s3cr3t-pass" not in p and "a b" not in p for p in problems)


def test_the_model_rule_is_the_hub_modules_rule():
    for repo in ("Qwen/Qwen3.5-9B", "Qwen/x.git", "a/b", "-a/b", "Qwen/" + "x" * 97):
        assert (H.fetch_problems(dict(GOOD, model=repo), HOSTS) == []) == (hf_hub.validate_repo_id(repo) is None)


def test_wrong_shapes():
    with pytest.raises(H.InputError):
        H.fetch_problems("Qwen/Qwen3.5-9B")
    with pytest.raises(H.InputError):
        H.fetch_problems(None)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(GOOD)),
                       st.one_of(st.none(), st.booleans(), st.integers(-5, 10 ** 6), st.floats(allow_nan=True),
                                 st.text(max_size=30), st.lists(st.text(max_size=5), max_size=2))))
def test_any_settings_give_a_list_of_messages(change):
    problems = H.fetch_problems(dict(GOOD, **change), HOSTS)
    assert isinstance(problems, list) and all(isinstance(p, str) and p.startswith("qwen_model_fetch_") for p in problems)
