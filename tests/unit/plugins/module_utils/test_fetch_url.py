# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fetch_url: the download run_logged watches, run for real against servers on 127.0.0.1."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import subprocess
import sys
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import fetch_url as F
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import run_logged as R

try:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
except ImportError:  # pragma: no cover
    pytest.skip("needs Python 3.7+", allow_module_level=True)

BODY = os.urandom(3 * (1 << 20) + 17)


class Server(object):
    """A real HTTP server on 127.0.0.1 that records each request's Authorization header."""

    def __init__(self, body=BODY, redirect_to=None, short=False):
        seen = self.seen = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                seen.append((self.path, self.headers.get("Authorization")))
                if redirect_to:
                    self.send_response(302)
                    self.send_header("Location", redirect_to + self.path)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body[: len(body) // 2] if short else body)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def run(command):
    env = dict(os.environ, **command["environment"])
    env.pop("http_proxy", None)
    env.pop("HTTP_PROXY", None)
    env["no_proxy"] = env["NO_PROXY"] = "127.0.0.1"
    return subprocess.run(command["argv"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=False, timeout=60)


def test_download_writes_the_file_and_progress_run_logged_reads(tmp_path):
    server = Server()
    try:
        dest = str(tmp_path / "cuda.run")
        command = F.fetch_command(sys.executable, server.url + "/cuda.run", dest)
        proc = run(command)
    finally:
        server.close()
    assert proc.returncode == 0, proc.stderr
    with open(dest, "rb") as handle:
        assert handle.read() == BODY
    assert not os.path.exists(dest + ".part")
    transfer = R.progress_of(proc.stdout)["transfer"]
    assert transfer["done"] == transfer["total"] == len(BODY)
    assert command["no_log"] is False


def test_url_credentials_never_on_argv_and_not_sent_to_another_origin(tmp_path):
    other = Server()
    first = Server(redirect_to=other.url)
    try:
        dest = str(tmp_path / "f.run")
        url = first.url.replace("http://", "http://mirror-user:s%40cret@") + "/f.run"
        command = F.fetch_command(sys.executable, url, dest)
        proc = run(command)
    finally:
        first.close()
        other.close()
    assert proc.returncode == 0, proc.stderr
    assert not any("s%40cret" in arg or "mirror-user" in arg for arg in command["argv"])
    assert command["no_log"] is True
    assert command["shown_url"] == first.url + "/f.run"
    # Basic auth to the mirror's own origin, nothing to the origin it redirected to.
    assert first.seen[0][1] == "Basic bWlycm9yLXVzZXI6c0BjcmV0"
    assert other.seen == [("/f.run", None)]
    assert "s@cret" not in proc.stdout + proc.stderr and "mirror-user" not in proc.stdout


def test_a_short_body_leaves_no_file_that_looks_complete(tmp_path):
    server = Server(short=True)
    try:
        dest = str(tmp_path / "cuda.run")
        proc = run(F.fetch_command(sys.executable, server.url + "/cuda.run", dest))
    finally:
        server.close()
    assert proc.returncode != 0
    assert not os.path.exists(dest)


@pytest.mark.parametrize("url, dest, msg", [
    ("", "/x", "empty"),
    ("ftp://host/x", "/x", "not an http"),
    ("http:///x", "/x", "not an http"),
    ("http://h/x\nHost: evil", "/x", "line break"),
    ("http://h/x", "relative", "absolute path"),
    ("http://h/x", "/a\nb", "absolute path"),
])
def test_bad_input_is_refused(url, dest, msg):
    with pytest.raises(F.FetchError, match=msg):
        F.fetch_command("python3", url, dest)


def test_refusal_never_echoes_credentials():
    with pytest.raises(F.FetchError) as err:
        F.fetch_command("python3", "gopher://u:topsecret@h/x", "/x")
    assert "topsecret" not in str(err.value)


@settings(max_examples=80)
@given(st.text(alphabet="abcXYZ019-._~%!$&'()*+,;=:", min_size=1, max_size=12),
       st.text(alphabet="abcXYZ019-._~%!$&'()*+,;=", min_size=1, max_size=12))
def test_credentials_stay_in_the_environment(user, password):
    url = "https://%s:%s@mirror.example/cuda.run" % (user, password)
    command = F.fetch_command("python3", url, "/var/cache/cuda.run")
    assert command["environment"] == {F.ENV_URL: url}
    assert command["argv"][-1] == "/var/cache/cuda.run"
    assert command["shown_url"] == "https://mirror.example/cuda.run"
    assert command["no_log"] is True


# The call module_utils/cuda_toolkit.py makes for the cuda_toolkit_state module.

def test_fetch_command_returns_the_run_logged_command():
    cmd = F.fetch_command("python3", "https://u:p@mirror/cuda.run", "/var/cache/cuda.run")
    assert cmd["argv"][0] == "python3" and cmd["argv"][-1] == "/var/cache/cuda.run"
    assert cmd["environment"] == {"LLM_STACK_FETCH_URL": "https://u:p@mirror/cuda.run"}
    assert cmd["no_log"] is True


def test_fetch_command_of_a_relative_dest_is_refused():
    with pytest.raises(F.FetchError, match="absolute path"):
        F.fetch_command("python3", "https://mirror/cuda.run", "cuda.run")
