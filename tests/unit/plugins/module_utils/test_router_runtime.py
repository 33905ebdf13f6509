# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""_router_runtime: HAProxy 2.6's `show servers state` read, the member plan, the health verdict.

The fixture tests/fixtures/llm_router/show-servers-state-2.6.12.txt is a real answer of HAProxy 2.6.12-1+deb12u4
(Debian 12) to `show servers state`, taken with h1_chat set to drain in be_qwen3_chat and to maint in be_any.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _router_runtime as R
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._serve_health import models_listed

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "..", "..", "..", "fixtures", "llm_router", "show-servers-state-2.6.12.txt")


@pytest.fixture
def real_state():
    with open(FIXTURE) as handle:
        return handle.read()


def test_parses_the_real_answer(real_state):
    parsed = R.parse_servers_state(real_state)
    assert parsed["error"] == ""
    rows = dict(((r["backend"], r["server"]), r) for r in parsed["rows"])
    assert len(rows) == 6
    assert rows[("be_qwen3_chat", "h1_chat")]["state"] == "drain"
    assert rows[("be_any", "h1_chat")]["state"] == "maint"
    assert rows[("be_qwen3_chat", "h2_chat")]["state"] == "down"
    assert rows[("be_any", "h2_emb")]["state"] == "ready"
    assert rows[("be_any", "h2_emb")]["op_state"] == "up"
    assert rows[("be_qwen3_chat", "h2_chat")]["port"] == 28202
    assert rows[("be_qwen3_chat", "h2_chat")]["address"] == "127.0.0.1"


@pytest.mark.parametrize("text, words", [
    ("", "empty answer"),
    ("Unknown command\n", "not format version 1"),
    ("2\n# be_id be_name\n", "not format version 1"),
    ("1\n3 be 1 s 1.2.3.4 2 0\n", "no '# be_id"),
    ("1\n# be_id be_name srv_name srv_id srv_addr srv_op_state srv_admin_state\n3 be s 1 a 2 0\n", "has the columns"),
    ("1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state\n3 be 1 s\n", "fewer than"),
    ("1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state\n3 be 1 s a x 0\n", "not a number"),
])
def test_an_answer_that_is_not_the_format_is_an_error(text, words):
    parsed = R.parse_servers_state(text)
    assert parsed["rows"] == [] and words in parsed["error"]


def test_no_backends_is_no_rows():
    text = "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight\n\n"
    assert R.parse_servers_state(text) == {"rows": [], "error": ""}


@pytest.mark.parametrize("op, admin, word", [
    (2, 0, "ready"), (1, 0, "ready"), (3, 0, "ready"), (0, 0, "down"),
    (2, 0x08, "drain"), (0, 0x10, "drain"), (2, 0x01, "maint"), (2, 0x04, "maint"), (0, 0x20, "maint"),
    (2, 0x40, "maint"), (2, 0x09, "maint"),
])
def test_state_words(op, admin, word):
    assert R.state_name(op, admin) == word


def test_plan_sets_each_backend_that_is_not_there_yet(real_state):
    rows = R.parse_servers_state(real_state)["rows"]
    plan = R.member_plan(rows, ["h1_chat", "h2_chat", "gone_chat"], "drain")
    assert plan["commands"] == [
        ("be_any", "h1_chat", "set server be_any/h1_chat state drain"),
        ("be_qwen3_chat", "h2_chat", "set server be_qwen3_chat/h2_chat state drain"),
        ("be_any", "h2_chat", "set server be_any/h2_chat state drain"),
    ]
    assert plan["missing"] == ["gone_chat"]
    h1 = plan["servers"]["h1_chat"]
    assert h1["backends"] == ["be_any", "be_qwen3_chat"]
    assert h1["before"] == "mixed" and h1["after"] == "drain"
    assert h1["states"]["be_any"] == {"before": "maint", "after": "drain"}
    assert plan["servers"]["h2_chat"]["before"] == "down"


def test_plan_for_ready_says_down_where_the_checks_fail(real_state):
    rows = R.parse_servers_state(real_state)["rows"]
    plan = R.member_plan(rows, ["h1_chat", "h2_emb", "h2_emb"], "ready")
    assert [c[2] for c in plan["commands"]] == ["set server be_qwen3_chat/h1_chat state ready",
                                                "set server be_any/h1_chat state ready"]
    assert plan["servers"]["h1_chat"]["after"] == "down"
    # already ready everywhere (down in be_emb: its checks fail there): nothing to send
    assert plan["servers"]["h2_emb"]["before"] == "ready"
    assert plan["missing"] == []


def test_plan_refuses_what_is_no_state_or_name():
    with pytest.raises(ValueError):
        R.member_plan([], ["a"], "up")
    with pytest.raises(ValueError):
        R.set_command("be_a", "s; shutdown", "drain")
    with pytest.raises(ValueError):
        R.set_command("be a", "s", "drain")


def test_apply_after_reads_the_new_rows(real_state):
    rows = R.parse_servers_state(real_state)["rows"]
    plan = R.member_plan(rows, ["h1_chat"], "ready")
    after = [dict(r, state="ready") if r["server"] == "h1_chat" and r["backend"] == "be_any" else r for r in rows]
    servers = R.apply_after(plan, [r for r in after if r["backend"] == "be_any"])
    assert servers["h1_chat"]["states"]["be_any"]["after"] == "ready"
    assert servers["h1_chat"]["states"]["be_qwen3_chat"]["after"] == "gone"
    assert servers["h1_chat"]["after"] == "mixed"


@pytest.mark.parametrize("answer, ok", [("\n", True), ("", True), ("No such server.\n\n", False),
                                        ("No such backend.\n\n", False), ("Permission denied\n", False)])
def test_command_ok(answer, ok):
    assert R.command_ok(answer)[0] is ok


def test_models_listed_and_verdict():
    body = json.dumps({"object": "list", "data": [{"id": "b"}, {"id": "a"}, {"id": "a"}]})
    assert models_listed(body) == ["a", "b"]
    assert models_listed("not json") is None
    assert models_listed('{"data": 3}') is None
    checks = {"models": {"ok": True, "detail": "a, b"}, "completion a": {"ok": True, "detail": "200"},
              "completion b": {"ok": False, "detail": "503"}, "unauthenticated": {"ok": True, "detail": "401"}}
    verdict = R.health_verdict(["b", "a"], checks)
    assert verdict["ok"] is False and verdict["failed"] == ["completion b"]
    assert verdict["summary"].startswith("models: a, b; completion a: 200; completion b: 503")
    assert R.health_verdict(["a"], {})["failed"] == ["models", "completion a", "unauthenticated"]


def test_key_from_lines():
    assert R.key_from_lines("\nBearer  sk-1\nBearer sk-2\n") == "sk-1"
    assert R.key_from_lines("sk-1\n") == ""


def test_debs_to_install():
    debs = {"/d/haproxy_2.6.12-1+deb12u4_amd64.deb": ("haproxy", "2.6.12-1+deb12u4"),
            "/d/liblua5.3-0_5.3.6-2_amd64.deb": ("liblua5.3-0", "5.3.6-2")}
    every = sorted(debs)
    assert R.debs_to_install(debs, {"haproxy": ""}, ["haproxy"])["install"] == every
    assert R.debs_to_install(debs, {"haproxy": "2.6.12-1+deb12u3"}, ["haproxy"])["stale"] == ["haproxy"]
    same = R.debs_to_install(debs, {"haproxy": "2.6.12-1+deb12u4"}, ["haproxy"])
    assert same["install"] == [] and same["problems"] == []
    missing = R.debs_to_install(debs, {}, ["haproxy", "supervisor"])
    assert missing["install"] == [] and "supervisor" in missing["problems"][0]
    assert "llm_router_debs" in missing["problems"][0]
