# -*- coding: utf-8 -*-
# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read a virtualenv's torch and judge it against the stack's pins.

Two halves:

* ``PROBE_SCRIPT`` runs inside the venv's own Python (stdlib only) and prints
  one JSON document: interpreter, torch (version.py read without importing,
  then, on request, the imported module's CUDA view), installed
  distributions, and whether the driver's ``libcuda.so.1`` can be loaded.
* The functions below are pure: they check pinned requirements, name each
  problem with its fix (``diagnose``), decide whether an install is needed
  (``needs_install``), and word the report (``report_lines``). The
  ``torch_info`` module is argument handling around them; unit tests call
  them with captured probe output.

The record of the last full import (C++11 ABI and arch list, with the
install's signature) lives at ``record_path(venv)``; only this file knows
that path (``torch_info`` takes ``use_record``/``write_record``).
The cu tags come from ``compat.torch_cuda_tag``/``torch_cuda_version``, the
driver rule from ``compat.driver_runtime_problems`` and compute
capabilities from ``cuda_arch``: none of them is written again here.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import package_proxy
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.cuda_arch import ArchError, covered_by, parse_cap
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import mask_credentials

RECORD = os.path.join(".llm_stack", "torch.json")
# Problems a (re)install of torch fixes.
INSTALL_FIXES = ("torch_missing", "torch_import_failed", "torch_version_mismatch", "cuda_build_mismatch", "cpu_only_build")
DEFAULT_INDEX = "https://download.pytorch.org/whl/"

# Runs under the interpreter being probed: stdlib only, Python >= 3.8. It
# prints its result the way python_probe.parse_probe_output reads it.
PROBE_SCRIPT = r'''
import ctypes, importlib.util, json, os, sys, warnings
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

# The installed distributions, found the way importlib.metadata finds them
# (the *.dist-info and *.egg-info entries of each sys.path directory, names
# compared normalised, the first directory wins), without importing it: that
# import (email, zipfile, csv) is most of this probe's time on a re-run. A
# zip file on sys.path falls back to importlib.metadata itself.
class Dist:
    def __init__(self, path):
        self.path = path

    def read_text(self, name):
        target = os.path.join(self.path, name) if name else self.path
        try:
            with open(target, encoding="utf-8") as f:
                return f.read()
        except (OSError, UnicodeDecodeError):
            return None

    def locate_file(self, name):
        return os.path.join(os.path.dirname(self.path), name)

    @property
    def version(self):
        text = self.read_text("METADATA") or self.read_text("PKG-INFO") or self.read_text("")
        for line in (text or "").splitlines():
            if not line.strip():
                break
            key, sep, value = line.partition(":")
            if sep and key.strip().lower() == "version":
                return value.strip()
        return None

def _normal(name):
    return "_".join(part for part in name.lower().replace("-", "_").replace(".", "_").split("_") if part)

_found = None

def find_dist(name):
    global _found
    if _found is None:
        _found = {}
        for entry in sys.path:
            entry = entry or "."
            if os.path.isfile(entry):
                _found = False
                break
            try:
                children = os.listdir(entry)
            except OSError:
                continue
            egg = os.path.basename(entry).lower().endswith(".egg")
            for child in children:
                low = child.lower()
                if low.endswith((".dist-info", ".egg-info")):
                    _found.setdefault(_normal(low.rpartition(".")[0].partition("-")[0]), []).append(
                        os.path.join(entry, child))
                elif egg and low == "egg-info":
                    base = os.path.basename(entry).lower().rpartition(".")[0].partition("-")[0]
                    _found.setdefault(_normal(base), []).append(os.path.join(entry, child))
    if _found is False:
        from importlib import metadata
        try:
            return metadata.distribution(name)
        except metadata.PackageNotFoundError:
            return None
    paths = _found.get(_normal(name))
    return Dist(paths[0]) if paths else None

def record_problems(dist):
    import base64, hashlib
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
    dist = find_dist(name)
    if dist is None:
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
        import runpy
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


def normalize_name(name):
    """PEP 503 normalisation: Flash_Attn -> flash-attn."""
    return re.sub(r"[-_.]+", "-", name).lower()


_REQ = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:==\s*([A-Za-z0-9.+!_-]+))?")


def parse_requirement(spec):
    """'torch==2.10.0+cu128' -> ('torch', '2.10.0+cu128'); 'einops' -> ('einops', None).

    Only exact pins and bare names are accepted: anything else cannot be
    checked without asking pip, and a re-run must not ask pip.
    """
    m = _REQ.fullmatch((spec or "").strip()) if isinstance(spec, str) else None
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


# --- builds, archs and the record ---------------------------------------------------------


def record_path(venv):
    """Where the torch role keeps the record of the last full import of the venv's torch."""
    return os.path.join(venv, RECORD)


def cuda_build_tag(cuda):
    """torch.version.cuda -> the index tag ('13.0' -> 'cu130'); None (the CPU build) -> 'cpu'; None when torch has no tag."""
    if cuda is None:
        return "cpu"
    try:
        return compat.torch_cuda_tag(str(cuda))
    except compat.StackInputError:
        return None


def _major_minor(text):
    match = re.match(r"([0-9]+)\.([0-9]+)", str(text or ""))
    return (int(match.group(1)), int(match.group(2))) if match else None


def arch_caps(arch_list):
    """torch.cuda.get_arch_list() -> (sass caps, ptx caps): ['sm_90', 'sm_100a', 'compute_90'] -> (['9.0', '10.0'], ['9.0'])."""
    sass, ptx = [], []
    for entry in arch_list or []:
        match = re.fullmatch(r"(sm|compute)_([0-9]+)[a-z]?", str(entry))
        if not match:
            continue
        try:
            cap = "%d.%d" % parse_cap("sm_" + match.group(2))
        except ArchError:
            continue
        (sass if match.group(1) == "sm" else ptx).append(cap)
    return sass, ptx


def arch_covered(capability, arch_list):
    """True when torch's arch list runs on a device of this capability (cubin of the same major, or older PTX)."""
    try:
        parse_cap(capability)
    except ArchError:
        return False
    sass, ptx = arch_caps(arch_list)
    return covered_by(capability, sass, ptx)


# --- diagnosis ------------------------------------------------------------------------------


def _problem(name, msg):
    return {"name": name, "msg": msg}


def pip_hint(expect_version=None, expect_local=None, index_url=None, wheelhouse=None, installed=None):
    """The pip command that installs the expected torch, with the real version, build and index (no placeholder)."""
    version = expect_version or (installed or {}).get("version", "").split("+", 1)[0]
    tag = expect_local or (installed or {}).get("cuda_build")
    spec = "torch" + (("==" + version) if version else "") + (("+" + tag) if version and tag else "")
    if wheelhouse:
        return "pip install %s --no-index --find-links %s" % (spec, wheelhouse)
    index = index_url or ((DEFAULT_INDEX + tag) if tag else None)
    return "pip install %s%s" % (spec, (" --index-url " + index) if index else "")


def diagnose(info, expect_version=None, expect_local=None, index_url=None, gpu_count=0, driver_version=None,
             compute_caps=None, cpu_only_test_host=False, wheelhouse=None):
    """Judge a probed venv against the pins and the host's GPUs.

    Returns (problems, notes, gpu_checks). Each problem is {name, msg}, the
    msg saying what is wrong and the fix. gpu_checks is 'passed', 'failed'
    or 'skipped: <reason>' so that a host without GPUs says so.
    """
    problems = []
    notes = []
    torch = (info or {}).get("torch")
    expect_cuda = _major_minor(compat.torch_cuda_version(expect_local)) if expect_local and expect_local != "cpu" else None
    hint = pip_hint(expect_version, expect_local, index_url, wheelhouse, torch)

    if not torch:
        problems.append(_problem("torch_missing", "torch is not installed in %s. Fix: %s (the torch role does this)." % (
            ((info or {}).get("python") or {}).get("prefix", "the venv"), hint)))
        return problems, notes, "skipped: torch is not installed"
    if torch.get("error"):
        problems.append(_problem("torch_import_failed", "torch in %s does not load: %s. Fix: reinstall it (%s), and check "
                                 "that nothing in the venv shadows it." % (torch.get("path"), torch["error"], hint)))
        return problems, notes, "failed"

    version = torch.get("version") or ""
    cuda = torch.get("cuda")
    if expect_version and version.split("+", 1)[0] != expect_version:
        problems.append(_problem("torch_version_mismatch", "torch %s is installed, the stack pins %s. Fix: %s." % (
            version, expect_version, hint)))

    if cuda is None:
        if cpu_only_test_host and gpu_count == 0:
            notes.append("torch %s is the CPU-only build: accepted because llm_stack_cpu_only_test_host is true "
                         "(CPU-only test path; never on a real fleet)." % version)
        elif gpu_count > 0:
            problems.append(_problem("cpu_only_build", "torch %s is the CPU-only build (torch.version.cuda is None) on a host with "
                                     "%d GPU(s): torch.cuda.is_available() is False and every CUDA extension fails. Fix: %s; "
                                     "take the CPU wheel out of the wheelhouse or index it came from." % (version, gpu_count, hint)))
            return problems, notes, "failed"
        else:
            problems.append(_problem("cpu_only_build", "torch %s is the CPU-only build (torch.version.cuda is None): extensions "
                                     "built against it on this build host have no CUDA code. Fix: %s." % (version, hint)))
    elif expect_cuda and _major_minor(cuda) != expect_cuda:
        problems.append(_problem("cuda_build_mismatch", "torch %s is built for CUDA %s, the stack pins %s (CUDA %d.%d). Fix: %s." % (
            version, cuda, expect_local, expect_cuda[0], expect_cuda[1], hint)))

    if gpu_count == 0:
        reason = ("CPU-only test host (llm_stack_cpu_only_test_host)" if cpu_only_test_host
                  else "no GPU on this host (a build host)")
        return problems, notes, "skipped: " + reason

    if cuda is None:
        return problems, notes, "failed"
    gpu_problems = []
    libcuda = (info or {}).get("libcuda") or {}
    try:
        rule = compat.driver_runtime_problems(driver_version, str(cuda), torch_version=expect_version or version.split("+")[0])
    except (compat.StackInputError, ValueError):
        rule = []
    for severity, dummy, message in rule:
        if severity == "error":
            gpu_problems.append(_problem("cuda_build_newer_than_driver", "torch %s is built for CUDA %s, which this driver "
                                         "does not run (torch.cuda.is_available() is False): %s" % (version, cuda, message)))
        else:
            notes.append(message)
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
            gpu_problems.append(_problem("arch_not_in_build", "torch %s has no kernels for compute capability %s (its arch list: %s): "
                                         "\"no kernel image is available for execution on the device\". Fix: %s." % (
                                             version, ", ".join(missing), " ".join(torch.get("arch_list") or []) or "empty",
                                             _arch_fix(expect_version or version.split("+")[0], caps))))
    problems.extend(gpu_problems)
    return problems, notes, "failed" if gpu_problems else "passed"


def _arch_fix(torch_version, caps):
    """The fix for GPUs the installed build has no kernels for: the builds of that release that cover them."""
    try:
        builds = [compat.torch_cuda_tag(b) for b in compat.builds_covering(torch_version, caps)]
    except (compat.StackInputError, ValueError):
        builds = []
    if builds:
        return "set llm_stack_torch_cuda to %s (the %s build%s of torch %s with kernels for %s)" % (
            builds[-1], " or ".join(builds), "s" if len(builds) > 1 else "", torch_version, ", ".join(caps))
    return ("no torch %s build in the matrix covers %s: pin a torch release that does (stack_compat's suggested stack "
            "names one)" % (torch_version, ", ".join(caps)))


def install_build(expect_local=None, gpu_count=0, cpu_only_test_host=False):
    """The torch build a host installs: the pinned CUDA build's tag, or cpu on a CPU-only test host without GPUs
    (test path: the test fleet's wheelhouse, or its proxy, holds the CPU wheel)."""
    return "cpu" if cpu_only_test_host and not gpu_count else expect_local


def install_plan(expect_version=None, expect_local=None, gpu_count=0, cpu_only_test_host=False, pip_spec=None,
                 index_url=None, wheelhouse=None, package_index_url=None, package_index_ca_path=None):
    """What the torch role installs: {build, spec, default_index_url, source, proxy, pip_cert}.

    build is install_build's; spec is pip_spec when given, else
    torch==VERSION+BUILD; default_index_url is the index pip uses when
    torch_index_url is not set: the build's index of the cache host's
    package proxy where package_index_url (llm_stack_package_index_url, its
    base URL) is set, else PyTorch's index of that build; source says where
    from, credentials masked. proxy: pip goes through the cache host's
    package proxy (its base set, no wheelhouse and no index of the role's
    own); pip_cert: the proxy's CA on the host that pip is given
    (package_index_ca_path, where the proxy is used and its CA is set), else
    '', and pip_cert_environment the variable that gives it to pip.
    """
    build = install_build(expect_local, gpu_count, cpu_only_test_host)
    if pip_spec:
        spec = pip_spec
    elif expect_version:
        spec = "torch==%s%s" % (expect_version, ("+" + build) if build else "")
    else:
        spec = "torch"
    if package_index_url and build:
        default_index = package_proxy.index_url(package_index_url, build)
    else:
        default_index = (DEFAULT_INDEX + build) if build else None
    if wheelhouse:
        source = "wheelhouse %s" % wheelhouse
    else:
        source = mask_credentials(index_url or default_index or "the index pip is configured with")
    proxy = bool(package_index_url and build and not wheelhouse and not index_url)
    pip_cert = (package_index_ca_path or "") if proxy else ""
    return {"build": build, "spec": spec, "default_index_url": default_index, "source": source, "proxy": proxy,
            "pip_cert": pip_cert, "pip_cert_environment": {"PIP_CERT": pip_cert} if pip_cert else {}}


def needs_install(info, problems, unmet):
    """Whether the torch role installs: no venv, torch missing or of another release or build, or unmet requirements."""
    if not (info or {}).get("venv_exists"):
        return True
    return bool(unmet) or any(problem["name"] in INSTALL_FIXES for problem in problems)


def failure_message(venv, problems, unmet):
    """What the torch role stops with when the venv's torch is not right: each problem with its fix."""
    lines = ["%s: %s" % (problem["name"], problem["msg"]) for problem in problems]
    if unmet:
        lines.append("not installed: %s" % ", ".join(unmet))
    if not lines:
        return ""
    return "torch in %s: %d problem(s):\n- %s" % (venv, len(lines), "\n- ".join(lines))


def cuda_view(torch, gpu_checks):
    """What the import of torch saw on a GPU host, for the report; '' where the GPU checks were skipped."""
    if not torch or torch.get("cuda_available") is None or str(gpu_checks).startswith("skipped"):
        return ""
    caps = []
    for device in torch.get("devices") or []:
        try:
            caps.append("(%d, %d)" % parse_cap(device.get("capability")))
        except ArchError:
            caps.append(str(device.get("capability")))
    return "; torch.cuda.is_available() %s, capability %s, arch list %s" % (
        str(bool(torch.get("cuda_available"))).lower(), " ".join(caps) or "none", " ".join(torch.get("arch_list") or []) or "none")


def report_lines(info, gpu_checks, notes, check_mode=False, install=False, install_text=None, gpu_count=0):
    """The torch role's report: the torch in the venv (or what check mode would install), its CUDA view and notes."""
    torch = (info or {}).get("torch")
    python = (info or {}).get("python") or {}
    if check_mode and install:
        lines = ["check mode: %s" % (install_text or "torch would be installed into %s" % (info or {}).get("venv"))]
    elif torch and not torch.get("error"):
        abi = torch.get("cxx11_abi")
        lines = ["torch %s (CUDA %s, C++11 ABI %s) on Python %s (%s); GPU checks %s%s" % (
            torch.get("version"), torch.get("cuda") or "none", "?" if abi is None else abi, python.get("version", "?"),
            python.get("abi_tag", "?"), gpu_checks, cuda_view(torch, gpu_checks))]
    else:
        lines = ["torch in %s: %s" % ((info or {}).get("venv"), (torch or {}).get("error") or "not installed")]
    if not gpu_count and torch and not torch.get("error") and not (check_mode and install):
        lines.append("Not checked here, for want of a GPU: torch.cuda.is_available(), the devices, the arch list and "
                     "libcuda.")
    return lines + list(notes or [])


def record_of(torch):
    """The record of a full import: what an import told that version.py does not, with the install's signature."""
    return {"version": torch.get("version"), "signature": torch.get("signature"), "cxx11_abi": torch.get("cxx11_abi"),
            "arch_list": torch.get("arch_list")}


def fresh_record(torch, problems):
    """The record an import of torch gives, or None when there was no import or it found a problem (nothing to keep)."""
    torch = torch or {}
    if not torch.get("imported") or torch.get("error") or problems:
        return None
    return record_of(torch)


def read_record(venv):
    try:
        with open(record_path(venv)) as handle:
            data = json.load(handle)
    except (IOError, OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_record(venv, record):
    """Write the record (0644) through a new temporary file, never following a symbolic link."""
    path = record_path(venv)
    folder = os.path.dirname(path)
    if os.path.islink(folder):
        raise OSError("%s is a symbolic link; the record is not written through it" % folder)
    if not os.path.isdir(folder):
        os.makedirs(folder, 0o755)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(record, handle, indent=2, sort_keys=True)
            handle.write("\n")
        os.rename(tmp, path)
    except Exception:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
