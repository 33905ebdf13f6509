# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""make matrix's command (tests/matrix/refresh.py): the index over HTTP with Range requests, on a local server;
--check and the rewrite of the generated block, on a copy of compat_matrix.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import io
import json
import os
import re
import shutil
import sys
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
RECORDED = os.path.join(REPO, "tests", "fixtures", "matrix-index")
sys.path.insert(0, os.path.join(REPO, "tests", "matrix"))

import refresh  # noqa: E402  pylint: disable=wrong-import-position

METADATA = "Metadata-Version: 2.4\nName: demo\nVersion: 1.0\nRequires-Dist: torch==2.10.0\n\nText.\n"


def demo_wheel():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("demo/data.bin", bytes(range(256)) * 1200, compress_type=zipfile.ZIP_STORED)
        archive.writestr("demo-1.0.dist-info/METADATA", METADATA)
        archive.writestr("demo-1.0.dist-info/RECORD", "")
    return buffer.getvalue()


class Handler(BaseHTTPRequestHandler):
    wheel = demo_wheel()
    ranges = True
    seen = []

    def log_message(self, *args):  # pylint: disable=arguments-differ
        pass

    def do_HEAD(self):  # pylint: disable=invalid-name
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.wheel)))
        self.end_headers()

    def do_GET(self):  # pylint: disable=invalid-name
        self.seen.append((self.path, self.headers.get("Range")))
        if self.path == "/simple/demo/":
            body = json.dumps({"meta": {"api-version": "1.1"}, "name": "demo", "versions": ["1.0"], "files": [
                {"filename": "demo-1.0-py3-none-any.whl", "url": "../../files/demo-1.0-py3-none-any.whl",
                 "hashes": {}, "yanked": False}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", refresh.JSON_TYPE)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        match = re.fullmatch(r"bytes=([0-9]+)-([0-9]+)", self.headers.get("Range") or "")
        if not match or not self.ranges:
            self.send_response(200)
            self.send_header("Content-Length", str(len(self.wheel)))
            self.end_headers()
            self.wfile.write(self.wheel)
            return
        start, end = int(match.group(1)), min(int(match.group(2)), len(self.wheel) - 1)
        self.send_response(206)
        self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, len(self.wheel)))
        self.send_header("Content-Length", str(end - start + 1))
        self.end_headers()
        self.wfile.write(self.wheel[start:end + 1])


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    Handler.seen = []
    Handler.ranges = True
    yield "http://127.0.0.1:%d/simple" % httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def test_the_index_reads_metadata_in_ranges(server):
    index = refresh.HttpIndex(server)
    listing = index.listing("demo")
    entry = listing["files"][0]
    assert "size" not in entry
    assert index.metadata("demo", entry) == METADATA
    ranges = [r for path, r in Handler.seen if path.startswith("/files/")]
    assert len(ranges) == 2 and all(ranges), Handler.seen
    wheel_size = len(Handler.wheel)
    assert sum(int(r.split("-")[1]) - int(r.split("=")[1].split("-")[0]) + 1 for r in ranges) < wheel_size


def test_a_file_host_without_ranges_is_refused(server):
    Handler.ranges = False
    index = refresh.HttpIndex(server)
    entry = index.listing("demo")["files"][0]
    with pytest.raises(refresh.R.RefreshError, match="must answer Range requests"):
        index.metadata("demo", entry)


def test_check_and_rewrite_change_only_the_block(tmp_path, monkeypatch, capsys):
    copy = tmp_path / "compat_matrix.py"
    shutil.copy(refresh.MATRIX_PATH, str(copy))
    monkeypatch.setattr(refresh, "MATRIX_PATH", str(copy))
    assert refresh.main(["--check", "--from", RECORDED]) == 0
    original = copy.read_text()
    stale = original.replace('    "0.34.0": {', '    "0.34.1": {')
    copy.write_text(stale)
    assert refresh.main(["--check", "--from", RECORDED]) == 1
    out = capsys.readouterr()
    assert '-    "0.34.1": {' in out.out and '+    "0.34.0": {' in out.out and "run make matrix" in out.err
    assert copy.read_text() == stale
    assert refresh.main(["--from", RECORDED]) == 0
    assert copy.read_text() == original
    # recorded again from the recording, the same fixtures come out
    again = tmp_path / "again"
    assert refresh.main(["--check", "--from", RECORDED, "--record", str(again)]) == 0
    for sub in ("simple", "metadata"):
        assert sorted(os.listdir(str(again / sub))) == sorted(os.listdir(os.path.join(RECORDED, sub)))
        for name in os.listdir(str(again / sub)):
            with open(str(again / sub / name), "rb") as mine, open(os.path.join(RECORDED, sub, name), "rb") as theirs:
                assert mine.read() == theirs.read(), name


def test_an_index_that_cannot_be_read_is_a_clear_error(tmp_path, capsys):
    assert refresh.main(["--check", "--from", str(tmp_path)]) == 2
    assert "make matrix:" in capsys.readouterr().err
