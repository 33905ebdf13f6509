# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``hf download`` command: its checked input, its argv and its environment.

One implementation for the hf_download module (which runs the command
itself) and the ``gpufleet.llm_stack.qwen_model_fetch_state`` action
(which gives it to the qwen_model_fetch role to run with run_logged, for
progress lines). The
token and an endpoint's password reach the client through its environment
only, never its command line.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import os
import re

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import hf_hub
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.hf_local import RESERVED_PATHS
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.run_logged import secret_values
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import mask_credentials

ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)

# The options and their defaults, as the module declares them.
DEFAULTS = {
    "include": [], "exclude": [], "max_workers": 8, "endpoint": "https://huggingface.co", "token": None,
    "log_tail_lines": 40, "environment": {}, "timeout": 21000,
}


class InputError(ValueError):
    """Bad input; the message names the option."""


def _plain(value):
    return not any(ord(char) < 32 or ord(char) == 127 for char in value)


def check_patterns(option, patterns):
    for pattern in patterns:
        if not pattern or not _plain(pattern):
            raise InputError("%s: %s is not a usable glob pattern (empty, or with control characters)" % (
                option, mask_credentials(repr(pattern))))
        if pattern.startswith("-"):
            raise InputError("%s: the pattern %s starts with '-', which the hf client would read as an option; "
                             "write it without the leading '-' (for example '*%s')" % (
                                 option, mask_credentials(repr(pattern)), mask_credentials(pattern.lstrip("-"))))


def check_input(params):
    """The normalized parameters; InputError naming the option otherwise. Runs nothing."""
    checked = dict(params)
    try:
        checked["repo_id"] = hf_hub.normalize_repo_id(params["repo_id"])
        checked["revision"] = hf_hub.normalize_revision(params["revision"])
        checked["endpoint"] = hf_hub.normalize_endpoint(params["endpoint"])
    except hf_hub.HubError as exc:
        raise InputError(exc.message)
    if not _plain(params["hf"]):
        raise InputError("hf: %s is not a usable path (control characters)" % mask_credentials(repr(params["hf"])))
    for option in ("local_dir", "log_path"):
        value = params[option]
        if not os.path.isabs(value) or not _plain(value):
            raise InputError("%s: %s must be an absolute path (without control characters)" % (
                option, mask_credentials(repr(value))))
    check_patterns("include", params["include"])
    check_patterns("exclude", params["exclude"])
    for option, least in (("max_workers", 1), ("timeout", 1), ("log_tail_lines", 0)):
        if params[option] < least:
            raise InputError("%s: must be %d or more, got %d" % (option, least, params[option]))
    for name, value in params["environment"].items():
        if not ENV_NAME_RE.fullmatch(str(name)) or "\x00" in str(value):
            raise InputError("environment: %s is not a usable environment variable (a name of letters, digits "
                             "and '_', a value without NUL)" % mask_credentials(repr(str(name))))
    return checked


def secrets_of(params):
    """Strings masked wherever they appear: the token, the endpoint's user:password and password, and the values
    of the environment's variables named like a secret, of any length (run_logged's rule: a key of 3 characters,
    of digits only or the word none is still the key; switches such as HF_HUB_DISABLE_IMPLICIT_TOKEN=0 are not)."""
    found = []
    if params["token"]:
        found.append(params["token"])
    found.extend(secret_values(params["environment"]))
    try:
        userinfo = hf_hub.urlsplit(params["endpoint"] or "").netloc.rpartition("@")[0]
    except ValueError:
        userinfo = ""
    password = userinfo.partition(":")[2]
    if password:
        # the pair too: mask_credentials then masks its base64, as a Basic Authorization header carries it
        found.extend([userinfo, password])
    return found


def build_command(params):
    """The hf download argv: no secret in it, the role's manifest never downloaded over."""
    argv = [
        params["hf"], "download", params["repo_id"],
        "--revision", params["revision"],
        "--local-dir", params["local_dir"],
        "--max-workers", str(params["max_workers"]),
    ]
    for pattern in params["include"]:
        argv.extend(["--include", pattern])
    for pattern in params["exclude"]:
        argv.extend(["--exclude", pattern])
    for name in RESERVED_PATHS:
        argv.extend(["--exclude", name])
    return argv


def client_environment(params, progress_bars=False):
    """The client's environment: the endpoint, the token (or no token at all), no update check, no telemetry.

    Progress bars are off for a log read at the end (the module), on for a
    log that run_logged reads while the download runs.
    """
    env = dict((str(k), str(v)) for k, v in params["environment"].items())
    env.update({
        "HF_ENDPOINT": params["endpoint"].rstrip("/"),
        "HF_HUB_DISABLE_UPDATE_CHECK": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_OFFLINE": "0",
        "NO_COLOR": "1",
    })
    if not progress_bars:
        env["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    if params["token"]:
        env["HF_TOKEN"] = params["token"]
        env["HF_HUB_DISABLE_IMPLICIT_TOKEN"] = "0"
    else:
        # Neither a token from the environment of the connection nor a
        # stored login: the role decides which token is used.
        env["HF_TOKEN"] = ""
        env["HF_HUB_DISABLE_IMPLICIT_TOKEN"] = "1"
    return env


def command(params, progress_bars=True):
    """{argv, environment, secrets, no_log} of the download, for run_logged; InputError naming the option.

    params: the module's options (hf, repo_id, revision, local_dir, log_path,
    and the optional ones of DEFAULTS).
    """
    merged = dict(DEFAULTS)
    merged.update(dict((k, v) for k, v in params.items() if v is not None))
    for option in ("hf", "repo_id", "revision", "local_dir", "log_path"):
        if not isinstance(merged.get(option), str) or not merged[option]:
            raise InputError("%s: required, got %s" % (option, mask_credentials(repr(merged.get(option)))))
    for option in ("include", "exclude"):
        if not isinstance(merged[option], (list, tuple)) or not all(isinstance(p, str) for p in merged[option]):
            raise InputError("%s: must be a list of glob patterns" % option)
        merged[option] = list(merged[option])
    if not isinstance(merged["environment"], dict):
        raise InputError("environment: must be a dict of variable names and values")
    for option in ("max_workers", "timeout", "log_tail_lines"):
        try:
            merged[option] = int(merged[option])
        except (TypeError, ValueError):
            raise InputError("%s: must be a whole number, got %r" % (option, merged[option]))
    if merged["token"] is not None and not isinstance(merged["token"], str):
        raise InputError("token: must be a string")
    merged["token"] = merged["token"] or None
    secrets = secrets_of(merged)
    try:
        checked = check_input(merged)
    except InputError as exc:
        raise InputError(mask_credentials(str(exc), secrets))
    return {
        "argv": build_command(checked),
        "environment": client_environment(checked, progress_bars=progress_bars),
        "secrets": secrets,
        "no_log": bool(secrets),
        "endpoint": mask_credentials(hf_hub.display_endpoint(checked["endpoint"]), secrets),
    }


def seed_host(play_hosts, complete, chosen=""):
    """The host that downloads first, so that a mirror pulls each file from upstream once.

    play_hosts: the play's hosts in order; complete: for each of them, whether its copy of the model is complete
    already; chosen: the host the inventory names (qwen_model_fetch_seed_host), which wins when set. Otherwise the
    first host of the play that needs files; "" when none does.
    """
    if chosen:
        return chosen
    hosts = list(play_hosts or [])
    flags = list(complete or [])
    if len(flags) != len(hosts):
        raise InputError("seed_host: %d hosts and %d completeness flags" % (len(hosts), len(flags)))
    for host, done in zip(hosts, flags):
        if not done:
            return host
    return ""


# What downloaded() reads of hf_model_verify's result.
CHECKED_KEYS = ("ok", "missing", "damaged", "seedable", "bytes_to_fetch")


def downloaded(checked, check_mode=False):
    """What this run downloads of the model, for the fleet report: {files_downloaded, bytes_downloaded}.

    checked: the check of the files on the host before the download (hf_model_verify's result with seed_from: ok,
    missing, damaged, seedable, bytes_to_fetch). The files missing or damaged that the revision in use cannot give,
    and their bytes; 0 and 0 when the copy was complete already, and in check mode (nothing is downloaded).
    """
    if not isinstance(checked, dict) or any(key not in checked for key in CHECKED_KEYS):
        raise InputError("downloaded: the check of the files must be hf_model_verify's result (with %s)"
                         % ", ".join(CHECKED_KEYS))
    if checked["ok"] or check_mode:
        return {"files_downloaded": 0, "bytes_downloaded": 0}
    needed = set(checked["missing"]) | set(checked["damaged"])
    return {"files_downloaded": len(needed - set(checked["seedable"])), "bytes_downloaded": checked["bytes_to_fetch"]}


def role_download_options(inputs, download, token=""):
    """hf_download's options for the download of role qwen_model_fetch (``command`` takes them).

    inputs: the role's variables (qwen_model_fetch_inputs: model, venv, max_workers, include, exclude, hf_endpoint,
    hf_ca_cert); download: what the role set once the hub resolved the revision (revision: the commit, local_dir,
    log_path); token: qwen_model_fetch_token, "" for none. The client is the role's own venv's hf; with
    hf_ca_cert it trusts the CA the role pushed into that venv (SSL_CERT_FILE).
    """
    venv = inputs.get("venv")
    return {
        "hf": "%s/bin/hf" % (venv,),
        "repo_id": inputs.get("model"),
        "revision": download.get("revision"),
        "local_dir": download.get("local_dir"),
        "log_path": download.get("log_path"),
        "max_workers": inputs.get("max_workers"),
        "include": inputs.get("include"),
        "exclude": inputs.get("exclude"),
        "endpoint": inputs.get("hf_endpoint"),
        "token": token or "",
        "environment": {"SSL_CERT_FILE": "%s/endpoint-ca.pem" % (venv,)} if inputs.get("hf_ca_cert") else {},
    }


CHECKSUM_CHOICES = ("auto", "always", "never")


def as_number(value, cast):
    """value made a number by cast (int or float), accepting its text form too; None when it is not one (a bool is not)."""
    if isinstance(value, bool):
        return None
    try:
        return cast(str(value).strip())
    except (TypeError, ValueError):
        return None


def fetch_problems(settings, play_hosts=None):
    """What is wrong with qwen_model_fetch's variables, before anything is read or changed ([] when nothing).

    settings: model, revision, models_dir, hf_endpoint, upstream_endpoint, hf_ca_cert, max_workers, keep_revisions,
    disk_margin_gb, checksum, seed_host and token (each the qwen_model_fetch_* variable of that name; upstream_endpoint
    and hf_ca_cert may be left out); play_hosts: the play's hosts, which seed_host must be one of. The repository id,
    revision and endpoint rules are hf_hub's, which the hub modules apply too.
    Each message names the variable and the fix; the token and URL passwords never appear in one.
    """
    if not isinstance(settings, dict):
        raise InputError("fetch_problems needs a dict of the qwen_model_fetch settings")
    problems = []
    for key, check, fix in (
            ("model", hf_hub.validate_repo_id, "set it to a hub model repository id ORG/NAME, such as Qwen/Qwen3.5-9B"),
            ("revision", hf_hub.validate_revision, "set it to a commit SHA (reproducible), a branch or a tag"),
            ("hf_endpoint", hf_hub.validate_endpoint,
             "set it to the http(s) URL of the hub or of the fleet's mirror, e.g. https://cache-01:8090"),
            ("upstream_endpoint", hf_hub.validate_endpoint,
             "set it to the URL of the hub the controller reads the file list from, https://huggingface.co")):
        if key == "upstream_endpoint" and key not in settings:
            continue
        problem = check(settings.get(key))
        if problem:
            problems.append(mask_credentials("qwen_model_fetch_%s: %s. Fix: %s." % (key, problem, fix)))
    ca_cert = settings.get("hf_ca_cert") or ""
    if not isinstance(ca_cert, str) or (ca_cert and not (ca_cert.startswith("/") and os.path.isfile(ca_cert))):
        problems.append("qwen_model_fetch_hf_ca_cert is %r, not a file on the controller. Fix: set it to the absolute "
                        "path of the PEM file of the endpoint's CA certificate, or to \"\"." % (ca_cert,))
    models_dir = settings.get("models_dir")
    if not (isinstance(models_dir, str) and models_dir.startswith("/") and _plain(models_dir)):
        problems.append("qwen_model_fetch_models_dir is %r. Fix: set it to an absolute path." % (models_dir,))
    for key, cast, least, what in (("max_workers", int, 1, "1 or more"),
                                   ("keep_revisions", int, 1, "1 or more (the current revision always stays)"),
                                   ("disk_margin_gb", float, 0, "0 or more")):
        number = as_number(settings.get(key), cast)
        if number is None or math.isnan(number) or number < least:
            problems.append("qwen_model_fetch_%s is %r. Fix: set it to %s." % (key, settings.get(key), what))
    if settings.get("checksum") not in CHECKSUM_CHOICES:
        problems.append("qwen_model_fetch_checksum is %r. Fix: set it to %s." % (
            settings.get("checksum"), ", ".join(CHECKSUM_CHOICES)))
    seed = settings.get("seed_host") or ""
    hosts = list(play_hosts or [])
    if seed and seed not in hosts:
        problems.append("qwen_model_fetch_seed_host is %r, which is not a host of this play. Fix: set it to one of %s,"
                        " or leave it empty." % (seed, ", ".join(hosts)))
    token = settings.get("token")
    if token is None:
        token = ""
    if not isinstance(token, str) or any(char.isspace() for char in token):
        problems.append("qwen_model_fetch_token contains white space or is not a string. Fix: set it to the token "
                        "alone (it is not shown here).")
    return problems
