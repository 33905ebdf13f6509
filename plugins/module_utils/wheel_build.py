# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The decisions of the wheel_build role: one compile per build key.

* ``plan``: a host's cache entry (``<label>-<first 12 hex of sha256(name, key)>``),
  its paths on the host and the controller, whether the venv has this
  key's build installed (pip recorded the file it installed from, and the
  cached wheels are copied under a directory named after the entry), and
  whether the key still needs a build (neither installed nor cached).
* ``builder``: the host of the current batch that builds a key: the first
  one that prefers to, else the first in play order, among those that need
  the build.
* ``cache_problem``: what to say when the controller cache does not hold
  exactly one wheel for the key after the build step.

The action gpufleet.llm_stack.wheel_build_state runs them for the role
(with module_utils/_wheel_build_role.py: what the role's YAML acts on), on
the controller (the cache is a controller directory).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import hashlib
import json
import os
import re

REQUIRED = ("name", "key", "requirement", "cache_dir")
PATHS = ("cache_dir", "venv", "work_dir", "wheel_dir", "log_dir")


class WheelBuildError(ValueError):
    """Input the role cannot work with; the message names the wheel_build_* variable and the fix."""


def entry_name(label, name, key):
    """The cache entry of a key: the label in characters a file URL needs no quoting for, and the key's hash.

    The hash is that of the JSON text Ansible's to_json(sort_keys=True)
    gives for {"name": name, "key": key}, so entries made before stay valid.
    """
    text = json.dumps({"name": name, "key": key}, sort_keys=True)
    return "%s-%s" % (re.sub(r"[^A-Za-z0-9._-]+", "_", label or name), hashlib.sha256(text.encode("utf-8")).hexdigest()[:12])


def _check(inputs):
    missing = [name for name in REQUIRED if not inputs.get(name)]
    if missing or not isinstance(inputs.get("key"), dict):
        raise WheelBuildError(
            "wheel_build needs wheel_build_name, wheel_build_key (a non-empty dict), wheel_build_requirement and "
            "wheel_build_cache_dir (missing or empty: %s). Fix: set them in the role that includes wheel_build."
            % ", ".join("wheel_build_" + name for name in (missing or ["key"])))
    for name in PATHS:
        value = inputs.get(name)
        if value is not None and not (isinstance(value, str) and value.startswith("/")):
            raise WheelBuildError("wheel_build_%s=%r must be an absolute path" % (name, value))
    if not isinstance(inputs.get("prefer_builder", False), bool):
        raise WheelBuildError("wheel_build_prefer_builder=%r must be true or false" % (inputs.get("prefer_builder"),))


def cached_wheels(cache_entry):
    """The wheels of a cache entry on the controller, sorted."""
    return sorted(glob.glob(os.path.join(glob.escape(cache_entry), "*.whl")))


def installed_url_of(probe, name):
    """The url pip recorded (direct_url.json) for name in a torch_info result; '' when it says nothing."""
    info = (probe or {}).get("info") if isinstance(probe, dict) else None
    dist = ((info or {}).get("distributions") or {}).get(name) if isinstance(info, dict) else None
    direct = (dist or {}).get("direct_url") if isinstance(dist, dict) else None
    url = (direct or {}).get("url") if isinstance(direct, dict) else None
    return url if isinstance(url, str) else ""


def installed_wheel(installed_url, wheel_dir, entry):
    """The file name of the key's wheel the venv has installed, or '' when it has another build (or none).

    pip records the file it installed from (direct_url.json); the key's
    wheels are installed from the host directory named after its entry,
    whether they came from the controller cache or the fleet's index.
    """
    prefix = "file://" + os.path.join(wheel_dir or "/", entry) + "/"
    if not (isinstance(installed_url, str) and installed_url.startswith(prefix)):
        return ""
    return os.path.basename(installed_url)


def plan(inputs, cached=None):
    """This host's part in the build of its key.

    inputs: the wheel_build_* variables without their prefix (name, key,
    label, requirement, cache_dir, venv, work_dir, wheel_dir, log_dir,
    installed_url, prefer_builder), and probe: the role's own torch_info
    reading of the venv, for when installed_url is None (the caller did not
    read the venv). cached: the cache entry's wheels, read from the
    controller when None.
    """
    _check(inputs)
    entry = entry_name(inputs.get("label"), inputs["name"], inputs["key"])
    cache_entry = os.path.join(inputs["cache_dir"], entry)
    host_entry = os.path.join(inputs.get("wheel_dir") or "/", entry)
    wheels = cached_wheels(cache_entry) if cached is None else list(cached)
    installed_url = inputs.get("installed_url")
    if installed_url is None:
        installed_url = installed_url_of(inputs.get("probe"), inputs["name"])
    wheel = installed_wheel(installed_url, inputs.get("wheel_dir"), entry)
    log_dir = inputs.get("log_dir") or "/var/log"
    return {
        "entry": entry,
        "cache_entry": cache_entry,
        "cached_wheels": wheels,
        "host_entry": host_entry,
        "tree": os.path.join(inputs.get("work_dir") or "/tmp", entry),
        "log": os.path.join(log_dir, "wheel-build-%s.log" % entry),
        "ledger": os.path.join(log_dir, "wheel-builds.jsonl"),
        "marker": os.path.join(inputs.get("venv") or "/", ".llm_stack", "%s.json" % inputs["name"]),
        "installed": bool(wheel),
        "installed_wheel": wheel,
        "needs_build": not wheel and not wheels,
        # What happens to the key here, for the play output.
        "summary": "is installed" if wheel else "is in the cache" if wheels else "is built once for its key",
        "preferred": bool(inputs.get("prefer_builder", False)),
    }


def builder(batch, states, entry):
    """The host that builds entry: among the hosts of batch (play order) whose state needs that build, the first
    that prefers to build, else the first. states maps a host to its plan (or None); '' when none needs it."""
    first = preferred = ""
    for host in batch:
        state = states.get(host)
        if not isinstance(state, dict) or not state.get("needs_build") or state.get("entry") != entry:
            continue
        first = first or host
        if state.get("preferred") and not preferred:
            preferred = host
    return preferred or first


def cache_problem(state, wheels, name, builder_host, log):
    """'' when the cache entry holds one wheel; else what went wrong and the fix."""
    if len(wheels) == 1:
        return ""
    if wheels:
        return ("Several %s wheels in %s on the controller. Fix: remove %s so that the key is built again."
                % (name, state["cache_entry"], state["cache_entry"]))
    if state.get("needs_build") and builder_host:
        why = ("Its build on %s did not finish: see %s there and that host's error above; nothing was installed on "
               "this host." % (builder_host, log))
    else:
        why = "Nothing was installed on this host."
    return ("No %s wheel in %s on the controller. %s Fix: run the play again once the build problem is solved."
            % (name, state["cache_entry"], why))


def files_to_push(local_files, remote_files):
    """The controller files (``find`` results) a host lacks, sorted by path.

    A file is present on the host when a file of the same base name and size
    is there: wheels and sdists never change under one name, so the name and
    size tell without a checksum over the connection.
    """
    present = set()
    for item in remote_files or []:
        if isinstance(item, dict) and item.get("path"):
            present.add((os.path.basename(item["path"]), item.get("size")))
    missing = []
    for item in local_files or []:
        if not isinstance(item, dict) or not item.get("path"):
            raise WheelBuildError("files_to_push: every controller file needs a path (a find result)")
        if (os.path.basename(item["path"]), item.get("size")) not in present:
            missing.append(item)
    return sorted(missing, key=lambda item: item["path"])
