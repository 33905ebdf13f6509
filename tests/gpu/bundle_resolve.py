# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The exact wheel set of a vLLM release for a host that already has a venv (tests/gpu/bundle.sh).

    python3 tests/gpu/bundle_resolve.py --freeze FREEZE --constraints
    python3 tests/gpu/bundle_resolve.py --report REPORT.json --trim
    python3 tests/gpu/bundle_resolve.py --freeze FREEZE --report REPORT.json --python-version 3.12 --out DIR

The first prints the pip constraints that keep the host's stack (STACK: its torch, torchvision, torchaudio, triton
and transformers, as FREEZE has them) in the resolution; --trim prints a report trimmed to what is read (a test
fixture). REPORT is pip's installation report (``pip install --dry-run --ignore-installed --report``) of
``vllm==VERSION`` (and the other roots, such as supervisor), resolved for the host's Python and platform against
the index. It is read from the roots down, following each Requires-Dist whose marker holds for the host (the extras a requirement
names included), so only what the release needs counts. For each distribution it needs:

- the host has it (FREEZE, ``pip freeze`` of the host's venv) at a version that meets every requirement on it:
  the host keeps its own, and it is in no list;
- the host has it at a version that some requirement refuses: DIR/vllm-requirements-host.txt pins the resolved
  version (the install replaces the host's); the host's stack (STACK) is never replaced: a release that refuses
  the host's torch or transformers is an error (pick the release that takes them);
- the host lacks it: DIR/vllm-requirements.txt pins the resolved version.

Both lists are exact pins, installed with ``--no-deps`` (vllm_source_requirements), so a package the engine
imports at start is never left to chance: every distribution the release requires that the host lacks, or has
at a version it refuses, is listed, whether or not a given start imports it. DIR/resolution.json keeps the
decision for each distribution and why. Needs the collection path (make collection) and the standard library.
"""

from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, ".collections"))
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import matrix_refresh as R  # noqa: E402
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.versions import (  # noqa: E402
    VersionError, satisfies)

# The stack's own pins on the host (the torch role's torch and what its build pins, llm_stack_transformers_version):
# the resolution is constrained to the host's versions of them (constraints), and a wheel set never replaces them.
STACK = ("torch", "torchvision", "torchaudio", "triton", "transformers")


class BundleError(ValueError):
    """A resolution or a freeze that gives no wheel set; the message says why and the fix."""


def environment(python_version, machine="x86_64"):
    """PEP 508 marker variables of a CPython Linux host (python_version '3.12', or '3.12.3')."""
    parts = str(python_version).split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts):
        raise BundleError("--python-version %r is not X.Y or X.Y.Z. Fix: the host's Python, as 3.12." % python_version)
    full = ".".join(parts + ["0"] * (3 - len(parts)))
    return {"python_version": "%s.%s" % tuple(parts[:2]), "python_full_version": full, "os_name": "posix",
            "sys_platform": "linux", "platform_system": "Linux", "platform_machine": machine,
            "platform_python_implementation": "CPython", "implementation_name": "cpython",
            "implementation_version": full, "platform_release": "", "platform_version": ""}


def read_freeze(text):
    """`pip freeze` text -> {canonical name: version}; editable and URL lines are the host's own (kept)."""
    found = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        if " @ " in line:
            found[R.canonical_name(line.split(" @ ", 1)[0].strip())] = None
            continue
        name, sep, version = line.partition("==")
        if not sep:
            raise BundleError("the freeze line %r is not NAME==VERSION. Fix: give the output of pip freeze." % line)
        found[R.canonical_name(name.strip())] = version.strip()
    return found


def read_report(report):
    """pip's report -> ({canonical name: {name, version, requires_dist, requested}}, roots)."""
    if not isinstance(report, dict) or not isinstance(report.get("install"), list):
        raise BundleError("not a pip installation report (no 'install' list). Fix: pip install --dry-run --report.")
    dists, roots = {}, []
    for item in report["install"]:
        meta = item.get("metadata") or {}
        key = R.canonical_name(meta.get("name") or "")
        dists[key] = {"name": meta.get("name"), "version": meta.get("version"),
                      "requires_dist": list(meta.get("requires_dist") or []),
                      "url": (item.get("download_info") or {}).get("url")}
        if item.get("requested"):
            roots.append(key)
    return dists, sorted(roots)


def needed(dists, roots, env):
    """Walk from roots: {canonical name: [(required_by, spec), ...]} of every distribution the roots need on env."""
    specs = dict((root, [("requested", "==%s" % dists[root]["version"])]) for root in roots)
    queue = [(root, "") for root in roots]
    seen = set()
    while queue:
        key, extra = queue.pop(0)
        if (key, extra) in seen:
            continue
        seen.add((key, extra))
        for line in dists[key]["requires_dist"]:
            req = R.parse_requirement(line)
            if not R.marker_holds(req["marker"], env, extra or None):
                continue
            if req["name"] not in dists:
                raise BundleError("%s %s requires %s, which the report does not resolve. Fix: resolve again with"
                                  " the same --python-version and --platform." % (
                                      dists[key]["name"], dists[key]["version"], line))
            specs.setdefault(req["name"], []).append(("%s %s" % (dists[key]["name"], dists[key]["version"]),
                                                      req["spec"]))
            queue.extend((req["name"], name) for name in [""] + req["extras"])
    return specs


def _meets(version, spec):
    try:
        return satisfies(version, spec) if spec else True
    except VersionError:
        return False


def wheel_set(report, freeze_text, python_version):
    """The decision: {lacks: [pin], replaces: [pin], kept: [name], entries: {name: why}} for a report and a freeze."""
    env = environment(python_version)
    dists, roots = read_report(report)
    if not roots:
        raise BundleError("the report has no requested distribution. Fix: resolve vllm==VERSION.")
    host = read_freeze(freeze_text)
    specs = needed(dists, roots, env)
    lacks, replaces, kept, entries, errors = [], [], [], {}, []
    for key in sorted(specs):
        dist = dists[key]
        pin = "%s==%s" % (key, dist["version"])
        refused = ["%s (%s)" % (spec, owner) for owner, spec in specs[key]
                   if owner != "requested" and not _meets(host.get(key) or "0", spec)]
        if key in host and key not in roots and (host[key] is None or not refused):
            kept.append(key)
            entries[key] = {"decision": "kept", "host": host[key], "resolved": dist["version"]}
        elif key in host and key not in roots:
            if key in STACK:
                errors.append("the release requires %s %s, the host has %s. Fix: pick the vLLM release that accepts"
                              " the host's %s (docs/compat-matrix.md), or change the host's stack first." % (
                                  key, ", ".join(refused), host[key], key))
            replaces.append(pin)
            entries[key] = {"decision": "replaces", "host": host[key], "resolved": dist["version"],
                            "refused_by": refused}
        else:
            lacks.append(pin)
            entries[key] = {"decision": "lacks", "resolved": dist["version"]}
        entries[key]["required_by"] = sorted(set(owner for owner, dummy in specs[key]))
    if errors:
        raise BundleError("; ".join(errors))
    unused = sorted(set(dists) - set(specs))
    return {"roots": roots, "lacks": lacks, "replaces": replaces, "kept": kept, "unused": unused,
            "entries": entries, "python_version": env["python_version"]}


def trim(report):
    """What read_report reads of a report (names, versions, Requires-Dist, requested, URLs): a fixture's size."""
    keep = []
    for item in report.get("install") or []:
        meta = item.get("metadata") or {}
        keep.append({"metadata": dict((k, meta[k]) for k in ("name", "version", "requires_dist") if k in meta),
                     "requested": bool(item.get("requested")),
                     "download_info": {"url": (item.get("download_info") or {}).get("url")}})
    return {"version": report.get("version"), "pip_version": report.get("pip_version"),
            "environment": report.get("environment"), "install": keep}


def constraints(freeze_text):
    """The pip constraints that keep the host's stack (STACK) in the resolution: one NAME==VERSION a line."""
    host = read_freeze(freeze_text)
    return "".join("%s==%s\n" % (name, host[name]) for name in sorted(STACK) if host.get(name))


def render(pins, roots):
    """One pin a line: the roots first, in their order, then the rest by name (the checked-in lists' order)."""
    first = [p for root in roots for p in pins if p.split("==")[0] == root]
    return "".join(p + "\n" for p in first + sorted(p for p in pins if p not in first))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--freeze")
    parser.add_argument("--constraints", action="store_true")
    parser.add_argument("--trim", action="store_true", help="print REPORT trimmed to what is read (a fixture)")
    parser.add_argument("--report")
    parser.add_argument("--python-version")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    if args.trim and args.report:
        with open(args.report) as handle:
            json.dump(trim(json.load(handle)), sys.stdout, indent=0, sort_keys=True)
        return 0
    if not args.freeze:
        parser.error("--freeze is required")
    if args.constraints:
        with open(args.freeze) as handle:
            sys.stdout.write(constraints(handle.read()))
        return 0
    if not (args.report and args.python_version and args.out):
        parser.error("--report, --python-version and --out, or --constraints")
    try:
        with open(args.report) as handle:
            report = json.load(handle)
        with open(args.freeze) as handle:
            freeze = handle.read()
        result = wheel_set(report, freeze, args.python_version)
    except (BundleError, R.RefreshError, OSError, ValueError) as exc:
        sys.stderr.write("bundle_resolve: %s\n" % exc)
        return 2
    os.makedirs(args.out, exist_ok=True)
    order = ["vllm"]
    with open(os.path.join(args.out, "vllm-requirements.txt"), "w") as handle:
        handle.write(render(result["lacks"], order))
    with open(os.path.join(args.out, "vllm-requirements-host.txt"), "w") as handle:
        handle.write(render(result["replaces"], order))
    with open(os.path.join(args.out, "resolution.json"), "w") as handle:
        json.dump(result, handle, indent=1, sort_keys=True)
        handle.write("\n")
    print("%d the host lacks, %d it has at a version the release refuses, %d it keeps, %d resolved but not needed"
          " on Python %s" % (len(result["lacks"]), len(result["replaces"]), len(result["kept"]),
                             len(result["unused"]), result["python_version"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
