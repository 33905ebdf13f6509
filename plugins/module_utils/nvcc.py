# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Find CUDA toolkits and read nvcc: the parsers and the discovery nvcc_facts uses.

Every program runs through proc.run with the module's timeout. The parsers
return a value or raise ValueError with a readable message, for any input.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import io
import json
import os
import re

from ansible_collections.gpufleet.llm_stack.plugins.module_utils.proc import call as _call

# bounded digit counts: a version of thousands of digits is not a version
_RELEASE_RE = re.compile(r"release (?P<release>\d{1,3}\.\d{1,3}), V(?P<build>\d{1,3}\.\d{1,3}\.\d{1,6})(?![\d.])", re.ASCII)
_VERSION_TXT_RE = re.compile(r"CUDA Version (?P<version>\d{1,3}\.\d{1,3}(?:\.\d{1,9})?)(?![\d.])", re.ASCII)
_SDK_VERSION_RE = re.compile(r"^\d{1,3}\.\d{1,3}(?:\.\d{1,9})?(?:\.\d{1,9})?$", re.ASCII)
MAX_VERSION_FILE = 1024 * 1024
# nvcc_facts' defaults, which torch_info (read_toolkits) reads with too: the directory of cuda and cuda-X.Y,
# and the seconds each nvcc --version may take.
DEFAULT_ROOT = "/usr/local"
DEFAULT_TIMEOUT = 20


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
    text = text.strip() if isinstance(text, str) else ""
    if not _SDK_VERSION_RE.match(text):
        raise ValueError("not a CUDA version: %r" % (text if len(text) <= 40 else text[:37] + "..."))
    parts = text.split(".")
    if len(parts) >= 3 and int(parts[2]) > 999:
        parts = parts[:2]
    return ".".join(str(int(part)) for part in parts[:3])


def read_version_json(text):
    """(version, nvcc_build) from the text of a toolkit's version.json."""
    try:
        data = json.loads(text)
    except RecursionError:
        raise ValueError("version.json is nested too deeply to be a toolkit's version file")
    if not isinstance(data, dict) or not isinstance(data.get("cuda"), dict) or "version" not in data["cuda"]:
        raise ValueError("version.json has no cuda.version")
    version = normalize_sdk_version(str(data["cuda"]["version"]))
    nvcc = data.get("cuda_nvcc")
    nvcc_build = None
    if isinstance(nvcc, dict) and isinstance(nvcc.get("version"), str) and _SDK_VERSION_RE.match(nvcc["version"]):
        nvcc_build = nvcc["version"]
    return version, nvcc_build


def read_version_txt(text):
    """Toolkit version from version.txt (CUDA 11.0 and older: 'CUDA Version 10.2.89')."""
    match = _VERSION_TXT_RE.search(text or "")
    if not match:
        raise ValueError("version.txt has no 'CUDA Version'")
    return normalize_sdk_version(match.group("version"))


def _read(path):
    with io.open(path, "r", encoding="utf-8", errors="replace") as handle:
        text = handle.read(MAX_VERSION_FILE + 1)
    if len(text) > MAX_VERSION_FILE:
        raise ValueError("%s is larger than %d bytes" % (path, MAX_VERSION_FILE))
    return text


def timeout_error(nvcc, timeout):
    return ("%s did not answer within %s seconds (a hung nvcc, or a stalled network file system?); its processes"
            " were stopped. Fix: run `%s --version` on the host; raise the timeout of nvcc_facts only if the"
            " host is just slow" % (nvcc, timeout, nvcc))


def _release(version):
    return ".".join(version.split(".")[:2]) if version else None


def describe_toolkit(path, run_command, warnings=None):
    """{path, version, release, nvcc_build, nvcc, source} for a toolkit dir, or None if it is not one.

    Problems worth telling (a toolkit nvcc that hangs; unreadable version
    files of a directory that then has no version) are appended to warnings.
    """
    warnings = [] if warnings is None else warnings
    problems = []
    nvcc = os.path.join(path, "bin", "nvcc")
    nvcc = nvcc if os.path.isfile(nvcc) and os.access(nvcc, os.X_OK) else None
    version = nvcc_build = source = None
    json_path = os.path.join(path, "version.json")
    txt_path = os.path.join(path, "version.txt")
    if os.path.isfile(json_path):
        try:
            version, nvcc_build = read_version_json(_read(json_path))
            source = "version.json"
        except (ValueError, OSError) as exc:
            version = None
            problems.append("%s: %s" % (json_path, exc))
    if version is None and os.path.isfile(txt_path):
        try:
            version = read_version_txt(_read(txt_path))
            source = "version.txt"
        except (ValueError, OSError) as exc:
            version = None
            problems.append("%s: %s" % (txt_path, exc))
    if nvcc and (version is None or nvcc_build is None):
        result = _call(run_command, [nvcc, "--version"])
        if result.timed_out:
            warnings.append(timeout_error(nvcc, result.timeout))
        release, build = parse_nvcc_version(result.stdout) if result.rc == 0 else (None, None)
        if build:
            nvcc_build = build
            if version is None:
                version = release
                source = "nvcc"
    if version is None:
        warnings.extend(problems)
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
        entry = describe_toolkit(path, run_command, warnings)
        if entry is None:
            if explicit:
                warnings.append("prefix %s has no version.json, version.txt or bin/nvcc; not a CUDA toolkit" % path)
            continue
        seen.add(real)
        toolkits.append(entry)
    toolkits.sort(key=lambda entry: (_version_key(entry), entry["path"]))
    return toolkits, warnings


def home_link(root):
    """Where root/cuda points (realpath), or None when it, or what it points to, does not exist."""
    path = os.path.join(root, "cuda")
    if not os.path.exists(path):
        return None
    return os.path.realpath(path)


def home_link_dangling(root):
    """What a dangling root/cuda link points to (its resolved target), else None."""
    path = os.path.join(root, "cuda")
    if not os.path.islink(path) or os.path.exists(path):
        return None
    try:
        target = os.readlink(path)
    except OSError:
        return None
    return os.path.normpath(os.path.join(root, target))


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


NOT_UTF8 = "printed bytes that are not UTF-8 (shown as U+FFFD)"


def read_nvcc(run_command, explicit, on_path, root, prefixes):
    """All nvcc_facts: returns (facts, warnings)."""
    nvcc_path = resolve_nvcc(explicit, on_path, root)
    facts = {
        "nvcc_path": nvcc_path,
        "nvcc_version": None,
        "nvcc_build": None,
        "nvcc_error": None,
        "cuda_toolkits": [],
        "cuda_home_link": home_link(root),
        "cuda_home_link_dangling": home_link_dangling(root),
    }
    head = []
    if facts["cuda_home_link_dangling"]:
        link = os.path.join(root, "cuda")
        head.append("%s is a dangling link to %s (cuda_home_link is null): the toolkit it named is gone. Fix:"
                    " point it at an installed toolkit or remove it" % (link, facts["cuda_home_link_dangling"]))
    if nvcc_path:
        result = _call(run_command, [nvcc_path, "--version"])
        release, build = parse_nvcc_version(result.stdout) if result.rc == 0 else (None, None)
        if result.timed_out:
            facts["nvcc_error"] = timeout_error(nvcc_path, result.timeout)
        elif result.rc != 0:
            text = " ".join(line.strip() for line in (result.stdout + "\n" + result.stderr).splitlines()
                            if line.strip())
            if len(text) > 600:
                text = text[:597] + "..."
            facts["nvcc_error"] = "%s --version exited with %s: %s" % (nvcc_path, result.rc, text or "no output")
        elif release is None:
            facts["nvcc_error"] = "%s --version printed no 'release X.Y, VX.Y.Z' line%s" % (
                nvcc_path, " (it %s)" % NOT_UTF8 if result.decode_errors else "")
        elif result.decode_errors:
            head.append("%s --version %s" % (nvcc_path, NOT_UTF8))
        facts["nvcc_version"], facts["nvcc_build"] = release, build
    facts["cuda_toolkits"], warnings = find_toolkits(root, prefixes, run_command)
    return facts, head + warnings
