#!/usr/bin/env python
"""TEST ONLY: the AWX test fleet's package index and file server on 127.0.0.1, standing in for a fleet's internal mirrors.

A real fleet installs torch, the build tools and the Hugging Face clients
from an index (PyPI, PyTorch's, or an internal mirror of them) and fetches
the CUDA runfile from a URL or its own mirror; an AWX execution environment
carries no wheelhouse. The test hosts have no internet, so this serves the
controller's fixtures the same way:
  /simple/<project>/     a PEP 503 simple index of every wheel and sdist of
                         the given directories (static pages, sha256 in the links);
                         --simple cpu serves it at /cpu/<project>/, as PyTorch's
                         index serves a build's (the package proxy's stand-in upstream)
  /files/<dir>/<file>    the files themselves (the CUDA runfile among them)
with Python's http.server (one process, pid in DIR/index.pid, log in DIR/index.log).

Usage:
  file_index.py start --root DIR --port PORT [--simple PATH] --source NAME=SRC_DIR [--source NAME=SRC_DIR ...]
  file_index.py stop --root DIR
"""

import argparse
import hashlib
import html
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

PACKAGE_SUFFIXES = (".whl", ".tar.gz", ".zip")


def project_name(filename):
    """The normalized project name of a wheel or sdist file name (PEP 503)."""
    if filename.endswith(".whl"):
        name = filename.split("-")[0]
    else:
        stem = re.sub(r"\.(tar\.gz|zip)$", "", filename)
        name = stem.rsplit("-", 1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def build(root, sources, simple_path="simple"):
    """Write root/files/<name> -> source links and the static simple index under root/<simple_path>/; return the
    project count."""
    files_dir = os.path.join(root, "files")
    simple = os.path.join(root, simple_path)
    shutil.rmtree(files_dir, ignore_errors=True)
    shutil.rmtree(simple, ignore_errors=True)
    os.makedirs(files_dir)
    projects = {}
    listed = set()
    for name, src in sources:
        os.symlink(os.path.abspath(src), os.path.join(files_dir, name))
        for filename in sorted(os.listdir(src)):
            # A file in two sources is listed once, from the first (an index names each file once).
            if filename.endswith(PACKAGE_SUFFIXES) and filename not in listed:
                listed.add(filename)
                projects.setdefault(project_name(filename), []).append((name, filename))
    for project, entries in projects.items():
        os.makedirs(os.path.join(simple, project))
        links = "".join(
            '<a href="../../files/%s/%s#sha256=%s">%s</a><br>\n' % (
                name, filename, sha256(os.path.join(root, "files", name, filename)), html.escape(filename))
            for name, filename in sorted(entries))
        with open(os.path.join(simple, project, "index.html"), "w", encoding="utf-8") as handle:
            handle.write("<!DOCTYPE html>\n<html><body>\n%s</body></html>\n" % links)
    with open(os.path.join(simple, "index.html"), "w", encoding="utf-8") as handle:
        handle.write("<!DOCTYPE html>\n<html><body>\n%s</body></html>\n" % "".join(
            '<a href="%s/">%s</a><br>\n' % (p, p) for p in sorted(projects)))
    return len(projects)


def read_pid(root):
    try:
        with open(os.path.join(root, "index.pid"), encoding="utf-8") as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return None


def is_ours(pid, root):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            argv = handle.read().split(b"\0")
    except OSError:
        return False
    return b"http.server" in argv and os.path.abspath(root).encode() in argv


def stop(root):
    pid = read_pid(root)
    if pid and is_ours(pid, root):
        os.kill(pid, signal.SIGTERM)
        for _attempt in range(50):
            if not is_ours(pid, root):
                break
            time.sleep(0.1)
        else:
            os.kill(pid, signal.SIGKILL)
        print("stopped the test index (pid %d)" % pid)
    if os.path.exists(os.path.join(root, "index.pid")):
        os.unlink(os.path.join(root, "index.pid"))


def port_free(port):
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        probe.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        probe.close()


def start(root, port, sources, simple_path="simple"):
    stop(root)
    os.makedirs(root, exist_ok=True)
    if not port_free(port):
        sys.stderr.write("127.0.0.1:%d is already in use by another process; stop it or pick another port\n" % port)
        return 1
    count = build(root, sources, simple_path)
    with open(os.path.join(root, "index.log"), "wb") as log, open(os.devnull, "rb") as devnull:
        proc = subprocess.Popen(  # pylint: disable=consider-using-with
            [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory",
             os.path.abspath(root)],
            stdin=devnull, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    with open(os.path.join(root, "index.pid"), "w", encoding="utf-8") as handle:
        handle.write("%d\n" % proc.pid)
    url = "http://127.0.0.1:%d/%s/" % (port, simple_path)
    for _attempt in range(100):
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200 and proc.poll() is None:
                    print("test index on %s (pid %d): %d projects from %s" % (
                        url, proc.pid, count, ", ".join("%s=%s" % s for s in sources)))
                    return 0
        except (urllib.error.URLError, OSError):
            pass
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    stop(root)
    sys.stderr.write("the test index did not come up on 127.0.0.1:%d\n" % port)
    return 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["start", "stop"])
    parser.add_argument("--root", required=True)
    parser.add_argument("--port", type=int, default=28960)
    parser.add_argument("--source", action="append", default=[], help="NAME=DIR, served under /files/NAME/")
    parser.add_argument("--simple", default="simple", help="the simple index's path (PyTorch's index: its build, cpu)")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    if args.action == "stop":
        stop(root)
        return 0
    sources = []
    for item in args.source:
        name, _sep, src = item.partition("=")
        if not name or not os.path.isdir(src):
            parser.error("%s: want NAME=DIR of an existing directory" % item)
        sources.append((name, src))
    if not re.match(r"^[a-z0-9][a-z0-9.]*$", args.simple):
        parser.error("--simple %s: want one path component such as simple or cpu" % args.simple)
    return start(root, args.port, sources, args.simple)


if __name__ == "__main__":
    sys.exit(main())
