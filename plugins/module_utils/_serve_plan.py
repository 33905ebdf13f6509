# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: the vllm_serve role's plan (``plan``), its readings of the host's view, the command lines, the
environment file and the fingerprint. The public names are vllm_serve's, which re-exports them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import re

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import serve_fit
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._readers import as_bool as _bool, as_dict as _dict, text as _text
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._readers import raw_text as _raw_text
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.hf_local import model_path
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.host_gpus import host_gpus

MODES = ("auto", "systemd", "supervisord")
STOP_TIMEOUT = 60
STOP_GRACE = 45
BENCH_WHEN = ("changed", "always", "never")
# The fact gpufleet.llm_stack.vllm_bench_result sets with the benchmark's numbers.
BENCH_FACT = "vllm_serve_benchmark_result"

# The keys of the role's inputs (the vllm_serve_* variable of the same name
# unless said otherwise); any other key is a bug of the role.
INPUTS = (
    "model", "served_model_name", "service_name", "models_dir", "model_dir", "venv", "command", "mode",
    "host", "port", "tensor_parallel_size", "pipeline_parallel_size", "gpu_memory_utilization", "max_model_len",
    "enforce_eager", "extra_args", "preset", "env", "user", "group", "config_dir", "cache_dir", "log_dir",
    "restart_sec", "start_limit_burst", "start_limit_interval", "supervisor_venv", "supervisor_version",
    "supervisor_run_dir", "supervisor_start_retries", "supervisor_wheelhouse", "supervisor_wheelhouse_dest",
    "health_timeout", "health_poll", "health_tokens", "gpu_wait_timeout",
    "benchmark", "benchmark_when", "benchmark_num_prompts", "benchmark_input_len", "benchmark_output_len",
    "benchmark_seed", "benchmark_request_rate", "benchmark_thresholds", "benchmark_fail_on_miss",
    "benchmark_dir", "benchmark_command", "cpu_only_test_host", "hostname", "prefix_venv", "vllm_version", "node",
)

# The thresholds an inventory may set: result key of bench_result, comparison.
THRESHOLDS = {
    "max_ttft_p50_ms": ("ttft_p50_ms", "max"),
    "max_ttft_p99_ms": ("ttft_p99_ms", "max"),
    "max_tpot_ms": ("tpot_mean_ms", "max"),
    "min_request_throughput": ("request_throughput", "min"),
    "min_output_throughput": ("output_throughput", "min"),
    "min_total_token_throughput": ("total_token_throughput", "min"),
}

SECRET_ENV = ("VLLM_API_KEY", "HF_TOKEN")
# The shortest API key taken: 16 characters (a random hex key of 64 bits at least).
API_KEY_MIN_LENGTH = 16
# Environment the role writes itself (the user's vllm_serve_env may not set them).
ROLE_ENV = ("VLLM_API_KEY", "HF_TOKEN", "HF_HUB_OFFLINE", "HOME")

_NAME_RE = re.compile(r"[a-z_][a-z0-9_-]{0,30}", re.ASCII)
_SERVICE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,99}", re.ASCII)
_ENV_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)
_MODEL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*", re.ASCII)
_HOST_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.:-]*|\[[0-9A-Fa-f:]+\]", re.ASCII)
_VERSION_RE = re.compile(r"[0-9]+(\.[0-9]+)*", re.ASCII)
_SLUG_RE = re.compile(r"[^a-z0-9]+")


class VllmServeError(TypeError):
    """The role passed something of the wrong shape (a bug of the caller, not of the inventory)."""


# --- small readers (serve_fit's, on inventory values with a message) -----------

_int = serve_fit.whole
_number = serve_fit.number
_has_bad_chars = serve_fit.has_bad_chars


def slug(text):
    """A lower-case name made of [a-z0-9-] ('Qwen/Qwen3.5-9B' -> 'qwen3-5-9b')."""
    return _SLUG_RE.sub("-", _text(text).lower()).strip("-") or "model"


# --- reading the host's view -------------------------------------------------

def pid1_mode(info):
    """'systemd' when PID 1 is systemd, else 'supervisord', from vllm_serve_info's ``pid1``."""
    comm = _text(_dict(info).get("pid1"))
    return "systemd" if comm == "systemd" else "supervisord"


def _is_loopback(address):
    """Whether a bind address is a loopback address (127.0.0.0/8, ::1, localhost)."""
    text = _text(address).strip("[]")
    return text == "localhost" or text == "::1" or text.startswith("127.")


def _url_host(address):
    """An address as a URL's host: an IPv6 address in brackets."""
    return "[%s]" % address if ":" in address and not address.startswith("[") else address


def host_gpu_count(facts):
    """GPUs of the host (host_gpus: preflight's contract when set, else gpu_facts' gpu_count); 0 without either."""
    return max(0, host_gpus(facts)["count"])


def host_gpu_memory(facts):
    """memory.total in MiB of each GPU (host_gpus: preflight's contract, else gpu_facts' gpu_devices); []."""
    return host_gpus(facts)["memory_mib"]


def heads_of(config):
    """(attention heads, KV heads) of a model's config.json, or (None, None).

    Multimodal configs (Qwen3.5's Qwen3_5ForConditionalGeneration) keep the
    language model's numbers in text_config; KV heads default to the
    attention heads (no GQA), as in transformers.
    """
    config = _dict(config)
    for part in (config, _dict(config.get("text_config")), _dict(config.get("llm_config"))):
        heads = part.get("num_attention_heads")
        if isinstance(heads, int) and not isinstance(heads, bool) and heads > 0:
            kv = part.get("num_key_value_heads")
            if not isinstance(kv, int) or isinstance(kv, bool) or kv <= 0:
                kv = heads
            return heads, kv
    return None, None


# --- command lines -------------------------------------------------------------

def systemd_quote(arg):
    """One ExecStart word as systemd reads it: double-quoted when needed, % and $ doubled."""
    text = arg.replace("%", "%%").replace("$", "$$")
    if text and re.fullmatch(r"[A-Za-z0-9_@%+=:,./-]+", text):
        return text
    return '"%s"' % text.replace("\\", "\\\\").replace('"', '\\"')


def shell_quote(arg):
    """One word for /bin/sh, in single quotes."""
    if arg and re.fullmatch(r"[A-Za-z0-9_@%+=:,./-]+", arg):
        return arg
    return "'%s'" % arg.replace("'", "'\"'\"'")


def env_quote(value):
    """A value for a file that both systemd's EnvironmentFile= and sh's `.` read the same way."""
    return "'%s'" % value


# --- the plan ----------------------------------------------------------------------

_list_of_str = serve_fit.list_of_str


def _check_env(env, errors):
    found = {}
    if env is None or env == "":
        return found
    if not isinstance(env, dict):
        errors.append("vllm_serve_env must be a dict of NAME: value, got %s. Fix: write it as a mapping such as"
                      " {NCCL_NVLS_ENABLE: \"0\"}" % type(env).__name__)
        return found
    for key in sorted(env, key=str):
        value = env[key]
        name = str(key)
        if not _ENV_KEY_RE.fullmatch(name):
            errors.append("vllm_serve_env has %r, not a variable name. Fix: use letters, digits and _ only" % name)
            continue
        if name in ROLE_ENV:
            errors.append("vllm_serve_env sets %s, which the role writes itself. Fix: remove it%s"
                          % (name, " and set vllm_serve_api_key / vllm_serve_hf_token" if name in SECRET_ENV else ""))
            continue
        if isinstance(value, (dict, list, tuple)) or value is None:
            errors.append("vllm_serve_env.%s is not a string. Fix: quote it in the inventory" % name)
            continue
        if isinstance(value, bool):
            value = "1" if value else "0"
        text = str(value)
        if _has_bad_chars(text) or "'" in text:
            errors.append("vllm_serve_env.%s holds a newline, NUL byte or single quote, which the environment file"
                          " cannot carry. Fix: remove it" % name)
            continue
        found[name] = text
    return found


def _check_thresholds(thresholds, errors):
    found = {}
    if thresholds is None or thresholds == "":
        return found
    if not isinstance(thresholds, dict):
        errors.append("vllm_serve_benchmark_thresholds must be a dict, got %s. Fix: write it as a mapping such as"
                      " {max_tpot_ms: 200, min_request_throughput: 50}" % type(thresholds).__name__)
        return found
    for key in sorted(thresholds, key=str):
        if key not in THRESHOLDS:
            errors.append("vllm_serve_benchmark_thresholds has %s, not a threshold. Fix: use some of %s"
                          % (key, ", ".join(sorted(THRESHOLDS))))
            continue
        value = _number(thresholds[key], "vllm_serve_benchmark_thresholds.%s" % key, errors,
                        "set it to a number above 0", low=0, low_open=True)
        if value is not None:
            found[key] = value
    return found


def gpu_indexes(env, count):
    """The nvidia-smi indexes of the count GPUs vLLM takes: the first count of CUDA_VISIBLE_DEVICES (vllm_serve_env)
    when it lists indexes, else 0 to count-1; none when it names GPUs by UUID or MIG instance (not mapped here)."""
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        return []
    visible = _text((env or {}).get("CUDA_VISIBLE_DEVICES")).strip() if isinstance(env, dict) else ""
    if not visible:
        return list(range(count))
    items = [item.strip() for item in visible.split(",") if item.strip()]
    if not all(re.match(r"^\d{1,4}$", item, re.ASCII) for item in items):
        return []
    return [int(item) for item in items][:count]


def model_dir_of(models_dir, model):
    """The directory qwen_model_fetch keeps current: <models_dir>/<org>/<name>/current.

    The layout's one rule is hf_local.model_path, for qwen_model_fetch's directories and this one alike; this role
    reads none of qwen_model_fetch's facts (it may run without it in the play).
    """
    return model_path(models_dir, model)


def reading_options(plan_, inputs):
    """The options of vllm_serve_info from the plan made before the reading: its model directory, venv, service and
    supervisorctl, and vllm_serve_mode as set where it is one of MODES, else auto (the plan reports a bad mode)."""
    if not isinstance(plan_, dict):
        raise VllmServeError("reading_options needs a plan")
    mode = _dict(inputs).get("mode")
    return {"model_dir": plan_["model_dir"], "venv": plan_["venv"], "service": plan_["service"],
            "mode": mode if mode in MODES else "auto", "supervisorctl": plan_["supervisorctl"],
            "fingerprint_file": plan_["files"]["fingerprint"]}


SERVE_KEYS = ("model", "tensor_parallel_size", "pipeline_parallel_size", "max_model_len", "gpu_memory_utilization",
              "extra_args", "env", "preset", "cpu_only_test_host")


def serve_inputs(inputs):
    """The role's inputs that the serving checks read (serve_fit.check; the gate's part serve gets the same)."""
    return dict((key, _dict(inputs).get(key)) for key in SERVE_KEYS)


def plan(inputs, facts=None, info=None, api_key=None, hf_token=None):
    """The role's variables, the host's facts and vllm_serve_info's result in; the plan out.

    The secrets are only checked (present, writable to the environment
    file); nothing of them is in the plan. ``api_key`` None (preflight, which
    reads no secret) leaves the key unchecked. The serving checks are
    ``serve_fit.check``'s, the gate's part serve: errors go to ``errors``,
    the checks that could not be made to ``warnings``.
    """
    if not isinstance(inputs, dict):
        raise VllmServeError("the inputs must be a dict, got %s" % type(inputs).__name__)
    unknown = sorted(set(inputs) - set(INPUTS))
    if unknown:
        raise VllmServeError("unknown input key(s): %s" % ", ".join(unknown))
    if facts is not None and not isinstance(facts, dict):
        raise VllmServeError("facts must be a dict")
    if info is not None and not isinstance(info, dict):
        raise VllmServeError("info must be a vllm_serve_info result (a dict)")
    info = info or {}
    errors = []
    get = inputs.get
    hostname = _text(get("hostname")) or "this host"
    test_host = _bool(get("cpu_only_test_host"))

    model = _text(get("model"))
    if not _MODEL_RE.fullmatch(model):
        errors.append("vllm_serve_model=%s is not a model repository id ORG/NAME. Fix: set vllm_serve_model (default"
                      " llm_stack_model) to an id such as Qwen/Qwen3.5-9B" % (model or '""'))
    served = _text(get("served_model_name")) or model
    if _has_bad_chars(served) or " " in served:
        errors.append("vllm_serve_served_model_name has spaces or control characters. Fix: use a name such as"
                      " qwen3.5-9b")
    service = _text(get("service_name")) or "vllm-%s" % slug(served)
    if not _SERVICE_RE.fullmatch(service) or service.endswith((".service", ".conf")):
        errors.append("vllm_serve_service_name=%s is not a service name. Fix: use letters, digits, '.', '_' and '-'"
                      " only, without a suffix, such as vllm-qwen" % service)
    model_dir = _text(get("model_dir")) or model_dir_of(get("models_dir"), model)
    for variable, path in (("vllm_serve_model_dir", model_dir), ("vllm_serve_config_dir", _text(get("config_dir"))),
                           ("vllm_serve_cache_dir", _text(get("cache_dir"))), ("vllm_serve_log_dir", _text(get("log_dir"))),
                           ("vllm_serve_benchmark_dir", _text(get("benchmark_dir"))),
                           ("vllm_serve_supervisor_venv", _text(get("supervisor_venv"))),
                           ("vllm_serve_supervisor_run_dir", _text(get("supervisor_run_dir")))):
        if not path and variable.startswith("vllm_serve_supervisor_"):
            continue
        if not path.startswith("/") or _has_bad_chars(path) or " " in path:
            errors.append("%s=%s is not an absolute path without spaces. Fix: set %s to one" % (variable, path, variable))
        elif "%" in path:
            errors.append("%s=%s has %%, which systemd (specifiers such as %%h) and supervisord (%%(ENV_HOME)s) would"
                          " expand in the unit and program files. Fix: set %s to a path without %%"
                          % (variable, path, variable))

    # The venv: llm_stack_host.venv (preflight) when no vllm_serve_venv is set.
    venv = _text(get("venv"))
    host = _dict(_dict(facts).get("llm_stack_host"))
    if not venv:
        venv = _text(host.get("venv")) or _text(get("prefix_venv"))
    if not venv.startswith("/") or _has_bad_chars(venv) or " " in venv or "%" in venv:
        errors.append("vllm_serve_venv=%s is not an absolute path without spaces or %%. Fix: set vllm_serve_venv"
                      " (default: preflight's llm_stack_host.venv, else llm_stack_venv)" % venv)
    command = _list_of_str(get("command"), "vllm_serve_command", errors, "list the command that starts the server,"
                           " such as [/opt/llm-stack/venv/bin/vllm, serve]") or ["%s/bin/vllm" % venv, "serve"]
    bench_command = _list_of_str(get("benchmark_command"), "vllm_serve_benchmark_command", errors,
                                 "list the command that runs the benchmark, such as"
                                 " [/opt/llm-stack/venv/bin/vllm, bench, serve]") or ["%s/bin/vllm" % venv, "bench", "serve"]
    for variable, words in (("vllm_serve_command", command), ("vllm_serve_benchmark_command", bench_command)):
        if not words[0].startswith("/"):
            errors.append("%s starts with %s, not an absolute path. Fix: give the program's full path"
                          % (variable, words[0]))

    user = _text(get("user"))
    group = _text(get("group")) or user
    for variable, name in (("vllm_serve_user", user), ("vllm_serve_group", group)):
        if not _NAME_RE.fullmatch(name) or name == "root":
            errors.append("%s=%s is not a system account name (root is refused: the server runs unprivileged)."
                          " Fix: set it to a name such as vllm" % (variable, name or '""'))

    mode = _text(get("mode")) or "auto"
    if mode not in MODES:
        errors.append("vllm_serve_mode=%s is not a mode. Fix: set it to auto, systemd or supervisord" % mode)
        mode = "auto"
    mode_reason = "set by vllm_serve_mode"
    if mode == "auto":
        mode = pid1_mode(info)
        mode_reason = "auto: PID 1 is %s" % (_text(info.get("pid1")) or "unknown")
    if mode == "systemd" and info and pid1_mode(info) != "systemd":
        errors.append("vllm_serve_mode=systemd but PID 1 on %s is %s, not systemd. Fix: set vllm_serve_mode to auto"
                      " or supervisord" % (hostname, _text(info.get("pid1")) or "unknown"))

    bind = _text(get("host")) or "0.0.0.0"
    if not _HOST_RE.fullmatch(bind):
        errors.append("vllm_serve_host=%s is not an address. Fix: set it to 0.0.0.0, 127.0.0.1 or a host address"
                      % bind)
    port = _int(get("port"), "vllm_serve_port", errors, "set it to a free TCP port such as 8000", low=1, high=65535)
    env_in = get("env")
    env_user = _check_env(env_in, errors)
    errors.extend(secret_problems(api_key, hf_token))
    if api_key is not None and not _text(api_key):
        errors.append("vllm_serve_api_key is empty on %s: the server would answer anyone. Fix: set vllm_serve_api_key"
                      " (from a vault) for this host or group" % hostname)

    # The serving checks of the gate's part serve (module_utils/serve_fit.py), on the same inputs.
    config = _dict(_dict(info.get("model")).get("config"))
    heads, kv = heads_of(config)
    # A deployment across hosts (node: _serve_nodes.resolve's, through vllm_serve_services[].nodes) has as many
    # GPUs on each of its nodes (_serve_nodes.across checks it before any start): the serving checks judge them all.
    node = _dict(get("node")) or None
    nnodes = node["nnodes"] if node else 1
    gpus = host_gpu_count(facts) * nnodes
    gpu_memory = host_gpu_memory(facts) * nnodes
    size = _dict(_dict(info.get("model")).get("manifest")).get("total_size")
    installed = _dict(info.get("vllm"))
    serving = serve_fit.check(serve_inputs(inputs), gpus, gpu_memory, config=config or None,
                              model_size=size if isinstance(size, int) and not isinstance(size, bool) else None,
                              vllm_options=installed.get("options") or None,
                              vllm_version=installed.get("version") or _text(get("vllm_version")) or None)
    warnings = []
    for dummy, severity, dummy_variables, message in serving["problems"]:
        (errors if severity == "error" else warnings).append(message)
    tp, tp_reason, pp = serving["tp"], serving["tp_reason"], serving["pp"]
    gmu, max_len, extra = serving["gpu_memory_utilization"], serving["max_model_len"], serving["extra_args"]
    if heads is None:
        heads, kv = serving["facts"].get("num_attention_heads"), serving["facts"].get("num_key_value_heads")

    restart_sec = _int(get("restart_sec"), "vllm_serve_restart_sec", errors, "set it to seconds such as 10", low=1)
    burst = _int(get("start_limit_burst"), "vllm_serve_start_limit_burst", errors, "set it such as 5", low=1)
    interval = _int(get("start_limit_interval"), "vllm_serve_start_limit_interval", errors,
                    "set it to seconds such as 600", low=1)
    retries = _int(get("supervisor_start_retries"), "vllm_serve_supervisor_start_retries", errors, "set it such as 3",
                   low=0)
    if not _VERSION_RE.fullmatch(_text(get("supervisor_version"))):
        errors.append("vllm_serve_supervisor_version=%s is not a release. Fix: set it such as \"4.3.0\""
                      % _text(get("supervisor_version")))
    health_poll = _int(get("health_poll"), "vllm_serve_health_poll", errors, "set it to seconds such as 5", low=1)
    health_tokens = _int(get("health_tokens"), "vllm_serve_health_tokens", errors, "set it such as 4", low=1, high=64)
    gpu_wait_timeout = _int(get("gpu_wait_timeout"), "vllm_serve_gpu_wait_timeout", errors,
                            "set it to seconds such as 60 (0: look once, without waiting)", high=3600)
    health_timeout = _int(get("health_timeout"), "vllm_serve_health_timeout", errors,
                          "set it to 0 (sized to the model) or seconds such as 900")
    if health_timeout == 0:
        # vLLM's start: imports and engine (~1-2 min), weights (~1 min per
        # 4 GiB from a local disk), profiling and CUDA graphs (1-3 min).
        gib = float(size) / 2 ** 30 if isinstance(size, (int, float)) and not isinstance(size, bool) else 20.0
        health_timeout = int(min(3600, 300 + 15 * gib))

    bench = _bool(get("benchmark"))
    bench_when = _text(get("benchmark_when")) or "changed"
    if bench_when not in BENCH_WHEN:
        errors.append("vllm_serve_benchmark_when=%s is not a choice. Fix: set it to changed, always or never"
                      % bench_when)
    bench_numbers = {}
    for key, low in (("num_prompts", 1), ("input_len", 1), ("output_len", 1), ("seed", 0)):
        bench_numbers[key] = _int(get("benchmark_" + key), "vllm_serve_benchmark_" + key, errors,
                                  "set it to a whole number", low=low)
    rate = _text(get("benchmark_request_rate")) or "inf"
    if rate != "inf":
        _number(rate, "vllm_serve_benchmark_request_rate", errors, "set it to inf or requests per second above 0",
                low=0, low_open=True)
    thresholds = _check_thresholds(get("benchmark_thresholds"), errors)

    cache_dir = _text(get("cache_dir"))
    log_dir = _text(get("log_dir"))
    config_dir = _text(get("config_dir"))
    connect = "127.0.0.1" if bind in ("0.0.0.0", "::", "[::]") else bind
    base_url = "http://%s:%s" % (connect, port)
    # A node waits for the GPUs of its own set (each runs world / nnodes ranks); one host's server for tp x pp.
    visible = [item for item in _text(_dict(env_user).get("CUDA_VISIBLE_DEVICES")).split(",") if item.strip()]
    wait_count = len(visible) if node and visible else (tp or 0) * (pp or 1)
    if node and _is_loopback(bind) and not test_host:
        errors.append("vllm_serve_host=%s on a node of a deployment across hosts: the other nodes' gates read the"
                      " head's /health at its bind address, and a loopback address is only the head's own. Fix: set"
                      " the service's host to 0.0.0.0 or to the head's node address" % bind)
    # A headless node's gate reads the head's /health: at the head's bind (the same service settings on every node),
    # or at its node address where the head listens on every address.
    head_url = None
    if node and node.get("rank", 0) > 0:
        head_url = "http://%s:%s" % (_url_host(node["master_addr"]) if connect != bind else connect, port)

    argv = list(command) + ["--model", model_dir, "--served-model-name", served, "--host", bind, "--port", str(port)]
    if tp is not None:
        argv += ["--tensor-parallel-size", str(tp)]
    if pp is not None and pp > 1:
        argv += ["--pipeline-parallel-size", str(pp)]
    if gmu is not None and gpus > 0:
        argv += ["--gpu-memory-utilization", "%g" % gmu]
    if max_len:
        argv += ["--max-model-len", str(max_len)]
    if _bool(get("enforce_eager")):
        argv.append("--enforce-eager")
    argv += serving["preset_args"] + extra

    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HOME": cache_dir,
           "XDG_CACHE_HOME": "%s/xdg" % cache_dir, "VLLM_CACHE_ROOT": "%s/vllm" % cache_dir,
           "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}
    env.update(env_user)
    env_names = sorted(set(env) | set(["VLLM_API_KEY"]) | (set(["HF_TOKEN"]) if _text(hf_token) else set()))

    files = {
        "env_file": "%s/%s.env" % (config_dir, service),
        "unit": "/etc/systemd/system/%s.service" % service,
        "wrapper": "%s/%s.sh" % (config_dir, service),
        "fingerprint": "%s/%s.fingerprint" % (config_dir, service),
        "log": "%s/%s.log" % (log_dir, service),
        "supervisor_conf": "%s/supervisord.conf" % config_dir,
        "supervisor_program": "%s/supervisor.d/%s.conf" % (config_dir, service),
        "supervisor_pidfile": "%s/llm-stack-supervisord.pid" % _text(get("supervisor_run_dir")),
        "supervisor_socket": "%s/llm-stack-supervisord.sock" % _text(get("supervisor_run_dir")),
        "supervisor_log": "%s/supervisord.log" % log_dir,
    }
    supervisor_venv = _text(get("supervisor_venv"))
    vllm = _dict(info.get("vllm"))
    manifest = _dict(_dict(info.get("model")).get("manifest"))
    identity = {
        "mode": mode, "argv": argv, "env": env, "env_names": env_names, "user": user, "group": group,
        "dirs": [cache_dir, log_dir, model_dir], "restart": [restart_sec, burst, interval, retries],
        "vllm": {"distribution": vllm.get("distribution"), "version": vllm.get("version"),
                 "record_sha256": vllm.get("record_sha256"), "files_sha256": vllm.get("files_sha256")},
        "model": {"target": _dict(info.get("model")).get("resolved"), "commit": manifest.get("commit"),
                  "repo_id": manifest.get("repo_id")},
    }
    if node:
        # The whole deployment (its hosts, their addresses, the head): a change of any node restarts every node.
        identity["node"] = node
    bench_file = "%s/%s-%s.json" % (_text(get("benchmark_dir")), service, fingerprint(identity)[:16])
    bench_argv = list(bench_command) + [
        "--backend", "vllm", "--base-url", base_url, "--endpoint", "/v1/completions",
        "--model", model_dir, "--served-model-name", served, "--tokenizer", model_dir,
        "--dataset-name", "random", "--random-input-len", str(bench_numbers["input_len"]),
        "--random-output-len", str(bench_numbers["output_len"]), "--num-prompts", str(bench_numbers["num_prompts"]),
        "--seed", str(bench_numbers["seed"]), "--request-rate", rate, "--ignore-eos",
        "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,99",
        "--save-result", "--result-dir", _text(get("benchmark_dir")), "--result-filename", bench_file.rsplit("/", 1)[1],
        "--disable-tqdm"]

    result = {
        "ok": not errors, "errors": errors, "warnings": warnings, "mode": mode, "mode_reason": mode_reason, "service": service,
        "served_model_name": served, "model": model, "model_dir": model_dir, "venv": venv, "command": command,
        "user": user, "group": group, "config_dir": config_dir, "cache_dir": cache_dir, "log_dir": log_dir,
        "tensor_parallel_size": tp, "tensor_parallel_reason": tp_reason, "gpu_count": gpus,
        "heads": heads, "kv_heads": kv, "pipeline_parallel_size": pp,
        "preset": serving["preset"], "preset_reason": serving["preset_reason"], "preset_args": serving["preset_args"],
        "memory": serving["memory"], "extra_args": extra, "gpu_memory_mib": gpu_memory,
        "argv": argv, "exec_start": " ".join(systemd_quote(arg) for arg in argv),
        "exec_shell": " ".join(shell_quote(arg) for arg in argv),
        "env": env, "env_names": env_names, "files": files, "base_url": base_url,
        "restart_sec": restart_sec, "start_limit_burst": burst, "start_limit_interval": interval,
        "supervisor_start_retries": retries, "supervisor_venv": supervisor_venv,
        # A server that exits within its first minute did not start (supervisord startsecs):
        # after supervisor_start_retries such starts the program is FATAL, and the gate says so.
        "supervisor_start_secs": 60,
        # Seconds a stop may take (systemd TimeoutStopSec, supervisord stopwaitsecs) before the service manager kills
        # what is left; the supervisord wrapper kills the server's process group (TERM, then KILL) within
        # stop_grace seconds of its own, below that, so that it still runs to kill the group and exit.
        "stop_timeout": STOP_TIMEOUT,
        "stop_grace": STOP_GRACE,
        "gpu_wait": {"timeout": gpu_wait_timeout, "memory_utilization": gmu,
                     "gpus": gpu_indexes(env, wait_count if gpus else 0)},
        "supervisor_version": _text(get("supervisor_version")),
        "supervisorctl": ["%s/bin/supervisorctl" % supervisor_venv, "-c", files["supervisor_conf"]],
        "supervisor_pip_argv": supervisor_pip_argv(supervisor_venv, _text(get("supervisor_version")),
                                                   get("supervisor_wheelhouse"), get("supervisor_wheelhouse_dest")),
        "health": {"url": head_url or base_url, "timeout": health_timeout, "poll": health_poll,
                   "tokens": health_tokens, "headless": bool(head_url)},
        # A node of a deployment across hosts: its rank and head; a headless node (rank > 0) runs no API server,
        # so its gate is its process (the head's gate, with a real completion, is the deployment's) and it runs no
        # benchmark.
        "node": node,
        "headless": bool(node) and node.get("rank", 0) > 0,
        "benchmark": {"enabled": bench and bench_when != "never" and not (node and node.get("rank", 0) > 0),
                      "when": bench_when, "argv": bench_argv,
                      "file": bench_file, "dir": _text(get("benchmark_dir")), "thresholds": thresholds,
                      "fail_on_miss": _bool(get("benchmark_fail_on_miss")),
                      # The fact the role's result reads the numbers from; none when no benchmark runs, so that a
                      # fact of an earlier run is not reported.
                      "result_fact": BENCH_FACT if bench and bench_when != "never" else None},
        # vllm_serve_env as the gate's part serve reads it: the mapping as set, else {} (the plan's errors say why).
        "serve_env": dict(env_in) if isinstance(env_in, dict) else {},
        "fingerprint": fingerprint(identity),
        # A running service whose recorded fingerprint differs restarts in this run (a router drains it first).
        "restart_expected": bool(_dict(info.get("service")).get("up"))
        and _text(_dict(info.get("service")).get("fingerprint")) != fingerprint(identity),
        "cpu_only_test_host": test_host,
    }
    return result


def supervisor_pip_argv(venv, version, wheelhouse, wheelhouse_dest):
    """pip's argv that installs supervisor into its venv: from the pushed wheelhouse alone where one is set, else
    from the index (PIP_INDEX_URL of supervisor_pip_environment, or pip's own configuration)."""
    source = ["--no-index", "--find-links", _raw_text(wheelhouse_dest)] if wheelhouse else []
    return (["%s/bin/python" % venv, "-m", "pip", "install", "--no-input", "--disable-pip-version-check"] + source
            + ["supervisor==%s" % version])


def supervisor_pip_environment(index_url):
    """The environment of supervisor's pip: PIP_INDEX_URL where vllm_serve_supervisor_index_url is set, else none
    (pip's own configuration). It may hold credentials: never in the plan."""
    return {"PIP_INDEX_URL": index_url} if index_url else {}


def gate_fail_as(hostname, collect):
    """stack_compat's fail_as for the role's gate: outside preflight's collection any error stops the host, named
    so; in preflight ('') the errors are only collected."""
    return "" if collect else "vllm_serve on %s" % hostname


def fingerprint(identity):
    """sha256 of what a running server depends on, secrets excluded (their file restarts on its own)."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def env_file_text(plan_, api_key, hf_token=""):
    """The 0600 environment file: the plan's environment plus the secrets. The only place they are written."""
    if not isinstance(plan_, dict) or not isinstance(plan_.get("env"), dict):
        raise VllmServeError("env_file_text needs a plan")
    key = _text(api_key)
    token = _text(hf_token)
    for name, value in (("vllm_serve_api_key", key), ("vllm_serve_hf_token", token)):
        if _unsafe_secret(value):
            raise VllmServeError("%s holds a space, quote, backslash, control or non-ASCII character. Fix: use a key"
                                 " of letters, digits and - _ . only" % name)
    lines = ["# Managed by gpufleet.llm_stack.vllm_serve. Mode 0600: it holds secrets."]
    env = dict(plan_["env"])
    env["VLLM_API_KEY"] = key
    if token:
        env["HF_TOKEN"] = token
    for name in sorted(env):
        lines.append("%s=%s" % (name, env_quote(env[name])))
    return "\n".join(lines) + "\n"


def _unsafe_secret(value):
    """True for a secret the environment file cannot carry as it is: anything but printable ASCII, a quote, \\."""
    return any(not "!" <= char <= "~" or char in "'\"\\" for char in value)


def secret_problems(api_key, hf_token):
    """Messages for secrets the environment file cannot carry, or an API key too short to be one (no secret in them).

    The file is read line by line, split on newline only (systemd's EnvironmentFile=, sh's `.`); a vertical
    tab, a form feed or a Unicode line separator would split the value elsewhere in a reader that splits
    lines as Python's str.splitlines does, so only printable ASCII without quotes and backslashes is taken.
    """
    problems = []
    for name, value in (("vllm_serve_api_key", _text(api_key)), ("vllm_serve_hf_token", _text(hf_token))):
        if _unsafe_secret(value):
            problems.append("%s holds a space, quote, backslash, control or non-ASCII character, which the environment"
                            " file cannot carry. Fix: use a key of letters, digits and - _ . only" % name)
    key = _text(api_key)
    if api_key is not None and key and len(key) < API_KEY_MIN_LENGTH:
        problems.append("vllm_serve_api_key has %d characters, fewer than %d: anyone could guess it. Fix: set"
                        " vllm_serve_api_key (from a vault) to a random key of at least %d characters, such as the"
                        " output of: openssl rand -hex 24" % (len(key), API_KEY_MIN_LENGTH, API_KEY_MIN_LENGTH))
    return problems


def read_env_key(text, name="VLLM_API_KEY"):
    """The value of one variable of an environment file written by env_file_text ('' when absent).

    Lines are split on newline only, as systemd's EnvironmentFile= and sh read them (str.splitlines would
    also split on \\v, \\f, \\x1c-\\x1e, \\x85 and \\u2028).
    """
    for line in (text or "").split("\n"):
        if line.startswith(name + "="):
            value = line[len(name) + 1:]
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            return value
    return ""
