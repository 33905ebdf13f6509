# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The generated part of the compatibility matrix, from the package index, as pure functions.

``make matrix`` (tests/matrix/refresh.py) gives ``build`` an index: an
object with ``listing(project)``, the project's PEP 691 JSON listing as a
dict, and ``metadata(project, entry)``, the METADATA text of one file of
that listing. Over the network the METADATA comes out of the wheel through
HTTP Range requests: ``read_wheel_metadata`` reads the zip's end of central
directory, the central directory, then the one member (as pip's lazy wheel
does; module_utils/_matrix_wheel, re-exported here); from recorded files for the unit tests. ``build`` reads:

- every vLLM release from ``VLLM_FLOOR`` on: the x86_64 wheel's METADATA
  (torch pin, Requires-Python, transformers requirement, the CUDA major its
  own requirements name);
- the METADATA of the torch wheel each vLLM release pins (the CUDA runtime
  that wheel requires);
- the releases of torch and transformers on the index.

``render`` turns the result into the block of compat_matrix.py between
``BEGIN`` and ``END``, and ``replace_block`` puts it in place. Nothing here
opens a file or a connection. Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import email.parser
import re

from ansible_collections.gpufleet.llm_stack.plugins.module_utils._matrix_wheel import (  # noqa: F401 pylint: disable=unused-import
    MAX_CENTRAL_DIRECTORY, MAX_COMMENT, MAX_METADATA, RefreshError, central_directory, end_of_central_directory, member,
    metadata_entry, read_wheel_directory, read_wheel_metadata, tail_length)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.versions import Version, VersionError, satisfies

BEGIN = "# BEGIN GENERATED: make matrix"
END = "# END GENERATED: make matrix"
WIDTH = 120

# The platform of the release wheels the matrix describes (PEP 508 marker variables).
TARGET = {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
          "implementation_name": "cpython", "platform_python_implementation": "CPython"}


# --- METADATA and its requirements -------------------------------------------

_REQUIREMENT_RE = re.compile(
    r"\s*(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:\[(?P<extras>[^\]]*)\])?"
    r"\s*(?:@\s*(?P<url>[^;\s]+)|\(?(?P<spec>[^;()@]*)\)?)\s*(?:;\s*(?P<marker>.*))?")


def canonical_name(name):
    """PEP 503 name: 'Nvidia_Cutlass.DSL' -> 'nvidia-cutlass-dsl'."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_requirement(text):
    """A Requires-Dist value -> dict(name, extras, spec, marker); raises RefreshError."""
    match = _REQUIREMENT_RE.fullmatch(text.strip())
    if not match:
        raise RefreshError("not a requirement: %r" % text)
    extras = [canonical_name(e.strip()) for e in (match.group("extras") or "").split(",") if e.strip()]
    spec = "" if match.group("url") else re.sub(r"\s+", "", match.group("spec") or "")
    return {"name": canonical_name(match.group("name")), "extras": extras, "spec": spec,
            "marker": (match.group("marker") or "").strip()}


def parse_metadata(text):
    """METADATA text -> dict(name, version, requires_python, requires_dist: list of parse_requirement dicts)."""
    message = email.parser.HeaderParser().parsestr(text)
    name, version = message.get("Name"), message.get("Version")
    if not name or not version:
        raise RefreshError("METADATA without Name or Version")
    return {"name": canonical_name(name.strip()), "version": version.strip(),
            "requires_python": re.sub(r"\s+", "", message.get("Requires-Python") or ""),
            "requires_dist": [parse_requirement(value) for value in message.get_all("Requires-Dist") or []]}


class MarkerError(RefreshError):
    """A marker that names a variable the target platform leaves open (python_version), or does not parse."""


_MARKER_TOKEN = re.compile(r"\s*(?:(?P<string>'[^']*'|\"[^\"]*\")|(?P<op>===|==|!=|<=|>=|~=|<|>|not\s+in\b|in\b)"
                           r"|(?P<paren>[()])|(?P<word>[A-Za-z_][A-Za-z0-9_.]*))")


def _marker_tokens(marker):
    tokens = []
    position = 0
    marker = marker.strip()
    while position < len(marker):
        match = _MARKER_TOKEN.match(marker, position)
        if not match or match.end() == position:
            raise MarkerError("marker %r does not parse at %r" % (marker, marker[position:]))
        position = match.end()
        kind = match.lastgroup
        value = match.group(kind)
        tokens.append((kind, re.sub(r"\s+", " ", value) if kind == "op" else value))
    return tokens


def _compare(left, op, right):
    if op in ("in", "not in"):
        return (left in right) == (op == "in")
    try:
        return satisfies(left, op + right) if op not in ("===",) else left == right
    except VersionError:
        if op == "==":
            return left == right
        if op == "!=":
            return left != right
        raise MarkerError("cannot compare %r %s %r" % (left, op, right))


def marker_holds(marker, environment=None, extra=None):
    """Whether a PEP 508 marker holds on the target (TARGET, or environment) with the given extra (None: none).

    Raises MarkerError for a variable the environment does not fix (python_version on TARGET).
    """
    if not marker:
        return True
    env = dict(TARGET if environment is None else environment)
    env["extra"] = extra or ""
    tokens = _marker_tokens(marker)

    def value(token):
        kind, text = token
        if kind == "string":
            return text[1:-1]
        if kind == "word" and text in env:
            return env[text]
        raise MarkerError("marker %r: %s is not fixed for the target platform" % (marker, text))

    def atom(index):
        if index < len(tokens) and tokens[index] == ("paren", "("):
            result, index = disjunction(index + 1)
            if index >= len(tokens) or tokens[index] != ("paren", ")"):
                raise MarkerError("marker %r: unbalanced parentheses" % marker)
            return result, index + 1
        if index + 2 >= len(tokens):
            raise MarkerError("marker %r ends early" % marker)
        if tokens[index + 1][0] != "op":
            raise MarkerError("marker %r: no comparison at %r" % (marker, tokens[index + 1][1]))
        return _compare(value(tokens[index]), tokens[index + 1][1], value(tokens[index + 2])), index + 3

    def conjunction(index):
        result, index = atom(index)
        while index < len(tokens) and tokens[index] == ("word", "and"):
            right, index = atom(index + 1)
            result = result and right
        return result, index

    def disjunction(index):
        result, index = conjunction(index)
        while index < len(tokens) and tokens[index] == ("word", "or"):
            right, index = conjunction(index + 1)
            result = result or right
        return result, index

    result, index = disjunction(0)
    if index != len(tokens):
        raise MarkerError("marker %r: unexpected %r" % (marker, tokens[index][1]))
    return result


def requirements_of(metadata, name):
    """The requirements on name that hold on the target without extras; MarkerError where one depends on more."""
    wanted = canonical_name(name)
    return [req for req in metadata["requires_dist"] if req["name"] == wanted and marker_holds(req["marker"])]


_SPEC_ORDER = {"!=": 0, "==": 1, "===": 1, "~=": 2, ">=": 3, ">": 3, "<=": 4, "<": 4}


def ordered_spec(spec):
    """A specifier in the matrix's order: exclusions, then lower bounds, then upper bounds ('<3.14,>=3.10' ->
    '>=3.10,<3.14'); the order within each kind is kept."""
    clauses = [clause.strip() for clause in spec.split(",") if clause.strip()]

    def kind(clause):
        match = re.match(r"(===|==|!=|~=|<=|>=|<|>)", clause)
        if not match:
            raise RefreshError("not a version specifier: %r" % spec)
        return _SPEC_ORDER[match.group(1)]
    return ",".join(sorted(clauses, key=kind))


def one_requirement(metadata, name):
    """The one requirement on name that holds on the target; RefreshError when there is none or several."""
    try:
        found = requirements_of(metadata, name)
    except MarkerError as exc:
        raise RefreshError("%s %s: the requirement on %s depends on more than the platform: %s"
                           % (metadata["name"], metadata["version"], name, exc))
    if len(found) != 1:
        raise RefreshError("%s %s requires %s %d times on linux x86_64, not once"
                           % (metadata["name"], metadata["version"], name, len(found)))
    return found[0]


def vllm_requirements(metadata):
    """torch pin, Python and transformers of a vLLM release, from its METADATA (parse_metadata)."""
    torch = one_requirement(metadata, "torch")["spec"]
    match = re.fullmatch(r"==([0-9][0-9A-Za-z.+!]*)", torch)
    if not match:
        raise RefreshError("vllm %s requires torch%s, not one release (==)" % (metadata["version"], torch))
    transformers = one_requirement(metadata, "transformers")["spec"]
    if not transformers or not metadata["requires_python"]:
        raise RefreshError("vllm %s: no transformers requirement or no Requires-Python" % metadata["version"])
    return {"torch": match.group(1), "python": ordered_spec(metadata["requires_python"]),
            "transformers": ordered_spec(transformers)}


_CU_EXTRA = re.compile(r"cu([1-9][0-9])")
_CU_NAME = re.compile(r".+-cu([1-9][0-9])|cupy-cuda([1-9][0-9])x")


def cuda_majors(metadata):
    """The CUDA major versions that a wheel's own requirements name on the target: extras such as [cu13],
    packages such as nvidia-cublas-cu12 or cupy-cuda13x. Requirements whose marker depends on more than the
    platform (the Python) count as well."""
    majors = set()
    for req in metadata["requires_dist"]:
        try:
            if not marker_holds(req["marker"]):
                continue
        except MarkerError:
            if re.search(r"\bextra\b", req["marker"]):
                continue
        for extra in req["extras"]:
            match = _CU_EXTRA.fullmatch(extra)
            if match:
                majors.add(int(match.group(1)))
        match = _CU_NAME.fullmatch(req["name"])
        if match:
            majors.add(int(match.group(1) or match.group(2)))
    return majors


def cuda_runtime(metadata):
    """The CUDA runtime major.minor a torch wheel requires: cuda-toolkit[...]==13.0.2 or
    nvidia-cuda-runtime-cu12==12.8.90 -> '13.0' / '12.8'; None for a wheel that names none (a CPU build)."""
    found = set()
    for req in metadata["requires_dist"]:
        if req["name"] == "cuda-toolkit" or re.fullmatch(r"nvidia-cuda-runtime(?:-cu[1-9][0-9])?", req["name"]):
            try:
                if not marker_holds(req["marker"]):
                    continue
            except MarkerError:
                continue
            match = re.fullmatch(r"==([0-9]+)\.([0-9]+)(?:\.[0-9.]+)?", req["spec"])
            if not match:
                raise RefreshError("%s %s requires %s%s, not one release"
                                   % (metadata["name"], metadata["version"], req["name"], req["spec"]))
            found.add("%d.%d" % (int(match.group(1)), int(match.group(2))))
    if len(found) > 1:
        raise RefreshError("%s %s requires CUDA runtimes %s"
                           % (metadata["name"], metadata["version"], ", ".join(sorted(found))))
    return found.pop() if found else None


# --- the listings --------------------------------------------------------------

def _parsed(text):
    try:
        return Version(text)
    except VersionError:
        return None


def releases(listing, floor=None):
    """Final releases of a PEP 691 listing, oldest first, from floor on: no pre-release, no dev release, none whose
    every file is yanked, none that is not a version (PEP 440)."""
    files = {}
    for entry in listing.get("files") or []:
        version = file_version(listing.get("name", ""), entry.get("filename", ""))
        if version is not None:
            files.setdefault(version, []).append(entry)
    found = []
    for text in listing.get("versions") or sorted(files):
        version = _parsed(text)
        if version is None or version.pre is not None or version.dev is not None or version.local:
            continue
        if floor is not None and version < Version(floor):
            continue
        entries = files.get(text, [])
        if entries and all(entry.get("yanked") for entry in entries):
            continue
        found.append(text)
    return sorted(found, key=Version)


def file_version(project, filename):
    """The version in a wheel's or sdist's file name ('vllm-0.19.1-cp38-abi3-...whl' -> '0.19.1'), or None."""
    stem = re.escape(canonical_name(project)).replace("\\-", "[-_.]")
    match = re.match(r"(?i)%s-([^-]+?)(?:-.*\.whl|\.tar\.gz|\.zip)$" % stem, filename)
    return match.group(1) if match else None


_WHEEL_RE = re.compile(r"(?P<name>[^-]+)-(?P<version>[^-]+)(?:-(?P<build>[0-9]+)[^-]*)?-(?P<python>[^-]+)-"
                       r"(?P<abi>[^-]+)-(?P<platform>[^-]+)\.whl")


def wheel_for(listing, version, python="cp312"):
    """The file entry of a release's Linux x86_64 wheel (manylinux): the one for python, else an abi3 one, else
    the newest CPython's, of the highest build number as pip takes it; None when the release has no such wheel.
    Yanked files are not taken."""
    candidates = []
    for entry in listing.get("files") or []:
        match = _WHEEL_RE.fullmatch(entry.get("filename", ""))
        if not match or entry.get("yanked") or file_version(listing.get("name", ""), entry["filename"]) != version:
            continue
        platforms = match.group("platform").split(".")
        if not any(re.fullmatch(r"(manylinux[0-9_]*|manylinux_[0-9]+_[0-9]+)_x86_64", p) for p in platforms):
            continue
        tags = match.group("python").split(".")
        if python in tags and match.group("abi") == python:
            rank = 0
        elif match.group("abi") == "abi3":
            rank = 1
        elif match.group("abi") == "none" or match.group("abi").endswith("t"):
            rank = 3
        else:
            rank = 2
        newest = max((int(t[2:]) for t in tags if re.fullmatch(r"cp3[0-9]+", t)), default=0)
        candidates.append((rank, -int(match.group("build") or -1), -newest, entry["filename"], entry))
    return sorted(candidates, key=lambda c: c[:4])[0][4] if candidates else None


def transformers_suggest(spec, floor, available):
    """The newest patch of the oldest minor series of available that meets spec and floor, or None."""
    fits = [v for v in available if satisfies(v, spec) and Version(v) >= Version(floor)]
    if not fits:
        return None
    oldest = min(fits, key=Version)
    series = [v for v in fits if Version(v).major_minor() == Version(oldest).major_minor()]
    return max(series, key=Version)


def wheel_cuda(release, vllm_majors, torch_cuda, matrix):
    """The CUDA of a release wheel (see compat_matrix.VLLM_WHEEL_CUDA); RefreshError where the sources differ."""
    if release in matrix.VLLM_WHEEL_CUDA:
        cuda = matrix.VLLM_WHEEL_CUDA[release]
        source = "VLLM_WHEEL_CUDA"
    elif Version(release) >= Version(matrix.VLLM_WHEEL_CUDA_FOLLOWS_TORCH):
        cuda = torch_cuda
        source = "its torch pin's wheel"
        if cuda is None:
            raise RefreshError("vllm %s: the torch wheel it pins names no CUDA runtime; add the release to"
                               " VLLM_WHEEL_CUDA with a checked source" % release)
    else:
        raise RefreshError("vllm %s is older than %s and not in VLLM_WHEEL_CUDA: add it there (None when its CUDA is"
                           " not checked)" % (release, matrix.VLLM_WHEEL_CUDA_FOLLOWS_TORCH))
    if cuda is None:
        return None
    major = Version(cuda).major
    others = set(vllm_majors) | (set([Version(torch_cuda).major]) if torch_cuda else set())
    if others - set([major]):
        raise RefreshError("vllm %s: CUDA %s (%s), but its requirements and its torch's name CUDA %s: check the"
                           " release and set VLLM_WHEEL_CUDA" % (release, cuda, source,
                                                                 ", ".join(str(m) for m in sorted(others))))
    return cuda


def build(index, matrix):
    """The generated part of the matrix: dict(vllm: release -> row, torch_releases, transformers_releases, notes).

    index: listing(project) -> PEP 691 dict, metadata(project, entry) -> METADATA text. matrix: compat_matrix,
    for its hand-written inputs (VLLM_FLOOR, VLLM_WHEEL_CUDA, MODEL_FAMILIES, TORCH, QWEN35's family floor).
    notes: what a maintainer should look at (a torch minor on the index without a TORCH row).
    """
    vllm_listing = index.listing("vllm")
    torch_listing = index.listing("torch")
    transformers_listing = index.listing("transformers")
    floors = dict((family["family"], family["min_transformers"]) for family in matrix.MODEL_FAMILIES)
    available = releases(transformers_listing, min(floors.values(), key=Version))
    torch_all = releases(torch_listing)
    notes = []
    rows = {}
    torch_cuda = {}
    for release in releases(vllm_listing, matrix.VLLM_FLOOR):
        entry = wheel_for(vllm_listing, release)
        if entry is None:
            notes.append("vllm %s has no Linux x86_64 wheel on the index: left out" % release)
            continue
        metadata = parse_metadata(index.metadata("vllm", entry))
        if Version(metadata["version"]) != Version(release):
            raise RefreshError("%s holds the METADATA of vllm %s" % (entry["filename"], metadata["version"]))
        row = vllm_requirements(metadata)
        pin = row["torch"]
        if pin not in torch_cuda:
            torch_entry = wheel_for(torch_listing, pin)
            if torch_entry is None:
                raise RefreshError("vllm %s pins torch %s, which has no Linux x86_64 wheel on the index" % (release, pin))
            torch_cuda[pin] = cuda_runtime(parse_metadata(index.metadata("torch", torch_entry)))
        if Version(pin).major_minor() not in matrix.TORCH:
            notes.append("vllm %s pins torch %s: TORCH has no %s row (add it with checked facts)"
                         % (release, pin, Version(pin).major_minor()))
        row["transformers_suggest"] = transformers_suggest(row["transformers"], floors["Qwen3.5"], available)
        row["wheel_cuda"] = wheel_cuda(release, cuda_majors(metadata), torch_cuda[pin], matrix)
        rows[release] = row
    for minor in sorted(set(Version(v).major_minor() for v in torch_all), key=Version):
        if Version(minor) > max((Version(m) for m in matrix.TORCH), default=Version("0")):
            notes.append("torch %s is on the index: TORCH has no %s row (add it with checked facts)" % (
                max((v for v in torch_all if Version(v).major_minor() == minor), key=Version), minor))
    return {
        "vllm": rows,
        "torch_releases": [v for v in torch_all if Version(v).major_minor() in matrix.TORCH],
        "transformers_releases": available,
        "notes": notes,
    }


# --- the block ------------------------------------------------------------------

def _literal(value):
    return "None" if value is None else '"%s"' % value


def _wrapped(first, items, indent, last):
    """first + items joined by ', ' + last, wrapped at WIDTH with continuation lines indented by indent."""
    lines = []
    line = first
    for index, item in enumerate(items):
        piece = item + (", " if index < len(items) - 1 else last)
        if len(line) + len(piece.rstrip()) > WIDTH and line.strip():
            lines.append(line.rstrip())
            line = " " * indent
        line += piece
    lines.append(line.rstrip())
    return lines


def render(result):
    """The generated block of compat_matrix.py (BEGIN to END, with a newline after END)."""
    out = [
        BEGIN,
        "# vllm-*: from each release's wheel METADATA on the package index (the",
        "# x86_64 wheel: Requires-Dist torch==, transformers; Requires-Python).",
        "# transformers_suggest: the newest patch of the oldest minor series that",
        "# meets the requirement and Qwen3.5's floor (None when no release does).",
        "# wheel_cuda: the CUDA of the release wheel (VLLM_WHEEL_CUDA above).",
        "VLLM = {",
    ]
    for release in sorted(result["vllm"], key=Version):
        row = result["vllm"][release]
        first = '    "%s": {' % release
        fields = ['"%s": %s' % (key, _literal(row[key]))
                  for key in ("torch", "python", "transformers", "transformers_suggest", "wheel_cuda")]
        out += _wrapped(first, fields, len(first), "},")
    out += ["}"]
    out += ["# torch-known: the releases on the package index of the minors TORCH has.", "TORCH_RELEASES = ["]
    out += _wrapped("    ", ['"%s"' % v for v in result["torch_releases"]], 4, ",") + ["]"]
    out += ["# transformers-known: the releases on the package index from the oldest",
            "# floor of MODEL_FAMILIES on.", "TRANSFORMERS_RELEASES = ["]
    out += _wrapped("    ", ['"%s"' % v for v in result["transformers_releases"]], 4, ",") + ["]"]
    out += [END, ""]
    return "\n".join(out)


def split_block(source):
    """(before, block, after) of compat_matrix.py's text; RefreshError unless each marker is there once, in order."""
    lines = source.splitlines(True)
    begins = [i for i, line in enumerate(lines) if line.rstrip("\n") == BEGIN]
    ends = [i for i, line in enumerate(lines) if line.rstrip("\n") == END]
    if len(begins) != 1 or len(ends) != 1 or begins[0] > ends[0]:
        raise RefreshError("compat_matrix.py must hold the lines %r and %r once each, in that order" % (BEGIN, END))
    return "".join(lines[:begins[0]]), "".join(lines[begins[0]:ends[0] + 1]), "".join(lines[ends[0] + 1:])


def replace_block(source, block):
    """source with its generated block replaced by block (render's output)."""
    before, dummy, after = split_block(source)
    return before + block + after
