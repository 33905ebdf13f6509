# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Find CUDA toolkits and read nvcc: the parsers and the discovery nvcc_facts uses."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import json
import os
import re

_RELEASE_RE = re.compile(r"release (?P<release>\d+\.\d+), V(?P<build>\d+\.\d+\.\d+)")
_VERSION_TXT_RE = re.compile(r"CUDA Version (?P<version>\d+\.\d+(?:\.\d+)?)")


def parse_nvcc_version(text):
    """('13.0', '13.0.88') from ``nvcc --version`` output; (None, None) if absent."""
    match = _RELEASE_RE.search(text or "")
    if not match:
        return None, None
    return match.group("release"), match.group("build")


def normalize_sdk_version(text):
    """version.json's cuda.version -> toolkit version.

    The runfile writes either the release ('12.8.1') or, for some releases,
    major.minor plus a build date ('12.6.20241114', '11.8.20220929'): a
    third part above 999 is a date and is dropped ('12.6').
    """
    parts = text.strip().split(".")
    if len(parts) < 2 or not all(part.isdigit() for part in parts):
        raise ValueError("not a CUDA version: %r" % text)
    if len(parts) >= 3 and int(parts[2]) > 999:
        parts = parts[:2]
    return ".".join(str(int(part)) for part in parts[:3])


def read_version_json(text):
    """(version, nvcc_build) from the text of a toolkit's version.json."""
    data = json.loads(text)
    if not isinstance(data, dict) or not isinstance(data.get("cuda"), dict) or "version" not in data["cuda"]:
        raise ValueError("version.json has no cuda.version")
    version = normalize_sdk_version(str(data["cuda"]["version"]))
    nvcc = data.get("cuda_nvcc")
    nvcc_build = str(nvcc["version"]) if isinstance(nvcc, dict) and "version" in nvcc else None
    return version, nvcc_build


def read_version_txt(text):
    """Toolkit version from version.txt (CUDA 11.0 and older: 'CUDA Version 10.2.89')."""
    match = _VERSION_TXT_RE.search(text or "")
    if not match:
        raise ValueError("version.txt has no 'CUDA Version'")
    return normalize_sdk_version(match.group("version"))


def _read(path):
    with open(path, "r") as handle:
        return handle.read()


def _release(version):
    return ".".join(version.split(".")[:2]) if version else None


def describe_toolkit(path, run_command):
    """{path, version, release, nvcc_build, nvcc, source} for a toolkit dir, or None if it is not one."""
    nvcc = os.path.join(path, "bin", "nvcc")
    nvcc = nvcc if os.path.isfile(nvcc) and os.access(nvcc, os.X_OK) else None
    version = nvcc_build = source = None
    json_path = os.path.join(path, "version.json")
    txt_path = os.path.join(path, "version.txt")
    if os.path.isfile(json_path):
        try:
            version, nvcc_build = read_version_json(_read(json_path))
            source = "version.json"
        except (ValueError, OSError):
            version = None
    if version is None and os.path.isfile(txt_path):
        try:
            version = read_version_txt(_read(txt_path))
            source = "version.txt"
        except (ValueError, OSError):
            version = None
    if nvcc and (version is None or nvcc_build is None):
        rc, out, dummy = run_command([nvcc, "--version"])
        release, build = parse_nvcc_version(out) if rc == 0 else (None, None)
        if build:
            nvcc_build = build
            if version is None:
                version = release
                source = "nvcc"
    if version is None:
        return None
    return {
        "path": path,
        "version": version,
        "release": _release(version),
        "nvcc_build": nvcc_build,
        "nvcc": nvcc,
        "source": source,
    }


def _version_key(entry):
    return tuple(int(part) for part in entry["version"].split("."))


def find_toolkits(root, prefixes, run_command):
    """Toolkits under root/cuda-* (symlinks to a toolkit already listed are skipped) and in prefixes.

    Returns (toolkits sorted by version, warnings).
    """
    toolkits = []
    warnings = []
    seen = set()
    # real directories first, so a link such as cuda-13 -> cuda-13.0 is the one skipped
    candidates = sorted(glob.glob(os.path.join(root, "cuda-*")), key=lambda p: (os.path.islink(p), p))
    for path in candidates + [p for p in prefixes if p not in candidates]:
        explicit = path in prefixes
        if not os.path.isdir(path):
            if explicit:
                warnings.append("prefix %s is not a directory; skipped" % path)
            continue
        real = os.path.realpath(path)
        if real in seen:
            continue
        entry = describe_toolkit(path, run_command)
        if entry is None:
            if explicit:
                warnings.append("prefix %s has no version.json, version.txt or bin/nvcc; not a CUDA toolkit" % path)
            continue
        seen.add(real)
        toolkits.append(entry)
    toolkits.sort(key=lambda entry: (_version_key(entry), entry["path"]))
    return toolkits, warnings


def home_link(root):
    """Where root/cuda points (realpath), or None when it does not exist."""
    path = os.path.join(root, "cuda")
    if not os.path.lexists(path):
        return None
    return os.path.realpath(path)


def resolve_nvcc(explicit, on_path, root):
    """nvcc to run: the explicit option, else the one on PATH, else root/cuda/bin/nvcc, else None."""
    if explicit:
        return explicit
    if on_path:
        return on_path
    fallback = os.path.join(root, "cuda", "bin", "nvcc")
    if os.path.isfile(fallback) and os.access(fallback, os.X_OK):
        return fallback
    return None


def read_nvcc(run_command, explicit, on_path, root, prefixes):
    """All nvcc_facts: returns (facts, warnings)."""
    warnings = []
    nvcc_path = resolve_nvcc(explicit, on_path, root)
    facts = {
        "nvcc_path": nvcc_path,
        "nvcc_version": None,
        "nvcc_build": None,
        "nvcc_error": None,
        "cuda_toolkits": [],
        "cuda_home_link": home_link(root),
    }
    if nvcc_path:
        rc, out, err = run_command([nvcc_path, "--version"])
        release, build = parse_nvcc_version(out) if rc == 0 else (None, None)
        if rc != 0:
            text = " ".join(line.strip() for line in (out + "\n" + err).splitlines() if line.strip())
            facts["nvcc_error"] = "%s --version exited with %s: %s" % (nvcc_path, rc, text or "no output")
        elif release is None:
            facts["nvcc_error"] = "%s --version printed no 'release X.Y, VX.Y.Z' line" % nvcc_path
        facts["nvcc_version"], facts["nvcc_build"] = release, build
    facts["cuda_toolkits"], warnings = find_toolkits(root, prefixes, run_command)
    return facts, warnings
