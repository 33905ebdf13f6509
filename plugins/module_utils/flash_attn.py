# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every decision of the flash_attn_build role, as pure functions.

The role reads the host (torch_info, which also reads the GPUs and the
CUDA toolkits where nobody says), hands what it read to ``plan`` (through
the action flash_attn_build_state) and acts on the result: the arch list in force and FA2's build targets, the build key
and its label, the group of hosts that share a wheel, the requirement, the
build and pip environments, the check of the installed package. Nothing
here touches the host; bad input gives messages in ``errors``, never an
exception (except a caller passing the wrong types, a bug of the role).

The arch list is parsed by ``cuda_arch`` alone; flash-attn's sm80 floor is
``compat_matrix.FLASH_ATTN_MIN_ARCH``; URL credentials are found and masked
by ``secrets``. The arch list in force, CUDA_HOME and the jobs rule are
``_build_env``'s (shared with vLLM's build); the role's variables are read in
``_flash_attn_inputs`` and the check of the installed package is
``_flash_attn_check``: their names are re-exported here.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import re

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _build_env
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._readers import (
    as_bool as _bool,
    as_dict as _dict,
    text as _text,
)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.compat_matrix import FLASH_ATTN_MIN_ARCH
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.cuda_arch import (
    ArchError,
    arch_list,
    caps_of,
    parse_cap,
)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.host_gpus import gpus_known
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import mask_credentials
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.wheel_build import entry_name, installed_wheel
# The build environment shared with vLLM's build, the role's variables and the check, re-exported: callers name
# them flash_attn.X.
# pylint: disable=unused-import
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._build_env import (  # noqa: F401
    DEFAULT_AVAILABLE_MB,
    DEFAULT_CUDA_HOME,
    DEFAULT_PATH,
    MAX_NVCC_THREADS,
    arch_in_force,
    available_gb,
    cuda_home,
    host_gpus,
    jobs,
    plan_jobs,
    vcpus,
)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._flash_attn_check import (  # noqa: F401
    CHECK_MARK,
    check_command,
    check_result,
    check_steps,
)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._flash_attn_inputs import (  # noqa: F401
    ARCH_SCOPES,
    BELOW_SM80,
    INPUTS,
    SOURCES,
    VERIFY,
    FlashAttnError,
    checked_inputs,
    no_log,
    read_inputs,
    read_torch,
)
# pylint: enable=unused-import

# FA2's setup.py (flash-attn 2.8.3, cuda_archs() and the gencode list)
# emits one cubin per target it knows: sm_80 always, sm_90 with CUDA >=
# 11.8, sm_100 and sm_120 with CUDA >= 12.8; a target outside that list is
# silently dropped (no code, no error at build time).
# https://github.com/Dao-AILab/flash-attention/blob/v2.8.3/setup.py
FA2_TARGETS = (80, 90, 100, 120)
# A cubin for X.0 runs on every X.y GPU, so one target per major suffices.
FA2_MIN_CAP = parse_cap(FLASH_ATTN_MIN_ARCH)


# Where the arch list in force came from, and the variable a fix names.
ARCH_SOURCES = {
    "variable": "flash_attn_build_arch_list (default llm_stack_torch_cuda_arch_list)",
    "preflight": "llm_stack_host.arch_list (set by preflight)",
    "gpus": "the host's GPUs",
}

# The distribution wheel_build builds and names the cache entries after.
DISTRIBUTION = "flash-attn"

_LABEL_UNSAFE_RE = re.compile(r"[^A-Za-z0-9._-]")


# --- the arch list and FA2's targets ---------------------------------------
# The arch list in force is _build_env.arch_in_force (the text as given here); host_gpus is (count, caps).

def fa2_target(cap):
    """FA2's build target for a compute capability: one per major ('8.6' -> 80, '12.1' -> 120)."""
    return parse_cap(cap)[0] * 10


def is_below_floor(cap):
    return parse_cap(cap) < FA2_MIN_CAP


def targets_of(caps):
    """Sorted unique FA2 targets of the caps at or above sm80 ('8.0', '8.6', '9.0' -> [80, 90])."""
    return sorted(set(fa2_target(cap) for cap in caps if not is_below_floor(cap)))


def target_caps(targets):
    """'M.0' compute capabilities of FA2 targets ([80, 100] -> ['8.0', '10.0'])."""
    return ["%d.%d" % (target // 10, target % 10) for target in targets]


def split_arch_list(text, source, below_sm80, hostname):
    """What the arch list in force builds.

    Returns {arch_list, arch_list_source, caps, below, kept, targets, errors,
    gated, left_out}: caps below sm80 are left out of the targets; a target
    FA2 does not build is an error (errors); left_out says what was left out
    (below_sm80=skip). An empty or malformed list, and caps below sm80 with
    below_sm80=fail, are in gated: the gate (stack_compat, part flash_attn)
    reports those itself (compat.flash_attn_below_sm80_problems).
    """
    result = {"arch_list": text, "arch_list_source": source, "caps": [], "below": [], "kept": [],
              "targets": [], "errors": [], "gated": [], "left_out": None}
    if not text:
        result["gated"].append(
            "flash_attn_build_arch_list is empty on %s and the host has no GPUs to derive it from. Fix: set"
            " llm_stack_torch_cuda_arch_list for build hosts without GPUs (for example \"8.0;9.0\")." % hostname)
        return result
    try:
        caps = caps_of(text)
    except ArchError as exc:
        result["gated"].append("%s=%s is not an arch list: %s." % (ARCH_SOURCES[source], text, exc))
        return result
    below = [cap for cap in caps if is_below_floor(cap)]
    kept = [cap for cap in caps if cap not in below]
    unknown = sorted(set(fa2_target(cap) for cap in kept) - set(FA2_TARGETS))
    if unknown:
        result["errors"].append(
            "%s=%s: flash-attn's build has no target %s (FA2 builds %s; other targets are dropped without"
            " an error, leaving no kernels). Fix: take %s out of the arch list, or leave such hosts out of the"
            " flash_attn_build play." % (
                ARCH_SOURCES[source], text, ", ".join("sm%d" % t for t in unknown),
                ", ".join("sm%d" % t for t in FA2_TARGETS),
                ", ".join(cap for cap in kept if fa2_target(cap) in unknown)))
    # Only targets FA2 has: a cap without one is an error above, never a build target.
    result.update(caps=caps, below=below, kept=kept,
                  targets=targets_of([cap for cap in kept if fa2_target(cap) in FA2_TARGETS]))
    if below and _text(below_sm80) != "skip":
        result["gated"].append(
            "FA2 needs sm80 or newer; %s builds for %s (flash_attn_build_below_sm80=%s). Fix: set"
            " flash_attn_build_below_sm80=skip to leave those GPUs out, or take them out of the arch list."
            % (hostname, ", ".join(below), _text(below_sm80)))
    elif below:
        if kept:
            result["left_out"] = ("FA2 needs sm80 or newer: %s left out of the build on %s"
                                  " (flash_attn_build_below_sm80=skip)." % (", ".join(below), hostname))
        else:
            result["left_out"] = ("No flash-attn on %s: FA2 needs sm80 or newer and this host has only %s"
                                  " (flash_attn_build_below_sm80=skip); nothing is built or installed here."
                                  % (hostname, ", ".join(below)))
    return result


def group_targets(group_id, own_targets, members):
    """Union of the own targets of the members that share group_id (arch_scope=group), with own_targets.

    members: other hosts' plans (dicts with group_id and own_targets), None for hosts without one; a build host's
    plan (for_fleet) does not count.
    """
    targets = set(own_targets)
    for member in members or []:
        # A build host (flash_attn_build_for_fleet) installs one of the keys of the others: its archs are no one's.
        if isinstance(member, dict) and group_id is not None and member.get("group_id") == group_id \
                and not member.get("for_fleet"):
            targets.update(int(t) for t in member.get("own_targets") or [])
    return sorted(targets)


# --- source, key, label ----------------------------------------------------

def source_id(source, git_url, git_ref):
    """'sdist', or 'git+URL@REF' with any credentials of the URL masked (they do not change the wheel)."""
    if source == "git":
        return "git+%s@%s" % (mask_credentials(_text(git_url)), _text(git_ref))
    return "sdist"


def requirement(version, source, git_url, git_ref):
    """The pip requirement built: 'flash-attn==2.8.3' or 'flash-attn @ git+URL@REF'."""
    if source == "git":
        return "flash-attn @ git+%s@%s" % (_text(git_url), _text(git_ref))
    return "flash-attn==%s" % _text(version)


def pip_args(source):
    return ["--no-build-isolation"] + (["--no-binary", "flash-attn"] if source == "sdist" else [])


def group_id(version, src_id, torch, python_abi, test_host):
    """Hash of every part of the key but the archs: hosts with the same one can share a wheel."""
    parts = [_text(version), src_id, torch.get("version"), torch.get("cuda_build"), python_abi,
             _bool(torch.get("cxx11_abi")), bool(test_host)]
    return hashlib.sha256(json.dumps(parts).encode("utf-8")).hexdigest()


def build_key(version, src_id, torch, python_abi, targets, test_host):
    """Everything that changes the wheel (the cache key of wheel_build)."""
    return {
        "flash_attn": _text(version),
        "source": src_id,
        "torch": torch.get("version"),
        "torch_cuda": torch.get("cuda_build"),
        "python_abi": python_abi,
        "cxx11_abi": _bool(torch.get("cxx11_abi")),
        "archs": ";".join(str(t) for t in targets),
        # false only on the CPU-only test path (FLASH_ATTENTION_SKIP_CUDA_BUILD).
        "cuda_kernels": not test_host,
    }


def build_label(version, source, git_ref, torch, python_abi, targets, test_host):
    """Readable part of the cache entry's name."""
    label = "flash-attn-%s" % _text(version)
    if source == "git":
        label += "-git-" + _LABEL_UNSAFE_RE.sub("_", _text(git_ref))
    label += "-torch%s-%s-cxx11abi%s-sm%s" % (
        _text(torch.get("version")).replace("+", "_"), python_abi, str(_bool(torch.get("cxx11_abi"))).upper(),
        ".".join(str(t) for t in targets))
    if test_host:
        label += "-python-only"
    return label


# --- environments ----------------------------------------------------------

def pip_environment(wheelhouse, wheelhouse_dest, index_url):
    """pip's environment: the pushed wheelhouse alone, else the index, else pip's own configuration."""
    env = {"PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    if _text(wheelhouse):
        env.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=_text(wheelhouse_dest))
    elif _text(index_url):
        env["PIP_INDEX_URL"] = _text(index_url)
    return env


def build_environment(pip_env, targets, venv, home, test_host, path=None):
    """The build's environment (without MAX_JOBS and NVCC_THREADS, see with_jobs).

    The CPU-only test path (no GPU, no nvcc) builds the Python package alone
    with FLASH_ATTENTION_SKIP_CUDA_BUILD=TRUE.
    """
    env = dict(pip_env)
    env.update({
        "FLASH_ATTENTION_FORCE_BUILD": "TRUE",
        "FLASH_ATTN_CUDA_ARCHS": ";".join(str(t) for t in targets),
        "TORCH_CUDA_ARCH_LIST": arch_list(target_caps(targets)),
        "PATH": ":".join([venv + "/bin"] + ([] if test_host else [home + "/bin"]) + [_text(path) or DEFAULT_PATH]),
    })
    if test_host:
        env["FLASH_ATTENTION_SKIP_CUDA_BUILD"] = "TRUE"
    else:
        env["CUDA_HOME"] = home
    return env


# --- the plan --------------------------------------------------------------

def plan(inputs, facts=None, torch=None, nvcc=None, group=None):
    """The flash-attn build plan of one host.

    inputs: the role's variables (INPUTS keys), or an earlier plan of this host (see checked_inputs); facts:
    ansible_facts (preflight's llm_stack_host, else the gpu_facts facts; env.PATH); torch: the torch_info result
    for the venv (key, label and group need it); nvcc: the nvcc_facts result's ansible_facts (CUDA_HOME when
    neither the variable nor preflight says); group: the other hosts' plans (arch_scope=group). Never raises for
    bad values: see ``errors``.
    """
    v, role_errors, gated = checked_inputs(inputs)
    input_problems = {"errors": list(role_errors), "gated": list(gated)}
    host = v["hostname"]
    test_host = v["cpu_only_test_host"]
    text, source = arch_in_force(v["arch_list"], facts)
    archs = split_arch_list(text, source, v["below_sm80"], host)
    role_errors.extend(archs["errors"])
    errors = role_errors + gated + archs["gated"]
    gpu_count, gpu_caps = host_gpus(facts)
    try:
        gpu_targets = targets_of(caps_of(";".join(gpu_caps))) if gpu_caps else []
    except ArchError:
        gpu_targets = archs["targets"]
    home, home_source = (None, None) if test_host else cuda_home(v["cuda_home"], facts, nvcc, v["cuda_version"])
    pip_env = pip_environment(v["wheelhouse"], v["wheelhouse_dest"], v["index_url"])
    src_id = source_id(v["source"], v["git_url"], v["git_ref"])
    result = {
        "ok": not errors,
        "errors": errors,
        # The inputs as checked and their problems, for the plans made later with what the role reads on the host.
        "inputs": v,
        "input_problems": input_problems,
        # What the role's gate passes to stack_compat: the options of part flash_attn it derives, and the
        # errors only this module finds (extra_errors); the gate finds the others itself.
        # The arch list in force decides: the GPUs go to the gate only when the list is theirs.
        "gate": {"flash_attn_arch_list": "" if source == "gpus" else text, "gpus": gpu_caps if source == "gpus" else [],
                 "extra_errors": role_errors},
        "hostname": host,
        "version": v["version"],
        "venv": v["venv"],
        "arch_scope": v["arch_scope"],
        # A build host: it compiles the keys of the other hosts of the play first (fleet_plans, tasks/fleet.yml).
        "for_fleet": v["for_fleet"],
        "verify": v["verify"],
        # When tasks/build.yml runs the checks: after an install of this run, and without one.
        "verify_on_install": v["verify"] in ("always", "changed"),
        "verify_without_install": v["verify"] == "always",
        "cpu_only_test_host": test_host,
        "arch_list": archs["arch_list"],
        "arch_list_source": archs["arch_list_source"],
        "caps": archs["caps"],
        "below": archs["below"],
        "left_out": archs["left_out"],
        "own_targets": archs["targets"],
        "targets": archs["targets"],
        "build": not errors and bool(archs["targets"]),
        "gpu_count": gpu_count,
        "gpu_targets": gpu_targets,
        "requirement": requirement(v["version"], v["source"], v["git_url"], v["git_ref"]),
        "source_id": src_id,
        "pip_args": pip_args(v["source"]),
        "pip_environment": pip_env,
        "no_log": no_log(v),
        "push": [{"src": v["wheelhouse"], "dest": v["wheelhouse_dest"]}] if v["wheelhouse"] else [],
        "requirements": v["build_requirements"] + v["runtime_requirements"],
        "cuda_home": home,
        "cuda_home_source": home_source,
        # Neither the variable nor preflight names the toolkit: read the host's (nvcc_facts), then plan again.
        "read_toolkits": not test_host and nvcc is None and home_source == "default",
        "gb_per_nvcc_thread": v["gb_per_nvcc_thread"],
        "max_jobs": v["max_jobs"],
        "nvcc_threads": v["nvcc_threads"],
        "required_paths": [] if test_host else [{
            "path": home + "/bin/nvcc",
            "msg": "No nvcc at %s/bin/nvcc on the builder %s (CUDA_HOME from %s). Fix: run"
                   " gpufleet.llm_stack.cuda_toolkit first, or set flash_attn_build_cuda_home to the toolkit."
                   % (home, host, home_source)}],
        "check": check_command(v, gpu_count, gpu_targets, archs["targets"], home),
        "wheel_dir": v["wheel_dir"],
        # Filled in once the venv's torch is known (torch given).
        "torch": None, "torch_error": None, "venv_exists": None, "unmet": [], "install_argv": [],
        "installed_url": "", "group_id": None, "key": None, "label": None, "environment": None,
        "entry": None, "installed": False, "installed_wheel": "",
        # Whether the role has anything to do beyond its gate: build.yml runs only then.
        "work": not errors and bool(archs["targets"]),
    }
    if torch is None or (isinstance(torch, dict) and torch.get("skipped")):
        # No reading of the venv (a skipped task: nothing to build here).
        return result
    venv = read_torch(torch)
    result.update(venv_exists=venv["venv_exists"], torch=venv["torch"], unmet=venv["unmet"],
                  installed_url=venv["installed_url"],
                  install_argv=[v["venv"] + "/bin/python", "-m", "pip", "install", "--no-input"] + venv["unmet"])
    if venv["error"] is not None:
        result["torch_error"] = (
            "%s on %s has no working torch (%s). flash-attn is built against the venv's torch. Fix: run"
            " gpufleet.llm_stack.torch first (playbooks/torch.yml)." % (v["venv"], host, venv["error"]))
        return result
    gid = group_id(v["version"], src_id, venv["torch"], venv["python_abi"], test_host)
    targets = archs["targets"]
    # A build host keeps its own archs: with other hosts in the play it installs one of their keys (fleet_plans).
    if v["arch_scope"] == "group" and not v["for_fleet"]:
        targets = group_targets(gid, targets, group)
    result.update(
        group_id=gid,
        targets=targets,
        key=build_key(v["version"], src_id, venv["torch"], venv["python_abi"], targets, test_host),
        label=build_label(v["version"], v["source"], v["git_ref"], venv["torch"], venv["python_abi"], targets,
                          test_host),
        environment=build_environment(pip_env, targets, v["venv"], home, test_host,
                                      _dict(_dict(facts).get("env")).get("PATH")),
    )
    result["check"] = check_command(v, gpu_count, gpu_targets, targets, home)
    # The key's wheel installed already (wheel_build's rule, the same entry name) and every requirement met: nothing
    # to build, install or check, unless the check runs always, the key still waits for the other hosts of the group,
    # or this is a build host (the other hosts' keys are its work).
    entry = entry_name(result["label"], DISTRIBUTION, result["key"])
    wheel = installed_wheel(venv["installed_url"], v["wheel_dir"], entry)
    result.update(entry=entry, installed=bool(wheel), installed_wheel=wheel)
    result["work"] = result["build"] and (
        not wheel or bool(venv["unmet"]) or v["verify"] == "always" or v["for_fleet"]
        or (v["arch_scope"] == "group" and group is None))
    return result


# --- a build host: the keys of the other hosts of the play ---------------------

# The pins of preflight's contract fact (llm_stack_host.stack) that a host of a later batch shares with the build
# host to share its group (with the test path, cpu_only_test_host).
FLEET_STACK = ("flash_attn_version", "torch_version", "torch_cuda", "python_version")


def _member_targets(builder_plan, member):
    """The FA2 targets of the key a host of the batch installs (its plan's targets), or None where it is no member."""
    if not isinstance(member, dict) or member.get("for_fleet") or member.get("hostname") == builder_plan["hostname"]:
        return None
    if member.get("group_id") != builder_plan["group_id"] or member.get("key") is None:
        return None
    if not member.get("ok") or not member.get("build") or not member.get("work"):
        # Stopped, nothing to build (only GPUs older than sm80), or its key's wheel installed already.
        return None
    return sorted(int(t) for t in member.get("targets") or [])


def _preflight_targets(builder_plan, own_stack, name, host):
    """The FA2 targets of a host of a later batch from preflight's contract fact, or None where it is no member.

    A member: preflight passed it, and its stack pins (FLEET_STACK) and test path are the build host's; its targets
    come from its arch list by the build host's rule (split_arch_list with its below_sm80).
    """
    host = _dict(host)
    if host.get("ok") is not True or not own_stack:
        return None
    stack = _dict(host.get("stack"))
    if any(_text(stack.get(pin)) != _text(own_stack.get(pin)) for pin in FLEET_STACK):
        return None
    if _bool(host.get("cpu_only_test_host")) != bool(builder_plan["cpu_only_test_host"]):
        return None
    archs = split_arch_list(_text(host.get("arch_list")), "preflight", builder_plan["inputs"]["below_sm80"], name)
    if archs["errors"] or archs["gated"]:
        return None
    return archs["targets"] or None


def fleet_targets(builder_plan, members=None, preflight_hosts=None, builders=(), facts=None):
    """{host: targets} of the hosts whose keys a build host (flash_attn_build_for_fleet) compiles.

    builder_plan: the build host's plan made with its venv's torch; members: the plans of the hosts of the batch
    (flash_attn_build_plan; the build host's own and None are skipped); preflight_hosts: {host: llm_stack_host} of
    the hosts of the play outside the batch (later batches, which have no plan yet); builders: the names of the
    other build hosts of the play, which are no members; facts: the build host's ansible_facts (its own
    llm_stack_host.stack, which a later host's pins must equal). Empty unless builder_plan is a build host's with a
    key. A host of the batch counts by its plan alone (same group_id, a key to install), never by its fact.
    """
    if not isinstance(builder_plan, dict) or "inputs" not in builder_plan:
        raise FlashAttnError("fleet_targets needs the build host's plan (made with plan()), got %s"
                             % type(builder_plan).__name__)
    if not builder_plan.get("for_fleet") or builder_plan.get("group_id") is None or not builder_plan.get("ok"):
        return {}
    if members is not None and not isinstance(members, (list, tuple)):
        raise FlashAttnError("members must be a list of plans, got %s" % type(members).__name__)
    if preflight_hosts is not None and not isinstance(preflight_hosts, dict):
        raise FlashAttnError("preflight_hosts must be a dict of host: llm_stack_host, got %s"
                             % type(preflight_hosts).__name__)
    skip = set(_text(name) for name in builders or []) | set([builder_plan["hostname"]])
    found, seen = {}, set()
    for member in members or []:
        if isinstance(member, dict):
            seen.add(_text(member.get("hostname")))
        targets = _member_targets(builder_plan, member)
        if targets and _text(member.get("hostname")) not in skip:
            found[_text(member.get("hostname"))] = targets
    own_stack = _dict(_dict(_dict(facts).get("llm_stack_host")).get("stack"))
    for name in sorted(preflight_hosts or {}):
        if name in skip or name in seen:
            continue
        targets = _preflight_targets(builder_plan, own_stack, name, (preflight_hosts or {})[name])
        if targets:
            found[name] = targets
    return found


def fleet_plans(builder_plan, members=None, preflight_hosts=None, builders=(), facts=None, torch=None, nvcc=None):
    """The plans a build host compiles: one per distinct key of the hosts of fleet_targets, sorted by targets.

    Each is a whole plan as plan() makes it (key, label, environment, entry, check) for those targets, made with the
    build host's inputs, facts, torch reading (torch: the torch_info result, the action's probe) and nvcc facts. The
    build host compiles them before any host of the play installs, so that the others compile nothing.
    """
    targets = fleet_targets(builder_plan, members, preflight_hosts, builders, facts)
    plans = []
    for key_targets in sorted(set(tuple(t) for t in targets.values())):
        inputs = dict(builder_plan["inputs"], arch_list=arch_list(target_caps(key_targets)), arch_scope="host")
        plans.append(plan(dict(builder_plan, inputs=inputs), facts=facts, torch=torch, nvcc=nvcc))
    return plans


def fleet_own_plan(builder_plan, fleet):
    """The plan a build host installs: its own where its key is among the fleet's keys (or the fleet is empty),
    else the first fleet plan's (so it compiles nothing beyond the fleet's keys)."""
    if not isinstance(builder_plan, dict) or not isinstance(fleet, (list, tuple)):
        raise FlashAttnError("fleet_own_plan needs the build host's plan and the list of fleet plans")
    if not fleet or builder_plan.get("key") in [item.get("key") for item in fleet]:
        return builder_plan
    return fleet[0]


def fleet_builds(fleet_built):
    """What the build host did for each fleet key, for its result: [{build_key, compiled, wheel}], sorted.

    fleet_built: [{entry, outcome}] as tasks/fleet_build.yml collects them (outcome: wheel_build_result).
    """
    builds = []
    for item in fleet_built or []:
        if not isinstance(item, dict):
            raise FlashAttnError("each fleet build needs its entry and outcome, got %s" % type(item).__name__)
        outcome = _dict(item.get("outcome"))
        builds.append({"build_key": _text(item.get("entry")), "compiled": _bool(outcome.get("compiled")),
                       "wheel": _text(outcome.get("wheel"))})
    return sorted(builds, key=lambda build: build["build_key"])


# --- the role's reading and gate, from its first plan -----------------------

# The role's variables that its gate (stack_compat, part flash_attn) takes as they are: option, input.
GATE_INPUTS = (
    ("cuda_version", "cuda_version"),
    ("flash_attn_version", "version"),
    ("flash_attn_source", "source"),
    ("flash_attn_below_sm80", "below_sm80"),
    ("flash_attn_wheelhouse", "wheelhouse"),
    ("flash_attn_build_requirements", "build_requirements"),
    ("flash_attn_runtime_requirements", "runtime_requirements"),
)


def reading_options(first, facts=None):
    """torch_info's options for the role's one reading of the host, from its first plan (made without it).

    The venv's torch (from the record of its last import, never importing it), the build tools and flash-attn;
    the GPUs where neither preflight's report nor the GPU facts are in the play, and the CUDA toolkits where the
    plan says to read them. Nothing is written and no fact is set.
    """
    if not isinstance(first, dict) or "input_problems" not in first:
        raise FlashAttnError("reading_options needs the first plan (made with plan()), got %s" % type(first).__name__)
    return {
        "venv": first["venv"],
        "import_torch": False,
        "use_record": True,
        "requirements": list(first["requirements"]),
        "distributions": [DISTRIBUTION],
        "read_gpus": not gpus_known(_dict(facts)),
        "read_toolkits": bool(first["read_toolkits"]),
        "set_facts": False,
    }


def gate_options(inputs, gate_plan, torch_version, index_problems=None, fail_as=""):
    """stack_compat's options (part flash_attn) for the role's gate.

    inputs: the role's variables (what ``plan`` takes), given to the gate as they are, so that it finds the
    problems it checks itself (the flash-attn version, the source and below_sm80 choices, the wheelhouse, the
    requirement formats); gate_plan: a plan made with the host's GPUs, whose ``gate`` part gives the arch list or
    the GPUs in force and the errors only this role finds; torch_version: the stack's torch pin; index_problems:
    what wheel_index finds in the fleet's package index settings; fail_as: who stops on an error (empty: only
    report, as preflight does). The warnings show where the gate stops the host.
    """
    if not isinstance(inputs, dict):
        raise FlashAttnError("the inputs must be a dict of the role's variables, got %s" % type(inputs).__name__)
    gate = _dict(_dict(gate_plan).get("gate"))
    if not gate:
        raise FlashAttnError("gate_options needs a plan (made with plan()), got %s" % type(gate_plan).__name__)
    if index_problems is not None and not isinstance(index_problems, (list, tuple)):
        raise FlashAttnError("index_problems must be a list of messages, got %s" % type(index_problems).__name__)
    options = dict((option, inputs.get(key, INPUTS[key][1])) for option, key in GATE_INPUTS)
    options.update(
        parts=["flash_attn"],
        torch_version=torch_version,
        flash_attn_arch_list=gate["flash_attn_arch_list"],
        gpus=list(gate["gpus"]),
        extra_errors=list(gate["extra_errors"]) + list(index_problems or []),
        fail_as=_text(fail_as),
        show_warnings=bool(_text(fail_as)),
    )
    return options


def build_result(build_plan, outcome=None, fleet_built=None):
    """This host's flash-attn for the fleet report (the fact flash_attn_build_result).

    build_plan: the host's last plan; outcome: wheel_build's result for this host (wheel_build_result: source,
    compiled, wheel), read only where the plan sent the host through the build tasks. source: built (compiled here in this run),
    index or controller_cache (installed from there), present (the key's wheel was installed already) or none
    (no flash-attn: every GPU is older than sm80, or check mode before the venv exists). fleet_builds: on a build
    host, the keys it built for the other hosts of the play (fleet_built, see fleet_builds), empty elsewhere.
    """
    if not isinstance(build_plan, dict):
        raise FlashAttnError("build_result needs a plan (a dict), got %s" % type(build_plan).__name__)
    ran = bool(build_plan.get("work")) and build_plan.get("key") is not None and isinstance(outcome, dict)
    key = _text(build_plan.get("entry"))
    if ran:
        source, wheel, compiled = _text(outcome.get("source")) or "none", _text(outcome.get("wheel")), \
            _bool(outcome.get("compiled"))
    elif build_plan.get("installed"):
        source, wheel, compiled = "present", _text(build_plan.get("installed_wheel")), False
    else:
        key, source, wheel, compiled = "", "none", "", False
    return {
        "version": build_plan.get("version"),
        "build_key": key,
        "arch_list": build_plan.get("arch_list"),
        "wheel": wheel,
        "source": source,
        "compiled": compiled,
        "fleet_builds": fleet_builds(fleet_built),
    }


def jobs_request(build_plan):
    """What wheel_build needs to work out the build's jobs on the builder (_build_env.jobs_request)."""
    if not isinstance(build_plan, dict) or not isinstance(build_plan.get("environment"), dict):
        raise FlashAttnError("with_jobs needs a plan made with the venv's torch (flash_attn.plan(torch=...))")
    env = build_plan["environment"]
    torch = _dict(build_plan.get("torch"))
    if build_plan.get("cpu_only_test_host"):
        toolkit = "CPU-only test path: FLASH_ATTENTION_SKIP_CUDA_BUILD=TRUE, no CUDA kernels"
    else:
        toolkit = "CUDA_HOME=%s (from %s)" % (build_plan.get("cuda_home"), build_plan.get("cuda_home_source"))
    before = [
        "flash-attn %s (%s) against torch %s" % (build_plan.get("version"), build_plan.get("source_id"),
                                                 torch.get("version")),
        "FLASH_ATTN_CUDA_ARCHS=%s TORCH_CUDA_ARCH_LIST=%s" % (env["FLASH_ATTN_CUDA_ARCHS"], env["TORCH_CUDA_ARCH_LIST"]),
    ]
    return _build_env.jobs_request(build_plan, 5.0, len(build_plan["targets"]), before, [toolkit])


def with_jobs(build_plan, facts=None):
    """The build's environment and log header once the builder's CPU and memory facts are known.

    Returns {environment (with MAX_JOBS and NVCC_THREADS), log_header, max_jobs, nvcc_threads, vcpus,
    available_gb}. Called when the build starts, after wheel_build gathered the builder's hardware facts.
    """
    return _build_env.with_builder(jobs_request(build_plan), facts)
