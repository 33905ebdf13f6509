# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A download that run_logged can watch: the command, and the small program it runs on the host.

``fetch_command(python, url, dest)`` returns the ``argv`` and ``environment``
of a run_logged task that downloads ``url`` to ``dest`` with the host's
Python (the one Ansible uses there, so nothing else is needed on the host):

* the URL travels in the environment (``LLM_STACK_FETCH_URL``), never on the
  command line, so a mirror's ``user:password@`` stays out of ``ps`` and of
  the log; the credentials go in an ``Authorization`` header that urllib does
  not carry over a redirect to another origin;
* the program writes ``dest.part`` and renames it to ``dest`` only when the
  whole body arrived (the size the server announced), so an interrupted
  download never leaves a file that looks complete;
* it prints ``Progress <done> of <total> bytes`` lines, the form run_logged's
  progress parser reads (``module_utils/run_logged.progress_of``), about every
  two seconds.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

try:
    from urllib.parse import urlsplit
except ImportError:  # pragma: no cover - Python 2 is not a target
    from urlparse import urlsplit  # type: ignore

ENV_URL = "LLM_STACK_FETCH_URL"

# Runs on the host as ``python -c SCRIPT DEST``, a program of its own (no
# Ansible code is there to import); Python 3.6 or newer, standard library only.
SCRIPT = r'''
import base64, os, sys, time
from urllib.parse import unquote, urlsplit, urlunsplit
from urllib.request import Request, build_opener
url, dest = os.environ["LLM_STACK_FETCH_URL"], sys.argv[1]
parts = urlsplit(url)
netloc = parts.netloc.rpartition("@")[2]
req = Request(urlunsplit((parts.scheme, netloc, parts.path, parts.query, "")))
if "@" in parts.netloc:
    cred = "%s:%s" % (unquote(parts.username or ""), unquote(parts.password or ""))
    req.add_unredirected_header("Authorization", "Basic " + base64.b64encode(cred.encode()).decode())
shown = "%s://%s%s" % (parts.scheme, netloc, parts.path)
part = dest + ".part"
with build_opener().open(req, timeout=60) as resp:
    total = int(resp.headers.get("Content-Length") or 0) or None
    print("Fetching %s (%s bytes)" % (shown, total if total else "unknown"), flush=True)
    done, last = 0, 0.0
    with open(part, "wb") as out:
        while True:
            chunk = resp.read(1 << 20)
            if not chunk:
                break
            out.write(chunk)
            done += len(chunk)
            if time.monotonic() - last >= 2:
                last = time.monotonic()
                print("Progress %d of %s bytes" % (done, total if total else "?"), flush=True)
if total is not None and done != total:
    sys.exit("%s ended after %d of %d bytes; run again to fetch it again" % (shown, done, total))
os.replace(part, dest)
print("Progress %d of %d bytes" % (done, done), flush=True)
print("Saved %s (%d bytes)" % (dest, done), flush=True)
'''


class FetchError(ValueError):
    """Bad input for fetch_command."""


def fetch_command(python, url, dest):
    """{argv, environment, no_log, shown_url} of a run_logged download of url to dest on the host."""
    if not isinstance(url, str) or not url.strip():
        raise FetchError("fetch_command: the URL is empty")
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https", "file") or (parts.scheme != "file" and not parts.hostname):
        raise FetchError("fetch_command: %r is not an http(s) or file URL" % (shown_url(url),))
    if any(ch in url for ch in "\r\n\0"):
        raise FetchError("fetch_command: the URL holds a line break or NUL")
    if not isinstance(dest, str) or not dest.startswith("/") or "\0" in dest or "\n" in dest:
        raise FetchError("fetch_command: the destination must be an absolute path, got %r" % (dest,))
    if not isinstance(python, str) or not python.strip():
        raise FetchError("fetch_command: no Python interpreter given for the host")
    return {
        "argv": [python, "-c", SCRIPT, dest],
        "environment": {ENV_URL: url.strip()},
        "no_log": "@" in parts.netloc,
        "shown_url": shown_url(url),
    }


def shown_url(url):
    """The URL without its user:password@ part, for messages."""
    parts = urlsplit(str(url).strip())
    netloc = parts.netloc.rpartition("@")[2]
    return "%s://%s%s" % (parts.scheme, netloc, parts.path)
