# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one HTTP client of the modules that talk to a service or router they reach directly (vllm_health,
vllm_serve_drain, llm_router_health): no proxy, ever, and an API key that goes to the URL asked for only (never
carried over a redirect)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible.module_utils.six.moves.http_client import HTTPException
from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.six.moves.urllib.request import ProxyHandler, Request, build_opener

OPENER = build_opener(ProxyHandler({}))
# The most of an answer read, and of an error's body.
MAX_BODY = 1024 * 1024
MAX_ERROR_BODY = 64 * 1024


def _refused(exc):
    reason = getattr(exc, "reason", exc)
    return isinstance(reason, ConnectionRefusedError) or isinstance(exc, ConnectionRefusedError)


def request(url, timeout, method="GET", body=None, key=None, max_body=MAX_BODY):
    """(status, text, error, refused): status 0 when there is no answer, error its reason (or an HTTP error's),
    refused whether the connection was refused. body: JSON to send; key: sent as a Bearer token to url only."""
    headers = {"Content-Type": "application/json"} if body is not None else {}
    data = json.dumps(body).encode("utf-8") if body is not None else None
    req = Request(url, data=data, headers=headers)
    req.get_method = lambda: method
    if key:
        req.add_unredirected_header("Authorization", "Bearer %s" % key)
    try:
        response = OPENER.open(req, timeout=timeout)
        return response.getcode(), response.read(max_body).decode("utf-8", "replace"), "", False
    except HTTPError as exc:
        text = exc.read(MAX_ERROR_BODY).decode("utf-8", "replace") if exc.fp else ""
        return exc.code, text, str(exc.reason or ""), False
    except (URLError, OSError, ValueError, HTTPException) as exc:
        # HTTPException: something that is not an HTTP server answers there (BadStatusLine, IncompleteRead).
        return 0, "", str(getattr(exc, "reason", exc)) or type(exc).__name__, _refused(exc)


def http(method, url, timeout, body=None, key=None):
    """(status, text); status 0 with the reason as text when there is no answer."""
    status, text, error, dummy = request(url, timeout, method=method, body=body, key=key)
    return status, text if status else error
