# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: the health gate's verdict and its readings of the server's answers: part of vllm_serve,
which re-exports these names."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpufleet.llm_stack.plugins.module_utils._readers import as_dict as _dict, text as _text


def verdict(checks, order):
    """{ok, failed: [names], summary} of checks (name -> {ok, detail}), in the order of the names given."""
    checks = _dict(checks)
    failed = [name for name in order if not _dict(checks.get(name)).get("ok")]
    details = ["%s: %s" % (name, _dict(checks.get(name)).get("detail") or "not reached") for name in order]
    return {"ok": not failed, "failed": failed, "summary": "; ".join(details)}


def health_verdict(checks):
    """The gate's verdict from its checks: {ok, failed: [names], summary}.

    checks: dict of name -> {ok, detail}; the names are health, models,
    completion, unauthenticated.
    """
    return verdict(checks, ("health", "models", "completion", "unauthenticated"))


def headless_verdict(checks):
    """A headless node's verdict (vllm_health's headless gate): checks node (its service runs) and head (the head's
    /health answers 200)."""
    return verdict(checks, ("node", "head"))


def models_listed(body):
    """The ids a /v1/models answer lists, or None when it is not one."""
    try:
        data = json.loads(body)
    except (TypeError, ValueError):
        return None
    entries = _dict(data).get("data")
    if not isinstance(entries, list):
        return None
    return sorted(set(_text(_dict(entry).get("id")) for entry in entries if _dict(entry).get("id")))


def models_lists(body, served):
    """True when a /v1/models answer lists the served name."""
    return served in (models_listed(body) or [])


def completion_ok(body):
    """(ok, detail) for a /v1/completions answer: at least one choice with text."""
    try:
        data = json.loads(body)
    except (TypeError, ValueError):
        return False, "the answer is not JSON"
    choices = _dict(data).get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(_dict(choices[0]).get("text"), str):
        return False, "the answer has no choices"
    usage = _dict(_dict(data).get("usage"))
    return True, "%s completion token(s)" % usage.get("completion_tokens", "?")
