# -*- coding: utf-8 -*-
"""hf_model_info against a fake hub: real HTTP servers on 127.0.0.1, one the endpoint, one another origin.

The other origin records every request it gets, so the tests show that the
token (and the endpoint's user:password) never reach it, whatever the
endpoint answers: redirects to it, or Link headers pointing at it.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import threading

import pytest

try:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
except ImportError:  # pragma: no cover - Python 2 is not supported by the collection
    pytest.skip("needs Python 3", allow_module_level=True)

from ansible_collections.gpufleet.llm_stack.plugins.modules import hf_model_info

TOKEN = "hf_fakeHubTokenThatMustStayHome0123456789"
REPO = "Qwen/Qwen3.5-0.8B"
SHA = "b793f2c2f4561216306b1de00763201a1ee10381"
REVISION_PATH = "/api/models/%s/revision/main" % REPO
TREE_PATH = "/api/models/%s/tree/%s/?recursive=true&expand=false" % (REPO, SHA)
PAGE_2_PATH = "/api/models/%s/tree/%s?recursive=true&cursor=p2" % (REPO, SHA)
REVISION = {"id": REPO, "sha": SHA, "gated": False}
PAGE_1 = [{"type": "file", "path": "config.json", "size": 10, "oid": "aa" * 20}]
PAGE_2 = [{"type": "file", "path": "model.safetensors", "size": 20, "oid": "bb" * 20,
           "lfs": {"oid": "cc" * 32, "size": 20}}]


class Handler(BaseHTTPRequestHandler):
    def _answer(self):
        server = self.server
        server.requests.append({"method": self.command, "path": self.path, "headers": dict(self.headers.items())})
        status, headers, body = server.routes.get((self.command, self.path), (404, {}, {"error": "not here"}))
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = _answer
    do_HEAD = _answer

    def log_message(self, *args):  # keep the test output quiet
        pass


class Origin(object):
    def __init__(self):
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.routes = {}
        self.server.requests = []
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05})
        self.thread.daemon = True
        self.thread.start()

    @property
    def routes(self):
        return self.server.routes

    @property
    def requests(self):
        return self.server.requests

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def origins():
    home, other = Origin(), Origin()
    yield home, other
    home.close()
    other.close()


def assert_nothing_secret_reached(other, password=None):
    for seen in other.requests:
        text = json.dumps(seen)
        assert TOKEN not in text
        assert not any(name.lower() == "authorization" for name in seen["headers"])
        if password:
            assert password not in text


def run_info(run_module, endpoint, **extra):
    args = {"repo_id": REPO, "endpoint": endpoint, "token": TOKEN, "timeout": 10}
    args.update(extra)
    return run_module(hf_model_info.main, args)


def test_redirect_to_another_origin_is_followed_without_the_token(run_module, origins):
    home, other = origins
    home.routes[("GET", REVISION_PATH)] = (302, {"Location": other.url + REVISION_PATH}, b"")
    other.routes[("GET", REVISION_PATH)] = (200, {}, REVISION)
    home.routes[("GET", TREE_PATH)] = (200, {"Link": '<%s>; rel="next"' % (home.url + PAGE_2_PATH)}, PAGE_1)
    home.routes[("GET", PAGE_2_PATH)] = (200, {}, PAGE_2)
    kind, result, _w = run_info(run_module, home.url)
    assert kind == "exit", result
    assert result["commit"] == SHA and [f["path"] for f in result["files"]] == ["config.json", "model.safetensors"]
    assert [r["path"] for r in other.requests] == [REVISION_PATH]
    assert_nothing_secret_reached(other)
    # Every request to the endpoint itself carried the token.
    assert [r["path"] for r in home.requests] == [REVISION_PATH, TREE_PATH, PAGE_2_PATH]
    assert all(r["headers"].get("Authorization") == "Bearer " + TOKEN for r in home.requests)


def test_next_page_on_another_origin_is_refused(run_module, origins):
    home, other = origins
    home.routes[("GET", REVISION_PATH)] = (200, {}, REVISION)
    home.routes[("GET", TREE_PATH)] = (200, {"Link": '<%s>; rel="next"' % (other.url + PAGE_2_PATH)}, PAGE_1)
    other.routes[("GET", PAGE_2_PATH)] = (200, {}, PAGE_2)
    kind, result, _w = run_info(run_module, home.url)
    assert kind == "fail" and result["error"] == "bad_answer"
    assert "another origin (%s)" % other.url in result["msg"]
    assert other.requests == []
    assert TOKEN not in json.dumps(result)


def test_tree_redirect_to_another_origin_and_back(run_module, origins):
    home, other = origins
    home.routes[("GET", REVISION_PATH)] = (200, {}, REVISION)
    home.routes[("GET", TREE_PATH)] = (307, {"Location": other.url + "/bounce"}, b"")
    other.routes[("GET", "/bounce")] = (302, {"Location": home.url + "/tree-moved"}, b"")
    home.routes[("GET", "/tree-moved")] = (200, {}, PAGE_1)
    kind, result, _w = run_info(run_module, home.url)
    assert kind == "exit", result
    assert [r["path"] for r in other.requests] == ["/bounce"]
    assert_nothing_secret_reached(other)
    back = [r for r in home.requests if r["path"] == "/tree-moved"][0]
    assert back["headers"].get("Authorization") == "Bearer " + TOKEN


def test_endpoint_password_stays_home_too(run_module, origins):
    home, other = origins
    endpoint = home.url.replace("http://", "http://bob:pw-5up3r@")
    home.routes[("GET", REVISION_PATH)] = (302, {"Location": other.url + REVISION_PATH}, b"")
    other.routes[("GET", REVISION_PATH)] = (401, {"WWW-Authenticate": 'Basic realm="x"'}, {"error": "who?"})
    other.routes[("GET", "/api/models/%s" % REPO)] = (401, {"WWW-Authenticate": 'Basic realm="x"'}, {"error": "who?"})
    home.routes[("GET", "/api/models/%s" % REPO)] = (302, {"Location": other.url + "/api/models/%s" % REPO}, b"")
    kind, result, _w = run_info(run_module, endpoint)
    assert kind == "fail"
    assert other.requests and len(other.requests) <= 4
    assert_nothing_secret_reached(other, password="pw-5up3r")
    assert "pw-5up3r" not in json.dumps(result) and result["endpoint"] == "http://***@" + home.url[len("http://"):]


def test_gated_probe_does_not_follow_the_file_redirect(run_module, origins):
    home, other = origins
    home.routes[("GET", REVISION_PATH)] = (200, {}, dict(REVISION, gated="auto"))
    home.routes[("GET", TREE_PATH)] = (200, {}, PAGE_1)
    home.routes[("HEAD", "/%s/resolve/%s/config.json" % (REPO, SHA))] = (
        302, {"Location": other.url + "/cdn/config.json"}, b"")
    kind, result, _w = run_info(run_module, home.url)
    assert kind == "exit" and result["gated"] is True
    assert other.requests == []
