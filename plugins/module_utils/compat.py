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
    parse_specifier,
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


# --- input: every option normalized in one place, before any lookup.

def _version_option(option, value, what):
    """Version of an option's text, or None for an empty one. Raises StackInputError naming the option."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise StackInputError(option, "%s is not %s; quote it in YAML, such as \"%s\"" % (_short(value), what, value))
    if not value.strip():
        return None
    try:
        return Version(value)
    except VersionError as exc:
        raise StackInputError(option, "%s is not %s (%s)" % (_short(value), what, exc))


def _plain_release(option, version, value, parts, example):
    if version.pre is not None or version.post is not None or version.dev is not None or version.local \
            or len(version.release) not in parts:
        raise StackInputError(option, "%s is not %s" % (_short(value), example))


def validate(params):
    """Check and normalize stack_compat's options; return a dict of parsed values.

    The one place where versions are normalized (stripped, a leading 'v'
    dropped, ASCII digits only) before any lookup. Raises StackInputError
    naming the option on the first value that cannot be normalized, before
    any check runs.
    """
    parsed = {"raw": {}}
    for option in PINS + ("driver_version",):
        value = params.get(option)
        parsed["raw"][option] = value.strip() if isinstance(value, str) else value

    gpus = params.get("gpus") or []
    if not isinstance(gpus, (list, tuple)):
        raise StackInputError("gpus", "expected a list of compute capabilities such as ['8.0', '9.0'], got %s"
                                      % _short(gpus))
    caps = []
    for gpu in gpus:
        if isinstance(gpu, float) and not isinstance(gpu, bool):
            gpu = "%.1f" % gpu if abs(float("%.1f" % gpu) - gpu) < 1e-9 else repr(gpu)
        if not isinstance(gpu, str) or not _GPU_RE.fullmatch(gpu.strip()):
            raise StackInputError("gpus", "%s is not a compute capability; use strings such as '9.0'"
                                          " (the gpu_compute_caps fact)" % _short(gpu))
        try:
            caps.append(parse_cap(gpu.strip()))
        except ArchError as exc:
            raise StackInputError("gpus", "%s; use strings such as '9.0' (the gpu_compute_caps fact)" % exc)
    parsed["gpus"] = [cap_str(cap) for cap in sorted(set(caps))]

    cuda = _version_option("cuda_version", params.get("cuda_version"), "a CUDA toolkit version")
    if cuda is None:
        raise StackInputError("cuda_version", "%s is not a CUDA toolkit version; use major.minor.patch such as"
                                              " '12.8.1'" % _short(params.get("cuda_version")))
    _plain_release("cuda_version", cuda, params.get("cuda_version"), (2, 3),
                   "a CUDA toolkit version; use major.minor.patch such as '12.8.1'")
    parsed["cuda_version"] = cuda

    driver = _version_option("driver_version", params.get("driver_version"), "a driver version")
    if driver is not None:
        _plain_release("driver_version", driver, params.get("driver_version"), (2, 3),
                       "a driver version; use the gpu_driver_version fact such as '580.159.04'")
        if driver.prefixed:
            raise StackInputError("driver_version", "%s is not a driver version; use the gpu_driver_version fact such"
                                                    " as '580.159.04'" % _short(params.get("driver_version")))
    parsed["driver_version"] = driver

    python = params.get("python_version")
    if isinstance(python, str) and python.strip() == "3.1":
        raise StackInputError("python_version", "'3.1' looks like an unquoted 3.10 turned into a number by YAML;"
                                                " quote it: \"3.10\"")
    python = _version_option("python_version", python, "a Python 3 version; use major.minor such as '3.12'")
    if python is not None:
        _plain_release("python_version", python, params.get("python_version"), (2, 3),
                       "a Python 3 version; use major.minor such as '3.12'")
        if python.major != 3:
            raise StackInputError("python_version", "%s is not a Python 3 version; use major.minor such as '3.12'"
                                                    % _short(params.get("python_version")))
    parsed["python_version"] = python

    for option in ("torch_version", "flash_attn_version", "vllm_version", "transformers_version"):
        parsed[option] = _version_option(option, params.get(option), "a release version; use a PyPI release such as"
                                                                     " '2.10.0'")

    torch_cuda = params.get("torch_cuda")
    parsed["torch_cuda"] = normalize_torch_cuda(torch_cuda) if torch_cuda is not None else None
    parsed["torch_local"] = None
    torch = parsed["torch_version"]
    if torch is not None and torch.local:
        local = torch.local.lower()
        if local.startswith("cu") or local == "cpu":
            try:
                from_local = normalize_torch_cuda(local)
            except StackInputError:
                raise StackInputError("torch_version", "%s names the build %s, which is not a torch CUDA build; set"
                                                       " llm_stack_torch_version to %s and llm_stack_torch_cuda to the"
                                                       " build, such as cu128" % (_short(str(torch)), local,
                                                                                  torch.public_canonical()))
            if parsed["torch_cuda"] is None:
                parsed["torch_cuda"] = from_local
            elif parsed["torch_cuda"] != from_local:
                raise StackInputError("torch_version", "%r names build %s but torch_cuda is %s; set one of them"
                                                       % (str(torch), local, params.get("torch_cuda")))
        else:
            parsed["torch_local"] = local

    model = params.get("model")
    if model is not None and not isinstance(model, str):
        raise StackInputError("model", "%s is not a Hugging Face repo id; use 'org/name' such as 'Qwen/Qwen3.5-9B'"
                                       % _short(model))
    if model and model.strip():
        if len(model.strip()) > MAX_MODEL_LENGTH or not _MODEL_RE.fullmatch(model.strip()):
            raise StackInputError("model", "%s is not a Hugging Face repo id; use 'org/name' such as 'Qwen/Qwen3.5-9B'"
                                           % _short(model))
        parsed["model"] = model.strip()
    else:
        parsed["model"] = None
    allow = params.get("allow_unlisted_versions")
    if allow is not None and not isinstance(allow, bool):
        raise StackInputError("allow_unlisted_versions", "%s is not a boolean; set llm_stack_allow_unlisted_versions"
                                                         " to true or false" % _short(allow))
    parsed["allow_unlisted"] = allow is True
    return parsed


def normalized_pins(p):
    """The eight pins in their canonical spelling (strings; '' where unset), from validate()'s result."""
    def text(version):
        return version.canonical() if version is not None else ""

    def spelled(table, version):
        return (listed(table, version) or version.canonical()) if version is not None else ""
    torch = p["torch_version"]
    return {
        "cuda_version": text(p["cuda_version"]),
        "torch_version": (listed(M.TORCH_RELEASES, torch) or torch.public_canonical()) if torch is not None else "",
        "torch_cuda": ("cpu" if p["torch_cuda"] == "cpu" else _cu(p["torch_cuda"])) if p["torch_cuda"] else "",
        "python_version": text(p["python_version"]),
        "flash_attn_version": text(p["flash_attn_version"]),
        "vllm_version": spelled(M.VLLM, p["vllm_version"]),
        "transformers_version": spelled(M.TRANSFORMERS_RELEASES, p["transformers_version"]),
        "model": p["model"] or "",
    }


def variables_in(message):
    """Inventory variables and facts a message names, in order."""
    seen = []
    for name in _VARIABLE_RE.findall(message):
        if name not in seen:
            seen.append(name)
    return seen


class Report(object):
    """Problems of one part: {rule, part, severity, variables, msg}, no duplicates."""

    def __init__(self, part="matrix"):
        self.part = part
        self.problems = []

    def add(self, rule_id, message, variables=None, severity=None):
        """Adds a problem of rule_id; severity only for a rule with an opt-in (RULES' opt_in) that is given."""
        if any(problem["msg"] == message for problem in self.problems):
            return
        if severity is not None and severity != RULES[rule_id]["severity"] and not RULES[rule_id].get("opt_in"):
            raise ValueError("rule %s has no opt-in that changes its severity" % rule_id)
        self.problems.append({"rule": rule_id, "part": self.part, "severity": severity or RULES[rule_id]["severity"],
                              "variables": list(variables) if variables else variables_in(message), "msg": message})

    @property
    def errors(self):
        return [problem["msg"] for problem in self.problems if problem["severity"] == "error"]

    @property
    def warnings(self):
        return [problem["msg"] for problem in self.problems if problem["severity"] == "warning"]


_Report = Report


def _minor_key(version):
    return Version(version).major_minor()


def unlisted(p, report, rule, option, value, what, unchecked, refresh, nearest, **src):
    """A release the matrix does not list: an error naming the refresh and the opt-in, or with the opt-in
    (llm_stack_allow_unlisted_versions) a warning. what: (the release, what the matrix lists); unchecked: what
    cannot be checked without its row; refresh: how a maintainer adds it; nearest: the listed release to pin
    instead (or None)."""
    variable, allow = VARIABLES[option], VARIABLES["allow_unlisted_versions"]
    instead = ["set %s to %s (the nearest listed)" % (variable, nearest)] if nearest else []
    if p.get("allow_unlisted"):
        report.add(rule, "%s: %s is not in the matrix (%s); %s=true accepts it, but %s %s. Fix: %s"
                   % (_v(option, value), what[0], what[1], allow, unchecked, _src(rule, **src),
                      "; or ".join([refresh + " so that it is checked"] + instead)), severity="warning")
        return
    fixes = [refresh, "set %s: true to accept it with a warning (every rule that does not depend on it is still"
                      " checked)" % allow] + instead
    report.add(rule, "%s: %s is not in the matrix (%s), so %s %s. Fix: %s"
               % (_v(option, value), what[0], what[1], unchecked, _src(rule, **src), "; or ".join(fixes)))


_REFRESH = "for a release newer than the matrix, run `make matrix` in a checkout of the collection (it reads it" \
           " from the package index)"


def _range(keys):
    ordered = sorted(keys, key=Version)
    return "%s to %s" % (ordered[0], ordered[-1]) if ordered else "none"


def _check_cuda_driver(p, report):
    cuda, driver = p["cuda_version"], p["driver_version"]
    release_driver, release = _release_driver(cuda)
    if release_driver is None:
        report.add("cuda-known", "%s: CUDA %s is not in the matrix (newest known %s); only its major version is"
                                 " checked %s. Fix: add it to plugins/module_utils/compat_matrix.py once checked"
                                 % (_v("cuda_version", cuda), cuda, _newest(M.CUDA_RELEASE_DRIVER),
                                    _src("cuda-known", version=str(cuda))))
    elif len(cuda.release) >= 3 and release != cuda.canonical():
        known = ", ".join(sorted((k for k in M.CUDA_RELEASE_DRIVER if _minor_key(k) == cuda.major_minor()), key=Version))
        report.add("cuda-known", "%s: CUDA release %s is not in the matrix (known %s releases: %s); checked as %s %s."
                                 " Fix: check the version, or add the release to plugins/module_utils/compat_matrix.py"
                                 % (_v("cuda_version", cuda), cuda, cuda.major_minor(), known, release,
                                    _src("cuda-known", version=str(cuda))))
    for dummy, rule, message in driver_runtime_problems(driver, cuda, toolkit=True):
        report.add(rule, message)


def _newest(table):
    return str(max(Version(key) for key in table))


def release_of_minor(major_minor):
    """Newest release with a known runfile of a CUDA major.minor ('12.8' -> '12.8.1'), or None."""
    releases = known_runfile_releases(major_minor)
    return releases[-1] if releases else None


def _release_at_least(major_minor):
    """Newest known release of the first CUDA minor >= major_minor."""
    minors = sorted(set(Version(r).major_minor() for r in M.CUDA_RUNFILES), key=Version)
    for minor in minors:
        if Version(minor) >= Version(major_minor):
            return release_of_minor(minor)
    return None


def _release_below(major_minor):
    """Newest known release older than major_minor."""
    older = [r for r in known_runfile_releases() if Version(Version(r).major_minor()) < Version(major_minor)]
    return older[-1] if older else None


def python_versions():
    """Every Python X.Y some torch release of the matrix publishes wheels for, oldest first."""
    found = set()
    for entry in M.TORCH.values():
        low, high = Version(entry["python"][0]), Version(entry["python"][1])
        for minor in range(low.minor, high.minor + 1):
            found.add("3.%d" % minor)
    return sorted(found, key=Version)


def _nearest_python(python, accept):
    """The Python X.Y nearest to python (Version) that accept(str) allows, or None."""
    options = [v for v in python_versions() if accept(v)]
    if not options:
        return None
    return min(options, key=lambda v: (abs(Version(v).minor - python.minor), -Version(v).minor))


def _torch_release(minor):
    return minor + ".0"


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
                       " to %s (or another %s or newer toolkit)"
                       % (_v("gpus", gpu), _v("cuda_version", cuda), gpu, first, cuda.major_minor(),
                          _src("arch-first-cuda"), VARIABLES["cuda_version"], _release_at_least(first) or first, first))
        for drop in M.ARCH_DROPPED:
            if Version(cuda.major_minor()) >= Version(drop["cuda"]) and parse_cap(gpu) < parse_cap(drop["min_arch"]):
                report.add("arch-dropped",
                           "%s / %s: CUDA %s and newer dropped compute capabilities below %s %s. Fix: set %s to %s"
                           " (or another toolkit older than %s) for this host"
                           % (_v("gpus", gpu), _v("cuda_version", cuda), drop["cuda"], drop["min_arch"],
                              _src("arch-dropped"), VARIABLES["cuda_version"], _release_below(drop["cuda"]),
                              drop["cuda"]))


def torch_builds(torch_version):
    """CUDA builds ('12.8') torch publishes for a release (Version or str), [] when not in the matrix."""
    entry = M.TORCH.get(Version(str(torch_version)).major_minor())
    return list(entry["cuda"]) if entry else []


def builds_covering(torch_version, gpus):
    """Builds of a torch release whose wheels run on every GPU cap in gpus."""
    found = []
    for build in torch_builds(torch_version):
        archs = M.TORCH_BUILD_ARCHS.get(build)
        if archs and all(gpu not in M.ARCH_FIRST_CUDA or covered_by(gpu, archs["sass"], archs["ptx"]) for gpu in gpus):
            found.append(build)
    return found


def _prefer_build(builds, cuda):
    """The build of builds that matches the toolkit's minor, else its major (newest), else the newest."""
    for build in builds:
        if build == cuda.major_minor():
            return build
    same_major = [b for b in builds if Version(b).major == cuda.major]
    return (same_major or builds)[-1] if builds else None


def _check_torch(p, report):
    torch, torch_cuda, python = p["torch_version"], p["torch_cuda"], p["python_version"]
    if torch is None:
        return
    if p.get("torch_local"):
        builds = ", ".join(_cu(c) for c in torch_builds(torch)) or "cu128"
        report.add("torch-local-build",
                   "%s: the label +%s names a torch build for another platform; this collection installs torch's"
                   " CUDA builds %s. Fix: set %s to \"%s\" and %s to one of %s"
                   % (_v("torch_version", p["raw"]["torch_version"]), p["torch_local"], _src("torch-local-build"),
                      VARIABLES["torch_version"], torch.public_canonical(), VARIABLES["torch_cuda"], builds))
    entry = M.TORCH.get(torch.major_minor())
    if entry is None:
        unlisted(p, report, "torch-known", "torch_version", torch,
                 ("torch %s" % torch.public(), "it lists the minors %s" % _range(M.TORCH)),
                 "its CUDA builds and Python range are not checked",
                 "add a TORCH row for %s in plugins/module_utils/compat_matrix.py with checked facts, then run"
                 " `make matrix`" % torch.major_minor(), nearest_listed(M.TORCH_RELEASES, torch), project="torch")
        return
    if listed(M.TORCH_RELEASES, torch) is None:
        unlisted(p, report, "torch-known", "torch_version", torch,
                 ("torch %s" % torch.public(), "its %s releases: %s" % (
                     torch.major_minor(),
                     ", ".join(v for v in M.TORCH_RELEASES if Version(v).major_minor() == torch.major_minor()))),
                 "whether it is a release on the package index is not known (the rules of torch %s apply)"
                 % torch.major_minor(), _REFRESH,
                 nearest_listed(M.TORCH_RELEASES, torch), project="torch")
    if torch_cuda and torch_cuda != "cpu" and torch_cuda not in entry["cuda"]:
        builds = ", ".join(_cu(c) for c in entry["cuda"])
        report.add("torch-cuda-build",
                   "%s / %s: torch %s has no %s build (builds: %s) %s. Fix: set %s to %s (one of %s)"
                   % (_v("torch_version", torch), _v("torch_cuda", _cu(torch_cuda)), torch.major_minor(),
                      _cu(torch_cuda), builds, _src("torch-cuda-build"), VARIABLES["torch_cuda"],
                      _cu(_prefer_build(entry["cuda"], p["cuda_version"])), builds))
    if python is not None and not in_range(python, entry["python"][0], entry["python"][1]):
        nearest = _nearest_python(python, lambda v: in_range(v, entry["python"][0], entry["python"][1]))
        report.add("torch-python",
                   "%s / %s: torch %s publishes wheels for Python %s to %s %s. Fix: set %s to \"%s\""
                   % (_v("torch_version", torch), _v("python_version", python), torch.major_minor(),
                      entry["python"][0], entry["python"][1],
                      _src("torch-python") if "python_source" not in entry
                      else "[rule torch-python; source: %s]" % M.SOURCES[entry["python_source"]]["url"],
                      VARIABLES["python_version"], nearest))


def _check_torch_runtime(p, report):
    torch_cuda, driver, cuda, torch = p["torch_cuda"], p["driver_version"], p["cuda_version"], p["torch_version"]
    if not torch_cuda:
        return
    label = _v("torch_cuda", "cpu" if torch_cuda == "cpu" else _cu(torch_cuda))
    builds = torch_builds(torch) if torch is not None else []
    if torch_cuda == "cpu":
        if p["gpus"]:
            build = _prefer_build(builds_covering(torch, p["gpus"]) if torch is not None else [], cuda) \
                or cuda_tag_or_none(cuda) and cuda.major_minor()
            report.add("torch-cpu-build",
                       "%s / %s: a CPU build of torch does not use the host's GPUs %s. Fix: set %s to %s"
                       % (label, _v("gpus", ",".join(p["gpus"])), _src("torch-cpu-build"), VARIABLES["torch_cuda"],
                          _cu(build) if build else "a CUDA build of the pinned torch release"))
        return
    runtime = Version(torch_cuda)
    for dummy, rule, message in driver_runtime_problems(driver, torch_cuda, torch_version=torch):
        report.add(rule, message)
    archs = M.TORCH_BUILD_ARCHS.get(torch_cuda)
    if archs:
        for gpu in p["gpus"]:
            if gpu in M.ARCH_FIRST_CUDA and not covered_by(gpu, archs["sass"], archs["ptx"]):
                have = ", ".join(["sm_" + a.replace(".", "") for a in archs["sass"]]
                                 + ["compute_" + a.replace(".", "") + " (PTX)" for a in archs["ptx"]])
                covering = builds_covering(torch, p["gpus"]) if torch is not None else []
                if covering:
                    fix = "set %s to %s (torch %s's builds for these GPUs: %s)" % (
                        VARIABLES["torch_cuda"], _cu(_prefer_build(covering, cuda)), torch.major_minor(),
                        ", ".join(_cu(b) for b in covering))
                else:
                    other = [m for m in sorted(M.TORCH, key=Version) if builds_covering(m, p["gpus"])]
                    newer = [m for m in other if torch is None or Version(m) >= Version(torch.major_minor())]
                    pick = (newer or other or [None])[0]
                    fix = ("no build of torch %s runs on %s: set %s to %s with %s %s (the first torch release with"
                           " one)" % (torch.major_minor() if torch is not None else "?", gpu,
                                      VARIABLES["torch_version"], _torch_release(pick), VARIABLES["torch_cuda"],
                                      _cu(builds_covering(pick, p["gpus"])[-1]))) if pick else \
                        "no torch build in the matrix runs on compute capability %s" % gpu
                report.add("torch-build-archs",
                           "%s / %s: torch's %s wheels carry kernels for %s, none runs on compute capability %s"
                           " (\"no kernel image is available\") %s. Fix: %s"
                           % (_v("gpus", gpu), label, _cu(torch_cuda), have, gpu, _src("torch-build-archs"), fix))
    if runtime.major != cuda.major:
        same = [b for b in builds if Version(b).major == cuda.major]
        release = release_of_minor(torch_cuda) or _release_at_least(torch_cuda)
        fixes = []
        if same:
            fixes.append("set %s to %s" % (VARIABLES["torch_cuda"], _cu(_prefer_build(same, cuda))))
        if release:
            fixes.append("set %s to %s" % (VARIABLES["cuda_version"], release))
        report.add("torch-toolkit-major",
                   "%s / %s: nvcc %s and torch's CUDA %s differ in major version; torch refuses to build the CUDA"
                   " extensions (flash-attn, vLLM) with \"The detected CUDA version (%s) mismatches the version that"
                   " was used to compile PyTorch (%s)\" %s. Fix: %s"
                   % (_v("cuda_version", cuda), label, cuda.major_minor(), torch_cuda, cuda.major_minor(), torch_cuda,
                      _src("torch-toolkit-major"), ", or ".join(fixes) or "match their major versions"))
    elif runtime.minor != cuda.minor:
        fixes = []
        if cuda.major_minor() in builds:
            fixes.append("set %s to %s" % (VARIABLES["torch_cuda"], _cu(cuda.major_minor())))
        release = release_of_minor(torch_cuda)
        if release:
            fixes.append("set %s to %s" % (VARIABLES["cuda_version"], release))
        report.add("torch-toolkit-minor",
                   "%s / %s: nvcc %s and torch's CUDA %s differ in minor version; extensions build with a warning %s."
                   " Fix: %s" % (_v("cuda_version", cuda), label, cuda.major_minor(), torch_cuda,
                                 _src("torch-toolkit-minor"), ", or ".join(fixes) or "none needed"))


def _check_vllm(p, report):
    vllm, torch, python, transformers = p["vllm_version"], p["torch_version"], p["python_version"], p["transformers_version"]
    if vllm is None:
        return
    entry = vllm_entry(vllm)
    if entry is None:
        unlisted(p, report, "vllm-known", "vllm_version", vllm, ("vLLM %s" % vllm, "it lists %s" % _range(M.VLLM)),
                 "its torch pin, Python range, transformers requirement and release wheel CUDA are not checked",
                 _REFRESH, nearest_listed(M.VLLM, vllm), version=vllm.public_canonical())
        return
    name = listed(M.VLLM, vllm)
    src = {"version": name}
    if torch is not None and Version(torch.public_canonical()) != Version(entry["torch"]):
        report.add("vllm-torch-pin",
                   "%s / %s: vLLM %s pins torch==%s %s. Fix: set %s to %s"
                   % (_v("torch_version", torch), _v("vllm_version", vllm), name, entry["torch"],
                      _src("vllm-torch-pin", **src), VARIABLES["torch_version"], entry["torch"]))
    if python is not None and not satisfies(python.major_minor(), entry["python"]):
        report.add("vllm-python",
                   "%s / %s: vLLM %s requires Python %s %s. Fix: set %s to \"%s\""
                   % (_v("python_version", python), _v("vllm_version", vllm), name, entry["python"],
                      _src("vllm-python", **src), VARIABLES["python_version"],
                      _nearest_python(python, lambda v: satisfies(v, entry["python"]))))
    if transformers is not None and not satisfies(transformers, entry["transformers"]):
        wanted = entry["transformers_suggest"] or _spec_floor(entry["transformers"])
        fix = "set %s to %s" % (VARIABLES["transformers_version"], wanted)
        report.add("vllm-transformers",
                   "%s / %s: vLLM %s requires transformers %s %s. Fix: %s"
                   % (_v("transformers_version", transformers), _v("vllm_version", vllm), name,
                      entry["transformers"], _src("vllm-transformers", **src), fix))


def _spec_floor(spec):
    """The '>=' bound of a requirement ('>=4.56.0,<5' -> '4.56.0'), the lowest release it names."""
    floors = [target for operator, target in parse_specifier(spec) if operator in (">=", "==", "~=")]
    return max(floors, key=Version) if floors else spec


def flash_attn_below_sm80_problems(fa, caps, policy, report, variable="gpus"):
    """flash-attn and archs below sm80: an error (policy fail, or no policy given), a warning with policy skip."""
    below = [cap for cap in caps if parse_cap(cap) < parse_cap(M.FLASH_ATTN_MIN_ARCH)]
    if not below:
        return
    if policy == "skip":
        rest = [cap for cap in caps if cap not in below]
        report.add("flash-attn-below-sm80",
                   "%s / %s: FlashAttention-2 needs compute capability >= %s; %s %s (flash_attn_build_below_sm80=skip)"
                   " %s. Fix: none needed; set %s to \"\" for such hosts to say so"
                   % (_v("flash_attn_version", fa), "%s=%s" % (VARIABLES.get(variable, variable), ";".join(caps)),
                      M.FLASH_ATTN_MIN_ARCH, ", ".join(below),
                      ("are left out of the build, which targets %s" % ";".join(rest)) if rest
                      else "is all this host has, so no flash-attn is built or installed here",
                      _src("flash-attn-below-sm80"), VARIABLES["flash_attn_version"]))
        return
    for gpu in below:
        if variable == "gpus":
            report.add("flash-attn-arch",
                       "%s / %s: FlashAttention-2 needs compute capability >= %s (Ampere, Ada, Hopper and newer); a %s"
                       " GPU has no kernels %s. Fix: set %s to \"\" for this host (vLLM does not need the flash-attn"
                       " package), or set flash_attn_build_below_sm80 to skip"
                       % (_v("flash_attn_version", fa), _v("gpus", gpu), M.FLASH_ATTN_MIN_ARCH, gpu,
                          _src("flash-attn-arch"), VARIABLES["flash_attn_version"]))
        else:
            report.add("flash-attn-arch",
                       "%s / %s=%s: FlashAttention-2 needs compute capability >= %s; the arch list names %s"
                       " (flash_attn_build_below_sm80=fail) %s. Fix: set flash_attn_build_below_sm80 to skip, or take"
                       " %s out of %s" % (_v("flash_attn_version", fa), variable, ";".join(caps),
                                          M.FLASH_ATTN_MIN_ARCH, gpu, _src("flash-attn-arch"), gpu, variable))


def _check_flash_attn(p, report):
    fa, cuda, torch = p["flash_attn_version"], p["cuda_version"], p["torch_version"]
    if fa is None:
        return
    flash_attn_below_sm80_problems(fa, p["gpus"], p.get("flash_attn_below_sm80"), report)
    entry = M.FLASH_ATTN.get(fa.major_minor()) if fa.major == 2 else None
    if entry is None or Version(fa.public_canonical()) > Version(entry["latest"]):
        known = ", ".join("%s.x (to %s)" % (key, value["latest"]) for key, value in sorted(M.FLASH_ATTN.items()))
        report.add("flash-attn-known", "%s: flash-attn %s has no CUDA/torch floors in the matrix (known: %s); only the"
                                       " sm80 floor is checked %s" % (_v("flash_attn_version", fa), fa, known,
                                                                      _src("flash-attn-known")))
        return
    if Version(cuda.major_minor()) < Version(entry["min_cuda"]):
        report.add("flash-attn-cuda",
                   "%s / %s: flash-attn %s needs CUDA >= %s %s. Fix: set %s to %s (or another %s or newer toolkit)"
                   % (_v("flash_attn_version", fa), _v("cuda_version", cuda), fa, entry["min_cuda"],
                      _src("flash-attn-cuda"), VARIABLES["cuda_version"], _release_at_least(entry["min_cuda"]),
                      entry["min_cuda"]))
    if torch is not None and Version(torch.public_canonical()) < Version(entry["min_torch"]):
        report.add("flash-attn-torch",
                   "%s / %s: flash-attn %s needs torch >= %s %s. Fix: set %s to %s or newer"
                   % (_v("flash_attn_version", fa), _v("torch_version", torch), fa, entry["min_torch"],
                      _src("flash-attn-torch"), VARIABLES["torch_version"], _torch_release(entry["min_torch"])))


def qwen35_parts(model):
    """(org, size, variant) when model is a Qwen3.5 repo id ('Qwen/Qwen3.5' included), else None."""
    org, name = model.split("/", 1)
    match = _QWEN35_RE.fullmatch(name)
    if not match:
        return None
    if not match.group("rest"):
        return org, None, ""
    size = _SIZE_RE.fullmatch(match.group("rest"))
    if not size:
        return org, None, match.group("rest")
    return org, size.group("size"), size.group("variant")


def _size_number(size):
    try:
        return float(size.upper().split("B", 1)[0])
    except ValueError:
        return 9.0


def nearest_qwen35(model):
    """The listed Qwen3.5 repo nearest to a Qwen3.5 model id: same size and variant where it exists, else the size
    nearest in parameters (a variant kept where that size has it). None when model is not a Qwen3.5 id."""
    parts = qwen35_parts(model)
    if parts is None:
        return None
    dummy, size, variant = parts
    listed = M.QWEN35["models"]
    for name in listed:
        if name.lower() == model.lower():
            return name
    wanted = _size_number(size) if size else 9.0
    sizes = sorted(M.QWEN35["sizes"], key=lambda s: (abs(_size_number(s) - wanted), _size_number(s)))
    for candidate in sizes:
        with_variant = "Qwen/Qwen3.5-%s%s" % (candidate, variant or "")
        for name in listed:
            if name.lower() == with_variant.lower():
                return name
    return "Qwen/Qwen3.5-%s" % sizes[0]


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
                       "%s: %s (real sizes: %s) %s. Fix: set %s to %s (or another of them)"
                       % (_v("model", model), ("Qwen3.5 has no %s model" % size) if size
                          else "the id names no Qwen3.5 model size", sizes, _src("qwen35-model-id"),
                          VARIABLES["model"], nearest_qwen35(model)))
        elif model not in q["models"]:
            known = [m for m in q["models"] if m.lower() == model.lower()]
            hint = ("the hub id is spelled %s" % known[0]) if known else "check that it exists on the hub"
            report.add("qwen35-model-variant",
                       "%s: not among the Qwen3.5 repos the matrix lists (%s) %s. Fix: %s"
                       % (_v("model", model), ", ".join(q["models"]), _src("qwen35-model-variant"), hint))


def _vllm_for(family):
    """(vLLM release, transformers release): the oldest listed vLLM that has the family and a transformers release
    that meets its requirement and the family's floor, or (None, None)."""
    for release in sorted(M.VLLM, key=Version):
        if family.get("min_vllm") and Version(release) < Version(family["min_vllm"]):
            continue
        transformers = transformers_for(M.VLLM[release], family["min_transformers"])
        if transformers:
            return release, transformers
    return None, None


def _check_model_family(p, report):
    """model-vllm, model-transformers: the model family's floors, with or without vLLM, listed or not."""
    model, vllm, transformers = p["model"], p["vllm_version"], p["transformers_version"]
    family = model_family(model)
    if family is None:
        return
    types = " or ".join(family["model_types"])
    if vllm is not None and family.get("min_vllm") and Version(vllm.public()) < Version(family["min_vllm"]):
        release, pair = _vllm_for(family)
        fix = ("set %s to %s or newer (with %s %s and %s %s)" % (
            VARIABLES["vllm_version"], release, VARIABLES["torch_version"], M.VLLM[release]["torch"],
            VARIABLES["transformers_version"], pair)) if release else \
            "set %s to %s or newer" % (VARIABLES["vllm_version"], family["min_vllm"])
        report.add("model-vllm",
                   "%s / %s: %s models need vLLM >= %s, the first release with the model class of %s %s. Fix: %s"
                   % (_v("model", model), _v("vllm_version", vllm), family["family"], family["min_vllm"], types,
                      _src("model-vllm"), fix))
    if transformers is None or Version(transformers.public()) >= Version(family["min_transformers"]):
        return
    entry = vllm_entry(vllm) if vllm is not None else None
    wanted = transformers_for(entry, family["min_transformers"])
    if wanted:
        fix = "set %s to %s" % (VARIABLES["transformers_version"], wanted)
    else:
        release, pair = _vllm_for(family)
        fix = ("no transformers release meets both this and vLLM %s's requirement %s: set %s to %s or newer and %s"
               " to %s" % (vllm, entry["transformers"], VARIABLES["vllm_version"], release,
                           VARIABLES["transformers_version"], pair)) if release else \
            "set %s to %s or newer" % (VARIABLES["transformers_version"], family["min_transformers"])
    report.add("model-transformers",
               "%s / %s: %s models need transformers >= %s, the first release that knows model_type %s (older ones"
               " stop with KeyError: '%s' or \"does not recognize this architecture\") %s. Fix: %s"
               % (_v("model", model), _v("transformers_version", transformers), family["family"],
                  family["min_transformers"], types, family["model_types"][0], _src("model-transformers"), fix))


def _check_transformers(p, report):
    """transformers-known: a release the matrix records (the vLLM and model rules compare any version)."""
    transformers = p["transformers_version"]
    if transformers is None or listed(M.TRANSFORMERS_RELEASES, transformers) is not None:
        return
    unlisted(p, report, "transformers-known", "transformers_version", transformers,
             ("transformers %s" % transformers,
              "it lists the releases on the package index from %s" % _range(M.TRANSFORMERS_RELEASES)),
             "whether it is a release on the package index is not known (the vLLM and model rules compare it all"
             " the same)",
             _REFRESH, nearest_listed(M.TRANSFORMERS_RELEASES, transformers), project="transformers")


def check_matrix(p, report):
    """The matrix part: every rule of the compatibility matrix over validate()'s result."""
    _check_cuda_driver(p, report)
    _check_archs(p, report)
    _check_torch(p, report)
    _check_torch_runtime(p, report)
    _check_vllm(p, report)
    _check_transformers(p, report)
    _check_flash_attn(p, report)
    _check_qwen35(p, report)
    _check_model_family(p, report)


def check_stack(params):
    """Validate params and run the matrix. Returns dict(ok, errors, compat_warnings, problems, torch_cuda_arch_list).

    Raises StackInputError (naming the option) on malformed input.
    """
    p = validate(params)
    p["flash_attn_below_sm80"] = params.get("flash_attn_below_sm80")
    report = Report("matrix")
    check_matrix(p, report)
    try:
        archs = arch_list(p["gpus"])
    except ArchError:  # pragma: no cover - validate() already parsed every cap
        archs = ""
    return {
        "ok": not report.errors,
        "errors": report.errors,
        "compat_warnings": report.warnings,
        "problems": report.problems,
        "torch_cuda_arch_list": archs,
    }
