# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fleet_lock and wheel_index_upload driven through AnsibleModule.

The index is a STAND-IN HTTP server (http.server on 127.0.0.1, a free port)
that answers the two requests the modules make as pypiserver 2.4.2 does: the
simple page of a project with #sha256= links, and the legacy multipart
upload with basic auth (409 for a file it has). pypiserver itself is run by
the molecule scenario fleet_cache.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import hashlib
import json
import os
import threading

import pytest

from ansible.module_utils.six.moves.BaseHTTPServer import BaseHTTPRequestHandler, HTTPServer

from ansible_collections.gpufleet.llm_stack.plugins.modules import fleet_lock, wheel_index_upload

ENTRY = "flash-attn-2.8.3-sm80-ef7beb2c6e35"
TAGGED = "flash_attn-2.8.3-0ef7beb2c6e35-py3-none-any.whl"
PASSWORD = "stand-in-password"


class Index(BaseHTTPRequestHandler):
    files = {}

    def log_message(self, *args):
        pass

    def _send(self, status, text):
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path != "/simple/flash-attn/" or not self.files:
            return self._send(404, "not found")
        links = "".join('<a href="/packages/%s#sha256=%s">%s</a><br>' % (n, hashlib.sha256(d).hexdigest(), n)
                        for n, d in sorted(self.files.items()))
        return self._send(200, "<html><body>%s</body></html>" % links)

    def do_POST(self):
        auth = self.headers.get("Authorization", "")
        if auth != "Basic " + base64.b64encode(("fleet:" + PASSWORD).encode()).decode():
            return self._send(401, "unauthorized")
        body = self.rfile.read(int(self.headers["Content-Length"]))
        marker = b'filename="'
        start = body.index(marker) + len(marker)
        name = body[start:body.index(b'"', start)].decode()
        content = body[body.index(b"\r\n\r\n", start) + 4:]
        content = content[:content.rindex(b"\r\n--")]
        if name in self.files:
            return self._send(409, "exists")
        self.files[name] = content
        return self._send(200, "ok")


@pytest.fixture
def index():
    Index.files = {}
    server = HTTPServer(("127.0.0.1", 0), Index)
    thread = threading.Thread(target=server.serve_forever)
    thread.daemon = True
    thread.start()
    yield "http://127.0.0.1:%d" % server.server_address[1]
    server.shutdown()
    server.server_close()


def lock_args(tmp_path, url, **over):
    args = {"entry": ENTRY, "name": "flash-attn", "lock_dir": str(tmp_path / "locks"),
            "ledger": str(tmp_path / "ledger.jsonl"), "index_url": url}
    args.update(over)
    return args


def test_acquire_build_release_then_install(run_module, tmp_path, index):
    kind, result, _w = run_module(fleet_lock.main, lock_args(tmp_path, index))
    assert kind == "exit" and result["verdict"] == "wait" and result["wheel"] is None and result["now"]
    kind, first, _w = run_module(fleet_lock.main, lock_args(tmp_path, index, state="acquire", may_build=True,
                                                            owner={"host": "a", "job": "1"}))
    assert (first["verdict"], first["acquired"], first["changed"]) == ("build", True, True)
    kind, other, _w = run_module(fleet_lock.main, lock_args(tmp_path, index, state="acquire", may_build=True,
                                                            owner={"host": "b", "job": "2"}))
    assert (other["verdict"], other["acquired"], other["holder"]["host"]) == ("wait", False, "a")
    assert "a holds the lock" in other["msg"]
    # b (job 2) cannot release a's lock, and records nothing
    kind, wrong, _w = run_module(fleet_lock.main, lock_args(tmp_path, index, state="release", owner={"host": "b"},
                                                            record={"result": "built"}))
    assert wrong["released"] is False and not os.path.exists(str(tmp_path / "ledger.jsonl"))
    Index.files[TAGGED] = b"wheel"
    kind, done, _w = run_module(fleet_lock.main, lock_args(tmp_path, index, state="release", owner={"host": "a", "job": "1"},
                                                           record={"result": "built", "started": "x", "wheel": TAGGED}))
    assert done["released"] and done["changed"]
    line = json.loads((tmp_path / "ledger.jsonl").read_text())
    assert (line["build_key"], line["host"], line["job"], line["result"]) == (ENTRY, "a", "1", "built")
    kind, now, _w = run_module(fleet_lock.main, lock_args(tmp_path, index, state="acquire", may_build=False,
                                                          owner={"host": "b"}))
    assert now["verdict"] == "install" and now["wheel"]["filename"] == TAGGED
    assert now["wheel"]["sha256"] == hashlib.sha256(b"wheel").hexdigest()


def test_failure_stops_the_waiters_and_not_a_later_run(run_module, tmp_path, index):
    run_module(fleet_lock.main, lock_args(tmp_path, index, state="acquire", may_build=True, owner={"host": "a"}))
    _k, waiting, _w = run_module(fleet_lock.main, lock_args(tmp_path, index))
    since = "2000-01-01T00:00:00Z"
    run_module(fleet_lock.main, lock_args(tmp_path, index, state="release", owner={"host": "a"},
                                          record={"result": "failed", "tail": ["error: boom"], "log": "/l"}))
    _k, waiter, _w = run_module(fleet_lock.main, lock_args(tmp_path, index, state="acquire", may_build=True,
                                                           owner={"host": "b"}, since=since))
    assert waiter["verdict"] == "fail" and "error: boom" in waiter["msg"] and "failed on a" in waiter["msg"]
    assert waiting["verdict"] == "wait"
    # a later run (since after the failure) builds the key again
    _k, later, _w = run_module(fleet_lock.main, lock_args(tmp_path, index, state="acquire", may_build=True,
                                                          owner={"host": "b"}, since="2999-01-01T00:00:00Z"))
    assert later["verdict"] == "build"


def test_non_builder_without_a_holder_fails(run_module, tmp_path, index):
    _k, result, _w = run_module(fleet_lock.main, lock_args(tmp_path, index, state="acquire", owner={"host": "c"}))
    assert result["verdict"] == "fail" and "failed before the build" in result["msg"]


def test_check_mode_takes_no_lock(run_module, tmp_path, index):
    _k, result, _w = run_module(fleet_lock.main, lock_args(tmp_path, index, state="acquire", may_build=True,
                                                           owner={"host": "a"}, _ansible_check_mode=True))
    assert result["acquired"] is False and not os.path.exists(str(tmp_path / "locks" / ENTRY))


def test_bad_requests(run_module, tmp_path, index):
    kind, result, _w = run_module(fleet_lock.main, lock_args(tmp_path, index, entry="nohash"))
    assert kind == "fail" and "cache entry" in result["msg"]
    kind, result, _w = run_module(fleet_lock.main, lock_args(tmp_path, index, state="acquire"))
    assert kind == "fail" and "owner.host" in result["msg"]
    kind, result, _w = run_module(fleet_lock.main, lock_args(tmp_path, "http://u:p@x:1"))
    assert kind == "fail" and "llm_stack_wheel_index_url" in result["msg"]


@pytest.fixture
def wheel(tmp_path):
    path = tmp_path / TAGGED
    path.write_bytes(b"PK\x03\x04 a wheel")
    return str(path)


def test_upload_then_again_unchanged(run_module, index, wheel):
    args = {"path": wheel, "index_url": index, "username": "fleet", "password": PASSWORD}
    kind, result, _w = run_module(wheel_index_upload.main, args)
    assert kind == "exit" and result["changed"] and Index.files[TAGGED] == b"PK\x03\x04 a wheel"
    kind, again, _w = run_module(wheel_index_upload.main, args)
    assert kind == "exit" and not again["changed"]


def test_upload_password_file_and_refusals(run_module, index, wheel, tmp_path):
    secret = tmp_path / "pw"
    secret.write_text("wrong\n")
    args = {"path": wheel, "index_url": index, "username": "fleet", "password_file": str(secret)}
    kind, result, _w = run_module(wheel_index_upload.main, args)
    assert kind == "fail" and "HTTP 401" in result["msg"]
    Index.files[TAGGED] = b"another build"
    args = {"path": wheel, "index_url": index, "username": "fleet", "password": PASSWORD}
    kind, result, _w = run_module(wheel_index_upload.main, args)
    assert kind == "fail" and "another file named" in result["msg"]


def test_upload_check_mode(run_module, index, wheel):
    args = {"path": wheel, "index_url": index, "username": "fleet", "password": PASSWORD, "_ansible_check_mode": True}
    kind, result, _w = run_module(wheel_index_upload.main, args)
    assert kind == "exit" and result["changed"] and not Index.files
