# -*- coding: utf-8 -*-
"""Property tests for the Hugging Face validators and path joining.

Every generated input either gives a value that round-trips, or the
module's own clean error (HubError / PathError): never another exception,
never a path outside the base.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import hf_hub, hf_local

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ANY_TEXT = st.text(max_size=120)
ASCII_ID = string.ascii_letters + string.digits + "_.-"
WHITESPACE = st.text(alphabet=" \t\n\r", max_size=3)


@SETTINGS
@given(value=st.one_of(ANY_TEXT, st.text(alphabet=ASCII_ID + "/ \n-", max_size=40), st.none(), st.integers()))
def test_repo_ids_round_trip_or_fail_cleanly(value):
    problem = hf_hub.validate_repo_id(value)
    assert problem is None or isinstance(problem, str)
    try:
        repo_id = hf_hub.normalize_repo_id(value)
    except hf_hub.HubError as exc:
        assert problem and exc.kind == hf_hub.BAD_INPUT and exc.message.startswith("repo_id: ")
        return
    assert problem is None and repo_id == value.strip()
    assert hf_hub.normalize_repo_id(repo_id) == repo_id
    assert repo_id.count("/") == 1 and all(ch in ASCII_ID + "/" for ch in repo_id)
    assert not repo_id.startswith("-") and ".." not in repo_id and "--" not in repo_id


@SETTINGS
@given(org=st.text(alphabet=ASCII_ID, min_size=1, max_size=30), name=st.text(alphabet=ASCII_ID, min_size=1, max_size=30),
       before=WHITESPACE, after=WHITESPACE)
def test_well_formed_repo_ids_are_accepted_stripped(org, name, before, after):
    repo_id = "%s/%s" % (org, name)
    plausible = all(part[0].isalnum() and (part[-1].isalnum() or part[-1] == "_") for part in (org, name)) \
        and "--" not in repo_id and ".." not in repo_id and not repo_id.endswith(".git")
    if plausible:
        assert hf_hub.normalize_repo_id(before + repo_id + after) == repo_id
    else:
        with pytest.raises(hf_hub.HubError):
            hf_hub.normalize_repo_id(before + repo_id + after)


@SETTINGS
@given(value=st.one_of(ANY_TEXT, st.text(alphabet="0123456789abcdefABCDEF \n", min_size=38, max_size=42), st.none()))
def test_commits_are_forty_lower_hex_or_refused(value):
    try:
        commit = hf_hub.normalize_commit(value)
    except hf_hub.HubError as exc:
        assert exc.kind == hf_hub.BAD_INPUT and exc.message.startswith("commit: ")
        return
    assert len(commit) == 40 and all(ch in "0123456789abcdef" for ch in commit)
    assert commit == value.strip() and hf_local.is_commit(commit)


@SETTINGS
@given(sha=st.text(alphabet="0123456789abcdef", min_size=40, max_size=40), before=WHITESPACE, after=WHITESPACE)
def test_commits_round_trip(sha, before, after):
    assert hf_hub.normalize_commit(before + sha + after) == sha
    assert hf_local.is_commit(sha) and not hf_local.is_commit(sha + "\n")


@SETTINGS
@given(value=st.one_of(ANY_TEXT, st.text(alphabet=ASCII_ID + "/+ \n@{", max_size=40), st.none()))
def test_revisions_round_trip_or_fail_cleanly(value):
    try:
        revision = hf_hub.normalize_revision(value)
    except hf_hub.HubError as exc:
        assert exc.kind == hf_hub.BAD_INPUT and exc.message.startswith("revision: ")
        return
    assert revision == value.strip() and hf_hub.normalize_revision(revision) == revision
    assert revision and revision[0] not in "-./" and all(ord(ch) < 128 and not ch.isspace() for ch in revision)
    # A revision goes into a URL path quoted whole: nothing can escape it.
    assert "/" not in hf_hub.revision_url("http://h", "a/b", revision).split("/revision/", 1)[1]


@SETTINGS
@given(value=st.one_of(ANY_TEXT, st.text(alphabet="htps:/[]@:.0123456789abc ", max_size=40), st.none()))
def test_endpoints_are_checked_without_exceptions(value):
    problem = hf_hub.validate_endpoint(value)
    if problem is None:
        assert hf_hub.origin(value.strip()) is not None
        assert hf_hub.same_origin(value.strip(), value.strip())
    else:
        with pytest.raises(hf_hub.HubError):
            hf_hub.normalize_endpoint(value)
    assert isinstance(hf_hub.display_endpoint(value), str)


SEGMENTS = st.sampled_from(["a", "b.json", "..", ".", "", "out", "in", "loop", "\\", "..\\..", "\x00", "\u00e9",
                            "sub", "/", " ", ".cache"])


@pytest.fixture(scope="module")
def base_with_links(tmp_path_factory):
    top = tmp_path_factory.mktemp("join")
    base = top / "model"
    (base / "sub" / "deeper").mkdir(parents=True)
    (top / "outside").mkdir()
    os.symlink(str(top / "outside"), str(base / "out"))          # leaves the base
    os.symlink("sub", str(base / "in"))                          # stays inside
    os.symlink("../../outside", str(base / "sub" / "up"))        # leaves, from below
    os.symlink("loop", str(base / "loop"))                       # a loop
    return str(base)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(SEGMENTS, min_size=0, max_size=6), joiner=st.sampled_from(["/", "\\", "//"]))
def test_safe_join_never_leaves_the_base(base_with_links, parts, joiner):
    relpath = joiner.join(parts)
    try:
        joined = hf_local.safe_join(base_with_links, relpath)
    except hf_local.PathError:
        return
    real_base = os.path.realpath(base_with_links)
    real = os.path.realpath(joined)
    assert real.startswith(real_base + os.sep)
    assert joined.startswith(base_with_links + os.sep)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(relpath=st.one_of(ANY_TEXT, st.none(), st.integers(), st.binary(max_size=10)))
def test_safe_join_takes_any_value(base_with_links, relpath):
    try:
        joined = hf_local.safe_join(base_with_links, relpath)
    except hf_local.PathError:
        return
    assert os.path.realpath(joined).startswith(os.path.realpath(base_with_links) + os.sep)


@SETTINGS
@given(entries=st.lists(st.fixed_dictionaries({
    "type": st.sampled_from(["file", "directory", None]),
    "path": st.one_of(ANY_TEXT, st.none(), st.integers()),
    "size": st.one_of(st.integers(min_value=-2, max_value=10 ** 12), st.none(), st.booleans(), ANY_TEXT),
    "oid": st.one_of(st.text(alphabet="0123456789abcdef", min_size=40, max_size=40), ANY_TEXT, st.none()),
    "lfs": st.one_of(st.none(), st.fixed_dictionaries({"oid": ANY_TEXT, "size": st.integers()})),
}), max_size=5))
def test_tree_answers_parse_or_fail_cleanly(entries):
    try:
        files = hf_hub.parse_tree(entries)
    except hf_hub.HubError as exc:
        assert exc.kind == hf_hub.BAD_ANSWER
        return
    for item in files:
        hf_local.check_relpath(item["path"])
        assert isinstance(item["size"], int) and item["size"] >= 0
