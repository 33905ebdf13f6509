# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Record the file list and METADATA of release wheels without downloading them.

    python3 tests/gpu/wheel_files.py [--out DIR] PROJECT==VERSION...

For each release, the Linux x86_64 wheel the matrix reads (matrix_refresh.wheel_for: the cp312 or abi3 manylinux
build) is read with HTTP Range requests: the end of the zip and its central directory (a few hundred kB of a
300 MB vLLM wheel), then the METADATA member. DIR (default tests/fixtures/vllm-wheels) gets
<wheel>.files.gz, one "<size> <name>" line per member in the zip's order, and <wheel>.METADATA.gz. The unit
tests of the extension layouts and of the start imports' fixes read these files (test_vllm_info_layouts.py,
test_vllm_start.py). The index is
MATRIX_INDEX_URL, default https://pypi.org/simple, as for make matrix (tests/matrix/refresh.py, whose HttpIndex
this uses). Needs the collection path (make collection) and nothing beyond the standard library.
"""

from __future__ import absolute_import, division, print_function

import argparse
import gzip
import os
import sys
import urllib.error
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "matrix"))
import refresh  # noqa: E402  pylint: disable=wrong-import-position

R = refresh.R
DEFAULT_OUT = os.path.join(REPO, "tests", "fixtures", "vllm-wheels")


def _write_gzip(path, text):
    with open(path, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as handle:
            handle.write(text.encode("utf-8"))


def record(index, requirement, out):
    """Write the file list and METADATA of requirement's wheel under out; return the wheel's file name."""
    project, sep, version = requirement.partition("==")
    if not sep or not project or not version:
        raise R.RefreshError("%r is not PROJECT==VERSION" % requirement)
    listing = index.listing(project)
    entry = R.wheel_for(listing, version)
    if entry is None:
        raise R.RefreshError("%s has no Linux x86_64 wheel on the index" % requirement)
    url = urllib.parse.urljoin(index.urls[project], entry["url"]).split("#")[0]
    size = entry.get("size")
    if not isinstance(size, int):
        raise R.RefreshError("the index gives no size for %s" % entry["filename"])

    def read(offset, length):
        return index.read(url, offset, length)

    entries = R.read_wheel_directory(read, size)
    metadata = R.read_wheel_metadata(read, size, entries)
    lines = ["%d %s" % (item["size"], item["name"]) for item in entries]
    _write_gzip(os.path.join(out, entry["filename"] + ".files.gz"), "\n".join(lines) + "\n")
    _write_gzip(os.path.join(out, entry["filename"] + ".METADATA.gz"), metadata)
    return entry["filename"], len(entries)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--out", default=DEFAULT_OUT, help="where the lists go (default %(default)s)")
    parser.add_argument("requirements", nargs="+", metavar="PROJECT==VERSION")
    args = parser.parse_args(argv)
    where = os.environ.get("MATRIX_INDEX_URL") or refresh.DEFAULT_INDEX
    index = refresh.HttpIndex(where)
    if not os.path.isdir(args.out):
        os.makedirs(args.out)
    for requirement in args.requirements:
        try:
            name, count = record(index, requirement, args.out)
        except (R.RefreshError, urllib.error.URLError, OSError, ValueError) as exc:
            print("wheel_files.py: %s: %s (index: %s)" % (requirement, exc, where), file=sys.stderr)
            return 2
        print("%s: %d files" % (name, count))
    print("%d requests to %s" % (index.requests, where))
    return 0


if __name__ == "__main__":
    sys.exit(main())
