#!/usr/bin/env python
"""TEST-ONLY: a hub mirror that serves other bytes than the hub, and lists them consistently.

It stands between the hosts and the fleet's mirror on 127.0.0.1 and passes
every request through, but for one file of one repository: its body has one
byte changed (same size, so the hf client's size check passes), and the
repository's file list (``/api/models/ORG/NAME/tree/REV``) gives that file
the sha256 of the changed bytes. A host that takes the expected hashes from
the endpoint it downloads through accepts the file; one that takes them from
the hub (the controller's reading, qwen_model_fetch_upstream_endpoint)
refuses it. Nothing it receives is logged (the token passes through it).

Usage:
  tamper_proxy.py start --fixture DIR --port PORT --upstream URL [--ca FILE] --repo ORG/NAME --path FILE
  tamper_proxy.py stop --fixture DIR
(pid in DIR/tamper.pid)
"""

import argparse
import hashlib
import json
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote, urlsplit

HOP = ("connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding", "host",
       "accept-encoding", "proxy-connection", "te", "trailer", "upgrade")


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def tamper(data, offset=0, total=None):
    """data with the byte at the middle of the whole file (total bytes) flipped, when it is in this part."""
    total = len(data) if total is None else total
    middle = total // 2
    if total and offset <= middle < offset + len(data):
        data = bytearray(data)
        data[middle - offset] ^= 0xFF
        return bytes(data)
    return data


def make_handler(upstream, context, repo, target):
    opener = urllib.request.build_opener(NoRedirect, urllib.request.HTTPSHandler(context=context))
    resolve_prefix = "/%s/resolve/" % repo
    tree_prefix = "/api/models/%s/tree/" % repo

    def fetch(path, method="GET", headers=None):
        request = urllib.request.Request(upstream + path, method=method, headers=headers or {})
        try:
            response = opener.open(request, timeout=120)
            return response.status, response.headers, response.read() if method != "HEAD" else b""
        except urllib.error.HTTPError as exc:
            return exc.code, exc.headers, exc.read() if method != "HEAD" else b""

    def tampered_sha256(revision):
        status, _headers, data = fetch("%s%s/%s" % (resolve_prefix, revision, quote(target)))
        if status != 200:
            return None
        return hashlib.sha256(tamper(data)).hexdigest()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_HEAD(self):
            self.forward()

        def do_GET(self):
            self.forward()

        def forward(self):
            headers = dict((k, v) for k, v in self.headers.items() if k.lower() not in HOP)
            status, answer, body = fetch(self.path, self.command, headers)
            path = urlsplit(self.path).path
            if self.command == "GET" and status in (200, 206) and path.startswith(resolve_prefix) \
                    and path.endswith("/" + target):
                offset, total = 0, None
                if status == 206:
                    span, _sep, whole = (answer.get("Content-Range") or "").replace("bytes ", "").partition("/")
                    offset, total = int(span.split("-")[0]), int(whole)
                body = tamper(body, offset, total)
            elif self.command == "GET" and status == 200 and path.startswith(tree_prefix):
                revision = path[len(tree_prefix):].strip("/").split("/")[0]
                files = json.loads(body)
                for item in files:
                    if item.get("path") == target and isinstance(item.get("lfs"), dict):
                        item["lfs"]["oid"] = tampered_sha256(revision)
                body = json.dumps(files).encode()
            self.send_response(status)
            for key, value in answer.items():
                if key.lower() in HOP:
                    continue
                if key.lower() in ("location", "link"):
                    value = value.replace(upstream, "http://%s:%d" % self.server.server_address[:2])
                self.send_header(key, value)
            # A HEAD answer carries the length the GET would have (the hub client reads a file's size from it).
            length = answer.get("Content-Length") if self.command == "HEAD" else None
            self.send_header("Content-Length", length if length is not None else str(len(body)))
            self.end_headers()
            if self.command == "GET":
                self.wfile.write(body)

    return Handler


def serve(port, upstream, ca, repo, target):
    context = ssl.create_default_context(cafile=ca) if ca else ssl.create_default_context()
    server = ThreadingHTTPServer(("127.0.0.1", port), make_handler(upstream.rstrip("/"), context, repo, target))
    server.serve_forever()


def read_pid(pidfile):
    try:
        with open(pidfile, encoding="utf-8") as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return None


def start(args):
    pidfile = os.path.join(args.fixture, "tamper.pid")
    stop(args.fixture)
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "serve", "--port", str(args.port),
                             "--upstream", args.upstream, "--ca", args.ca or "", "--repo", args.repo, "--path", args.path],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    with open(pidfile, "w", encoding="utf-8") as handle:
        handle.write("%d\n" % proc.pid)
    for _attempt in range(100):
        if proc.poll() is not None:
            sys.exit("the tampering proxy exited at once (rc %s)" % proc.returncode)
        try:
            urllib.request.urlopen("http://127.0.0.1:%d/api/models/%s" % (args.port, args.repo), timeout=5)
            break
        except urllib.error.HTTPError:
            break
        except (urllib.error.URLError, OSError):
            time.sleep(0.1)
    print("tampering proxy on 127.0.0.1:%d in front of %s, pid %d" % (args.port, args.upstream, proc.pid))


def stop(fixture):
    pidfile = os.path.join(fixture, "tamper.pid")
    pid = read_pid(pidfile)
    if pid:
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as handle:
                ours = os.path.basename(__file__).encode() in handle.read()
        except OSError:
            ours = False
        if ours:
            os.kill(pid, signal.SIGTERM)
    if os.path.exists(pidfile):
        os.unlink(pidfile)


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    for name in ("start", "serve"):
        cmd = sub.add_parser(name)
        cmd.add_argument("--fixture")
        cmd.add_argument("--port", type=int, required=True)
        cmd.add_argument("--upstream", required=True)
        cmd.add_argument("--ca", default="")
        cmd.add_argument("--repo", required=True)
        cmd.add_argument("--path", required=True)
    sub.add_parser("stop").add_argument("--fixture", required=True)
    args = parser.parse_args()
    if args.cmd == "start":
        start(args)
    elif args.cmd == "serve":
        serve(args.port, args.upstream, args.ca, args.repo, args.path)
    else:
        stop(args.fixture)


if __name__ == "__main__":
    main()
