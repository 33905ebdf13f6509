# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: the pins of compat (module_utils/compat.py): the variables that set them, the matrix's
releases (every lookup goes through listed()), cu tags, runfiles and the driver rule. Not part of the public API.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat_matrix as M
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.versions import Version, VersionError, satisfies

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
    "allow_unlisted_versions": "llm_stack_allow_unlisted_versions",
}

# The eight pins of a stack, in the order they are shown.
PINS = ("cuda_version", "torch_version", "torch_cuda", "python_version", "flash_attn_version", "vllm_version",
        "transformers_version", "model")

RULES = dict((rule["id"], rule) for rule in M.RULES)

# ASCII only, matched in full after stripping.
_TORCH_CUDA_RE = re.compile(r"cu(?P<cu>[1-9][0-9])(?P<cu_minor>[0-9])|(?P<dot>[1-9][0-9])\.(?P<dot_minor>[0-9])")
_MODEL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
_QWEN35_RE = re.compile(r"qwen3\.5(?:-(?P<rest>.*))?", re.IGNORECASE)
_SIZE_RE = re.compile(r"(?P<size>[0-9]+(?:\.[0-9]+)?B(?:-A[0-9]+(?:\.[0-9]+)?B)?)(?P<variant>.*)", re.IGNORECASE)
_GPU_RE = re.compile(r"[0-9]{1,2}\.[0-9]")
_VARIABLE_RE = re.compile(r"\b((?:llm_stack|gpu|preflight|cuda_toolkit|torch|flash_attn_build|vllm_source)_[a-z0-9_]*[a-z0-9])\b")
MAX_MODEL_LENGTH = 200


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


def _short(value, limit=80):
    """repr of a value for messages, cut to limit characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


# --- the matrix's releases: every lookup of a vLLM, torch or transformers release goes through listed().

_LISTED = {}


def listed(table, version):
    """The key of table (a dict or list of releases) that is version's release under PEP 440, or None.

    Trailing zeros, a leading 'v' and white space do not count (0.19.1.0 and v0.19.1 are 0.19.1); a pre,
    post or dev part does (0.19.1.post1, 0.19.1rc1 and 0.19.1.dev0 are other releases); the local label
    (+cu128) is not part of the release.
    """
    if version is None:
        return None
    try:
        release = Version(version.public() if isinstance(version, Version) else Version(str(version)).public())
    except VersionError:
        return None
    cached = _LISTED.get(id(table))
    if cached is None or cached[0] is not table or len(cached[1]) != len(table):
        cached = (table, dict((Version(key), key) for key in table))
        _LISTED[id(table)] = cached
    return cached[1].get(release)


def vllm_entry(version):
    """The matrix's row of a vLLM release (Version or str), or None when the matrix does not list it."""
    key = listed(M.VLLM, version)
    return M.VLLM[key] if key else None


def nearest_listed(table, version):
    """The listed release nearest to version: its final release (0.19.1 for 0.19.1rc1 or 0.19.1.post1), else the
    newest one not newer than it, else the oldest one."""
    keys = sorted(table, key=Version)
    if not keys:
        return None
    version = Version(Version(str(version)).public())
    final = listed(table, ".".join(str(part) for part in version.release))
    if final:
        return final
    older = [key for key in keys if Version(key) <= version]
    return older[-1] if older else keys[0]


def model_family(model):
    """The row of MODEL_FAMILIES whose name pattern matches a repo id's name (any org), or None."""
    if not model or "/" not in model:
        return None
    name = model.split("/", 1)[1]
    for family in M.MODEL_FAMILIES:
        if re.fullmatch(family["name"], name, re.IGNORECASE):
            return family
    return None


def transformers_for(entry, floor):
    """A listed transformers release that meets a vLLM row's requirement (entry, or None) and floor: the row's
    transformers_suggest when it does, else the newest patch of the oldest minor series that does; None if none."""
    if entry is not None and entry["transformers_suggest"] and Version(entry["transformers_suggest"]) >= Version(floor):
        return entry["transformers_suggest"]
    fits = [v for v in M.TRANSFORMERS_RELEASES
            if Version(v) >= Version(floor) and (entry is None or satisfies(v, entry["transformers"]))]
    if not fits:
        return None
    oldest = Version(fits[0]).major_minor()
    return [v for v in fits if Version(v).major_minor() == oldest][-1]


# --- cu tags: the only code that turns a CUDA version into torch's index tag and back.

def torch_cuda_tag(value):
    """'cu128', 'CU128', '12.8' -> 'cu128'; 'cpu' -> 'cpu'. Raises StackInputError (option torch_cuda) otherwise.

    A tag is 'cu' with the major (two digits) and the minor (one digit):
    CUDA 12.10 would have no tag, and is refused rather than spelled 'cu1210'.
    """
    if not isinstance(value, str):
        raise StackInputError("torch_cuda", "%s is not a torch CUDA build; use the wheel index tag such as 'cu128'"
                                            " (or '12.8'), or 'cpu'" % _short(value))
    text = value.strip().lower()
    if text == "cpu":
        return "cpu"
    match = _TORCH_CUDA_RE.fullmatch(text)
    if not match:
        raise StackInputError("torch_cuda", "%s is not a torch CUDA build; use the wheel index tag such as 'cu128'"
                                            " (or '12.8'), or 'cpu'" % _short(value))
    if match.group("cu"):
        return "cu%d%s" % (int(match.group("cu")), match.group("cu_minor"))
    return "cu%d%s" % (int(match.group("dot")), match.group("dot_minor"))


def torch_cuda_version(tag):
    """'cu128' (or '12.8') -> '12.8'; 'cpu' -> None. Raises StackInputError."""
    tag = torch_cuda_tag(tag)
    if tag == "cpu":
        return None
    return "%d.%s" % (int(tag[2:-1]), tag[-1])


def cuda_tag_or_none(cuda):
    """The tag of a CUDA major.minor ('12.8' -> 'cu128'), or None where torch has no such tag (12.10)."""
    try:
        return torch_cuda_tag("%d.%d" % (Version(str(cuda)).major, Version(str(cuda)).minor))
    except (StackInputError, VersionError):
        return None


def normalize_torch_cuda(value):
    """'cu128' or '12.8' -> '12.8'; 'cpu' -> 'cpu'; None/'' -> None. Raises StackInputError."""
    if value is None or (isinstance(value, str) and value.strip() == ""):
        return None
    tag = torch_cuda_tag(value)
    return "cpu" if tag == "cpu" else torch_cuda_version(tag)


def _cu(cuda):
    return torch_cuda_tag(cuda)


# --- runfiles: the one table is compat_matrix.CUDA_RUNFILES.

def runfile_for(version):
    """{name, url, driver} of NVIDIA's runfile for a CUDA release 'X.Y.Z', or None when the table has none."""
    if not isinstance(version, str):
        return None
    try:
        parsed = Version(version)
    except VersionError:
        return None
    if parsed.pre is not None or parsed.post is not None or parsed.dev is not None or parsed.local:
        return None
    entry = M.CUDA_RUNFILES.get(parsed.canonical())
    return dict(entry) if entry else None


def known_runfile_releases(major_minor=None):
    """Releases with a known runfile, oldest first; only those of major_minor ('12.8') when given."""
    releases = sorted(M.CUDA_RUNFILES, key=Version)
    if major_minor:
        releases = [r for r in releases if Version(r).major_minor() == major_minor]
    return releases


# --- the driver rule.

_FIRST_OF_MINOR = {}


def _release_driver(cuda):
    """(driver, release) bundled with toolkit cuda: the exact release, else the lowest known patch of its minor."""
    if len(cuda.release) >= 3:
        exact = "%d.%d.%d" % cuda.release[:3]
        if exact in M.CUDA_RELEASE_DRIVER:
            return M.CUDA_RELEASE_DRIVER[exact], exact
    if not _FIRST_OF_MINOR:
        for key in sorted(M.CUDA_RELEASE_DRIVER, key=Version, reverse=True):
            _FIRST_OF_MINOR[_minor_key(key)] = key
    release = _FIRST_OF_MINOR.get(cuda.major_minor())
    if release:
        return M.CUDA_RELEASE_DRIVER[release], release
    return None, None


def driver_runs(driver_version, cuda_runtime):
    """True when the driver meets the minimum of the runtime's major version (no error of the driver rule)."""
    return not [p for p in driver_runtime_problems(driver_version, cuda_runtime) if p[0] == "error"]


def _torch_builds_for_driver(torch_version, driver):
    entry = M.TORCH.get(Version(str(torch_version)).major_minor()) if torch_version else None
    if not entry:
        return []
    return [_cu(c) for c in entry["cuda"]
            if M.CUDA_DRIVER_MINIMUM.get(Version(c).major) and driver >= Version(M.CUDA_DRIVER_MINIMUM[Version(c).major])]


def driver_runtime_problems(driver_version, cuda_runtime, toolkit=False, torch_version=None):
    """THE driver rule: a list of (severity, rule, msg).

    error below the minimum driver of the runtime's major version (minor
    version compatibility), warning below the driver bundled with the
    release. ``cuda_runtime``: '12.8', 'cu128' or '12.8.1'. ``toolkit``:
    the runtime is the pinned toolkit (rules cuda-driver-*), otherwise
    torch's CUDA build (rules torch-driver*); ``torch_version`` lets the
    fix name the builds of that release the driver runs. Empty driver or
    runtime: no problem.
    """
    if not driver_version or not cuda_runtime:
        return []
    driver = driver_version if isinstance(driver_version, Version) else Version(str(driver_version))
    if isinstance(cuda_runtime, Version):
        runtime = cuda_runtime
    elif str(cuda_runtime).strip().lower().startswith("cu"):
        runtime = Version(torch_cuda_version(str(cuda_runtime)))
    else:
        runtime = Version(str(cuda_runtime))
    minimum = M.CUDA_DRIVER_MINIMUM.get(runtime.major)
    if toolkit:
        release_driver, release = _release_driver(runtime)
    else:
        release_driver, release = _release_driver(Version(runtime.major_minor() + ".0"))
    problems = []
    if toolkit:
        label = _v("cuda_version", runtime)
        if minimum and driver < Version(minimum):
            problems.append(("error", "cuda-driver-minimum",
                             "%s / %s: CUDA %d.x needs driver >= %s %s. Fix: upgrade the driver to >= %s on this host"
                             " (this collection never installs it), or set %s to a toolkit the driver supports"
                             % (_v("driver_version", driver), label, runtime.major, minimum, _src("cuda-driver-minimum"),
                                minimum, VARIABLES["cuda_version"])))
        elif release_driver and driver < Version(release_driver):
            problems.append(("warning", "cuda-driver-release",
                             "%s / %s: CUDA %s ships with driver %s; this older driver runs it through minor version"
                             " compatibility only (no JIT of PTX built by this toolkit) %s. Fix: upgrade the driver to"
                             " >= %s" % (_v("driver_version", driver), label, release, release_driver,
                                         _src("cuda-driver-release", version=release), release_driver)))
        return problems
    tag = _cu(runtime.major_minor())
    label = _v("torch_cuda", tag)
    if minimum and driver < Version(minimum):
        builds = _torch_builds_for_driver(torch_version, driver)
        if builds:
            fix = "set %s to %s (a build of torch %s this driver runs), or upgrade the driver to >= %s" % (
                VARIABLES["torch_cuda"], builds[-1], Version(str(torch_version)).public(), minimum)
        else:
            fix = "upgrade the driver to >= %s (this collection never installs it)%s" % (
                minimum, (", or pin a torch release with a build this driver runs (the suggested stack names one)"
                          if torch_version else ""))
        problems.append(("error", "torch-driver",
                         "%s / %s: torch's %s build bundles the CUDA %s runtime, which needs driver >= %s %s. Fix: %s"
                         % (_v("driver_version", driver), label, tag, runtime.major_minor(), minimum,
                            _src("torch-driver"), fix)))
    elif release_driver and driver < Version(release_driver):
        problems.append(("warning", "torch-driver-release",
                         "%s / %s: CUDA %s was released with driver %s; torch's %s build runs on this driver through"
                         " minor version compatibility only %s. Fix: upgrade the driver to >= %s" % (
                             _v("driver_version", driver), label, runtime.major_minor(), release_driver, tag,
                             _src("torch-driver-release", version=release), release_driver)))
    return problems


def _minor_key(version):
    return Version(version).major_minor()
