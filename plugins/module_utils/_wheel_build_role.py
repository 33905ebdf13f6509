# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: what the wheel_build role's YAML acts on, over the decisions of wheel_build.py.

The backend (the controller cache or the fleet's package index), the election's line in the play, the build's
environment and log header on the builder (_build_env.with_builder over the caller's jobs request) and the role's
one result, the fact ``wheel_build_result``. Run by the action gpufleet.llm_stack.wheel_build_state; not part of
the public API.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _build_env
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.run_logged import secret_values
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import has_credentials
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.wheel_build import cache_problem, plan


CONTROLLER_CACHE = "controller_cache"
INDEX = "index"

# The role's task files of the steps that differ between the backends (the plan's field ``tasks``): the build on
# the elected host (with the index inside the rescue that releases the key's lock), the wheel made available
# (fetched into the controller cache, or published through the cache host) and its install on the host.
STEP_TASKS = {
    CONTROLLER_CACHE: {"build": "build.yml", "keep": "cache.yml", "install": "install.yml"},
    INDEX: {"build": "index_build.yml", "keep": "publish.yml", "install": "install_index.yml"},
}


def backend(index_url):
    """Where the key's wheel is kept: the fleet's package index when its URL is set, else the controller cache."""
    return INDEX if index_url else CONTROLLER_CACHE


def jobs_no_log(request):
    """Whether a jobs request's environment holds credentials (a URL with userinfo, a variable named like a secret)."""
    env = (request or {}).get("environment") if isinstance(request, dict) else None
    if not isinstance(env, dict):
        return False
    return bool(secret_values(env)) or any(has_credentials(value) for value in env.values() if isinstance(value, str))


def role_plan(inputs, hosts=(), cached=None):
    """plan() and what the role's tasks read besides: name, label, key, install, backend, tasks (the backend's
    task files, STEP_TASKS), add_cache_host, no_log, index_ca_path.

    inputs: as plan() takes them, with install (bool), jobs (the caller's jobs request), index_url, cache_host and
    index_ca_cert (the controller's CA file of the index, or empty).
    hosts: the inventory's host names (groups['all']); a cache host outside them is added to the job's inventory.
    """
    state = plan(inputs, cached)
    chosen = backend(inputs.get("index_url"))
    state.update(name=inputs["name"], label=inputs.get("label") or inputs["name"], key=inputs["key"],
                 install=bool(inputs.get("install", True)), backend=chosen, tasks=dict(STEP_TASKS[chosen]),
                 add_cache_host=chosen == INDEX and inputs.get("cache_host") not in list(hosts or []),
                 no_log=jobs_no_log(inputs.get("jobs")), index_ca_path=index_ca_path(inputs))
    return state


def index_ca_path(inputs):
    """Where the host keeps the index's CA certificate (wheel_dir/index-ca.pem) for the download from the index;
    None (the host's trust store) where the fleet sets no CA file (index_ca_cert empty)."""
    return "%s/index-ca.pem" % (inputs.get("wheel_dir"),) if inputs.get("index_ca_cert") else None


def result(source, compiled, wheel, was_installed):
    """The role's result (the fact wheel_build_result): {source, compiled, wheel (a file name or None), was_installed}."""
    return {"source": source, "compiled": bool(compiled), "wheel": wheel or None, "was_installed": bool(was_installed)}


def first_result(state):
    """The result before the build step: present (the key's wheel is installed) or none."""
    return result("present" if state.get("installed") else "none", False, state.get("installed_wheel"),
                  state.get("installed"))


def elected(state, builder_host, hostname, check_mode, across_jobs=False):
    """{builder, builds_here, locks, waits, msg}: who builds this host's key, and the play's line saying so.

    across_jobs (the fleet's index): the elected host takes the key's lock on the cache host before it builds
    (locks), the others wait there for the key's wheel (waits); without it neither.
    """
    builder_host = builder_host if state.get("needs_build") else ""
    here = bool(builder_host) and builder_host == hostname
    who = "This host" if here else builder_host
    msg = "%s builds %s (key %s)" % (who, state.get("label"), state.get("entry"))
    if across_jobs:
        msg += " unless another job of the fleet does already"
    msg += "%s." % (" (check mode: nothing is built)" if check_mode else "")
    return {"builder": builder_host, "builds_here": here, "locks": bool(across_jobs) and here,
            "waits": bool(across_jobs) and not here, "msg": msg}


def cache_outcome(state, cached, builder_host, hostname, check_mode):
    """After the build step (controller cache): {cached, problem, install, result}.

    problem: '' or cache_problem's message (not a failure in check mode, where nothing was built); install: the
    key's wheel is to be installed from the one cached wheel; result: the role's result once it is. With install
    false (wheel_build_install) nothing is installed and result is the role's result at once: source built where
    this host compiled the key's wheel, else none, and the cached wheel's name.
    """
    cached = list(cached)
    builder_host = builder_host if state.get("needs_build") else ""
    compiled = bool(state.get("needs_build")) and bool(builder_host) and builder_host == hostname and not check_mode
    install = bool(state.get("install", True)) and len(cached) == 1
    if not state.get("install", True):
        outcome = result("built" if compiled else "none", compiled,
                         os.path.basename(cached[0]) if len(cached) == 1 else None, False)
    elif install:
        outcome = result("built" if compiled else CONTROLLER_CACHE, compiled, os.path.basename(cached[0]), False)
    else:
        outcome = None
    return {"cached": cached,
            "problem": cache_problem(state, cached, state["name"], builder_host, state["log"]),
            "install": install,
            "result": outcome}


def index_outcome(wheels, compiled, install=True):
    """{wheel, result} with the fleet's index: the first wheel given (this build's, the lock's, the waited one,
    the query's), the role's result once it is installed. With install false (wheel_build_install) nothing is
    installed: source built where this host compiled the key's wheel, else none."""
    wheel = next((item for item in wheels or [] if item), None)
    compiled = bool(compiled)
    source = "built" if compiled else INDEX if install else "none"
    return {"wheel": wheel,
            "result": result(source, compiled, wheel.get("filename"), False) if isinstance(wheel, dict) else None}


def build_jobs(state, request, facts):
    """The build's environment (TMPDIR in its tree) and log header (the key's line last) on the builder.

    request: the caller's jobs request (_build_env.jobs_request; empty: no environment and no header of its
    own); facts: the builder's facts, with its vCPUs and memory.
    """
    if request:
        job = _build_env.with_builder(request, facts)
        environment, header = dict(job["environment"]), list(job["log_header"])
    else:
        environment, header = {}, []
    environment["TMPDIR"] = state["tree"]
    header.append("key %s: %s" % (state["entry"], json.dumps(state["key"], sort_keys=True)))
    return {"environment": environment, "log_header": header}
