# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: the build environment every CUDA build of the collection shares (flash-attn's, vLLM's).

One home for what both builds decide the same way: the numbers of the role's job variables, the jobs rule
(MAX_JOBS and NVCC_THREADS from the builder's vCPUs and RAM), the CUDA toolkit (CUDA_HOME) and the arch list in
force (the variable, preflight's list, else the host's GPUs). flash_attn.py and vllm.py re-export what their
callers name; not part of the public API.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

from ansible_collections.gpufleet.llm_stack.plugins.module_utils._readers import as_dict as _dict, text as _text
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.cuda_arch import ArchError, arch_list, caps_of
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.host_gpus import host_gpus as read_host_gpus

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DEFAULT_CUDA_HOME = "/usr/local/cuda"
# Used when the memory facts are missing (no fact gathering): a safe floor.
DEFAULT_AVAILABLE_MB = 4096
# nvcc threads per job are capped here: the builds split their work per arch target.
MAX_NVCC_THREADS = 4

_WHOLE_RE = re.compile(r"[0-9]{1,9}", re.ASCII)
_NUMBER_RE = re.compile(r"[0-9]+(\.[0-9]+)?", re.ASCII)


# --- the role's job variables ----------------------------------------------

def whole(value, variable, errors, fix):
    """A whole number >= 0 from an int or a string of digits; records an error otherwise."""
    text = "" if isinstance(value, bool) else _text(value)
    if (isinstance(value, int) and not isinstance(value, bool) and value >= 0) or _WHOLE_RE.fullmatch(text):
        return int(text)
    errors.append("%s=%s is not a whole number. Fix: %s" % (variable, value, fix))
    return 0


def positive(value, variable, errors, fix):
    """A number > 0 from a number or a string; records an error otherwise."""
    text = "" if isinstance(value, bool) else _text(value)
    if (isinstance(value, (int, float)) and not isinstance(value, bool)) or _NUMBER_RE.fullmatch(text):
        number = float(text)
        if number > 0 and math.isfinite(number):
            return number
    errors.append("%s=%s is not a positive number. Fix: %s" % (variable, value, fix))
    return None


# --- the jobs rule ---------------------------------------------------------

def available_gb(facts):
    """Memory available to the build in GB, rounded down to 0.1: memory_mb.nocache.free, else memfree_mb."""
    facts = _dict(facts)
    free_mb = _dict(_dict(facts.get("memory_mb")).get("nocache")).get("free")
    if free_mb is None:
        free_mb = facts.get("memfree_mb")
    try:
        free_mb = float(free_mb)
    except (TypeError, ValueError):
        free_mb = DEFAULT_AVAILABLE_MB
    return math.floor(free_mb / 1024.0 * 10) / 10


def vcpus(facts):
    try:
        return max(int(_dict(facts).get("processor_vcpus") or 1), 1)
    except (TypeError, ValueError):
        return 1


def jobs(cpus, free_gb, gb_per_thread, n_targets, max_jobs=0, nvcc_threads=0):
    """(MAX_JOBS, NVCC_THREADS) for a builder.

    The builder affords min(vCPUs, free GB / GB per nvcc thread) threads (at
    least 1). NVCC_THREADS is one per arch target, at most 4, within that
    budget; MAX_JOBS is the budget divided by NVCC_THREADS. A value > 0
    given for either is taken as it is.
    """
    budget = max(min(cpus, int(free_gb / gb_per_thread)), 1)
    threads = nvcc_threads if nvcc_threads > 0 else max(min(n_targets, MAX_NVCC_THREADS, budget), 1)
    count = max_jobs if max_jobs > 0 else max(budget // threads, 1)
    return count, threads


def plan_jobs(build_plan, facts, default_gb_per_thread, n_targets):
    """The jobs rule on a build plan once the builder's CPU and memory facts are known.

    Returns {environment (the plan's, with MAX_JOBS and NVCC_THREADS), max_jobs, nvcc_threads, vcpus,
    available_gb, gb_per_nvcc_thread, line (the log header's line of it)}. The plan's gb_per_nvcc_thread, max_jobs
    and nvcc_threads are the role's variables as read_inputs checked them (0 or empty: derived).
    """
    cpus, free_gb = vcpus(facts), available_gb(facts)
    per_thread = float(build_plan.get("gb_per_nvcc_thread") or default_gb_per_thread)
    max_jobs, threads = jobs(cpus, free_gb, per_thread, n_targets,
                             int(build_plan.get("max_jobs") or 0), int(build_plan.get("nvcc_threads") or 0))
    env = dict(build_plan["environment"])
    env.update(MAX_JOBS=str(max_jobs), NVCC_THREADS=str(threads))
    line = ("MAX_JOBS=%d NVCC_THREADS=%d (%d vCPUs, %s GB available, %s GB per nvcc thread)"
            % (max_jobs, threads, cpus, free_gb, per_thread))
    return {"environment": env, "max_jobs": max_jobs, "nvcc_threads": threads, "vcpus": cpus,
            "available_gb": free_gb, "gb_per_nvcc_thread": per_thread, "line": line}


def jobs_request(build_plan, default_gb_per_thread, n_targets, header_before, header_after=()):
    """What a build needs to work out its jobs on the builder: plain data a caller's plan hands to wheel_build.

    build_plan: a plan with its environment (the role's max_jobs, nvcc_threads and gb_per_nvcc_thread as
    read_inputs checked them). The log header is header_before, the jobs line, then header_after.
    """
    return {"environment": dict(build_plan["environment"]),
            "gb_per_nvcc_thread": build_plan.get("gb_per_nvcc_thread") or 0,
            "max_jobs": int(build_plan.get("max_jobs") or 0),
            "nvcc_threads": int(build_plan.get("nvcc_threads") or 0),
            "default_gb_per_thread": float(default_gb_per_thread),
            "n_targets": int(n_targets),
            "header_before": list(header_before), "header_after": list(header_after)}


def with_builder(request, facts):
    """A jobs_request once the builder's CPU and memory facts are known.

    Returns {environment (with MAX_JOBS and NVCC_THREADS), log_header, max_jobs, nvcc_threads, vcpus,
    available_gb}.
    """
    job = plan_jobs(request, facts, request["default_gb_per_thread"], request["n_targets"])
    return {"environment": job["environment"],
            "log_header": list(request["header_before"]) + [job["line"]] + list(request["header_after"]),
            "max_jobs": job["max_jobs"], "nvcc_threads": job["nvcc_threads"], "vcpus": job["vcpus"],
            "available_gb": job["available_gb"]}


# --- the toolkit -----------------------------------------------------------

def cuda_home(override, facts=None, nvcc=None, cuda_version=None, variable="flash_attn_build_cuda_home"):
    """(CUDA_HOME, where it came from) for the build.

    override (the role's variable, named by ``variable`` in the source) when set; else preflight's
    llm_stack_host.cuda.home; else, from the nvcc_facts result given (never a fact left by another task), the
    toolkit of the pinned CUDA release (exact version, then major.minor), else the one its nvcc belongs to; else
    /usr/local/cuda.
    """
    if _text(override):
        return _text(override), variable
    host = _dict(facts).get("llm_stack_host")
    if isinstance(host, dict) and _text(_dict(host.get("cuda")).get("home")):
        return _text(_dict(host.get("cuda")).get("home")), "llm_stack_host.cuda.home"
    nvcc = _dict(nvcc)
    toolkits = [t for t in nvcc.get("cuda_toolkits") or [] if isinstance(t, dict) and t.get("path")]
    wanted = _text(cuda_version)
    release = ".".join(wanted.split(".")[:2])
    for match in (lambda t: _text(t.get("version")) == wanted,
                  lambda t: _text(t.get("release") or t.get("version")) == release):
        found = [t["path"] for t in toolkits if wanted and match(t)]
        if found:
            return found[-1], "nvcc_facts (CUDA %s)" % wanted
    nvcc_path = _text(nvcc.get("nvcc_path"))
    if nvcc_path.endswith("/bin/nvcc"):
        return nvcc_path[:-len("/bin/nvcc")] or "/", "nvcc_facts (nvcc_path)"
    return DEFAULT_CUDA_HOME, "default"


# --- the arch list of the host ---------------------------------------------

def host_gpus(facts):
    """(count, compute caps) of the host: preflight's contract when set, else gpu_facts' facts (module_utils/host_gpus)."""
    gpus = read_host_gpus(facts)
    return gpus["count"], gpus["compute_caps"]


def arch_in_force(variable, facts=None, normalize=False):
    """(arch list text, source): the variable, else preflight's list, else the host's GPUs; ('', '') without any.

    source: 'variable', 'preflight' or 'gpus' (preflight's list is the GPUs' own unless the inventory overrode it).
    normalize: the list as TORCH_CUDA_ARCH_LIST of its compute capabilities alone (cuda_arch.arch_list: sorted,
    without 'a'/'f' suffixes or +PTX; vLLM's build), the text as it is when it is not an arch list; else the text
    as given (flash-attn's plan parses and checks it itself).
    """
    text, source = _text(variable), "variable"
    if not text:
        host = _dict(facts).get("llm_stack_host")
        if isinstance(host, dict) and _text(host.get("arch_list")):
            text = _text(host.get("arch_list"))
            source = "gpus" if host.get("arch_list_source") == "gpus" else "preflight"
        else:
            dummy, caps = host_gpus(facts)
            text, source = (";".join(caps), "gpus") if caps else ("", "")
    if not text or not normalize:
        return text, source
    try:
        return arch_list(caps_of(text)), source
    except ArchError:
        return text, source
