# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""make matrix: the generated block of plugins/module_utils/compat_matrix.py, read from the package index.

    python3 tests/matrix/refresh.py                 rewrite the block, print the diff
    python3 tests/matrix/refresh.py --check         exit 1 (printing the diff) when the block would change
    python3 tests/matrix/refresh.py --record DIR    also record what was read (the unit tests' fixtures:
                                                    tests/fixtures/matrix-index)
    python3 tests/matrix/refresh.py --from DIR      read a recording instead of the index (offline)

The index is MATRIX_INDEX_URL, default https://pypi.org/simple: a simple index that answers PEP 691 JSON
(Accept: application/vnd.pypi.simple.v1+json). A wheel's METADATA comes from its PEP 658 file where the
listing offers one, else out of the wheel itself with HTTP Range requests (the end of the zip, its central
directory, the one member), so a mirror must answer those. The logic is
plugins/module_utils/matrix_refresh.py; this file only reads and writes. Needs the collection path
(make collection) and nothing beyond the standard library.
"""

from __future__ import absolute_import, division, print_function

import argparse
import difflib
import gzip
import io
import json
import os
import shutil
import sys
import urllib.error
import urllib.parse
import urllib.request

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MATRIX_PATH = os.path.join(REPO, "plugins", "module_utils", "compat_matrix.py")
DEFAULT_INDEX = "https://pypi.org/simple"
PROJECTS = ("vllm", "torch", "transformers")
JSON_TYPE = "application/vnd.pypi.simple.v1+json"
TIMEOUT = 120

sys.path.insert(0, os.path.join(REPO, ".collections"))
try:
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat_matrix  # noqa: E402
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import matrix_refresh as R  # noqa: E402
except ImportError as exc:  # pragma: no cover - a checkout without make collection
    sys.exit("tests/matrix/refresh.py: %s; run 'make collection' first" % exc)


class HttpIndex(object):
    """A simple index over HTTP(S): PEP 691 listings, PEP 658 METADATA or the wheel's own, by Range requests."""

    def __init__(self, base):
        self.base = base.rstrip("/") + "/"
        self.urls = {}
        self.requests = 0

    def _open(self, url, headers, method="GET"):
        self.requests += 1
        request = urllib.request.Request(url, method=method,
                                         headers=dict(headers, **{"User-Agent": "gpufleet-llm-stack-matrix"}))
        return urllib.request.urlopen(request, timeout=TIMEOUT)  # nosec - the index the maintainer names

    def listing(self, project):
        url = urllib.parse.urljoin(self.base, project + "/")
        with self._open(url, {"Accept": JSON_TYPE}) as answer:
            kind = answer.headers.get("Content-Type", "")
            body = answer.read()
        if JSON_TYPE not in kind and "json" not in kind:
            raise R.RefreshError("%s answered %s, not PEP 691 JSON: the index must serve %s" % (url, kind, JSON_TYPE))
        self.urls[project] = url
        return json.loads(body.decode("utf-8"))

    def read(self, url, offset, length):
        with self._open(url, {"Range": "bytes=%d-%d" % (offset, offset + length - 1)}) as answer:
            if answer.status != 206:
                raise R.RefreshError("%s answered %d to a Range request: the file host must answer Range requests"
                                     " (206)" % (url.split("#")[0], answer.status))
            data = answer.read(length + 1)
        if len(data) != length:
            raise R.RefreshError("%s gave %d bytes for a range of %d" % (url.split("#")[0], len(data), length))
        return data

    def metadata(self, project, entry):
        url = urllib.parse.urljoin(self.urls[project], entry["url"]).split("#")[0]
        if entry.get("core-metadata") or entry.get("data-dist-info-metadata"):
            with self._open(url + ".metadata", {}) as answer:
                return answer.read(R.MAX_METADATA + 1).decode("utf-8")
        size = entry.get("size")
        if not isinstance(size, int):
            with self._open(url, {}, method="HEAD") as answer:
                size = int(answer.headers["Content-Length"])
        return R.read_wheel_metadata(lambda offset, length: self.read(url, offset, length), size)


def _write_gzip(path, data):
    with open(path, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as handle:
            handle.write(data)


class RecordingIndex(object):
    """Another index, with what it gives written under a directory (as FixtureIndex reads it)."""

    def __init__(self, index, directory):
        self.index = index
        self.directory = directory
        for sub in ("simple", "metadata"):
            shutil.rmtree(os.path.join(directory, sub), ignore_errors=True)
            os.makedirs(os.path.join(directory, sub))

    def listing(self, project):
        listing = self.index.listing(project)
        _write_gzip(os.path.join(self.directory, "simple", project + ".json.gz"),
                    json.dumps(listing, indent=1, sort_keys=True).encode("utf-8") + b"\n")
        return listing

    def metadata(self, project, entry):
        text = self.index.metadata(project, entry)
        _write_gzip(os.path.join(self.directory, "metadata", entry["filename"] + ".METADATA.gz"), text.encode("utf-8"))
        return text


class FixtureIndex(object):
    """A recording (RecordingIndex's directory): simple/<project>.json.gz, metadata/<file>.METADATA.gz."""

    def __init__(self, directory):
        self.directory = directory

    def listing(self, project):
        with gzip.open(os.path.join(self.directory, "simple", project + ".json.gz"), "rb") as handle:
            return json.loads(handle.read().decode("utf-8"))

    def metadata(self, project, entry):
        path = os.path.join(self.directory, "metadata", entry["filename"] + ".METADATA.gz")
        if not os.path.isfile(path):
            raise R.RefreshError("the recording %s has no METADATA of %s" % (self.directory, entry["filename"]))
        with gzip.open(path, "rb") as handle:
            return handle.read().decode("utf-8")


def refreshed(index, source):
    """(new source of compat_matrix.py, notes) from an index and the current source."""
    result = R.build(index, compat_matrix)
    return R.replace_block(source, R.render(result)), result["notes"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when the block would change")
    parser.add_argument("--record", metavar="DIR", help="write what was read from the index under DIR")
    parser.add_argument("--from", dest="source", metavar="DIR", help="read a recording instead of the index")
    args = parser.parse_args(argv)
    if args.source:
        index = FixtureIndex(args.source)
        where = args.source
    else:
        where = os.environ.get("MATRIX_INDEX_URL") or DEFAULT_INDEX
        index = HttpIndex(where)
    if args.record:
        index = RecordingIndex(index, args.record)
    with io.open(MATRIX_PATH, encoding="utf-8") as handle:
        source = handle.read()
    try:
        new, notes = refreshed(index, source)
    except (R.RefreshError, urllib.error.URLError, OSError, ValueError) as exc:
        print("make matrix: %s (index: %s)" % (exc, where), file=sys.stderr)
        return 2
    for note in notes:
        print("note: %s" % note, file=sys.stderr)
    relative = os.path.relpath(MATRIX_PATH, REPO)
    diff = list(difflib.unified_diff(source.splitlines(True), new.splitlines(True), "a/" + relative, "b/" + relative))
    sys.stdout.writelines(diff)
    if not diff:
        print("%s: the generated block is up to date with %s" % (relative, where))
        return 0
    if args.check:
        print("%s: the generated block differs from %s: run make matrix" % (relative, where), file=sys.stderr)
        return 1
    with io.open(MATRIX_PATH, "w", encoding="utf-8") as handle:
        handle.write(new)
    print("%s: generated block rewritten from %s" % (relative, where), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
