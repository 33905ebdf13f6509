# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""make matrix's logic (module_utils/matrix_refresh.py): the zip read in ranges, METADATA, markers, the listings,
the merge into rows and the generated block, on zips built here and on the recorded index (tests/fixtures)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import gzip
import io
import json
import os
import struct
import zipfile
import zlib
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat_matrix as M
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import matrix_refresh as R
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.versions import satisfies

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
RECORDED = os.path.join(REPO, "tests", "fixtures", "matrix-index")


def recorded_metadata(filename):
    with gzip.open(os.path.join(RECORDED, "metadata", filename + ".METADATA.gz"), "rb") as handle:
        return handle.read().decode("utf-8")


def recorded_listing(project):
    with gzip.open(os.path.join(RECORDED, "simple", project + ".json.gz"), "rb") as handle:
        return json.loads(handle.read().decode("utf-8"))


VLLM_0191 = "vllm-0.19.1-cp38-abi3-manylinux_2_31_x86_64.whl"
VLLM_0340 = "vllm-0.34.0-cp38-abi3-manylinux_2_28_x86_64.whl"
TORCH_2100 = "torch-2.10.0-3-cp312-cp312-manylinux_2_28_x86_64.whl"
TORCH_2140 = "torch-2.14.0-cp312-cp312-manylinux_2_28_x86_64.whl"


# --- the zip, read in ranges ----------------------------------------------------

class Reader(object):
    """read(offset, length) over bytes, counting the reads; strict, it refuses a read past the end (as a server
    answers a range past the end of a file with fewer bytes or 416)."""

    def __init__(self, data, strict=True):
        self.data = data
        self.strict = strict
        self.calls = []

    def __call__(self, offset, length):
        assert 0 <= offset and length >= 0 and (offset + length <= len(self.data) or not self.strict)
        self.calls.append((offset, length))
        return self.data[offset:offset + length]


def wheel(members, comment=b"", compression=zipfile.ZIP_DEFLATED, zip64=False):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compression) as archive:
        for name, data in members:
            if zip64:
                info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
                info.compress_type = compression
                with archive.open(info, "w", force_zip64=True) as handle:
                    handle.write(data)
            else:
                archive.writestr(name, data)
        archive.comment = comment
    return buffer.getvalue()


METADATA = "Metadata-Version: 2.4\nName: demo\nVersion: 1.0\nRequires-Dist: torch==2.10.0\n\nA description.\n"


def test_reads_metadata_out_of_a_wheel_in_three_reads():
    members = [("demo/__init__.py", b"x" * 200000), ("demo-1.0.dist-info/RECORD", b"r"),
               ("demo-1.0.dist-info/METADATA", METADATA.encode())]
    data = wheel(members)
    reader = Reader(data)
    assert R.read_wheel_metadata(reader, len(data)) == METADATA
    # the central directory sits in the tail that was read: the tail, then the member
    assert len(reader.calls) == 2
    assert reader.calls[0] == (len(data) - R.tail_length(len(data)), R.tail_length(len(data)))


def test_a_central_directory_before_the_tail_is_read_on_its_own():
    members = [("demo/f%05d.py" % i, b"") for i in range(4000)] + [("demo-1.0.dist-info/METADATA", METADATA.encode())]
    data = wheel(members, compression=zipfile.ZIP_STORED)
    reader = Reader(data)
    assert R.read_wheel_metadata(reader, len(data)) == METADATA
    assert len(reader.calls) == 3


@settings(max_examples=60, deadline=None)
@given(names=st.lists(st.text(alphabet="abcdefgh_/.é", min_size=1, max_size=12).filter(
    lambda n: not n.startswith("/") and "//" not in n and not n.endswith("/")), max_size=8, unique=True),
    body=st.text(max_size=3000).map(lambda text: text.encode("utf-8")), comment=st.binary(max_size=300),
    compression=st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]), zip64=st.booleans())
def test_every_member_reads_back_whatever_the_zip(names, body, comment, compression, zip64):
    names = [n for n in names if not n.endswith(".dist-info/METADATA")]
    members = [(name, body[index:] + name.encode("utf-8")) for index, name in enumerate(names)]
    members.append(("x-1.dist-info/METADATA", METADATA.encode() + body))
    if zip64:
        # zipfile writes Zip64 records and extra fields past these limits: make every entry and the end need them
        with mock.patch.object(zipfile, "ZIP64_LIMIT", 8), mock.patch.object(zipfile, "ZIP_FILECOUNT_LIMIT", 0):
            data = wheel(members, comment, compression, zip64=True)
        assert struct.pack("<I", 0x06064B50) in data[-R.tail_length(len(data)):]
    else:
        data = wheel(members, comment, compression)
    tail_start = len(data) - R.tail_length(len(data))
    offset, size, count = R.end_of_central_directory(data[tail_start:], len(data))
    entries = R.central_directory(data[offset:offset + size], count)
    assert [entry["name"] for entry in entries] == [name for name, dummy in members]
    for entry, (name, content) in zip(entries, members):
        assert R.member(Reader(data, strict=False), entry) == content
    assert R.read_wheel_metadata(Reader(data), len(data)).encode() == METADATA.encode() + body


def test_a_signature_inside_the_comment_is_not_the_end_record():
    fake = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 9, 9, 999, 999, 0)
    data = wheel([("a-1.dist-info/METADATA", METADATA.encode())], comment=fake + b"tail")
    offset, size, count = R.end_of_central_directory(data[-R.tail_length(len(data)):], len(data))
    assert count == 1 and offset + size < len(data)


@pytest.mark.parametrize("mangle, error", [
    (lambda data: data[:-40], "not a zip"),
    (lambda data: b"no zip at all", "not a zip"),
])
def test_what_is_not_a_zip_is_refused(mangle, error):
    data = mangle(wheel([("a-1.dist-info/METADATA", METADATA.encode())]))
    with pytest.raises(R.RefreshError, match=error):
        R.read_wheel_metadata(Reader(data), len(data))


def test_a_member_whose_crc_differs_is_refused():
    name = "a-1.dist-info/METADATA"
    data = bytearray(wheel([(name, METADATA.encode())], compression=zipfile.ZIP_STORED))
    data[30 + len(name) + 2] ^= 0xFF  # a byte of the stored member, after the local header
    with pytest.raises(R.RefreshError, match="CRC"):
        R.read_wheel_metadata(Reader(bytes(data)), len(data))


def test_a_member_too_large_or_of_another_method_is_refused():
    entry = {"name": "a-1.dist-info/METADATA", "method": 12, "flags": 0, "crc": 0, "size": 10, "compressed": 10,
             "offset": 0}
    with pytest.raises(R.RefreshError, match="compression method 12"):
        R.member(Reader(b""), entry)
    with pytest.raises(R.RefreshError, match="more than"):
        R.member(Reader(b""), dict(entry, method=8, size=R.MAX_METADATA + 1))
    bomb = zlib.compress(b"\0" * (R.MAX_METADATA + 10))[2:-4]
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, 0, len(bomb), 10, 1, 0) + b"m" + bomb
    with pytest.raises(R.RefreshError, match="inflates to more than"):
        R.member(Reader(local, strict=False), dict(entry, name="m", method=8, compressed=len(bomb), size=10))


def test_metadata_that_is_not_utf8_is_refused():
    data = wheel([("a-1.dist-info/METADATA", b"Name: a\nVersion: 1\n\n\x80")])
    with pytest.raises(R.RefreshError, match="not UTF-8"):
        R.read_wheel_metadata(Reader(data), len(data))


def test_a_wheel_without_one_metadata_is_refused():
    for members in ([("a/METADATA", b"")], [("a-1.dist-info/METADATA", b""), ("b-1.dist-info/METADATA", b"")]):
        data = wheel(members)
        with pytest.raises(R.RefreshError, match="METADATA files, not one"):
            R.read_wheel_metadata(Reader(data), len(data))


# --- METADATA, requirements, markers -------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("torch==2.10.0", ("torch", [], "==2.10.0", "")),
    ("transformers<5.23.0,>=5.16.1", ("transformers", [], "<5.23.0,>=5.16.1", "")),
    ("fastapi[standard]<0.137.0,>=0.133.0", ("fastapi", ["standard"], "<0.137.0,>=0.133.0", "")),
    ("nvidia-cutlass-dsl[cu13]==4.8.0", ("nvidia-cutlass-dsl", ["cu13"], "==4.8.0", "")),
    ('protobuf==7.36.1; platform_machine == "s390x"', ("protobuf", [], "==7.36.1", 'platform_machine == "s390x"')),
    ("Foo_Bar (>=1.0, <2)", ("foo-bar", [], ">=1.0,<2", "")),
    ("pkg @ https://example.org/pkg.whl ; extra == 'x'", ("pkg", [], "", "extra == 'x'")),
    ("humming-kernels[cu13]==0.1.19", ("humming-kernels", ["cu13"], "==0.1.19", "")),
])
def test_requirements_parse(text, expected):
    req = R.parse_requirement(text)
    assert (req["name"], req["extras"], req["spec"], req["marker"]) == expected


@pytest.mark.parametrize("marker, holds", [
    ("", True),
    ('platform_system == "Linux"', True),
    ('platform_system == "Linux" and platform_machine == "x86_64"', True),
    ('platform_machine == "x86_64" or platform_machine == "arm64"', True),
    ('platform_machine != "s390x"', True),
    ('platform_machine == "aarch64"', False),
    ('sys_platform == "darwin" or (platform_system == "Linux" and platform_machine == "x86_64")', True),
    ('extra == "deepstream"', False),
    ('"linux" in sys_platform', True),
    ('platform_machine not in "s390x ppc64le"', True),
])
def test_markers_on_the_target(marker, holds):
    assert R.marker_holds(marker) is holds


@pytest.mark.parametrize("marker", ['python_version > "3.11"', 'platform_system == "Linux" and python_version < "3.15"',
                                    'platform_machine ==', '(platform_system == "Linux"', 'platform_system "Linux"'])
def test_markers_that_the_target_does_not_decide_are_errors(marker):
    with pytest.raises(R.MarkerError):
        R.marker_holds(marker)


def test_a_false_marker_before_an_open_variable_still_fails():
    with pytest.raises(R.MarkerError):
        R.marker_holds('platform_system == "Windows" and python_version < "3.15"')


@pytest.mark.parametrize("spec, ordered", [
    ("<3.14,>=3.10", ">=3.10,<3.14"),
    ("<5,>=4.56.0", ">=4.56.0,<5"),
    ("!=5.0.*,!=5.1.*,>=4.56.0", "!=5.0.*,!=5.1.*,>=4.56.0"),
    (">=5.5.3", ">=5.5.3"),
])
def test_specifiers_take_the_matrix_order(spec, ordered):
    assert R.ordered_spec(spec) == ordered


@settings(max_examples=200, deadline=None)
@given(clauses=st.lists(st.tuples(st.sampled_from(["<", "<=", ">", ">=", "!=", "=="]),
                                  st.tuples(st.integers(3, 6), st.integers(0, 30))), min_size=1, max_size=5),
       probe=st.tuples(st.integers(3, 6), st.integers(0, 30), st.integers(0, 5)))
def test_ordering_a_specifier_keeps_what_it_accepts(clauses, probe):
    spec = ",".join("%s%d.%d" % (op, major, minor) for op, (major, minor) in clauses)
    ordered = R.ordered_spec(spec)
    assert sorted(ordered.split(",")) == sorted(spec.split(","))
    version = "%d.%d.%d" % probe
    assert satisfies(version, ordered) == satisfies(version, spec)


def test_the_recorded_metadata_gives_the_vllm_row():
    metadata = R.parse_metadata(recorded_metadata(VLLM_0191))
    assert metadata["name"] == "vllm" and metadata["version"] == "0.19.1"
    assert R.vllm_requirements(metadata) == {
        "torch": "2.10.0", "python": ">=3.10,<3.14",
        "transformers": "!=5.0.*,!=5.1.*,!=5.2.*,!=5.3.*,!=5.4.*,!=5.5.0,>=4.56.0"}
    assert R.cuda_majors(metadata) == set()
    newest = R.parse_metadata(recorded_metadata(VLLM_0340))
    assert R.vllm_requirements(newest) == {"torch": "2.14.0", "python": ">=3.11,<3.15",
                                           "transformers": ">=5.16.1,<5.23.0"}
    assert R.cuda_majors(newest) == {13}


def test_the_recorded_torch_metadata_gives_its_cuda_runtime():
    assert R.cuda_runtime(R.parse_metadata(recorded_metadata(TORCH_2100))) == "12.8"
    assert R.cuda_runtime(R.parse_metadata(recorded_metadata(TORCH_2140))) == "13.0"
    cpu = R.parse_metadata("Name: torch\nVersion: 2.14.0+cpu\nRequires-Dist: filelock\n\n")
    assert R.cuda_runtime(cpu) is None


def test_a_vllm_without_one_torch_pin_is_refused():
    loose = R.parse_metadata("Name: vllm\nVersion: 9.0.0\nRequires-Python: >=3.10\nRequires-Dist: torch>=2.10\n"
                             "Requires-Dist: transformers>=5\n\n")
    with pytest.raises(R.RefreshError, match="not one release"):
        R.vllm_requirements(loose)
    twice = R.parse_metadata("Name: vllm\nVersion: 9.0.0\nRequires-Python: >=3.10\nRequires-Dist: torch==2.10.0\n"
                             "Requires-Dist: torch==2.11.0; platform_system == 'Linux'\nRequires-Dist: transformers\n\n")
    with pytest.raises(R.RefreshError, match="2 times"):
        R.vllm_requirements(twice)
    by_python = R.parse_metadata("Name: vllm\nVersion: 9.0.0\nRequires-Python: >=3.10\n"
                                 "Requires-Dist: torch==2.10.0; python_version < '3.14'\nRequires-Dist: transformers\n\n")
    with pytest.raises(R.RefreshError, match="depends on more than the platform"):
        R.vllm_requirements(by_python)


# --- the listings ------------------------------------------------------------------------

def listing(name, files, versions=None):
    return {"name": name, "files": [dict({"yanked": False, "url": "https://files.example/" + f["filename"]}, **f)
                                    for f in files],
            "versions": versions if versions is not None else sorted(set(
                R.file_version(name, f["filename"]) for f in files))}


def test_releases_leave_out_pre_dev_yanked_and_older():
    data = listing("transformers", [
        {"filename": "transformers-4.50.3-py3-none-any.whl"},
        {"filename": "transformers-5.0.0rc1-py3-none-any.whl"},
        {"filename": "transformers-5.0.0-py3-none-any.whl"},
        {"filename": "transformers-5.10.0-py3-none-any.whl", "yanked": "broken"},
        {"filename": "transformers-5.10.0.tar.gz", "yanked": "broken"},
        {"filename": "transformers-5.10.1.dev0-py3-none-any.whl"},
        {"filename": "transformers-5.2.0.post1.tar.gz"},
    ])
    assert R.releases(data) == ["4.50.3", "5.0.0", "5.2.0.post1"]
    assert R.releases(data, "5.0.0") == ["5.0.0", "5.2.0.post1"]


def test_the_wheel_taken_is_the_one_pip_takes():
    data = listing("torch", [
        {"filename": "torch-2.10.0-cp312-cp312-manylinux_2_28_x86_64.whl"},
        {"filename": "torch-2.10.0-3-cp312-cp312-manylinux_2_28_x86_64.whl"},
        {"filename": "torch-2.10.0-3-cp312-cp312-manylinux_2_28_aarch64.whl"},
        {"filename": "torch-2.10.0-3-cp313-cp313-manylinux_2_28_x86_64.whl"},
        {"filename": "torch-2.10.0-4-cp312-cp312-manylinux_2_28_x86_64.whl", "yanked": "bad build"},
        {"filename": "torch-2.10.0-cp312-cp312-win_amd64.whl"},
    ])
    assert R.wheel_for(data, "2.10.0")["filename"] == "torch-2.10.0-3-cp312-cp312-manylinux_2_28_x86_64.whl"
    abi3 = listing("vllm", [{"filename": "vllm-0.20.1-cp38-abi3-manylinux_2_35_x86_64.whl"},
                            {"filename": "vllm-0.20.1-1-cp38-abi3-manylinux_2_35_x86_64.whl"},
                            {"filename": "vllm-0.20.1.tar.gz"}])
    assert R.wheel_for(abi3, "0.20.1")["filename"] == "vllm-0.20.1-1-cp38-abi3-manylinux_2_35_x86_64.whl"
    assert R.wheel_for(abi3, "0.20.2") is None
    assert R.wheel_for(listing("vllm", [{"filename": "vllm-0.20.1-cp38-abi3-macosx_11_0_arm64.whl"}]), "0.20.1") is None


@pytest.mark.parametrize("spec, expected", [
    (">=4.56.0,<5", None),
    ("!=5.0.*,!=5.1.*,!=5.2.*,!=5.3.*,!=5.4.*,!=5.5.0,>=4.56.0", "5.5.4"),
    (">=5.5.3", "5.5.4"),
    (">=5.10.4,<5.18.0", "5.10.4"),
    (">=5.16.1,<5.23.0", "5.16.1"),
    (">=9.0", None),
])
def test_transformers_suggest_is_the_newest_patch_of_the_oldest_series_that_fits(spec, expected):
    assert R.transformers_suggest(spec, "5.2.0", M.TRANSFORMERS_RELEASES) == expected


class Matrix(object):
    VLLM_WHEEL_CUDA = {"0.19.1": "12.9", "0.18.0": None}
    VLLM_WHEEL_CUDA_FOLLOWS_TORCH = "0.20.0"


@pytest.mark.parametrize("release, majors, torch, expected", [
    ("0.19.1", set(), "12.8", "12.9"),
    ("0.18.0", {13}, "13.0", None),
    ("0.20.0", set(), "13.0", "13.0"),
    ("0.34.0", {13}, "13.0", "13.0"),
])
def test_wheel_cuda(release, majors, torch, expected):
    assert R.wheel_cuda(release, majors, torch, Matrix) == expected


@pytest.mark.parametrize("release, majors, torch, error", [
    ("0.19.1", {13}, "12.8", "name CUDA 12, 13"),
    ("0.19.1", set(), "13.0", "name CUDA 13"),
    ("0.34.0", {12}, "13.0", "name CUDA 12, 13"),
    ("0.34.0", set(), None, "names no CUDA runtime"),
    ("0.19.0", set(), "12.8", "not in VLLM_WHEEL_CUDA"),
])
def test_wheel_cuda_stops_where_its_sources_differ(release, majors, torch, error):
    with pytest.raises(R.RefreshError, match=error):
        R.wheel_cuda(release, majors, torch, Matrix)


# --- the merge and the block ------------------------------------------------------------------

class MemoryIndex(object):
    def __init__(self, listings, metadata):
        self.listings, self.texts = listings, metadata

    def listing(self, project):
        return self.listings[project]

    def metadata(self, project, entry):
        return self.texts[entry["filename"]]


def small_index(vllm_transformers=">=5.5.3", torch_pin="2.14.0", vllm_version="0.40.0"):
    vllm_wheel = "vllm-%s-cp38-abi3-manylinux_2_28_x86_64.whl" % vllm_version
    torch_wheel = "torch-%s-cp312-cp312-manylinux_2_28_x86_64.whl" % torch_pin
    return MemoryIndex(
        {"vllm": listing("vllm", [{"filename": vllm_wheel}, {"filename": "vllm-0.1.0.tar.gz"}]),
         "torch": listing("torch", [{"filename": torch_wheel}, {"filename": "torch-2.15.0-cp312-cp312-win_amd64.whl"}]),
         "transformers": listing("transformers", [{"filename": "transformers-%s-py3-none-any.whl" % v}
                                                  for v in ("4.36.0", "4.51.0", "5.5.3", "5.5.4", "5.6.0")])},
        {vllm_wheel: "Name: vllm\nVersion: %s\nRequires-Python: <3.15,>=3.11\nRequires-Dist: torch==%s\n"
                     "Requires-Dist: transformers%s\nRequires-Dist: nvidia-cutlass-dsl[cu13]==4.8.0\n\n"
                     % (vllm_version, torch_pin, vllm_transformers),
         torch_wheel: "Name: torch\nVersion: %s\nRequires-Dist: cuda-toolkit[cudart]==13.0.3; platform_system == "
                      "\"Linux\"\n\n" % torch_pin})


def test_build_merges_the_index_into_rows():
    result = R.build(small_index(), M)
    assert result["vllm"] == {"0.40.0": {"torch": "2.14.0", "python": ">=3.11,<3.15", "transformers": ">=5.5.3",
                                         "transformers_suggest": "5.5.4", "wheel_cuda": "13.0"}}
    assert result["torch_releases"] == ["2.14.0"]
    assert result["transformers_releases"] == ["4.51.0", "5.5.3", "5.5.4", "5.6.0"]
    assert result["notes"] == ["torch 2.15.0 is on the index: TORCH has no 2.15 row (add it with checked facts)"]
    # a torch minor without a TORCH row is said, not invented
    other = R.build(small_index(torch_pin="2.16.0"), M)
    assert "vllm 0.40.0 pins torch 2.16.0: TORCH has no 2.16 row (add it with checked facts)" in other["notes"]


def test_build_refuses_a_wheel_that_holds_another_release():
    index = small_index()
    index.texts["vllm-0.40.0-cp38-abi3-manylinux_2_28_x86_64.whl"] = index.texts[
        "vllm-0.40.0-cp38-abi3-manylinux_2_28_x86_64.whl"].replace("Version: 0.40.0", "Version: 0.39.0")
    with pytest.raises(R.RefreshError, match="holds the METADATA of vllm 0.39.0"):
        R.build(index, M)


def block_data(block):
    namespace = {}
    exec(compile(block, "block", "exec"), namespace)  # pylint: disable=exec-used
    return dict((key, namespace[key]) for key in ("VLLM", "TORCH_RELEASES", "TRANSFORMERS_RELEASES"))


def test_the_block_is_python_that_holds_the_result():
    result = R.build(small_index(), M)
    block = R.render(result)
    assert block.startswith(R.BEGIN + "\n") and block.endswith(R.END + "\n")
    assert block_data(block) == {"VLLM": result["vllm"], "TORCH_RELEASES": result["torch_releases"],
                                 "TRANSFORMERS_RELEASES": result["transformers_releases"]}
    assert max(len(line) for line in block.splitlines()) <= R.WIDTH


def test_only_the_block_is_replaced():
    source = "head\n%s\nold\n%s\ntail\n" % (R.BEGIN, R.END)
    new = R.replace_block(source, R.BEGIN + "\nnew\n" + R.END + "\n")
    assert new == "head\n%s\nnew\n%s\ntail\n" % (R.BEGIN, R.END)
    assert R.replace_block(new, R.split_block(new)[1]) == new
    for broken in ("no markers\n", "%s\n%s\n" % (R.END, R.BEGIN), "%s\n%s\n%s\n" % (R.BEGIN, R.BEGIN, R.END)):
        with pytest.raises(R.RefreshError, match="once each"):
            R.replace_block(broken, "x")


def test_the_checked_in_block_is_the_commands_output_on_the_recorded_index():
    """compat_matrix.py's generated block == make matrix on tests/fixtures/matrix-index (refresh.py --record)."""
    import sys
    sys.path.insert(0, os.path.join(REPO, "tests", "matrix"))
    try:
        import refresh  # pylint: disable=import-outside-toplevel
    finally:
        sys.path.pop(0)
    with io.open(os.path.join(REPO, "plugins", "module_utils", "compat_matrix.py"), encoding="utf-8") as handle:
        source = handle.read()
    result = R.build(refresh.FixtureIndex(RECORDED), M)
    assert R.split_block(source)[1] == R.render(result), "run: python3 tests/matrix/refresh.py (make matrix)"
    assert "0.33.0" in result["vllm"] and "0.34.0" in result["vllm"]
    assert block_data(R.split_block(source)[1])["VLLM"] == M.VLLM
    assert refresh.main(["--check", "--from", RECORDED]) == 0
