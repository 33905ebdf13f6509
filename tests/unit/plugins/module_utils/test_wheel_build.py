# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""wheel_build: the cache entry, installed or not, the election, the cache verdict."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_build as W

KEY = {"flash_attn": "2.8.3", "source": "sdist", "torch": "2.13.0+cpu", "torch_cuda": "cpu", "python_abi": "cp311",
       "cxx11_abi": True, "archs": "80", "cuda_kernels": False}
LABEL = "flash-attn-2.8.3-torch2.13.0_cpu-cp311-cxx11abiTRUE-sm80-python-only"


def inputs(**changes):
    base = {"name": "flash-attn", "key": KEY, "label": LABEL, "requirement": "flash-attn==2.8.3",
            "cache_dir": "/srv/cache/wheels", "venv": "/opt/llm-stack/venv", "work_dir": "/opt/llm-stack/build",
            "wheel_dir": "/opt/llm-stack/wheels", "log_dir": "/var/log/llm-stack", "installed_url": None,
            "prefer_builder": False}
    base.update(changes)
    return base


def test_entry_matches_what_ansible_to_json_hashed():
    # {'name': 'flash-attn', 'key': KEY} | to_json(sort_keys=True) | hash('sha256'), as the role computed it before
    assert W.entry_name(LABEL, "flash-attn", KEY) == LABEL + "-" + W.hashlib.sha256(
        W.json.dumps({"key": KEY, "name": "flash-attn"}, sort_keys=True).encode()).hexdigest()[:12]
    assert W.entry_name("flash-attn 2.8.3/git@main", "flash-attn", {"a": "é"}).startswith("flash-attn_2.8.3_git_main-")


def test_ansible_to_json_hash_of_a_captured_key():
    # what `{{ {'name': 'flash-attn', 'key': k} | to_json(sort_keys=True) | hash('sha256') }}` printed (ansible-core 2.19)
    key = {"flash_attn": "2.8.3", "torch": "2.13.0+cpu", "cxx11_abi": True, "archs": "80", "n": "\u00e9"}
    assert W.entry_name("x", "flash-attn", key) == "x-98f14f6405d9"


def test_plan_of_a_host_that_needs_a_build(tmp_path):
    state = W.plan(inputs(cache_dir=str(tmp_path)))
    entry = state["entry"]
    assert state == {
        "entry": entry, "cache_entry": str(tmp_path / entry), "cached_wheels": [],
        "host_entry": "/opt/llm-stack/wheels/" + entry, "tree": "/opt/llm-stack/build/" + entry,
        "log": "/var/log/llm-stack/wheel-build-%s.log" % entry, "ledger": "/var/log/llm-stack/wheel-builds.jsonl",
        "marker": "/opt/llm-stack/venv/.llm_stack/flash-attn.json", "installed": False, "installed_wheel": "", "needs_build": True,
        "summary": "is built once for its key", "preferred": False}


def test_plan_with_a_cached_wheel_needs_no_build(tmp_path):
    entry = W.entry_name(LABEL, "flash-attn", KEY)
    (tmp_path / entry).mkdir()
    (tmp_path / entry / "flash_attn-2.8.3-py3-none-any.whl").write_bytes(b"wheel")
    (tmp_path / entry / "key.json").write_text("{}")
    state = W.plan(inputs(cache_dir=str(tmp_path)))
    assert state["cached_wheels"] == [str(tmp_path / entry / "flash_attn-2.8.3-py3-none-any.whl")]
    assert (state["installed"], state["needs_build"], state["summary"]) == (False, False, "is in the cache")


@pytest.mark.parametrize("url, installed", [
    ("file:///opt/llm-stack/wheels/{entry}/flash_attn-2.8.3-py3-none-any.whl", True),
    ("file:///opt/llm-stack/wheels/{entry}-old/flash_attn-2.8.3-py3-none-any.whl", False),  # another key's dir
    ("file:///tmp/dist/flash_attn-2.8.3-py3-none-any.whl", False),
    ("", False),
])
def test_installed_is_read_from_the_recorded_url(url, installed):
    entry = W.entry_name(LABEL, "flash-attn", KEY)
    state = W.plan(inputs(installed_url=url.format(entry=entry)), cached=[])
    assert state["installed"] is installed and state["needs_build"] is not installed
    assert state["installed_wheel"] == ("flash_attn-2.8.3-py3-none-any.whl" if installed else "")
    assert state["summary"] == ("is installed" if installed else "is built once for its key")
    assert W.installed_wheel(url.format(entry=entry), "/opt/llm-stack/wheels", entry) == state["installed_wheel"]


def test_installed_url_from_the_roles_own_reading():
    entry = W.entry_name(LABEL, "flash-attn", KEY)
    probe = {"info": {"distributions": {"flash-attn": {"version": "2.8.3", "direct_url": {
        "url": "file:///opt/llm-stack/wheels/%s/flash_attn-2.8.3-py3-none-any.whl" % entry}}}}}
    assert W.plan(inputs(probe=probe), cached=[])["installed"] is True
    # a reading that was skipped, or says nothing, means not installed
    for skipped in ({"skipped": True}, None, {"info": {"distributions": {"flash-attn": None}}}):
        assert W.plan(inputs(probe=skipped), cached=[])["installed"] is False
    # the caller's url wins over the reading
    assert W.plan(inputs(probe=probe, installed_url=""), cached=[])["installed"] is False


@pytest.mark.parametrize("changes, message", [
    ({"name": ""}, "wheel_build_name"),
    ({"key": {}}, "wheel_build_key"),
    ({"key": "80"}, "wheel_build_key (a non-empty dict)"),
    ({"requirement": None}, "wheel_build_requirement"),
    ({"venv": "venv"}, "wheel_build_venv='venv' must be an absolute path"),
    ({"prefer_builder": "yes"}, "wheel_build_prefer_builder='yes' must be true or false"),
])
def test_bad_inputs_are_named(changes, message):
    with pytest.raises(W.WheelBuildError) as err:
        W.plan(inputs(**changes), cached=[])
    assert message in str(err.value)


def state(entry, needs_build=True, preferred=False):
    return {"entry": entry, "needs_build": needs_build, "preferred": preferred}


def test_election():
    states = {"a": state("k1"), "b": state("k1", preferred=True), "c": state("k2"), "d": state("k1"),
              "e": state("k2", needs_build=False, preferred=True), "f": None}
    batch = ["a", "b", "c", "d", "e", "f"]
    assert W.builder(batch, states, "k1") == "b"  # the preferred host of the key
    assert W.builder(batch, states, "k2") == "c"  # e has it installed or cached: not a candidate
    assert W.builder(batch, states, "k3") == ""
    assert W.builder(["d", "a"], states, "k1") == "d"  # play order
    assert W.builder(["a", "d"], {"a": state("k1"), "d": state("k1")}, "k1") == "a"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["k1", "k2"]), st.booleans(), st.booleans()), max_size=8))
def test_one_builder_per_key_and_it_needs_the_build(hosts):
    batch = ["h%d" % i for i in range(len(hosts))]
    states = dict((h, state(k, n, p)) for h, (k, n, p) in zip(batch, hosts))
    for key in ("k1", "k2"):
        chosen = W.builder(batch, states, key)
        candidates = [h for h in batch if states[h]["entry"] == key and states[h]["needs_build"]]
        assert (chosen == "") == (not candidates)
        if chosen:
            preferred = [h for h in candidates if states[h]["preferred"]]
            assert chosen == (preferred or candidates)[0]


def test_cache_problem():
    st_ = {"cache_entry": "/srv/cache/wheels/e1", "needs_build": True}
    assert W.cache_problem(st_, ["/srv/cache/wheels/e1/x.whl"], "flash-attn", "b", "/l") == ""
    assert W.cache_problem(st_, [], "flash-attn", "b", "/var/log/b.log") == (
        "No flash-attn wheel in /srv/cache/wheels/e1 on the controller. Its build on b did not finish: see "
        "/var/log/b.log there and that host's error above; nothing was installed on this host. Fix: run the play "
        "again once the build problem is solved.")
    assert "Several flash-attn wheels" in W.cache_problem(st_, ["1.whl", "2.whl"], "flash-attn", "b", "/l")
    assert "remove /srv/cache/wheels/e1 so that" in W.cache_problem(st_, ["1.whl", "2.whl"], "flash-attn", "b", "/l")


# files_to_push: what push_dir copies to a host's wheelhouse.
def _f(path, size):
    return {"path": path, "size": size}


def test_files_to_push_copies_only_missing_or_other_size():
    local = [_f("/c/wh/b-1.whl", 10), _f("/c/wh/a-1.whl", 5), _f("/c/wh/c-1.tar.gz", 7)]
    remote = [_f("/opt/wh/a-1.whl", 5), _f("/opt/wh/c-1.tar.gz", 8), _f("/opt/wh/old.whl", 1)]
    assert [f["path"] for f in W.files_to_push(local, remote)] == ["/c/wh/b-1.whl", "/c/wh/c-1.tar.gz"]


def test_files_to_push_nothing_when_host_has_all():
    local = [_f("/c/a.whl", 1), _f("/c/b.whl", 2)]
    assert W.files_to_push(local, [_f("/h/b.whl", 2), _f("/h/a.whl", 1)]) == []
    assert W.files_to_push([], None) == []


def test_files_to_push_refuses_entries_without_path():
    with pytest.raises(W.WheelBuildError, match="needs a path"):
        W.files_to_push([{"size": 1}], [])


@settings(max_examples=60)
@given(st.dictionaries(st.text("abc.-_", min_size=1, max_size=6), st.integers(0, 5), max_size=8),
       st.dictionaries(st.text("abc.-_", min_size=1, max_size=6), st.integers(0, 5), max_size=8))
def test_files_to_push_property(local, remote):
    pushed = W.files_to_push([_f("/c/" + n, s) for n, s in local.items()], [_f("/h/" + n, s) for n, s in remote.items()])
    names = {f["path"][3:] for f in pushed}
    assert names == {n for n, s in local.items() if remote.get(n) != s}


# The calls gpufleet.llm_stack.wheel_build_state makes, with the role's shapes.

def test_role_plan_errors_name_the_variable(tmp_path):
    with pytest.raises(W.WheelBuildError, match="wheel_build_requirement"):
        W.plan({"name": "x", "key": {"a": "1"}, "cache_dir": str(tmp_path)})
    plan = W.plan({"name": "x", "key": {"a": "1"}, "requirement": "x==1", "cache_dir": str(tmp_path)})
    assert plan["needs_build"] is True


def test_role_builder_reads_each_hosts_state():
    states = {"a": {"entry": "e", "needs_build": True, "preferred": False},
              "b": {"entry": "e", "needs_build": True, "preferred": True},
              "c": None}
    assert W.builder(["c", "a", "b"], states, "e") == "b"
    assert W.builder(["c", "a"], states, "e") == "a"
    assert W.builder(["c"], states, "e") == ""


def test_role_cache_problem():
    state = {"cache_entry": "/c/e", "needs_build": False}
    assert W.cache_problem(state, ["/c/e/x.whl"], "flash-attn", "", "") == ""
    assert W.cache_problem(state, [], "flash-attn", "", "").startswith("No flash-attn wheel in /c/e")


def test_role_push_missing():
    local = [{"path": "/c/a.whl", "size": 1}, {"path": "/c/b.whl", "size": 2}]
    assert W.files_to_push(local, [{"path": "/h/a.whl", "size": 1}]) == [{"path": "/c/b.whl", "size": 2}]
    with pytest.raises(W.WheelBuildError, match="needs a path"):
        W.files_to_push([{}], [])
