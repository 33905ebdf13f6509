# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""local_http, the gates' and the drain's one HTTP client: whatever answers on the port (an HTTP server, an error,
nothing, something that does not speak HTTP), it returns a status and a reason and never raises; the key goes to the
URL asked for only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import socket
import threading

import pytest

from ansible.module_utils.six.moves.BaseHTTPServer import BaseHTTPRequestHandler, HTTPServer

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import local_http


class Answer(BaseHTTPRequestHandler):
    seen = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.seen.append((self.path, self.headers.get("Authorization")))
        if self.path == "/moved":
            self.send_response(302)
            self.send_header("Location", "/health")
            self.end_headers()
            return
        status = 200 if self.path == "/health" else 503
        data = b"ok" if status == 200 else b"starting"
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def server():
    Answer.seen = []
    httpd = HTTPServer(("127.0.0.1", 0), Answer)
    thread = threading.Thread(target=httpd.serve_forever)
    thread.daemon = True
    thread.start()
    yield "http://127.0.0.1:%d" % httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def not_http():
    """A listener that answers a line that is not HTTP, as another service on the port would."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(4)

    def serve():
        while True:
            try:
                conn, dummy = sock.accept()
            except OSError:
                return
            conn.recv(4096)
            conn.sendall(b"Unknown command\r\n")
            conn.close()
    thread = threading.Thread(target=serve)
    thread.daemon = True
    thread.start()
    yield "http://127.0.0.1:%d" % sock.getsockname()[1]
    sock.close()


def test_answers_and_errors(server):
    assert local_http.http("GET", server + "/health", 5) == (200, "ok")
    assert local_http.http("GET", server + "/v1/models", 5) == (503, "starting")


def test_the_key_is_not_carried_over_a_redirect(server):
    assert local_http.http("GET", server + "/moved", 5, key="sk-secret") == (200, "ok")
    assert Answer.seen == [("/moved", "Bearer sk-secret"), ("/health", None)]


def test_nothing_listening_is_refused():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    status, text, error, refused = local_http.request("http://127.0.0.1:%d/health" % port, 5)
    assert (status, text, refused) == (0, "", True) and error


def test_a_listener_that_is_not_http_is_no_answer(not_http):
    status, text, error, refused = local_http.request(not_http + "/health", 5)
    assert (status, text, refused) == (0, "", False)
    assert error
