# -*- coding: utf-8 -*-
# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read a virtualenv's torch and judge it against the stack's pins.

Two halves:

* ``PROBE_SCRIPT`` runs inside the venv's own Python (stdlib only) and prints
  one JSON document: interpreter, torch (version.py read without importing,
  then, on request, the imported module's CUDA view), installed
  distributions, and whether the driver's ``libcuda.so.1`` can be loaded.
* The functions below are pure: they parse that document, check pinned
  requirements, and name each problem with its fix (``diagnose``). The
  ``torch_info`` module is argument handling around them; unit tests call
  them with captured probe output.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

# Runs under the interpreter being probed: stdlib only, Python >= 3.8.
PROBE_SCRIPT = r'''
import ctypes, hashlib, base64, importlib.util, json, os, runpy, sys, warnings
args = json.loads(sys.argv[1])
out = {
    "python": {
        "version": "%d.%d.%d" % tuple(sys.version_info[:3]),
        "abi_tag": "cp%d%d" % tuple(sys.version_info[:2]),
        "executable": sys.executable,
        "prefix": sys.prefix,
        "in_venv": sys.prefix != getattr(sys, "base_prefix", sys.prefix),
    },
    "modules": {},
    "distributions": {},
    "torch": None,
    "libcuda": None,
}
for name in ("venv", "ensurepip"):
    out["modules"][name] = importlib.util.find_spec(name) is not None

from importlib import metadata

def record_problems(dist):
    bad = []
    for line in (dist.read_text("RECORD") or "").splitlines():
        parts = line.rsplit(",", 2)
        if len(parts) != 3 or not parts[1].startswith("sha256="):
            continue
        path = dist.locate_file(parts[0])
        try:
            with open(str(path), "rb") as f:
                digest = hashlib.sha256(f.read()).digest()
        except OSError:
            bad.append(parts[0] + " (missing)")
            continue
        if "sha256=" + base64.urlsafe_b64encode(digest).decode().rstrip("=") != parts[1]:
            bad.append(parts[0] + " (modified)")
    return bad

for name in args.get("distributions", []):
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        out["distributions"][name] = None
        continue
    info = {"version": dist.version, "direct_url": None}
    try:
        info["direct_url"] = json.loads(dist.read_text("direct_url.json") or "null")
    except ValueError:
        pass
    if args.get("verify_files"):
        info["file_problems"] = record_problems(dist)
    out["distributions"][name] = info

spec = importlib.util.find_spec("torch")
if spec is not None and spec.origin:
    tdir = os.path.dirname(spec.origin)
    t = {"path": tdir, "imported": False}
    try:
        v = runpy.run_path(os.path.join(tdir, "version.py"))
        t["version"] = v.get("__version__")
        t["cuda"] = v.get("cuda")
    except Exception as e:
        t["version"] = None
        t["cuda"] = None
        t["error"] = "version.py: %s: %s" % (type(e).__name__, e)
    # What identifies this install: a reinstall rewrites these files.
    sig = {"python": out["python"]["version"]}
    for name in ["version.py"] + sorted(x for x in os.listdir(tdir) if x.startswith("_C.") and x.endswith(".so")):
        st = os.stat(os.path.join(tdir, name))
        sig[name] = [st.st_size, st.st_mtime_ns]
    t["signature"] = sig
    if args.get("record") and not args.get("import_torch") and "error" not in t:
        try:
            with open(args["record"]) as f:
                rec = json.load(f)
        except (OSError, ValueError):
            rec = {}
        if rec.get("signature") == sig and rec.get("version") == t["version"]:
            t["cxx11_abi"] = rec.get("cxx11_abi")
            t["arch_list"] = rec.get("arch_list")
            t["from_record"] = args["record"]
    # Without a matching record, a record was asked for: import after all.
    if args.get("import_torch") or (args.get("record") and "from_record" not in t):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                import torch
            t["imported"] = True
            t["version"] = str(torch.__version__)
            t["cuda"] = torch.version.cuda
            t["cxx11_abi"] = bool(torch._C._GLIBCXX_USE_CXX11_ABI)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                avail = bool(torch.cuda.is_available())
            t["cuda_available"] = avail
            t["cuda_warnings"] = [str(w.message) for w in caught]
            t["arch_list"] = list(torch.cuda.get_arch_list()) if t["cuda"] else []
            devices = []
            if avail:
                for i in range(torch.cuda.device_count()):
                    p = torch.cuda.get_device_properties(i)
                    devices.append({"index": i, "name": p.name,
                                    "capability": "%d.%d" % (p.major, p.minor),
                                    "memory_total_mib": int(p.total_memory // (1024 * 1024))})
            t["devices"] = devices
        except Exception as e:
            t["error"] = "import torch: %s: %s" % (type(e).__name__, e)
    out["torch"] = t

try:
    ctypes.CDLL("libcuda.so.1")
    path = None
    with open("/proc/self/maps") as maps:
        for line in maps:
            if "libcuda.so" in line:
                path = line.split()[-1]
                break
    out["libcuda"] = {"loaded": True, "path": path, "error": None}
except OSError as e:
    out["libcuda"] = {"loaded": False, "path": None, "error": str(e)}

print("TORCH_PROBE_JSON " + json.dumps(out, sort_keys=True))
'''

# Runs under the interpreter a venv is to be made from.
INTERPRETER_SCRIPT = r'''
import importlib.util, json, sys
print("TORCH_PROBE_JSON " + json.dumps({
    "version": "%d.%d.%d" % tuple(sys.version_info[:3]),
    "executable": sys.executable,
    "venv": importlib.util.find_spec("venv") is not None,
    "ensurepip": importlib.util.find_spec("ensurepip") is not None,
}))
'''

MARK = "TORCH_PROBE_JSON "


class ProbeError(Exception):
    """The probe printed no result: the interpreter failed or is not Python."""


def parse_probe_output(stdout):
    """Return the JSON document the probe printed on its marked line."""
    for line in (stdout or "").splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK):])
    raise ProbeError("no probe result in the output: %r" % (stdout or "")[-500:])


def normalize_name(name):
    """PEP 503 normalisation: Flash_Attn -> flash-attn."""
    return re.sub(r"[-_.]+", "-", name).lower()


_REQ = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:==\s*([A-Za-z0-9.+!_-]+))?\s*$")


def parse_requirement(spec):
    """'torch==2.10.0+cu128' -> ('torch', '2.10.0+cu128'); 'einops' -> ('einops', None).

    Only exact pins and bare names are accepted: anything else cannot be
    checked without asking pip, and a re-run must not ask pip.
    """
    m = _REQ.match(spec or "")
    if not m:
        raise ValueError(
            "requirement %r: use NAME or NAME==VERSION (exact pins only, so that a re-run can tell "
            "without pip whether it is installed)" % (spec,))
    return normalize_name(m.group(1)), m.group(2)


def version_satisfies(installed, wanted):
    """PEP 440 '==' for exact pins: a local label is compared only when the pin has one."""
    if wanted is None:
        return installed is not None
    if installed is None:
        return False
    if "+" in wanted:
        return installed == wanted
    return installed.split("+", 1)[0] == wanted


def unmet_requirements(specs, distributions):
    """Specs whose distribution is missing or at another version."""
    found = dict((normalize_name(k), (v or {}).get("version")) for k, v in (distributions or {}).items())
    unmet = []
    for spec in specs:
        name, wanted = parse_requirement(spec)
        if not version_satisfies(found.get(name), wanted):
            unmet.append(spec)
    return unmet


def version_tuple(text):
    """'12.8' -> (12, 8); '13.0.2' -> (13, 0, 2); None or junk -> None."""
    if text is None:
        return None
    parts = re.findall(r"\d+", str(text))
    return tuple(int(p) for p in parts) if parts else None


def cuda_build_tag(cuda):
    """torch.version.cuda -> the index tag: '13.0' -> 'cu130', None -> 'cpu'."""
    vt = version_tuple(cuda)
    if not vt:
        return "cpu"
    return "cu%d%d" % (vt[0], vt[1] if len(vt) > 1 else 0)


def cuda_of_build_tag(tag):
    """'cu128' -> '12.8', 'cu130' -> '13.0'; 'cpu' or '' -> None."""
    m = re.match(r"^cu(\d+)(\d)$", tag or "")
    if not m:
        return None
    return "%s.%s" % (m.group(1), m.group(2))


def _arch_of(entry):
    """'sm_90' -> (9, 0, 'sm'); 'sm_100a' -> (10, 0, 'sm'); 'compute_80' -> (8, 0, 'compute')."""
    m = re.match(r"^(sm|compute)_(\d+?)(\d)[a-z]?$", entry)
    if not m:
        return None
    return int(m.group(2)), int(m.group(3)), m.group(1)


def arch_covered(capability, arch_list):
    """True when torch's arch list runs on a device of this capability.

    A cubin for sm_XY runs on the same major at minor >= Y (sm_86 code on
    an 8.9 device); PTX (compute_XY) is JIT-compiled for any newer device.
    """
    cap = version_tuple(capability)
    if not cap or len(cap) < 2:
        return False
    for entry in arch_list or []:
        arch = _arch_of(entry)
        if not arch:
            continue
        major, minor, kind = arch
        if kind == "sm" and major == cap[0] and minor <= cap[1]:
            return True
        if kind == "compute" and (major, minor) <= (cap[0], cap[1]):
            return True
    return False


def _problem(name, msg):
    return {"name": name, "msg": msg}


def diagnose(info, expect_version=None, expect_local=None, index_url=None, gpu_count=0,
             driver_cuda_version=None, compute_caps=None, cpu_only_test_host=False):
    """Judge a probed venv against the pins and the host's GPUs.

    Returns (problems, notes, gpu_checks). Each problem is {name, msg}, the
    msg saying what is wrong and the fix. gpu_checks is 'passed', 'failed'
    or 'skipped: <reason>' so that a host without GPUs says so.
    """
    problems = []
    notes = []
    torch = (info or {}).get("torch")
    expect_cuda = cuda_of_build_tag(expect_local)
    pip_hint = "pip install torch==%s%s --index-url %s" % (
        expect_version or "VERSION", "+" + expect_local if expect_local else "", index_url or "https://download.pytorch.org/whl/cuXYZ")

    if not torch:
        problems.append(_problem("torch_missing", "torch is not installed in %s. Fix: %s (the torch role does this)." % (
            (info or {}).get("python", {}).get("prefix", "the venv"), pip_hint)))
        return problems, notes, "skipped: torch is not installed"
    if torch.get("error"):
        problems.append(_problem("torch_import_failed", "torch in %s does not load: %s. Fix: reinstall it (%s), and check "
                                 "that nothing in the venv shadows it." % (torch.get("path"), torch["error"], pip_hint)))
        return problems, notes, "failed"

    version = torch.get("version") or ""
    cuda = torch.get("cuda")
    if expect_version and version.split("+", 1)[0] != expect_version:
        problems.append(_problem("torch_version_mismatch", "torch %s is installed, the stack pins %s. Fix: %s." % (
            version, expect_version, pip_hint)))

    if cuda is None:
        if cpu_only_test_host and gpu_count == 0:
            notes.append("torch %s is the CPU-only build: accepted because llm_stack_cpu_only_test_host is true "
                         "(CPU-only test path; never on a real fleet)." % version)
        elif gpu_count > 0:
            problems.append(_problem("cpu_only_build", "torch %s is the CPU-only build (torch.version.cuda is None) on a host with "
                                     "%d GPU(s): torch.cuda.is_available() is False and every CUDA extension fails. Fix: %s; "
                                     "take the CPU wheel out of the wheelhouse or index it came from." % (version, gpu_count, pip_hint)))
            return problems, notes, "failed"
        else:
            problems.append(_problem("cpu_only_build", "torch %s is the CPU-only build (torch.version.cuda is None): extensions "
                                     "built against it on this build host have no CUDA code. Fix: %s." % (version, pip_hint)))
    elif expect_cuda and version_tuple(cuda)[:2] != version_tuple(expect_cuda)[:2]:
        problems.append(_problem("cuda_build_mismatch", "torch %s is built for CUDA %s, the stack pins %s (CUDA %s). Fix: %s." % (
            version, cuda, expect_local, expect_cuda, pip_hint)))

    if gpu_count == 0:
        reason = ("CPU-only test host (llm_stack_cpu_only_test_host)" if cpu_only_test_host
                  else "no GPU on this host (a build host)")
        return problems, notes, "skipped: " + reason

    if cuda is None:
        return problems, notes, "failed"
    gpu_problems = []
    driver_vt = version_tuple(driver_cuda_version)
    libcuda = (info or {}).get("libcuda") or {}
    if driver_vt and version_tuple(cuda)[:2] > driver_vt[:2]:
        gpu_problems.append(_problem("cuda_build_newer_than_driver", "torch %s is built for CUDA %s but the driver supports CUDA "
                                     "up to %s (nvidia-smi header): torch.cuda.is_available() is False. Fix: pin "
                                     "llm_stack_torch_cuda to cu%s or older, or upgrade the NVIDIA driver (this collection "
                                     "never installs it)." % (version, cuda, driver_cuda_version, "".join(str(x) for x in driver_vt[:2]))))
    if not libcuda.get("loaded", True):
        gpu_problems.append(_problem("libcuda_unresolvable", "libcuda.so.1 (the driver's CUDA library) cannot be loaded: %s. Fix: "
                                     "install the driver's user-space libraries (libnvidia-compute / the driver's .run), run "
                                     "ldconfig so that `ldconfig -p | grep libcuda` lists it, or in a container use the NVIDIA "
                                     "Container Toolkit; do not point LD_LIBRARY_PATH at the toolkit's stubs/ directory."
                                     % libcuda.get("error")))
    if torch.get("imported") and not torch.get("cuda_available") and not gpu_problems:
        warn = "; ".join(torch.get("cuda_warnings") or []) or "no warning from torch"
        gpu_problems.append(_problem("cuda_unavailable", "torch.cuda.is_available() is False on a host with %d GPU(s) (%s). Fix: "
                                     "check `nvidia-smi`, CUDA_VISIBLE_DEVICES and the permissions of /dev/nvidia*." % (gpu_count, warn)))
    if torch.get("imported") and torch.get("cuda_available"):
        seen = len(torch.get("devices") or [])
        if seen < gpu_count:
            notes.append("torch sees %d of the host's %d GPUs (CUDA_VISIBLE_DEVICES?)." % (seen, gpu_count))
        caps = sorted(set(list(compute_caps or []) + [d["capability"] for d in torch.get("devices") or []]))
        missing = [c for c in caps if not arch_covered(c, torch.get("arch_list"))]
        if missing:
            listed = " ".join(torch.get("arch_list") or [])
            gpu_problems.append(_problem("arch_not_in_build", "torch %s has no kernels for compute capability %s (its arch list: %s): "
                                         "\"no kernel image is available for execution on the device\". Fix: use a torch/CUDA build "
                                         "that lists sm_%s." % (version, ", ".join(missing), listed, missing[0].replace(".", ""))))
    problems.extend(gpu_problems)
    return problems, notes, "failed" if gpu_problems else "passed"
