# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: the matrix's rules of compat (module_utils/compat.py) over the CUDA toolkit, the driver,
the GPUs' archs, torch, vLLM and flash-attn. Not part of the public API.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat_matrix as M
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._compat_pins import (
    VARIABLES,
    _cu,
    _minor_key,
    _release_driver,
    _src,
    _v,
    cuda_tag_or_none,
    driver_runtime_problems,
    known_runfile_releases,
    listed,
    nearest_listed,
    vllm_entry,
)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.cuda_arch import covered_by, parse_cap
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.versions import (
    Version,
    in_range,
    parse_specifier,
    satisfies,
)


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
