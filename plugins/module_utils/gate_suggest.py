# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The suggested stack: the complete stack nearest to the pins that passes the gate on this host.

Candidates are walked in order of preference, each dimension filtered by
the rules that concern it alone, and each complete candidate is run
through the whole gate (the same parts, with the same host inputs):

- the model family is kept (a Qwen3.5 id of a size that does not exist
  becomes the nearest real size);
- the pinned vLLM first, then the newest vLLM releases (for a release the
  matrix does not list, the nearest listed ones first, and the pinned one
  only with llm_stack_allow_unlisted_versions); torch is the one vLLM pins;
- torch's CUDA build: the pinned one, else the builds this driver runs
  and that carry kernels for every GPU, the toolkit's own first;
- the toolkit: only releases with a known runfile, the pinned one first,
  else the newest release of the build's minor, else of its major;
- Python: the pinned one, else the venv's or the host's interpreter, else
  the nearest that torch and vLLM allow;
- transformers: the pinned one, else what vLLM and the model family need;
- flash-attn: the pinned one, else the newest known, else none.

Host problems that no pin fixes (no GPU, a broken nvidia-smi, no space)
leave nothing that passes: the suggestion is then None, as it is when the
pins already pass.

The CUDA runfile is a step, not a pin: whatever cuda_toolkit's runfile
source (NVIDIA's site, an internal mirror, a controller copy), a release
whose runfile is not at hand (no checksum given for it, no copy on the
controller) is still suggested, and the group_vars block names what to
download and set (rules ``STEP_RULES``, the only errors a suggestion may
leave). Among releases equally near the pins, those at hand come first.
When the pins pass but for such a step, nothing is suggested: the errors
name the file.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

# The gate's evaluation, not gate itself (gate imports this module): the imports form no cycle.
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _gate_core
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat_matrix as M
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._readers import str_text as _text
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.compat import PINS, StackInputError
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.versions import (
    Version,
    VersionError,
    in_range,
    satisfies,
)

# Candidates run through the whole gate at most (each is a few hundred
# microseconds); the filters below keep the walk far shorter.
MAX_EVALUATIONS = 200

VARIABLE_OF = dict((pin, compat.VARIABLES[pin]) for pin in PINS)


def _unique(values):
    seen = []
    for value in values:
        if value is not None and value not in seen:
            seen.append(value)
    return seen


def _models(p, problems):
    model = p["model"] or ""
    if model and any(problem["rule"] == "qwen35-model-id" for problem in problems):
        return [compat.nearest_qwen35(model)]
    return [model]


def _vllms(cur, allow):
    pinned = cur["vllm_version"]
    if not pinned:
        return [""]
    newest_first = sorted(M.VLLM, key=Version, reverse=True)
    if compat.listed(M.VLLM, pinned):
        return _unique([pinned] + newest_first)
    # a release the matrix does not list: the nearest listed ones first (compat.nearest_listed, then the older
    # ones, newest first, then the newer ones)
    older = [v for v in newest_first if Version(v) <= Version(Version(pinned).public())]
    newer = [v for v in reversed(newest_first) if v not in older]
    return _unique(([pinned] if allow else []) + [compat.nearest_listed(M.VLLM, pinned)] + older + newer)


def _torches(cur, vllm, allow):
    entry = compat.vllm_entry(vllm) if vllm else None
    if entry:
        return [entry["torch"]]
    pinned = cur["torch_version"]
    known = [minor + ".0" for minor in sorted(M.TORCH, key=Version, reverse=True)]
    if pinned and Version(pinned).major_minor() in M.TORCH and (allow or compat.listed(M.TORCH_RELEASES, pinned)):
        return _unique([pinned] + known)
    if pinned and Version(pinned).major_minor() in M.TORCH:
        return _unique([compat.nearest_listed(M.TORCH_RELEASES, pinned)] + known)
    return known


def _torch_cudas(cur, torch, gpus, driver):
    builds = compat.builds_covering(torch, gpus) if gpus else compat.torch_builds(torch)
    if driver is not None:
        builds = [b for b in builds if compat.driver_runs(driver, b)]
    tags = [compat._cu(b) for b in builds]
    pinned = cur["torch_cuda"]
    cuda_mm = Version(cur["cuda_version"]).major_minor() if cur["cuda_version"] else None

    pinned_major = Version(cuda_mm).major if cuda_mm else None

    def rank(tag):
        version = Version(compat.torch_cuda_version(tag))
        quiet = driver is None or not compat.driver_runtime_problems(driver, tag)
        return (tag != pinned, version.major_minor() != cuda_mm, version.major != pinned_major, not quiet,
                -version.major, -version.minor)
    return sorted(tags, key=rank)


# Problems no pin changes: a suggestion cannot pass while one of them stands.
UNFIXABLE = frozenset((
    "host-gpu-error", "host-no-gpu", "host-arch-list-empty", "host-arch-list-invalid", "host-arch-list-gpus",
    "host-free-space", "cuda-runfile-source", "cuda-runfile-checksum-format", "torch-extra-packages",
    "flash-attn-options", "flash-attn-arch-list", "flash-attn-requirements", "role-check",
    # part serve: the serving settings, which no pin changes
    "serve-input", "serve-parallel-gpus", "serve-tp-heads", "serve-max-len", "serve-memory", "serve-own-flags",
    "serve-preset",
))


# Errors fixed by a step the suggested block names (a runfile to download, its checksum), never by a pin.
STEP_RULES = frozenset(("cuda-runfile-src", "cuda-runfile-checksum"))


class Runfiles(object):
    """What cuda_toolkit's runfile settings (as the call that runs its part got them) mean for each CUDA release:
    whether its runfile is at hand, where a controller copy is or goes, and the steps a suggestion must name."""

    def __init__(self, params, p):
        self.active = "cuda_toolkit" in (params.get("parts") or [])
        self.source = _text(params.get("runfile_source")) or "url"
        self.checksum = _text(params.get("runfile_checksum"))
        self.src = _text(params.get("runfile_src"))
        self.name = _text(params.get("runfile_name"))
        self.url = _text(params.get("runfile_url"))
        self.pinned = _text(p["raw"]["cuda_version"])
        self.installed = self.pinned if params.get("toolkit_installed") is True else None

    def file_name(self, release):
        """The runfile of a release: cuda_toolkit_runfile_name for the pinned one when set, else NVIDIA's name."""
        if self.name and release == self.pinned:
            return self.name
        return (compat.runfile_for(release) or {}).get("name") or ""

    def path(self, release):
        """Where the controller copy of the release's runfile is, or goes: cuda_toolkit_runfile_src when it is that
        file, else next to it; '' when cuda_toolkit_runfile_src is empty."""
        name = self.file_name(release)
        if not self.src or not name:
            return ""
        if os.path.basename(self.src) == name:
            return self.src
        return os.path.join(os.path.dirname(self.src), name)

    def at_hand(self, release):
        """True when cuda_toolkit needs nothing more for this release: installed, its checksum given (url), its
        copy on the controller (controller)."""
        if not self.active or release == self.installed:
            return True
        if self.source == "controller":
            return os.path.isfile(self.path(release))
        return bool(self.checksum) and release == self.pinned

    def adjust(self, trial, release):
        """A candidate's options for the release: the controller copy found next to the pinned one, the name
        override only for the release it names."""
        if not self.active:
            return
        if self.source == "controller" and self.at_hand(release):
            trial["runfile_src"] = self.path(release)
        if self.name and release != self.pinned:
            trial["runfile_name"] = ""

    def steps(self, release):
        """Comment lines of the group_vars block: what to download and set for the release's runfile."""
        if self.at_hand(release) or self.source not in ("url", "controller"):
            return []
        name = self.file_name(release)
        url = M.RUNFILE_URL.format(version=release, name=name)
        md5 = M.RUNFILE_MD5_URL.format(version=release)
        lines = []
        if self.name and release != self.pinned:
            lines.append('# and cuda_toolkit_runfile_name: "" (%s is the runfile of CUDA %s)' % (name, release))
        if self.source == "controller":
            where = self.path(release)
            lines += ["# and the runfile of CUDA %s on the controller: download %s from" % (release, name),
                      "#   %s (its md5 is in %s)" % (url, md5),
                      "#   to %s and set cuda_toolkit_runfile_src to that path" % (where or "the controller")]
        elif self.url and release != self.pinned:
            lines += ["# and cuda_toolkit_runfile_url: your mirror's copy of %s (NVIDIA's: %s)," % (name, url),
                      "#   cuda_toolkit_runfile_checksum: the md5 of %s from %s" % (name, md5)]
        else:
            lines.append("# and cuda_toolkit_runfile_checksum: the md5 of %s from %s" % (name, md5))
        return lines


def _cudas(cur, tag, gpus, driver, runfiles):
    wanted = Version(compat.torch_cuda_version(tag))
    releases = [r for r in compat.known_runfile_releases() if Version(r).major == wanted.major]
    ok = []
    for release in releases:
        version = Version(release)
        if driver is not None and not compat.driver_runs(driver, release):
            continue
        if any(M.ARCH_FIRST_CUDA.get(gpu) and Version(version.major_minor()) < Version(M.ARCH_FIRST_CUDA[gpu])
               for gpu in gpus):
            continue
        ok.append(release)
    pinned = cur["cuda_version"]

    def rank(release):
        version = Version(release)
        return (release != pinned, version.major_minor() != wanted.major_minor(), not runfiles.at_hand(release),
                -version.minor, -version.release[-1])
    return sorted(ok, key=rank)


def _host_pythons(params, pinned_mm):
    """Python X.Y versions the host can create the venv from, or None when unknown (any allowed)."""
    venv_python = params.get("venv_python")
    if isinstance(venv_python, str) and venv_python.strip():
        try:
            return [Version(venv_python).major_minor()]
        except VersionError:
            return []
    found = []
    for text in params.get("host_pythons") or []:
        try:
            found.append(Version(str(text)).major_minor())
        except VersionError:
            continue
    interpreter = params.get("interpreter")
    if isinstance(interpreter, dict):
        if interpreter.get("found") and interpreter.get("venv") and interpreter.get("ensurepip"):
            try:
                found.append(Version(str(interpreter.get("version"))).major_minor())
            except VersionError:
                pass
        return _unique(found)
    return _unique(found) if found else None


def _pythons(cur, params, torch, vllm):
    entry = M.TORCH.get(Version(torch).major_minor())
    vllm_entry = compat.vllm_entry(vllm) if vllm else None

    def allowed(python):
        if entry and not in_range(python, entry["python"][0], entry["python"][1]):
            return False
        return not (vllm_entry and not satisfies(python, vllm_entry["python"]))
    pinned = cur["python_version"]
    pinned_mm = Version(pinned).major_minor() if pinned else None
    host = _host_pythons(params, pinned_mm)
    rest = compat.python_versions()
    if pinned_mm:
        rest = sorted(rest, key=lambda v: (abs(Version(v).minor - Version(pinned_mm).minor), -Version(v).minor))
    else:
        rest = list(reversed(rest))
    order = _unique([pinned_mm] + (host or []) + rest)
    if host is not None:
        order = [v for v in order if v in host]
    return [v for v in order if allowed(v)]


def _transformers(cur, vllm, model, allow):
    entry = compat.vllm_entry(vllm) if vllm else None
    family = compat.model_family(model)
    floor = family["min_transformers"] if family else None

    def allowed(version):
        if entry and not satisfies(version, entry["transformers"]):
            return False
        return not (floor and Version(version) < Version(floor))
    pinned = cur["transformers_version"]
    if pinned and (allow or compat.listed(M.TRANSFORMERS_RELEASES, pinned)):
        options = [pinned]
    else:
        options = [compat.nearest_listed(M.TRANSFORMERS_RELEASES, pinned)] if pinned else []
    if entry:
        options += [entry["transformers_suggest"], compat._spec_floor(entry["transformers"])]
    if entry or floor:
        options.append(compat.transformers_for(entry, floor or "0"))
    newest = sorted((e["transformers_suggest"] for e in M.VLLM.values() if e["transformers_suggest"]), key=Version)
    options += newest[-1:]
    return [v for v in _unique(options) if v and allowed(v)] or ([""] if not pinned else [])


def _flash_attns(cur):
    pinned = cur["flash_attn_version"]
    if not pinned:
        return [""]
    latest = [e["latest"] for dummy, e in sorted(M.FLASH_ATTN.items(), key=lambda i: Version(i[0]), reverse=True)]
    return _unique([pinned] + latest + [""])


# The options that tell the suggestion about the host, by the part that reads them. stack_compat gives every
# option its default, so a call that does not run a part holds only defaults for that part's options
# (runfile_source url, toolkit_installed false): the role gate that runs the part is the one that knows.
_HOST_KEYS = {
    "cuda_toolkit": ("toolkit_installed", "runfile_source", "runfile_checksum", "runfile_src", "runfile_name",
                     "runfile_url"),
    "torch": ("interpreter", "venv_python"),
}


def host_view(params):
    """The options, with what the role gates' inputs know of the host: the options of a part this call does not run
    come from the role gate that runs it; host_pythons from any of them where this call has none."""
    view = dict(params)
    parts = list(params.get("parts") or [])
    taken = set(parts)
    for inputs in _gate_core.role_gate_inputs(params):
        theirs = list(inputs.get("parts") or [])
        for part, keys in _HOST_KEYS.items():
            if part in theirs and part not in taken:
                for key in keys:
                    view[key] = inputs.get(key)
        taken.update(theirs)
        parts += [part for part in theirs if part not in parts]
        if view.get("host_pythons") in (None, "", []) and inputs.get("host_pythons") not in (None, "", []):
            view["host_pythons"] = inputs["host_pythons"]
    view["parts"] = parts
    return view


def candidates(params, p, problems):
    """Complete stacks (dicts of the eight pins) in order of preference."""
    params = host_view(params)
    cur = compat.normalized_pins(p)
    gpus, driver, allow = p["gpus"], p["driver_version"], p["allow_unlisted"]
    runfiles = Runfiles(params, p)
    flash_attns = _flash_attns(cur)
    for model in _models(p, problems):
        family = compat.model_family(model)
        for vllm in _vllms(cur, allow):
            if family and vllm and Version(Version(vllm).public()) < Version(family["min_vllm"]):
                continue
            # what depends on vLLM (and torch) alone is worked out once, outside the CUDA loops
            transformers_options = _transformers(cur, vllm, model, allow)
            if not transformers_options:
                continue
            for torch in _torches(cur, vllm, allow):
                pythons = _pythons(cur, params, torch, vllm)
                if not pythons:
                    continue
                for tag in _torch_cudas(cur, torch, gpus, driver):
                    for cuda in _cudas(cur, tag, gpus, driver, runfiles):
                        for python in pythons:
                            for transformers in transformers_options:
                                for flash_attn in flash_attns:
                                    yield {
                                        "cuda_version": cuda, "torch_version": torch, "torch_cuda": tag,
                                        "python_version": python, "flash_attn_version": flash_attn,
                                        "vllm_version": vllm, "transformers_version": transformers, "model": model,
                                    }


def _adjust(params, p, stack):
    """Options of one call for a candidate stack: the pins replaced, what belongs to the old pins made unknown."""
    cur = compat.normalized_pins(p)
    trial = dict(params)
    for pin in PINS:
        if pin in params or pin in ("cuda_version",):
            trial[pin] = stack[pin]
    trial["extra_errors"] = None
    trial["extra_warnings"] = None
    raw_pins = params.get("raw_pins")
    if isinstance(raw_pins, dict):
        by_variable = dict((compat.VARIABLES[pin], stack[pin]) for pin in PINS)
        trial["raw_pins"] = dict((name, by_variable.get(name, value)) for name, value in raw_pins.items())
    if stack["cuda_version"] != cur["cuda_version"] or stack["cuda_version"] != (p["raw"]["cuda_version"] or ""):
        # the toolkit found installed is the pinned release's
        trial["toolkit_installed"] = False
    Runfiles(params, p).adjust(trial, stack["cuda_version"])
    if stack["python_version"] != (p["raw"]["python_version"] or "") and isinstance(params.get("interpreter"), dict):
        # the interpreter probed is the pinned Python's; another one is found when the host has it (host_pythons)
        host = _host_pythons(params, None) or []
        found = stack["python_version"] in host
        trial["interpreter"] = {"found": found, "version": stack["python_version"] if found else None,
                                "venv": found, "ensurepip": found,
                                "error": None if found else "python%s: not among host_pythons" % stack["python_version"]}
    return trial


def candidate_params(params, p, stack):
    """The gate's options for a candidate stack on the same host (role gates' inputs adjusted alike)."""
    trial = _adjust(params, p, stack)
    gates = []
    for inputs in _gate_core.role_gate_inputs(params):
        role_p = compat.validate(inputs)
        merged = dict(inputs)
        if not merged.get("host_pythons") and params.get("host_pythons"):
            merged["host_pythons"] = params.get("host_pythons")
        gates.append({"inputs": _adjust(merged, role_p, stack)})
    trial["role_gates"] = gates
    return trial


def passes(params):
    """True when the gate finds no error for these options but those of STEP_RULES (a runfile to download, its
    checksum: the suggested block names them)."""
    try:
        dummy, problems = _gate_core.evaluate(params)
    except StackInputError:
        return False
    return passes_but_for_steps(problems)


def passes_but_for_steps(problems):
    """True when no problem is an error but those of STEP_RULES."""
    return not any(problem["severity"] == "error" and problem["rule"] not in STEP_RULES for problem in problems)


def is_pinned(p, stack):
    """True when the stack is the pins as the inventory writes them (nothing to paste)."""
    return all(stack[pin] == _text(p["raw"][pin]) for pin in PINS)


def suggest(params, p, problems):
    """The nearest complete stack that passes the gate on this host, or None when none passes, or when the pins
    pass but for the steps of STEP_RULES (their errors name the file)."""
    if not any(problem["severity"] == "error" for problem in problems):
        return None
    if any(problem["rule"] in UNFIXABLE and problem["severity"] == "error" for problem in problems):
        return None
    if passes_but_for_steps(problems):
        # The pins pass, in whatever spelling (0.19.1.0 is 0.19.1): only a runfile is missing, which its error names.
        return None
    for count, stack in enumerate(candidates(params, p, problems)):
        if count >= MAX_EVALUATIONS:
            return None
        if passes(candidate_params(params, p, stack)):
            return None if is_pinned(p, stack) else stack
    return None


def group_vars(suggested, current, params=None):
    """The suggested stack as a ready-to-paste group_vars block (versions quoted), changes marked, followed by the
    steps its CUDA runfile needs (what to download and set) as comments."""
    if not suggested:
        return ""
    lines = ["# Suggested stack: passes every check of the gate for this host."]
    for pin in PINS:
        value = suggested[pin]
        was = current.get(pin, "")
        line = '%s: "%s"' % (VARIABLE_OF[pin], value)
        if value != was:
            line += "  # was %s" % ('"%s"' % was if was else "empty")
        lines.append(line)
    if params:
        view = host_view(params)
        lines += Runfiles(view, compat.validate(view)).steps(suggested["cuda_version"])
    return "\n".join(lines) + "\n"
