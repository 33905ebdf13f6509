# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hf download command the module runs and the qwen_model_fetch role hands to run_logged: one implementation."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import hf_download as H
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import mask_credentials

TOKEN = "hf_" + "x" * 30
BASE = {"hf": "/opt/venv/bin/hf", "repo_id": "Qwen/Qwen3.5-9B", "revision": "a" * 40,
        "local_dir": "/opt/llm-stack/models/Qwen/Qwen3.5-9B/" + "a" * 40, "log_path": "/var/log/llm-stack/fetch.log"}


def test_role_command_has_the_modules_argv_and_keeps_progress_bars():
    cmd = H.command(dict(BASE, include=["*.json"], exclude=["*.bin"], max_workers="4"))
    assert cmd["argv"] == ["/opt/venv/bin/hf", "download", "Qwen/Qwen3.5-9B", "--revision", "a" * 40,
                           "--local-dir", BASE["local_dir"], "--max-workers", "4", "--include", "*.json",
                           "--exclude", "*.bin", "--exclude", ".llm_stack_manifest.json",
                           "--exclude", ".llm_stack_manifest.json.tmp"]
    assert "HF_HUB_DISABLE_PROGRESS_BARS" not in cmd["environment"]
    assert cmd["environment"]["HF_TOKEN"] == "" and cmd["environment"]["HF_HUB_DISABLE_IMPLICIT_TOKEN"] == "1"
    assert cmd["no_log"] is False
    quiet = H.command(BASE, progress_bars=False)
    assert quiet["environment"]["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"


def test_token_and_endpoint_password_only_in_the_environment():
    cmd = H.command(dict(BASE, token=TOKEN, endpoint="https://mirror-user:mirror-pass@mirror.example/"))
    assert not any(TOKEN in a or "mirror-pass" in a for a in cmd["argv"])
    assert cmd["environment"]["HF_TOKEN"] == TOKEN
    assert cmd["environment"]["HF_ENDPOINT"] == "https://mirror-user:mirror-pass@mirror.example"
    assert cmd["no_log"] is True
    assert "mirror-pass" not in cmd["endpoint"]


@pytest.mark.parametrize("change, option", [
    ({"repo_id": "--help"}, "repo_id"),
    ({"revision": "--help"}, "revision"),
    ({"include": ["--help"]}, "include"),
    ({"local_dir": "relative"}, "local_dir"),
    ({"endpoint": "http://[::1"}, "endpoint"),
    ({"hf": ""}, "hf"),
    ({"max_workers": "many"}, "max_workers"),
    ({"include": "*.json"}, "include"),
])
def test_bad_options_are_refused_naming_them(change, option):
    with pytest.raises(H.InputError, match=option):
        H.command(dict(BASE, **change))


def test_refusal_masks_the_token():
    with pytest.raises(H.InputError) as err:
        H.command(dict(BASE, token=TOKEN, include=["-" + TOKEN]))
    assert TOKEN not in str(err.value)


@settings(max_examples=60)
@given(st.lists(st.text(alphabet="abc*?./_[]", min_size=1, max_size=10), max_size=4))
def test_patterns_pass_through_in_order(patterns):
    cmd = H.command(dict(BASE, include=patterns))
    got = [cmd["argv"][i + 1] for i, a in enumerate(cmd["argv"]) if a == "--include"]
    assert got == patterns


# --- what the run downloaded -------------------------------------------------

CHECKED = {"ok": False, "missing": ["a.safetensors", "b.safetensors", "config.json"], "damaged": ["c.safetensors"],
           "seedable": ["config.json", "c.safetensors"], "bytes_to_fetch": 2048, "problems": ["..."]}


def test_downloaded_counts_what_no_earlier_revision_gives():
    assert H.downloaded(CHECKED) == {"files_downloaded": 2, "bytes_downloaded": 2048}
    assert H.downloaded(dict(CHECKED, seedable=[])) == {"files_downloaded": 4, "bytes_downloaded": 2048}


def test_nothing_is_downloaded_in_check_mode_or_for_a_complete_copy():
    assert H.downloaded(CHECKED, check_mode=True) == {"files_downloaded": 0, "bytes_downloaded": 0}
    assert H.downloaded(dict(CHECKED, ok=True)) == {"files_downloaded": 0, "bytes_downloaded": 0}


@pytest.mark.parametrize("checked", [None, [], {"ok": False}, dict((k, v) for k, v in CHECKED.items() if k != "seedable")])
def test_downloaded_needs_the_check_of_the_files(checked):
    with pytest.raises(H.InputError, match="hf_model_verify's result"):
        H.downloaded(checked)


@settings(max_examples=200, deadline=None)
@given(st.sets(st.sampled_from("abcdefgh")), st.sets(st.sampled_from("abcdefgh")), st.sets(st.sampled_from("abcdefgh")),
       st.booleans(), st.booleans())
def test_downloaded_property(missing, damaged, seedable, ok, check_mode):
    checked = {"ok": ok, "missing": sorted(missing), "damaged": sorted(damaged - missing), "seedable": sorted(seedable),
               "bytes_to_fetch": 7}
    got = H.downloaded(checked, check_mode)
    if ok or check_mode:
        assert got == {"files_downloaded": 0, "bytes_downloaded": 0}
    else:
        assert got == {"files_downloaded": len((missing | damaged) - seedable), "bytes_downloaded": 7}


# --- the seed host -----------------------------------------------------------

def test_seed_host_is_the_chosen_one_else_the_first_that_needs_files():
    hosts = ["gpu-1", "gpu-2", "gpu-3"]
    assert H.seed_host(hosts, [True, False, False]) == "gpu-2"
    assert H.seed_host(hosts, [False, False, False]) == "gpu-1"
    assert H.seed_host(hosts, [True, True, True]) == ""
    assert H.seed_host(hosts, [True, True, True], "gpu-3") == "gpu-3"
    assert H.seed_host(hosts, [False, False, False], "gpu-2") == "gpu-2"
    assert H.seed_host([], []) == ""


def test_seed_host_refuses_flags_that_do_not_match_the_hosts():
    with pytest.raises(H.InputError, match="3 hosts and 2 completeness flags"):
        H.seed_host(["a", "b", "c"], [True, False])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.text(min_size=1, max_size=8), st.booleans()), max_size=12))
def test_seed_host_property(pairs):
    hosts = [pair[0] for pair in pairs]
    flags = [pair[1] for pair in pairs]
    first = H.seed_host(hosts, flags)
    if all(flags):
        assert first == ""
    else:
        index = flags.index(False)
        assert first == hosts[index] and all(flags[:index])


@pytest.mark.parametrize("name, value", [
    ("MIRROR_API_KEY", "k3y"),          # 3 characters
    ("HF_MIRROR_TOKEN", "31415926"),    # digits only
    ("PROXY_PASSWORD", "none"),         # the word none
    ("S3_SECRET", "x"),                 # one character
])
def test_secret_named_variables_are_masked_whatever_their_value(name, value):
    """The module's log, progress and result use run_logged's rule: a variable named like a secret is one."""
    params = dict(H.DEFAULTS, **BASE)
    params["environment"] = {name: value, "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1"}
    found = H.secrets_of(params)
    assert value in found
    assert "1" not in found
    assert mask_credentials("v=%s;" % value, found) == "v=***;"


def test_the_endpoints_pair_and_its_base64_are_masked():
    params = dict(H.DEFAULTS, **BASE)
    params["endpoint"] = "https://u:pw@mirror.example"
    found = H.secrets_of(params)
    header = "Authorization: Basic " + base64.b64encode(b"u:pw").decode()
    assert "pw" in found and "u:pw" in found
    assert base64.b64encode(b"u:pw").decode() not in mask_credentials(header, found)
