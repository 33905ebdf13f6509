# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Apply the compatibility matrix (compat_matrix.py) to one host's stack.

``check_stack`` is a pure function: it never touches the host. It returns
every problem it finds, each message naming the variables involved (the
``llm_stack_*`` pins users set, and the ``gpu_*`` facts), the rule id, its
source and the fix.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat_matrix as M
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.cuda_arch import (
    ArchError,
    arch_list,
    cap_str,
    covered_by,
    parse_cap,
)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.versions import (
    Version,
    VersionError,
    in_range,
    satisfies,
)

# Option of stack_compat -> the variable a user sets (or the fact it comes from).
VARIABLES = {
    "gpus": "gpu_compute_caps",
    "driver_version": "gpu_driver_version",
    "cuda_version": "llm_stack_cuda_version",
    "torch_version": "llm_stack_torch_version",
    "torch_cuda": "llm_stack_torch_cuda",
    "python_version": "llm_stack_python_version",
    "flash_attn_version": "llm_stack_flash_attn_version",
    "vllm_version": "llm_stack_vllm_version",
    "transformers_version": "llm_stack_transformers_version",
    "model": "llm_stack_model",
}

RULES = dict((rule["id"], rule) for rule in M.RULES)

_CUDA_RE = re.compile(r"^\d+\.\d+(\.\d+)?$")
_DRIVER_RE = re.compile(r"^\d+(\.\d+){1,2}$")
_PYTHON_RE = re.compile(r"^3\.\d+(\.\d+)?$")
_TORCH_CUDA_RE = re.compile(r"^(?:cu(?P<cu>\d{2})(?P<cu_minor>\d)|(?P<dot>\d{2})\.(?P<dot_minor>\d))$")
_MODEL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
_QWEN35_RE = re.compile(r"^qwen3\.5-(?P<rest>.+)$", re.IGNORECASE)
_SIZE_RE = re.compile(r"^(?P<size>\d+(?:\.\d+)?B(?:-A\d+(?:\.\d+)?B)?)(?P<variant>.*)$", re.IGNORECASE)


class StackInputError(ValueError):
    """Malformed input: names the option and what a valid value looks like."""

    def __init__(self, option, message):
        ValueError.__init__(self, "%s: %s" % (option, message))
        self.option = option


def _v(option, value):
    """Variable label with its value for messages: 'llm_stack_torch_version=2.3.1'."""
    return "%s=%s" % (VARIABLES[option], value)


def _src(rule_id, **fmt):
    source = M.SOURCES[RULES[rule_id]["source"]]["url"]
    for key, value in fmt.items():
        source = source.replace("<%s>" % key, value)
    return "[rule %s; source: %s]" % (rule_id, source)


def normalize_torch_cuda(value):
    """'cu128' or '12.8' -> '12.8'; 'cpu' -> 'cpu'; None/'' -> None. Raises StackInputError."""
    if value is None or value == "":
        return None
    text = str(value).strip().lower()
    if text == "cpu":
        return "cpu"
    match = _TORCH_CUDA_RE.match(text)
    if not match:
        raise StackInputError("torch_cuda", "%r is not a torch CUDA build; use the wheel index name such as"
                                            " 'cu128' (or '12.8'), or 'cpu'" % (value,))
    if match.group("cu"):
        return "%d.%s" % (int(match.group("cu")), match.group("cu_minor"))
    return "%d.%s" % (int(match.group("dot")), match.group("dot_minor"))


def _cu(cuda):
    return "cu" + cuda.replace(".", "")


def validate(params):
    """Check and normalize stack_compat's options; return a dict of parsed values.

    Raises StackInputError naming the option on the first malformed value,
    before any check runs.
    """
    parsed = {}
    gpus = params.get("gpus") or []
    if not isinstance(gpus, (list, tuple)):
        raise StackInputError("gpus", "expected a list of compute capabilities such as ['8.0', '9.0'], got %r" % (gpus,))
    caps = []
    for gpu in gpus:
        if not isinstance(gpu, str) or not re.match(r"^\d{1,2}\.\d$", gpu.strip()):
            raise StackInputError("gpus", "%r is not a compute capability; use strings such as '9.0'"
                                          " (the gpu_compute_caps fact)" % (gpu,))
        caps.append(parse_cap(gpu.strip()))
    parsed["gpus"] = [cap_str(cap) for cap in sorted(set(caps))]

    cuda = params.get("cuda_version")
    if not cuda or not _CUDA_RE.match(str(cuda).strip()):
        raise StackInputError("cuda_version", "%r is not a CUDA toolkit version; use major.minor.patch such as"
                                              " '12.8.1'" % (cuda,))
    parsed["cuda_version"] = Version(str(cuda).strip())

    driver = params.get("driver_version")
    if driver:
        if not _DRIVER_RE.match(str(driver).strip()):
            raise StackInputError("driver_version", "%r is not a driver version; use the gpu_driver_version fact"
                                                    " such as '580.159.04'" % (driver,))
        parsed["driver_version"] = Version(str(driver).strip())
    else:
        parsed["driver_version"] = None

    python = params.get("python_version")
    if python:
        if str(python).strip() == "3.1":
            raise StackInputError("python_version", "'3.1' looks like an unquoted 3.10 turned into a number by YAML;"
                                                    " quote it: \"3.10\"")
        if not _PYTHON_RE.match(str(python).strip()):
            raise StackInputError("python_version", "%r is not a Python 3 version; use major.minor such as '3.12'" % (python,))
        parsed["python_version"] = Version(str(python).strip())
    else:
        parsed["python_version"] = None

    for option in ("torch_version", "flash_attn_version", "vllm_version", "transformers_version"):
        value = params.get(option)
        if value:
            try:
                parsed[option] = Version(str(value).strip())
            except VersionError:
                raise StackInputError(option, "%r is not a release version; use a PyPI release such as '2.10.0'" % (value,))
        else:
            parsed[option] = None

    parsed["torch_cuda"] = normalize_torch_cuda(params.get("torch_cuda"))
    torch = parsed["torch_version"]
    if torch is not None and torch.local:
        local = torch.local.lower()
        if local.startswith("cu") or local == "cpu":
            from_local = normalize_torch_cuda(local)
            if parsed["torch_cuda"] is None:
                parsed["torch_cuda"] = from_local
            elif parsed["torch_cuda"] != from_local:
                raise StackInputError("torch_version", "%r names build %s but torch_cuda is %s; set one of them"
                                                       % (str(torch), local, params.get("torch_cuda")))

    model = params.get("model")
    if model:
        if not _MODEL_RE.match(str(model).strip()):
            raise StackInputError("model", "%r is not a Hugging Face repo id; use 'org/name' such as 'Qwen/Qwen3.5-9B'" % (model,))
        parsed["model"] = str(model).strip()
    else:
        parsed["model"] = None
    return parsed


def _minor_key(version):
    return Version(version).major_minor()


def _release_driver(cuda):
    """(driver, release) bundled with toolkit cuda: the exact release, else the lowest known patch of its minor."""
    if len(cuda.release) >= 3:
        exact = "%d.%d.%d" % cuda.release[:3]
        if exact in M.CUDA_RELEASE_DRIVER:
            return M.CUDA_RELEASE_DRIVER[exact], exact
    same_minor = sorted((Version(key), key) for key in M.CUDA_RELEASE_DRIVER if _minor_key(key) == cuda.major_minor())
    if same_minor:
        release = same_minor[0][1]
        return M.CUDA_RELEASE_DRIVER[release], release
    return None, None


class _Report(object):
    def __init__(self):
        self.errors = []
        self.warnings = []

    def add(self, rule_id, message):
        target = self.errors if RULES[rule_id]["severity"] == "error" else self.warnings
        if message not in target:
            target.append(message)


def _check_cuda_driver(p, report):
    cuda, driver = p["cuda_version"], p["driver_version"]
    release_driver, release = _release_driver(cuda)
    if release_driver is None:
        report.add("cuda-known", "%s: CUDA %s is not in the matrix (newest known %s); only its major version is"
                                 " checked %s. Fix: add it to plugins/module_utils/compat_matrix.py once checked"
                                 % (_v("cuda_version", cuda), cuda, _newest(M.CUDA_RELEASE_DRIVER),
                                    _src("cuda-known", version=str(cuda))))
    elif len(cuda.release) >= 3 and release != str(cuda):
        known = ", ".join(sorted((k for k in M.CUDA_RELEASE_DRIVER if _minor_key(k) == cuda.major_minor()), key=Version))
        report.add("cuda-known", "%s: CUDA release %s is not in the matrix (known %s releases: %s); checked as %s %s."
                                 " Fix: check the version, or add the release to plugins/module_utils/compat_matrix.py"
                                 % (_v("cuda_version", cuda), cuda, cuda.major_minor(), known, release,
                                    _src("cuda-known", version=str(cuda))))
    if driver is None:
        return
    minimum = M.CUDA_DRIVER_MINIMUM.get(cuda.major)
    if minimum and driver < Version(minimum):
        report.add("cuda-driver-minimum",
                   "%s / %s: CUDA %d.x needs driver >= %s %s. Fix: upgrade the driver to >= %s on this host, or set"
                   " %s to a toolkit the driver supports"
                   % (_v("driver_version", driver), _v("cuda_version", cuda), cuda.major, minimum,
                      _src("cuda-driver-minimum"), minimum, VARIABLES["cuda_version"]))
    elif release_driver and driver < Version(release_driver):
        report.add("cuda-driver-release",
                   "%s / %s: CUDA %s ships with driver %s; this older driver runs it through minor version"
                   " compatibility only (no JIT of PTX built by this toolkit) %s. Fix: upgrade the driver to >= %s"
                   % (_v("driver_version", driver), _v("cuda_version", cuda), release, release_driver,
                      _src("cuda-driver-release", version=release), release_driver))


def _newest(table):
    return str(max(Version(key) for key in table))


def _check_archs(p, report):
    cuda = p["cuda_version"]
    for gpu in p["gpus"]:
        first = M.ARCH_FIRST_CUDA.get(gpu)
        if first is None:
            report.add("arch-known", "%s: compute capability %s is not in the matrix; toolkit, torch and flash-attn"
                                     " support for it is not checked %s" % (_v("gpus", gpu), gpu, _src("arch-known")))
            continue
        if Version(cuda.major_minor()) < Version(first):
            report.add("arch-first-cuda",
                       "%s / %s: compute capability %s needs CUDA >= %s; nvcc %s cannot build for it %s. Fix: set %s"
                       " to a %s or newer toolkit" % (_v("gpus", gpu), _v("cuda_version", cuda), gpu, first,
                                                      cuda.major_minor(), _src("arch-first-cuda"),
                                                      VARIABLES["cuda_version"], first))
        for drop in M.ARCH_DROPPED:
            if Version(cuda.major_minor()) >= Version(drop["cuda"]) and parse_cap(gpu) < parse_cap(drop["min_arch"]):
                report.add("arch-dropped",
                           "%s / %s: CUDA %s and newer dropped compute capabilities below %s %s. Fix: set %s to a"
                           " toolkit older than %s for this host"
                           % (_v("gpus", gpu), _v("cuda_version", cuda), drop["cuda"], drop["min_arch"],
                              _src("arch-dropped"), VARIABLES["cuda_version"], drop["cuda"]))


def _check_torch(p, report):
    torch, torch_cuda, python = p["torch_version"], p["torch_cuda"], p["python_version"]
    if torch is None:
        return
    entry = M.TORCH.get(torch.major_minor())
    if entry is None:
        report.add("torch-known", "%s: torch %s is not in the matrix (known %s to %s); its CUDA builds and Python"
                                  " range are not checked %s" % (_v("torch_version", torch), torch.major_minor(),
                                                                 min(M.TORCH, key=Version), max(M.TORCH, key=Version),
                                                                 _src("torch-known")))
        return
    if torch_cuda and torch_cuda != "cpu" and torch_cuda not in entry["cuda"]:
        builds = ", ".join(_cu(c) for c in entry["cuda"])
        report.add("torch-cuda-build",
                   "%s / %s: torch %s has no %s build (builds: %s) %s. Fix: set %s to one of %s"
                   % (_v("torch_version", torch), _v("torch_cuda", _cu(torch_cuda)), torch.major_minor(),
                      _cu(torch_cuda), builds, _src("torch-cuda-build"), VARIABLES["torch_cuda"], builds))
    if python is not None and not in_range(python, entry["python"][0], entry["python"][1]):
        report.add("torch-python",
                   "%s / %s: torch %s publishes wheels for Python %s to %s %s. Fix: set %s within that range"
                   % (_v("torch_version", torch), _v("python_version", python), torch.major_minor(),
                      entry["python"][0], entry["python"][1],
                      _src("torch-python") if "python_source" not in entry
                      else "[rule torch-python; source: %s]" % M.SOURCES[entry["python_source"]]["url"],
                      VARIABLES["python_version"]))


def _check_torch_runtime(p, report):
    torch_cuda, driver, cuda = p["torch_cuda"], p["driver_version"], p["cuda_version"]
    if not torch_cuda:
        return
    label = _v("torch_cuda", "cpu" if torch_cuda == "cpu" else _cu(torch_cuda))
    if torch_cuda == "cpu":
        if p["gpus"]:
            report.add("torch-cpu-build",
                       "%s / %s: a CPU build of torch does not use the host's GPUs %s. Fix: set %s to a CUDA build such"
                       " as cu%d%d" % (label, _v("gpus", ",".join(p["gpus"])), _src("torch-cpu-build"),
                                       VARIABLES["torch_cuda"], cuda.major, cuda.minor))
        return
    runtime = Version(torch_cuda)
    if driver is not None:
        minimum = M.CUDA_DRIVER_MINIMUM.get(runtime.major)
        release_driver, release = _release_driver(Version(torch_cuda + ".0"))
        if minimum and driver < Version(minimum):
            report.add("torch-driver",
                       "%s / %s: torch's %s build bundles the CUDA %s runtime, which needs driver >= %s %s. Fix: set"
                       " %s to a build the driver runs, or upgrade the driver" % (
                           _v("driver_version", driver), label, _cu(torch_cuda), torch_cuda, minimum,
                           _src("torch-driver"), VARIABLES["torch_cuda"]))
        elif release_driver and driver < Version(release_driver):
            report.add("torch-driver-release",
                       "%s / %s: CUDA %s was released with driver %s; torch's %s build runs on this driver through"
                       " minor version compatibility only %s. Fix: upgrade the driver to >= %s" % (
                           _v("driver_version", driver), label, torch_cuda, release_driver, _cu(torch_cuda),
                           _src("torch-driver-release", version=release), release_driver))
    archs = M.TORCH_BUILD_ARCHS.get(torch_cuda)
    if archs:
        for gpu in p["gpus"]:
            if gpu in M.ARCH_FIRST_CUDA and not covered_by(gpu, archs["sass"], archs["ptx"]):
                have = ", ".join(["sm_" + a.replace(".", "") for a in archs["sass"]]
                                 + ["compute_" + a.replace(".", "") + " (PTX)" for a in archs["ptx"]])
                report.add("torch-build-archs",
                           "%s / %s: torch's %s wheels carry kernels for %s, none runs on compute capability %s"
                           " (\"no kernel image is available\") %s. Fix: set %s to a build that covers %s"
                           % (_v("gpus", gpu), label, _cu(torch_cuda), have, gpu, _src("torch-build-archs"),
                              VARIABLES["torch_cuda"], gpu))
    if runtime.major != cuda.major:
        report.add("torch-toolkit-major",
                   "%s / %s: nvcc %s and torch's CUDA %s differ in major version; torch refuses to build the CUDA"
                   " extensions (flash-attn, vLLM) with \"The detected CUDA version (%s) mismatches the version that"
                   " was used to compile PyTorch (%s)\" %s. Fix: set %s to a cu%d build or %s to a %d.x toolkit"
                   % (_v("cuda_version", cuda), label, cuda.major_minor(), torch_cuda, cuda.major_minor(), torch_cuda,
                      _src("torch-toolkit-major"), VARIABLES["torch_cuda"], cuda.major,
                      VARIABLES["cuda_version"], runtime.major))
    elif runtime.minor != cuda.minor:
        report.add("torch-toolkit-minor",
                   "%s / %s: nvcc %s and torch's CUDA %s differ in minor version; extensions build with a warning %s."
                   " Fix: match them (set %s to %s or %s to %s.x)"
                   % (_v("cuda_version", cuda), label, cuda.major_minor(), torch_cuda, _src("torch-toolkit-minor"),
                      VARIABLES["torch_cuda"], "cu%d%d" % (cuda.major, cuda.minor), VARIABLES["cuda_version"], torch_cuda))


def _check_vllm(p, report):
    vllm, torch, python, transformers = p["vllm_version"], p["torch_version"], p["python_version"], p["transformers_version"]
    if vllm is None:
        return
    entry = M.VLLM.get(vllm.public())
    if entry is None:
        report.add("vllm-known", "%s: vLLM %s is not in the matrix (known: %s); its torch pin, Python range and"
                                 " transformers requirement are not checked %s"
                   % (_v("vllm_version", vllm), vllm, ", ".join(sorted(M.VLLM, key=Version)),
                      _src("vllm-known", version=vllm.public())))
        return
    src = {"version": vllm.public()}
    if torch is not None and Version(torch.public()) != Version(entry["torch"]):
        report.add("vllm-torch-pin",
                   "%s / %s: vLLM %s pins torch==%s %s. Fix: set %s to %s"
                   % (_v("torch_version", torch), _v("vllm_version", vllm), vllm, entry["torch"],
                      _src("vllm-torch-pin", **src), VARIABLES["torch_version"], entry["torch"]))
    if python is not None and not satisfies(python.major_minor(), entry["python"]):
        report.add("vllm-python",
                   "%s / %s: vLLM %s requires Python %s %s. Fix: set %s within that range"
                   % (_v("python_version", python), _v("vllm_version", vllm), vllm, entry["python"],
                      _src("vllm-python", **src), VARIABLES["python_version"]))
    if transformers is not None and not satisfies(transformers, entry["transformers"]):
        fix = ("set %s to %s" % (VARIABLES["transformers_version"], entry["transformers_suggest"])
               if entry["transformers_suggest"] else "set %s to a release that satisfies it" % VARIABLES["transformers_version"])
        report.add("vllm-transformers",
                   "%s / %s: vLLM %s requires transformers %s %s. Fix: %s"
                   % (_v("transformers_version", transformers), _v("vllm_version", vllm), vllm,
                      entry["transformers"], _src("vllm-transformers", **src), fix))


def _check_flash_attn(p, report):
    fa, cuda, torch = p["flash_attn_version"], p["cuda_version"], p["torch_version"]
    if fa is None:
        return
    for gpu in p["gpus"]:
        if parse_cap(gpu) < parse_cap(M.FLASH_ATTN_MIN_ARCH):
            report.add("flash-attn-arch",
                       "%s / %s: FlashAttention-2 needs compute capability >= %s (Ampere, Ada, Hopper and newer); a %s"
                       " GPU has no kernels %s. Fix: leave %s empty for this host (vLLM does not need the flash-attn"
                       " package) or use a host with sm80+ GPUs"
                       % (_v("flash_attn_version", fa), _v("gpus", gpu), M.FLASH_ATTN_MIN_ARCH, gpu,
                          _src("flash-attn-arch"), VARIABLES["flash_attn_version"]))
    entry = M.FLASH_ATTN.get(fa.major_minor()) if fa.major == 2 else None
    if entry is None or Version(fa.public()) > Version(entry["latest"]):
        known = ", ".join("%s.x (to %s)" % (key, value["latest"]) for key, value in sorted(M.FLASH_ATTN.items()))
        report.add("flash-attn-known", "%s: flash-attn %s has no CUDA/torch floors in the matrix (known: %s); only the"
                                       " sm80 floor is checked %s" % (_v("flash_attn_version", fa), fa, known,
                                                                      _src("flash-attn-known")))
        return
    if Version(cuda.major_minor()) < Version(entry["min_cuda"]):
        report.add("flash-attn-cuda",
                   "%s / %s: flash-attn %s needs CUDA >= %s %s. Fix: set %s to a %s or newer toolkit"
                   % (_v("flash_attn_version", fa), _v("cuda_version", cuda), fa, entry["min_cuda"],
                      _src("flash-attn-cuda"), VARIABLES["cuda_version"], entry["min_cuda"]))
    if torch is not None and Version(torch.public()) < Version(entry["min_torch"]):
        report.add("flash-attn-torch",
                   "%s / %s: flash-attn %s needs torch >= %s %s. Fix: set %s to %s or newer"
                   % (_v("flash_attn_version", fa), _v("torch_version", torch), fa, entry["min_torch"],
                      _src("flash-attn-torch"), VARIABLES["torch_version"], entry["min_torch"]))


def qwen35_parts(model):
    """(org, size, variant) when model is a Qwen3.5 repo id, else None."""
    org, name = model.split("/", 1)
    match = _QWEN35_RE.match(name)
    if not match:
        return None
    size = _SIZE_RE.match(match.group("rest"))
    if not size:
        return org, None, match.group("rest")
    return org, size.group("size"), size.group("variant")


def _check_qwen35(p, report):
    model = p["model"]
    if not model:
        return
    parts = qwen35_parts(model)
    if parts is None:
        return
    org, size, variant = parts
    q = M.QWEN35
    if org.lower() == "qwen":
        sizes = ", ".join("Qwen/Qwen3.5-" + s for s in q["sizes"])
        real = dict((s.lower(), s) for s in q["sizes"])
        if size is None or size.lower() not in real:
            report.add("qwen35-model-id",
                       "%s: Qwen3.5 has no %s model (real sizes: %s) %s."
                       " Fix: set %s to one of them, e.g. Qwen/Qwen3.5-9B"
                       % (_v("model", model), size or model.split("/", 1)[1], sizes, _src("qwen35-model-id"),
                          VARIABLES["model"]))
        elif model not in q["models"]:
            known = [m for m in q["models"] if m.lower() == model.lower()]
            hint = ("the hub id is spelled %s" % known[0]) if known else "check that it exists on the hub"
            report.add("qwen35-model-variant",
                       "%s: not among the Qwen3.5 repos the matrix lists (%s) %s. Fix: %s"
                       % (_v("model", model), ", ".join(q["models"]), _src("qwen35-model-variant"), hint))
    vllm, transformers = p["vllm_version"], p["transformers_version"]
    if vllm is not None and vllm < Version(q["min_vllm"]):
        report.add("qwen35-vllm",
                   "%s / %s: Qwen3.5 models need vLLM >= %s %s. Fix: set %s to %s or newer (0.19.1 pairs with torch"
                   " 2.10.0)" % (_v("model", model), _v("vllm_version", vllm), q["min_vllm"], _src("qwen35-vllm"),
                                 VARIABLES["vllm_version"], q["min_vllm"]))
    if transformers is not None and Version(transformers.public()) < Version(q["min_transformers"]):
        entry = M.VLLM.get(vllm.public()) if vllm is not None else None
        if entry is not None and entry["transformers_suggest"] is None:
            fix = ("no transformers release meets both this and vLLM %s's requirement %s: set %s to 0.19.1 or newer"
                   " and %s to 5.5.4" % (vllm, entry["transformers"], VARIABLES["vllm_version"],
                                         VARIABLES["transformers_version"]))
        elif entry is not None:
            fix = "set %s to %s" % (VARIABLES["transformers_version"], entry["transformers_suggest"])
        else:
            fix = "set %s to %s or newer" % (VARIABLES["transformers_version"], q["min_transformers"])
        report.add("qwen35-transformers",
                   "%s / %s: Qwen3.5 models need transformers >= %s (older releases fail with KeyError: 'qwen3_5') %s."
                   " Fix: %s" % (_v("model", model), _v("transformers_version", transformers), q["min_transformers"],
                                 _src("qwen35-transformers"), fix))


def check_stack(params):
    """Validate params and run every rule. Returns dict(ok, errors, compat_warnings, torch_cuda_arch_list).

    Raises StackInputError (naming the option) on malformed input.
    """
    p = validate(params)
    report = _Report()
    _check_cuda_driver(p, report)
    _check_archs(p, report)
    _check_torch(p, report)
    _check_torch_runtime(p, report)
    _check_vllm(p, report)
    _check_flash_attn(p, report)
    _check_qwen35(p, report)
    try:
        archs = arch_list(p["gpus"])
    except ArchError:  # pragma: no cover - validate() already parsed every cap
        archs = ""
    return {
        "ok": not report.errors,
        "errors": report.errors,
        "compat_warnings": report.warnings,
        "torch_cuda_arch_list": archs,
    }
