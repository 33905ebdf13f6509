# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: the decisions of several vLLM services per host (``vllm_serve_services``) and of the router in front of
them, as pure functions.

- ``services``: the normalised list, the single-service ``vllm_serve_*`` variables being the one-item case;
- ``problems``: what keeps the host's services from running side by side (GPU sets that overlap or are not on the
  host, parallel sizes that do not match the GPU set, ports that clash, a model that does not fit its GPUs);
- ``unit_name`` and ``removals``: the units the role manages, and the recorded ones the inventory no longer lists;
- ``metrics_idle``: whether vLLM's /metrics shows no request running or waiting (the drain wait);
- ``router_backends``, ``drain_plan``, ``models_map`` and ``haproxy_config``: the router (HAProxy 2.6) in front of
  every service of a served model.

Bad input never raises: each problem is a message that names the variable path and the fix.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json
import math
import re

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _serve_nodes, serve_fit
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._readers import as_dict as _dict, text as _text
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.host_gpus import host_gpus as _host_gpus

VARIABLE = "vllm_serve_services"
# The keys of one item of vllm_serve_services.
SERVICE_KEYS = ("name", "model", "served_model_name", "gpus", "tensor_parallel_size", "pipeline_parallel_size",
                "data_parallel_size", "port", "host", "extra_args", "env", "benchmark", "router", "nodes")
# The benchmark settings a service may set (the vllm_serve_benchmark_* variables of the same names).
BENCH_KEYS = ("when", "num_prompts", "input_len", "output_len", "seed", "request_rate", "thresholds",
              "fail_on_miss")
UNIT_PREFIX = "vllm-"
# vLLM's gauges of the drain wait (vllm/v1/metrics/loggers.py: Gauge "vllm:num_requests_running" and
# "vllm:num_requests_waiting", labelnames model_name and engine, one sample per engine of a data parallel server).
IDLE_GAUGES = ("vllm:num_requests_running", "vllm:num_requests_waiting")

_NAME_RE = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?", re.ASCII)
_SERVED_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}", re.ASCII)
_ENV_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)
_UNIT_RE = re.compile(r"vllm-[a-z0-9][a-z0-9-]*", re.ASCII)
_SLUG_RE = re.compile(r"[^a-z0-9]+")
_ROLE_ENV = ("VLLM_API_KEY", "HF_TOKEN", "HF_HUB_OFFLINE", "HOME", "CUDA_VISIBLE_DEVICES")
# One sample line of the Prometheus text format: name, optional {labels} (values may hold '}' and escaped '"'),
# value, optional timestamp.
_SAMPLE_RE = re.compile(r'^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)'
                        r'(?:\{(?P<labels>(?:[^"}]|"(?:[^"\\]|\\.)*")*)\})?'
                        r'[ \t]+(?P<value>\S+)(?:[ \t]+-?[0-9]+)?[ \t]*$')
# vLLM's rule for the GPUs of one server (docs/serving/data_parallel_deployment.md: each data parallel rank is an
# engine with tensor x pipeline parallel workers, one GPU each; vllm/config/parallel.py: world_size =
# pipeline_parallel_size x tensor_parallel_size, and world_size_across_dp = world_size x data_parallel_size).
# vLLM needs at least that many visible GPUs and leaves any more idle: the role asks for exactly that many.
PARALLEL_SOURCE = ("vLLM docs/serving/data_parallel_deployment.md and vllm/config/parallel.py: a server uses"
                   " tensor x pipeline x data parallel size GPUs")


def _slug(value):
    return _SLUG_RE.sub("-", _text(value).lower()).strip("-")


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _whole(value, path, errors, fix, low, high=None, default=None):
    if value is None or value == "":
        return default
    return serve_fit.whole(value, path, errors, fix, low=low, high=high)


# --- normalisation ------------------------------------------------------------------

def _env(value, path, errors):
    found = {}
    if value is None or value == "":
        return found
    if not isinstance(value, dict):
        errors.append("%s must be a dict of NAME: value, got %s. Fix: write it as a mapping such as"
                      " {NCCL_NVLS_ENABLE: \"0\"}" % (path, type(value).__name__))
        return found
    for key in sorted(value, key=str):
        name, item = str(key), value[key]
        if not _ENV_KEY_RE.fullmatch(name):
            errors.append("%s has %r, not a variable name. Fix: use letters, digits and _ only" % (path, name))
        elif name in _ROLE_ENV:
            errors.append("%s.%s is set by the role itself%s. Fix: remove it" % (
                path, name, " from the service's gpus" if name == "CUDA_VISIBLE_DEVICES" else ""))
        elif isinstance(item, (dict, list, tuple)) or item is None:
            errors.append("%s.%s is not a string. Fix: quote it in the inventory" % (path, name))
        else:
            text = ("1" if item else "0") if isinstance(item, bool) else str(item)
            if serve_fit.has_bad_chars(text) or "'" in text:
                errors.append("%s.%s holds a newline, NUL byte or single quote, which the environment file cannot"
                              " carry. Fix: remove it" % (path, name))
            else:
                found[name] = text
    return found


def _gpus(value, path, errors):
    if not isinstance(value, (list, tuple)) or not value:
        errors.append("%s must be a non-empty list of GPU indexes (nvidia-smi's index), got %r. Fix: list them, such"
                      " as [0, 1]" % (path, value))
        return None
    found = []
    for item in value:
        number = item if _is_int(item) else int(item) if isinstance(item, str) and item.isdigit() else None
        if number is None or number < 0:
            errors.append("%s has %r, not a GPU index (a whole number of 0 or more). Fix: list indexes such as"
                          " [0, 1]" % (path, item))
            return None
        if number in found:
            errors.append("%s lists GPU %d twice. Fix: list each GPU once" % (path, number))
            return None
        found.append(number)
    return found


def _benchmark(value, default, path, errors):
    if value is None or value == "":
        return {"enabled": bool(default)}
    if isinstance(value, bool):
        return {"enabled": value}
    if not isinstance(value, dict):
        errors.append("%s must be true, false or a dict of benchmark settings, got %s. Fix: set it such as"
                      " {enabled: true, num_prompts: 50}" % (path, type(value).__name__))
        return {"enabled": bool(default)}
    found = {"enabled": bool(value.get("enabled", True))}
    for key in sorted(value, key=str):
        if key == "enabled":
            continue
        if key not in BENCH_KEYS:
            errors.append("%s has %s, not a benchmark setting. Fix: use some of enabled, %s"
                          % (path, key, ", ".join(BENCH_KEYS)))
            continue
        found[key] = value[key]
    return found


def _single_service(single):
    """The single-service vllm_serve_* variables as the one service (its unit name kept as the role names it now)."""
    get = single.get
    model = _text(get("model"))
    served = _text(get("served_model_name")) or model
    tp, pp = get("tensor_parallel_size"), get("pipeline_parallel_size")
    return {"name": _slug(served) or "model", "model": model, "served_model_name": served,
            "unit": _text(get("service_name")) or UNIT_PREFIX + (_slug(served) or "model"),
            "gpus": None, "tensor_parallel_size": tp if _text(tp) not in ("", "auto") else "auto",
            "pipeline_parallel_size": pp if pp not in (None, "") else 1, "data_parallel_size": 1,
            "port": get("port"), "host": _text(get("host")) or "0.0.0.0",
            "extra_args": list(get("extra_args") or []), "env": dict(_dict(get("env"))),
            "benchmark": {"enabled": bool(get("benchmark"))}, "router": True, "path": "vllm_serve_*", "single": True}


def services(inputs, single):
    """vllm_serve_services (inputs) normalised, or the single-service variables (single) when it is empty.

    single: the vllm_serve_* values (keys of vllm_serve.INPUTS); they are also each service's defaults.
    Returns {services: [...], errors: [...]}; each service has name, model, served_model_name, unit, gpus (None for
    the single-service case, whose GPUs the plan chooses as today), tensor/pipeline/data_parallel_size, port, host,
    extra_args, env, benchmark, path (its variable path) and single.
    """
    single = _dict(single)
    errors = []
    if inputs is None or inputs == "" or inputs == []:
        return {"services": [_single_service(single)], "errors": errors}
    if not isinstance(inputs, (list, tuple)):
        return {"services": [], "errors": ["%s must be a list of services, got %s. Fix: write it as a list of"
                                           " mappings, one per service" % (VARIABLE, type(inputs).__name__)]}
    found, names = [], {}
    many = len(inputs) > 1
    for index, item in enumerate(inputs):
        path = "%s[%d]" % (VARIABLE, index)
        if not isinstance(item, dict):
            errors.append("%s must be a mapping, got %s. Fix: write the service as keys such as name, model, gpus"
                          " and port" % (path, type(item).__name__))
            continue
        unknown = sorted(set(str(key) for key in item) - set(SERVICE_KEYS))
        if unknown:
            errors.append("%s has %s, not a service setting. Fix: use some of %s"
                          % (path, ", ".join(unknown), ", ".join(SERVICE_KEYS)))
        get = item.get
        model = _text(get("model")) or _text(single.get("model"))
        served = _text(get("served_model_name")) or (model if get("model") else
                                                     _text(single.get("served_model_name")) or model)
        if not model:
            errors.append("%s.model is not set. Fix: set it to a model repository id such as Qwen/Qwen3-8B" % path)
        if not _SERVED_RE.fullmatch(served or "x"):
            errors.append("%s.served_model_name=%s has characters the router cannot route on. Fix: use letters,"
                          " digits and . _ : / - only, such as qwen3-8b" % (path, served))
        name = _text(get("name"))
        if not name and many:
            errors.append("%s.name is not set, and it is needed when more than one service is listed. Fix: set it,"
                          " such as name: chat" % path)
        name = name or _slug(served) or "model"
        if not _NAME_RE.fullmatch(name):
            errors.append("%s.name=%s is not a service name. Fix: use a-z, 0-9 and - only, at most 40 characters,"
                          " not starting or ending with -, such as chat" % (path, name))
        elif name in names:
            errors.append("%s.name=%s is also %s's. Fix: give each service its own name"
                          % (path, name, names[name]))
        else:
            names[name] = path
        # CPU-only test path: a host without GPUs runs a service without a GPU set.
        cpu_test = _test_host(single)
        gpus = None if cpu_test and get("gpus") in (None, []) else _gpus(get("gpus"), path + ".gpus", errors)
        pp = _whole(get("pipeline_parallel_size"), path + ".pipeline_parallel_size", errors,
                    "set it to 1 or a number of pipeline stages", 1, 1024, default=1)
        dp = _whole(get("data_parallel_size"), path + ".data_parallel_size", errors,
                    "set it to 1 or a number of replicas in this server", 1, 1024, default=1)
        nodes = _serve_nodes.settings(get("nodes"), path + ".nodes", errors)
        default_tp = len(gpus) // (pp * dp) if gpus and pp and dp and len(gpus) % (pp * dp) == 0 and not nodes else None
        tp = _whole(get("tensor_parallel_size"), path + ".tensor_parallel_size", errors,
                    "set it to the GPUs per replica and stage, such as 2", 1, 1024, default=default_tp)
        if nodes and get("tensor_parallel_size") in (None, ""):
            errors.append("%s.tensor_parallel_size is not set; a deployment across hosts needs it. Fix: set it so that"
                          " tensor x pipeline x data parallel size is the GPUs of all its nodes" % path)
        elif tp is None and get("tensor_parallel_size") in (None, "") and gpus is not None and pp and dp:
            errors.append("%s.tensor_parallel_size is not set and %d GPUs do not divide by pipeline %d x data %d."
                          " Fix: set it so that tensor x pipeline x data parallel size is %d"
                          % (path, len(gpus), pp, dp, len(gpus)))
        port = get("port")
        if port in (None, "") and not many:
            port = single.get("port")
        if port in (None, ""):
            errors.append("%s.port is not set. Fix: give each service its own TCP port, such as 8000" % path)
            port = None
        else:
            port = serve_fit.whole(port, path + ".port", errors, "set it to a free TCP port such as 8000", low=1024,
                                   high=65535)
        extra = serve_fit.list_of_str(get("extra_args"), path + ".extra_args", errors, "list one argument per item")
        # The list the service runs: its own, else vllm_serve_extra_args (role_vars); vLLM reads _ as -.
        used, used_path = (extra, path + ".extra_args") if extra else (
            serve_fit.list_of_str(single.get("extra_args"), "vllm_serve_extra_args", [], ""), "vllm_serve_extra_args")
        for arg in used:
            if arg.split("=", 1)[0].replace("_", "-") in _serve_nodes.FLAGS:
                errors.append("%s has %s, which the role sets for a deployment across hosts (%s). Fix: remove it and"
                              " set %s.nodes: {group: <the inventory group of its hosts>}"
                              % (used_path, arg, path, path))
        env = _env(get("env"), path + ".env", errors)
        for key in sorted(set(env) & set(_serve_nodes.ENV)) if nodes else []:
            errors.append("%s.env.%s is set by the role for each node of the deployment. Fix: remove it (set"
                          " vllm_serve_node_address for the node's address)" % (path, key))
        router = get("router", True)
        if not isinstance(router, bool):
            errors.append("%s.router must be true or false, got %r. Fix: set it to false to keep the service out of"
                          " the router, else leave it out" % (path, router))
            router = True
        found.append({
            "name": name, "model": model, "served_model_name": served, "unit": UNIT_PREFIX + name, "gpus": gpus,
            "tensor_parallel_size": tp, "pipeline_parallel_size": pp, "data_parallel_size": dp, "port": port,
            "host": _text(get("host")) or _text(single.get("host")) or "0.0.0.0", "extra_args": extra,
            "env": env, "nodes": nodes, "node": None,
            "benchmark": _benchmark(get("benchmark"), single.get("benchmark"), path + ".benchmark", errors),
            "router": router, "path": path, "single": False,
        })
    return {"services": found, "errors": errors}


# --- the problems of a host's services --------------------------------------------------

def _label(service):
    return "%s (%s)" % (service.get("path") or VARIABLE, service.get("name"))


def problems(services_, host_gpus, fit=None, other_ports=None):
    """Every problem that keeps the host's services from running side by side, each a message naming the service
    and the fix.

    services_: services()' list; host_gpus: the host's facts (preflight's llm_stack_host.gpu, else gpu_facts') or
    host_gpus()' result; fit: None (no memory check) or a dict of serve_fit.check's shared inputs: inputs (the
    serve_inputs of the role: max_model_len, gpu_memory_utilization, preset, cpu_only_test_host), configs and
    model_sizes ({model: config.json / bytes}), vllm_options, vllm_version; other_ports: {port: what} of the host
    that no service may take (the router's, a metrics port).
    """
    gpus_seen = _dict(host_gpus)
    gpu = gpus_seen if "memory_mib" in gpus_seen and "count" in gpus_seen else _host_gpus(gpus_seen)
    count, memory = gpu["count"], gpu["memory_mib"]
    found = []
    listed = [s for s in services_ or [] if isinstance(s, dict)]
    for index, one in enumerate(listed):
        if not one.get("gpus"):
            continue
        for other in listed[index + 1:]:
            shared = sorted(set(one["gpus"]) & set(other.get("gpus") or []))
            if shared:
                found.append("%s and %s both use GPU(s) %s. Fix: give each service GPUs of its own (set %s.gpus or"
                             " %s.gpus to other indexes)"
                             % (_label(one), _label(other), ", ".join(map(str, shared)), one["path"], other["path"]))
    for one in listed:
        gpus = one.get("gpus")
        if not gpus:
            continue
        beyond = [index for index in gpus if index >= count]
        if beyond:
            found.append("%s.gpus has GPU(s) %s, but the host has %d GPU(s) (indexes 0 to %d, preflight's"
                         " llm_stack_host.gpu.count). Fix: list indexes below %d" % (
                             one["path"], ", ".join(map(str, beyond)), count, max(count - 1, 0), count)
                         if count else
                         "%s.gpus lists GPU(s) %s, but the host has no GPU (preflight's llm_stack_host.gpu.count"
                         " is 0). Fix: serve it on a GPU host, or list it on the host that has these GPUs"
                         % (one["path"], ", ".join(map(str, beyond))))
        tp, pp, dp = one.get("tensor_parallel_size"), one.get("pipeline_parallel_size"), one.get("data_parallel_size")
        if one.get("node"):
            found.extend(_serve_nodes.world_problems(_label(one), one["path"], tp, pp, dp, gpus,
                                                     one["node"]["nnodes"]))
        elif _is_int(tp) and _is_int(pp) and _is_int(dp) and tp * pp * dp != len(gpus):
            found.append("%s: tensor_parallel_size=%d x pipeline_parallel_size=%d x data_parallel_size=%d is %d GPU(s),"
                         " but gpus lists %d (%s; fewer GPUs do not start, more sit idle). Fix: list %d GPU(s) in"
                         " %s.gpus or change the sizes so that their product is %d"
                         % (_label(one), tp, pp, dp, tp * pp * dp, len(gpus), PARALLEL_SOURCE, tp * pp * dp,
                            one["path"], len(gpus)))
    ports = {}
    for port, what in sorted(_dict(other_ports).items(), key=lambda item: str(item[0])):
        ports[int(port) if _text(port).isdigit() else port] = _text(what)
    for one in listed:
        port = one.get("port")
        if port is None:
            continue
        if port in ports:
            found.append("%s.port=%d is also %s's. Fix: give %s a free port of its own"
                         % (one["path"], port, ports[port], _label(one)))
        else:
            ports[port] = _label(one)
    # The master port of a deployment across hosts listens on its head: not another service's port, nor another
    # deployment's.
    for one in listed:
        port = _dict(one.get("nodes")).get("master_port")
        if port is None:
            continue
        if port in ports:
            found.append("%s.nodes.master_port=%d is also %s's. Fix: give each deployment a master port of its own,"
                         " free on its head" % (one["path"], port, ports[port]))
        else:
            ports[port] = "%s (master port)" % _label(one)
    if fit is not None:
        for one in listed:
            found.extend(_fit_problems(one, memory, count, _dict(fit)))
    return found


def _fit_problems(service, memory, count, fit):
    """serve_fit.check's heads and memory checks on the GPU set of one replica (tensor x pipeline parallel GPUs)."""
    gpus, tp, pp = service.get("gpus"), service.get("tensor_parallel_size"), service.get("pipeline_parallel_size")
    if not gpus or not _is_int(tp) or not _is_int(pp) or any(index >= count for index in gpus):
        return []
    # The memory of the service's own GPUs (nvidia-smi's order), where every GPU's is known; a deployment across
    # hosts has as many on each node (across() checks the count before any start).
    own = [memory[index] for index in gpus] if len(memory) >= count and all(i < len(memory) for i in gpus) else []
    nnodes = _dict(service.get("node")).get("nnodes") or 1
    own = own * nnodes
    inputs = dict(_dict(fit.get("inputs")))
    inputs.update({"model": service.get("model"), "tensor_parallel_size": tp, "pipeline_parallel_size": pp,
                   "extra_args": service.get("extra_args") or [], "env": service.get("env") or {}})
    model = service.get("model")
    size = _dict(fit.get("model_sizes")).get(model)
    # Each data parallel replica has tp x pp of the set's GPUs: the smallest GPU of the set bounds every replica.
    checked = serve_fit.check(inputs, tp * pp if nnodes == 1 else len(own) or tp * pp, own or None,
                              config=_dict(fit.get("configs")).get(model) or None,
                              model_size=size if _is_int(size) else None, vllm_options=fit.get("vllm_options"),
                              vllm_version=fit.get("vllm_version"))
    found = []
    for rule, severity, dummy, message in checked["problems"]:
        if severity == "error" and rule == "serve-tp-heads":
            # A listed service has no auto size: name the largest size vLLM accepts within its GPU set.
            heads, kv = checked["facts"].get("num_attention_heads"), checked["facts"].get("num_key_value_heads")
            dp = service.get("data_parallel_size") if _is_int(service.get("data_parallel_size")) else 1
            sizes = [size for size in range(1, max(1, len(gpus) // (pp * dp)) + 1)
                     if not serve_fit.tp_valid(size, heads, kv)]
            message = ("%s Fix: set %s.tensor_parallel_size to one vLLM accepts, such as %d, and list tensor x"
                       " pipeline x data parallel size GPUs in %s.gpus"
                       % (message.split(" Fix: ")[0], service["path"], max(sizes or [1]), service["path"]))
        if severity == "error" and rule in ("serve-memory", "serve-tp-heads", "serve-max-len"):
            named = _OWN_VARIABLES.sub(lambda match: "%s.%s" % (service["path"], match.group(1)), message)
            found.append("%s on GPU(s) %s: %s" % (_label(service), ", ".join(map(str, gpus)), named))
    return found


# serve_fit's messages name the single-service variables; a listed service sets these in its own item.
_OWN_VARIABLES = re.compile(r"\bvllm_serve_(model|tensor_parallel_size|pipeline_parallel_size|extra_args)\b")


# --- units -----------------------------------------------------------------------------

def unit_name(service):
    """The unit (systemd) or program (supervisord) of a service: vllm-<name>; the single-service case keeps its
    vllm_serve_service_name."""
    service = _dict(service)
    return _text(service.get("unit")) or UNIT_PREFIX + _text(service.get("name"))


def removals(listed, recorded):
    """The recorded units the inventory no longer lists, sorted: to stop and remove after the listed ones pass their
    gates. recorded: the unit names of the role's manifest; a name outside the role's scheme (vllm-<name>) is never
    removed."""
    keep = set(unit_name(service) for service in listed or [])
    names = recorded if isinstance(recorded, (list, tuple)) else sorted(_dict(recorded))
    return sorted(set(_text(name) for name in names if _UNIT_RE.fullmatch(_text(name)) and _text(name) not in keep))


# --- the role's variables of a service, its contract and the manifest ------------------

# The vllm_serve_* variables a listed service sets for its turn through the role's per-service tasks.
SERVICE_VARS = ("model", "served_model_name", "service_name", "model_dir", "port", "host", "tensor_parallel_size",
                "pipeline_parallel_size", "extra_args", "env", "benchmark", "node") + tuple("benchmark_" + k for k in BENCH_KEYS)
WILDCARDS = ("0.0.0.0", "::", "[::]", "")
MANIFEST_VERSION = 1
# The files of a service the manifest records, to remove them with it.
MANIFEST_FILES = ("unit", "env_file", "wrapper", "fingerprint", "supervisor_program")


def role_vars(service, single):
    """{vllm_serve_<name>: value} of a listed service (SERVICE_VARS): its own settings, else the single-service
    values (single: the vllm_serve_* inputs) as its defaults. extra_args: the service's when it lists any, else
    vllm_serve_extra_args; env: vllm_serve_env with the service's own on top; the GPU set as CUDA_VISIBLE_DEVICES and a
    data parallel size as --data-parallel-size. Each service serves its model's own directory (model_dir empty)."""
    service, single = _dict(service), _dict(single)
    extra = list(service.get("extra_args") or single.get("extra_args") or [])
    dp = service.get("data_parallel_size")
    if _is_int(dp) and dp > 1:
        extra += ["--data-parallel-size", str(dp)]
    env = dict(_dict(single.get("env")))
    env.update(_dict(service.get("env")))
    if service.get("gpus"):
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(index) for index in service["gpus"])
    node = service.get("node")
    if node:
        started = _serve_nodes.launch(node)
        extra += started["args"]
        env.update(started["env"])
    bench = _dict(service.get("benchmark"))
    found = {
        "model": service.get("model"), "served_model_name": service.get("served_model_name"),
        "service_name": unit_name(service), "model_dir": "", "port": service.get("port"),
        "host": service.get("host"),
        "tensor_parallel_size": service.get("tensor_parallel_size") if _is_int(service.get("tensor_parallel_size"))
        else "auto",
        "pipeline_parallel_size": service.get("pipeline_parallel_size") or 1, "extra_args": extra, "env": env,
        "benchmark": bool(bench.get("enabled")),
        # This host's node of a deployment across hosts (_serve_nodes.resolve), else None.
        "node": node or None,
    }
    for key in BENCH_KEYS:
        found["benchmark_" + key] = bench[key] if key in bench else single.get("benchmark_" + key)
    return dict(("vllm_serve_" + key, found[key]) for key in SERVICE_VARS)


def router_address(bind, address=None, ansible_host=None, hostname=None):
    """Where a router reaches a service: vllm_serve_router_address when set, else the service's bind address unless
    it is a wildcard, else the host's ansible_host, else its inventory name."""
    for value in (address, None if _text(bind) in WILDCARDS else bind, ansible_host, hostname):
        if _text(value):
            return _text(value)
    return ""


def contract(service, hostname, address=None, ansible_host=None):
    """The service as preflight's contract (llm_stack_host.services) records it for the router: name, unit, server,
    served_model_name, model, port, bind, address, gpus, the parallel sizes and router (membership)."""
    service = _dict(service)
    bind = _text(service.get("host")) or "0.0.0.0"
    node = _dict(service.get("node"))
    # A headless node of a deployment across hosts runs no API server: no router, nothing to scrape.
    headless = bool(node) and node.get("rank", 0) > 0
    routed = service.get("router", True) is not False and not headless
    return {
        "name": service.get("name"), "unit": unit_name(service), "server": _server_name(hostname, service),
        "served_model_name": service.get("served_model_name"), "model": service.get("model"),
        "port": service.get("port"), "bind": bind,
        "address": router_address(bind, address, ansible_host, hostname),
        "gpus": service.get("gpus"), "tensor_parallel_size": service.get("tensor_parallel_size"),
        "pipeline_parallel_size": service.get("pipeline_parallel_size"),
        "data_parallel_size": service.get("data_parallel_size"), "router": routed,
        "router_server": _server_name(hostname, service) if routed else None,
        "headless": headless,
        "node": {"group": node["group"], "rank": node["rank"], "nnodes": node["nnodes"], "head": node["head"],
                 "address": node["address"]} if node else None,
    }


def host_services(inputs, single, facts, hostname, address=None, ansible_host=None, check_gpus=True, nodes=None):
    """The host's services for the role: {single, services: [{name, unit, vars, contract}], contract, errors}.

    errors: the normalisation's, those of each deployment across hosts (nodes: {groups: {group: [hosts]},
    addresses: {host: address}}, the inventory's view the action reads) and, where check_gpus, problems()' on the
    host's GPUs (facts: ansible_facts)."""
    listed = services(inputs, single)
    errors = list(listed["errors"])
    test_host = _test_host(single)
    for service in listed["services"]:
        if service.get("nodes") and not errors:
            resolved = _serve_nodes.resolve(service["nodes"], hostname, _dict(nodes).get("groups"),
                                            _dict(nodes).get("addresses"), facts, test_host, service["path"] + ".nodes")
            errors.extend(resolved["errors"])
            service["node"] = resolved["node"]
            if resolved["node"] and not service.get("gpus"):
                errors.extend(_serve_nodes.world_problems(
                    _label(service), service["path"], service["tensor_parallel_size"],
                    service["pipeline_parallel_size"], service["data_parallel_size"], None, resolved["node"]["nnodes"],
                    test_host))
    if check_gpus and not errors:
        errors.extend(problems(listed["services"], _dict(facts)))
    found = []
    for service in listed["services"]:
        found.append({"name": service["name"], "unit": unit_name(service),
                      "vars": None if service.get("single") else role_vars(service, single),
                      "contract": contract(service, hostname, address, ansible_host)})
    single_case = bool(listed["services"]) and bool(listed["services"][0].get("single"))
    return {"single": single_case, "services": found, "contract": [one["contract"] for one in found],
            "errors": errors}


def _test_host(single):
    value = _dict(single).get("cpu_only_test_host")
    return value is True or _text(value).lower() == "true"


def host_gate(listed, gates):
    """vllm_serve_gate of the host: the gate of its last service checked (the inputs preflight judges again), with
    the errors and warnings of every service's gate and of the list (listed: host_services()' result), and the
    services' contract. With no service checked (the list itself has problems), a gate that only reports them."""
    listed = _dict(listed)
    gates = [gate for gate in gates or [] if isinstance(gate, dict)]
    errors = list(listed.get("errors") or [])
    warnings = []
    for gate in gates:
        for message in gate.get("errors") or []:
            if message not in errors:
                errors.append(message)
        for message in gate.get("compat_warnings") or []:
            if message not in warnings:
                warnings.append(message)
    found = dict(gates[-1]) if gates else {"skipped": True, "skip_reason": "the services' list has problems"}
    found.update(errors=errors, compat_warnings=warnings, ok=not errors,
                 services=list(listed.get("contract") or []) if not errors else [])
    return found


def manifest(plans, contracts):
    """The manifest of the services the role runs on the host (its config_dir/services.json, no secret): per unit,
    the mode, the files the role wrote for it, the URL it answers at and its router server name, so that a later run
    can drain and remove a service the inventory no longer lists."""
    servers = dict((_text(one.get("unit")), one) for one in contracts or [] if isinstance(one, dict))
    units = {}
    for plan_ in plans or []:
        plan_ = _dict(plan_)
        unit = _text(plan_.get("service"))
        if not unit:
            continue
        files = _dict(plan_.get("files"))
        units[unit] = {
            "mode": plan_.get("mode"), "url": _dict(plan_.get("health")).get("url") or plan_.get("base_url"),
            "server": _dict(servers.get(unit)).get("server"),
            "router": _dict(servers.get(unit)).get("router", True) is not False,
            "files": dict((key, files[key]) for key in MANIFEST_FILES if files.get(key)),
            "supervisorctl": plan_.get("supervisorctl") or [],
        }
    return {"version": MANIFEST_VERSION, "units": units}


def read_manifest(content):
    """The recorded manifest from slurp's base64 content (or its parsed JSON): a dict, else None (no manifest, or
    one that is not the role's: nothing is removed on its word)."""
    if isinstance(content, dict):
        return content
    try:
        found = json.loads(base64.b64decode(_text(content)).decode("utf-8")) if _text(content) else None
    except (ValueError, TypeError, UnicodeDecodeError):
        return None
    return found if isinstance(found, dict) and found.get("version") == MANIFEST_VERSION else None


def removal_records(listed_units, recorded):
    """What to stop and remove: the entries of the recorded manifest (recorded: its parsed JSON, or None) whose
    unit the inventory no longer lists (removals()), each {unit, mode, url, server, router, files, supervisorctl}.
    A recorded file path outside the role's own names is dropped: only <dir>/<unit>.<suffix> is ever removed."""
    units = _dict(_dict(recorded).get("units"))
    found = []
    for unit in removals([{"unit": name} for name in listed_units or []], sorted(units)):
        entry = _dict(units.get(unit))
        files = dict((key, path) for key, path in _dict(entry.get("files")).items()
                     if isinstance(path, str) and path.startswith("/") and ".." not in path.split("/")
                     and path.rsplit("/", 1)[-1].split(".", 1)[0] == unit)
        found.append({"unit": unit, "mode": entry.get("mode") if entry.get("mode") in ("systemd", "supervisord")
                      else "systemd", "url": _text(entry.get("url")), "server": _text(entry.get("server")),
                      "router": entry.get("router", True) is not False and bool(_text(entry.get("server"))),
                      "files": files,
                      "supervisorctl": [_text(word) for word in entry.get("supervisorctl") or []]})
    return found


# --- the drain wait --------------------------------------------------------------------

def _value(text):
    try:
        return float(text)
    except ValueError:
        return float("nan")


def metrics_idle(text):
    """vLLM's /metrics (Prometheus text format) read for the drain wait.

    Sums every sample of vllm:num_requests_running and vllm:num_requests_waiting, with any labels (every engine of a
    data parallel server, any model_name, the older format without engine). The names are matched exactly: both are
    gauges, exported without a suffix; a counter's _total or _created sample, or vllm:num_requests_waiting_by_reason,
    is another metric. A value that is NaN, infinite, negative or unreadable, or a gauge without a sample, is not
    idle. Returns {running, waiting, idle, problem}; running/waiting are None where not known.
    """
    sums = dict((name, 0.0) for name in IDLE_GAUGES)
    seen = dict((name, 0) for name in IDLE_GAUGES)
    bad = []
    for line in _text(text).splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE_RE.match(line)
        if not match or match.group("name") not in sums:
            continue
        name, value = match.group("name"), _value(match.group("value"))
        seen[name] += 1
        if math.isnan(value) or math.isinf(value) or value < 0:
            bad.append("%s=%s" % (name, match.group("value")))
        else:
            sums[name] += value
    missing = [name for name in IDLE_GAUGES if not seen[name]]
    known = dict((name, sums[name] if seen[name] and not any(b.startswith(name + "=") for b in bad) else None)
                 for name in IDLE_GAUGES)
    running, waiting = known[IDLE_GAUGES[0]], known[IDLE_GAUGES[1]]
    problem = ""
    if missing:
        problem = ("no sample of %s in /metrics: not a vLLM server, or its metrics are off"
                   % " or ".join(missing))
    elif bad:
        problem = "unreadable value(s): %s" % ", ".join(bad)
    idle = not problem and running == 0 and waiting == 0
    return {"running": running, "waiting": waiting, "idle": idle, "problem": problem}


# --- the router ------------------------------------------------------------------------

def _server_name(host, service):
    """<host>_<service name>: the host's name with any character HAProxy does not take in a server name (and _)
    as -; service names have no _, so two (host, service) pairs never share a server name."""
    return "%s_%s" % (re.sub(r"[^A-Za-z0-9.-]+", "-", _text(host)), service.get("name"))


def router_backends(services_by_host):
    """{served_model_name: [{host, address, port, server, unit}]} of every service, sorted by server name.

    services_by_host: {inventory_hostname: {address, services}} (address: the address the router reaches the host
    at, else the host's name); the server name is <host>_<service name>.
    """
    found = {}
    for host in sorted(_dict(services_by_host), key=str):
        entry = _dict(services_by_host[host])
        address = _text(entry.get("address")) or _text(host)
        for service in entry.get("services") or []:
            # A headless node of a deployment across hosts has no API server: only its head is a backend.
            if not isinstance(service, dict) or service.get("port") is None or service.get("headless"):
                continue
            found.setdefault(service["served_model_name"], []).append({
                "host": _text(host), "address": address, "port": service["port"],
                "server": _server_name(host, service), "unit": unit_name(service)})
    for model in found:
        found[model].sort(key=lambda backend: backend["server"])
    return found


def backend_names(backends):
    """{served_model_name: HAProxy backend name}: be_<slug>, with a number where two slugs are the same."""
    names, taken = {}, set()
    for model in sorted(backends):
        base = "be_" + (_slug(model).replace("-", "_") or "model")
        name, number = base, 2
        while name in taken:
            name, number = "%s_%d" % (base, number), number + 1
        taken.add(name)
        names[model] = name
    return names


def drain_plan(host, backends):
    """What draining host means in the router: the (backend, server) pairs of its services, and the served models
    that would have no other server (the capacity guard refuses those).

    Returns {servers: [(backend, server)], alone: [served_model_name]}.
    """
    names = backend_names(backends)
    servers, alone = [], []
    for model in sorted(backends):
        own = [b for b in backends[model] if b["host"] == _text(host)]
        servers.extend((names[model], b["server"]) for b in own)
        if own and len(own) == len(backends[model]):
            alone.append(model)
    return {"servers": servers, "alone": alone}


def models_map(backends):
    """The text of the models map file: one '<served_model_name> <backend>' line per model, sorted."""
    names = backend_names(backends)
    return "".join("%s %s\n" % (model, names[model]) for model in sorted(backends))


def _hap_quote(text):
    """A word in double quotes as HAProxy's config parser reads it (backslash and double quote escaped)."""
    return '"%s"' % text.replace("\\", "\\\\").replace('"', '\\"')


def _model_regex(model):
    """PCRE matching the model's id in /v1/models, in vLLM's JSON with or without a space after the colon."""
    return '"id": ?"%s"' % re.sub(r"([.^$*+?()\[\]{}|\\/-])", r"\\\1", model)


ROUTER_DEFAULTS = {
    "bind": "0.0.0.0:8080", "socket": "/run/llm-router/admin.sock", "state_file": "/var/lib/llm-router/server-state",
    "api_keys_file": "/etc/llm-router/api_keys.lst", "map_file": "/etc/llm-router/models.map",
    "backend_key_env": "LLM_ROUTER_BACKEND_KEY", "request_timeout": 600, "bufsize": 65536,
    "inter": "2s", "fall": 2, "rise": 2, "metrics_bind": "",
}


def haproxy_config(backends, settings=None):
    """The text of the router's haproxy.cfg (HAProxy 2.6), deterministic and without secrets.

    backends: router_backends()' result; settings: ROUTER_DEFAULTS' keys (metrics_bind: where HAProxy's Prometheus
    exporter answers /metrics, none when empty). The client keys are the lines
    'Bearer <key>' of api_keys_file (0600); the key of the vLLM servers comes from the environment variable
    backend_key_env. A POST is routed by its body's model field through map_file (models_map's text); an unknown
    model gets 404, a body whose model cannot be read in the first bufsize bytes 400 when more than one model is
    served; other requests (GET /v1/models) go to be_any. Each model's servers are UP only while /v1/models lists
    the model (so a model switch needs no new config).
    """
    cfg = dict(ROUTER_DEFAULTS)
    cfg.update(_dict(settings))
    names = backend_names(backends)
    key = "${%s}" % cfg["backend_key_env"]
    timeout = int(cfg["request_timeout"])
    lines = [
        "# Managed by gpufleet.llm_stack (llm_router). No secrets here: the keys are in the ACL file and the"
        " environment.",
        "global",
        "    stats socket %s mode 600 level admin expose-fd listeners" % cfg["socket"],
        "    server-state-file %s" % cfg["state_file"],
        "    tune.bufsize %d" % int(cfg["bufsize"]),
        "",
        "defaults",
        "    mode http",
        "    load-server-state-from-file global",
        "    timeout connect 3s",
        "    timeout http-request 30s",
        "    timeout client %ds" % timeout,
        "    timeout server %ds" % timeout,
        "    timeout http-keep-alive 10s",
        "    timeout queue 120s",
        "    retries 3",
        "    option redispatch 1",
        "    retry-on conn-failure empty-response 503",
        "",
        "frontend llm",
        "    bind %s" % cfg["bind"],
        "    acl key_ok req.hdr(authorization) -m str -f %s" % cfg["api_keys_file"],
        "    http-request return status 401 content-type application/json string '{\"error\":\"Unauthorized\"}'"
        " unless key_ok",
        "    http-request set-header Authorization \"Bearer %s\"" % key,
        "    option http-buffer-request",
        "    http-request set-var(txn.model) req.body,json_query('$.model') if METH_POST",
        "    http-request set-var(txn.be) var(txn.model),map_str(%s) if { var(txn.model) -m found }" % cfg["map_file"],
    ]
    if len(backends) > 1:
        lines.append("    http-request return status 400 content-type application/json string"
                     " '{\"error\":{\"message\":\"no model field in the first %d bytes of the body\",\"type\":"
                     "\"BadRequestError\",\"code\":400}}' if METH_POST !{ var(txn.model) -m found }"
                     % int(cfg["bufsize"]))
    lines += [
        "    http-request return status 404 content-type application/json string '{\"error\":{\"message\":\"model"
        " not served here\",\"type\":\"NotFoundError\",\"code\":404}}' if { var(txn.model) -m found }"
        " !{ var(txn.be) -m found }",
        "    use_backend %[var(txn.be)] if { var(txn.be) -m found }",
        "    default_backend be_any",
    ]
    every = {}
    for model in sorted(backends):
        lines += [
            "",
            "backend %s" % names[model],
            "    balance leastconn",
            "    option httpchk",
            "    http-check send meth GET uri /v1/models hdr Authorization %s" % _hap_quote("Bearer " + key),
            "    http-check expect rstring %s" % _hap_quote(_model_regex(model)),
            "    default-server inter %s fall %d rise %d" % (cfg["inter"], int(cfg["fall"]), int(cfg["rise"])),
        ]
        for backend in backends[model]:
            lines.append("    server %s %s:%d check" % (backend["server"], backend["address"], backend["port"]))
            every[backend["server"]] = backend
    lines += [
        "",
        "backend be_any",
        "    balance leastconn",
        "    option httpchk GET /health",
        "    default-server inter %s fall %d rise %d" % (cfg["inter"], int(cfg["fall"]), int(cfg["rise"])),
    ]
    for server in sorted(every):
        lines.append("    server %s %s:%d check" % (server, every[server]["address"], every[server]["port"]))
    if cfg["metrics_bind"]:
        # HAProxy's own Prometheus exporter (built into Debian's 2.6), for the llm_monitoring role; no key: it tells
        # the servers' states and counters, nothing of the requests.
        lines += [
            "",
            "frontend metrics",
            "    bind %s" % cfg["metrics_bind"],
            "    http-request use-service prometheus-exporter if { path /metrics }",
            "    http-request return status 404",
        ]
    return "\n".join(lines) + "\n"
