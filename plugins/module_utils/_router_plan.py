# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: the llm_router role's plan, as pure functions (the action gpufleet.llm_stack.llm_router_state runs them).

- ``default_hosts``: the hosts whose preflight fact (llm_stack_host) is ok;
- ``collect``: the services with router true of those hosts, from their facts alone;
- ``problems``: what is wrong with the role's settings, each message naming the llm_router_* variable and the fix;
- ``plan``: the config text, the models map, the summary (model -> servers) and the endpoint.

The config itself is _serve_services.haproxy_config (one backend per served model plus be_any).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _serve_services as S
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._readers import as_dict as _dict, text as _text

FACT = "llm_stack_host"
# What a key may hold: printable ASCII without blanks, quotes or backslash (vllm_serve_api_key's rule): the ACL
# file's lines, the environment file (a single-quoted value, read by systemd and by sh) and HAProxy's "${...}" in
# the config carry it as is.
_KEY_RE = re.compile(r"[A-Za-z0-9!#$%&()*+,./:;<=>?@\[\]^_`{|}~-]+", re.ASCII)
_DURATION_RE = re.compile(r"[0-9]+(?:us|ms|s|m|h|d)?", re.ASCII)


def _fact(hostvars, host):
    return _dict(_dict(_dict(_dict(hostvars).get(host)).get("ansible_facts")).get(FACT))


def default_hosts(hostvars, hosts):
    """The hosts of hosts (in order) that have the fact with ok true."""
    return [host for host in hosts or [] if _fact(hostvars, host).get("ok") is True]


def collect(hostvars, hosts):
    """{services_by_host, addresses, skipped}: the services with router true of each host whose fact is ok.

    services_by_host is router_backends()' input; addresses {(host, service name): address} the address of each
    service as its fact gives it (else the host's ansible_host, else its name); skipped: {host: why}.
    """
    found, addresses, skipped = {}, {}, {}
    for host in hosts or []:
        host = _text(host)
        fact = _fact(hostvars, host)
        if not fact:
            skipped[host] = "no fact ansible_facts.%s (preflight has not run on it)" % FACT
            continue
        if fact.get("ok") is not True:
            skipped[host] = "preflight's verdict is not ok"
            continue
        listed = fact.get("services") or []
        fallback = _text(_dict(_dict(hostvars).get(host)).get("ansible_host")) or host
        keep = []
        for service in listed if isinstance(listed, list) else []:
            if not isinstance(service, dict) or service.get("router", True) is not True:
                continue
            if not _text(service.get("name")) or not _text(service.get("served_model_name")):
                continue
            keep.append(service)
            addresses[(host, service["name"])] = _text(service.get("address")) or fallback
        if not keep:
            skipped[host] = "no service with router true"
            continue
        found[host] = {"address": fallback, "services": keep}
    return {"services_by_host": found, "addresses": addresses, "skipped": skipped}


def backends(collected):
    """router_backends() with each server's own address."""
    found = S.router_backends(collected["services_by_host"])
    for model in found:
        for entry in found[model]:
            service = next(s for s in collected["services_by_host"][entry["host"]]["services"]
                           if S.unit_name(s) == entry["unit"])
            entry["address"] = collected["addresses"].get((entry["host"], service["name"]), entry["address"])
    return found


def _whole(value, name, low, high, errors):
    try:
        number = int(_text(value))
    except ValueError:
        number = None
    if number is None or isinstance(value, bool) or not low <= number <= high:
        example = max(low, min(high, 2))
        errors.append("%s=%r is not a whole number from %d to %d. Fix: set it such as %d"
                      % (name, value, low, high, example))
        return None
    return number


def problems(settings):
    """Every problem of the role's settings; each message names the llm_router_* variable and the fix."""
    cfg = _dict(settings)
    errors = []
    keys = cfg.get("api_keys")
    if not isinstance(keys, (list, tuple)) or not keys:
        errors.append("llm_router_api_keys is empty: clients need a key. Fix: set it (from a vault) to a list of one"
                      " or more keys, such as [\"{{ vault_llm_router_key }}\"]")
    else:
        for index, key in enumerate(keys):
            if not isinstance(key, str) or not key.strip():
                errors.append("llm_router_api_keys[%d] is empty or not a string. Fix: give a key such as"
                              " sk-router-..." % index)
            elif not _KEY_RE.fullmatch(key):
                errors.append("llm_router_api_keys[%d] holds whitespace, a quote or a backslash, or a character"
                              " that is not printable ASCII. Fix: use letters, digits and - _ . only" % index)
    backend = cfg.get("backend_api_key")
    if not isinstance(backend, str) or not backend.strip():
        errors.append("llm_router_backend_api_key is empty: the vLLM servers need their key. Fix: set it to the"
                      " services' key (default: vllm_serve_api_key)")
    elif not _KEY_RE.fullmatch(backend):
        errors.append("llm_router_backend_api_key holds whitespace, a quote or a backslash, or a character that is"
                      " not printable ASCII. Fix: use a key of letters, digits and - _ . only")
    elif "%" in backend:
        # HAProxy reads the header it sets as a log-format string: '%x' fails the config, '%[...]' is evaluated.
        errors.append("llm_router_backend_api_key holds %, which HAProxy reads as a log-format directive in the"
                      " header it sends. Fix: use a key without % for the vLLM servers (vllm_serve_api_key), such as"
                      " the output of openssl rand -hex 24")
    if _text(cfg.get("service_manager") or "auto") not in MANAGERS:
        errors.append("llm_router_service_manager=%r is not one of %s. Fix: set it to auto"
                      % (cfg.get("service_manager"), ", ".join(MANAGERS)))
    _whole(cfg.get("port"), "llm_router_port", 1, 65535, errors)
    _whole(cfg.get("request_timeout"), "llm_router_request_timeout", 1, 86400, errors)
    _whole(cfg.get("health_check_fall"), "llm_router_health_check_fall", 1, 100, errors)
    _whole(cfg.get("health_check_rise"), "llm_router_health_check_rise", 1, 100, errors)
    _whole(cfg.get("bufsize"), "llm_router_bufsize", 16384, 16777216, errors)
    metrics = _whole(cfg.get("metrics_port", METRICS_PORT), "llm_router_metrics_port", 0, 65535, errors)
    if metrics and metrics == _whole(cfg.get("port"), "llm_router_port", 1, 65535, []):
        errors.append("llm_router_metrics_port=%d is llm_router_port too. Fix: give the metrics another port, such as"
                      " %d, or 0 for none" % (metrics, METRICS_PORT))
    if not _DURATION_RE.fullmatch(_text(cfg.get("health_check_interval"))):
        errors.append("llm_router_health_check_interval=%r is not an HAProxy time. Fix: set it such as 2s"
                      % cfg.get("health_check_interval"))
    bind = _text(cfg.get("bind_address"))
    if not bind or re.search(r"[\s,]", bind):
        errors.append("llm_router_bind_address=%r is not one address. Fix: set it such as 0.0.0.0 or 10.0.0.5" % bind)
    for name in ("socket", "state_file", "config_dir"):
        path = _text(cfg.get(name))
        if not path.startswith("/") or re.search(r"\s", path):
            errors.append("llm_router_%s=%r is not an absolute path without blanks. Fix: set it such as %s"
                          % (name, path, {"socket": "/run/llm-router/admin.sock",
                                          "state_file": "/var/lib/llm-router/server-state",
                                          "config_dir": "/etc/llm-router"}[name]))
    return errors


MANAGERS = ("auto", "systemd", "supervisord")
# Where HAProxy's Prometheus exporter answers by default (llm_router_metrics_port; the llm_monitoring role's
# scrape of a router that does not set it).
METRICS_PORT = 8405


def bracket(address):
    """An address as it goes before ':port' (IPv6 in brackets)."""
    address = _text(address)
    return "[%s]" % address if ":" in address and not address.startswith("[") else address


def service_mode(setting, service_mgr):
    """systemd or supervisord: the setting, or for auto the host's PID 1 (the fact service_mgr; not gathered:
    systemd)."""
    setting = _text(setting) or "auto"
    if setting != "auto":
        return setting
    return "systemd" if _text(service_mgr) in ("", "systemd") else "supervisord"


def _run_as(text, user):
    """The config with HAProxy's worker dropping root for user (the master keeps root to read the 0600 files at
    each reload)."""
    if not user:
        return text
    return text.replace("\nglobal\n", "\nglobal\n    user %s\n    group %s\n" % (user, user), 1)


def plan(hostvars, hosts, settings):
    """{errors, skipped, config, models_map, models, summary, endpoint, health_url, servers}.

    hosts: the backend hosts (the role's llm_router_backend_hosts, else default_hosts()); settings: the role's
    variables without the llm_router_ prefix (port, bind_address, socket, state_file, config_dir, request_timeout,
    health_check_interval/fall/rise, bufsize, metrics_port, api_keys, backend_api_key) and host_address (the
    router host's ansible_host or name, the endpoint's host when bind_address is a wildcard), service_manager
    (auto, systemd, supervisord) and service_mgr (the host's fact), user (HAProxy's worker drops root for it).. The config names no secret.
    """
    cfg = _dict(settings)
    errors = problems(cfg)
    collected = collect(hostvars, hosts)
    found = backends(collected)
    if not found:
        why = "; ".join("%s: %s" % (host, reason) for host, reason in sorted(collected["skipped"].items()))
        errors.append("llm_router has no backend: none of the hosts %s has a service with router true in a fact"
                      " llm_stack_host with ok true%s. Fix: run preflight and role vllm_serve on the serving hosts"
                      " in this play (or gather their facts), or list them in llm_router_backend_hosts"
                      % (", ".join(map(_text, hosts or [])) or "(none)", " (%s)" % why if why else ""))
    result = {"errors": errors, "skipped": collected["skipped"], "config": "", "models_map": "", "models": [],
              "mode": "", "packages": [],
              "summary": {}, "servers": [], "endpoint": "", "health_url": "", "metrics_url": ""}
    if errors:
        return result
    config_dir = _text(cfg["config_dir"])
    port = int(_text(cfg["port"]))
    metrics_port = int(_text(cfg.get("metrics_port", METRICS_PORT)))
    bind = _text(cfg["bind_address"])
    local = "127.0.0.1" if bind in ("0.0.0.0", "*") else "[::1]" if bind == "::" else (
        "[%s]" % bind if ":" in bind else bind)
    text = S.haproxy_config(found, {
        "bind": "%s:%d" % ("[%s]" % bind if ":" in bind else bind, port), "socket": _text(cfg["socket"]),
        "state_file": _text(cfg["state_file"]), "api_keys_file": config_dir + "/api_keys.lst",
        "map_file": config_dir + "/models.map", "request_timeout": int(_text(cfg["request_timeout"])),
        "bufsize": int(_text(cfg["bufsize"])), "inter": _text(cfg["health_check_interval"]),
        "fall": int(_text(cfg["health_check_fall"])), "rise": int(_text(cfg["health_check_rise"])),
        "metrics_bind": "%s:%d" % (bracket(bind), metrics_port) if metrics_port else ""})
    # Where clients reach the router: its bind address, or for a wildcard the host's address (host_address).
    public = local if bind not in ("0.0.0.0", "*", "::") else _text(cfg.get("host_address")) or local
    summary = dict((model, [entry["server"] for entry in found[model]]) for model in sorted(found))
    servers = sorted(set(server for names in summary.values() for server in names))
    mode = service_mode(cfg.get("service_manager"), cfg.get("service_mgr"))
    result.update(mode=mode, packages=["haproxy"] + (["supervisor"] if mode == "supervisord" else []))
    result.update(config=_run_as(text, _text(cfg.get("user"))), models_map=S.models_map(found), models=sorted(found), summary=summary, servers=servers,
                  endpoint="http://%s:%d" % (public, port), health_url="http://%s:%d" % (local, port),
                  metrics_url="http://%s:%d/metrics" % (public, metrics_port) if metrics_port else "")
    return result
