# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The llm_monitoring role's decisions: what Prometheus scrapes (from the serving hosts' preflight contracts, the
routers' and the exporter hosts' inventory settings), its config, the TTFT targets' rules, the settings' problems,
and the reading of Prometheus's targets API for the role's gate and the fleet report.

Scrape jobs: vllm (each service's /metrics), vllm-health (the same servers' /health: vLLM's engine check, an empty
200 body when healthy), llm-router (HAProxy's exporter on each router), node (prometheus-node-exporter on each
exporter host, with the GPU collector's llm_gpu_* metrics) and prometheus (itself). Every target carries the labels
host (the inventory name) and, for a service, service, served_model and unit; the alert rules
(roles/llm_monitoring/files/llm-stack.rules.yml) group by them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _router_plan
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._serve_services import router_address

FACT = "llm_stack_host"
NODE_EXPORTER_PORT = 9100
JOBS = ("vllm", "vllm-health", "llm-router", "node", "prometheus")
_DURATION_RE = re.compile(r"^(?:\d{1,5}(?:ms|s|m|h|d|w|y))+$", re.ASCII)
_ADDRESS_RE = re.compile(r"^[A-Za-z0-9_.:\[\]-]{1,253}$", re.ASCII)


def _text(value):
    return "" if value is None else str(value).strip()


def _dict(value):
    return value if isinstance(value, dict) else {}


def _whole(value, name, low, high, errors, example):
    try:
        number = int(_text(value))
    except ValueError:
        number = None
    if number is None or isinstance(value, bool) or not low <= number <= high:
        errors.append("%s=%r is not a whole number from %d to %d. Fix: set it such as %s"
                      % (name, value, low, high, example))
        return None
    return number


def _seconds(value, name, errors):
    try:
        number = float(_text(value))
    except ValueError:
        number = None
    if number is None or isinstance(value, bool) or not 0 < number <= 3600:
        errors.append("%s=%r is not a number of seconds above 0 (at most 3600). Fix: set it such as 2.0"
                      % (name, value))
        return None
    return number


def problems(settings):
    """Every problem of the role's settings; each names the llm_monitoring_* variable and the fix."""
    cfg = _dict(settings)
    errors = []
    _whole(cfg.get("port"), "llm_monitoring_port", 1, 65535, errors, 9090)
    address = _text(cfg.get("listen_address"))
    if not _ADDRESS_RE.match(address):
        errors.append("llm_monitoring_listen_address=%r is not one address. Fix: set it such as 0.0.0.0 or 10.0.0.9"
                      % address)
    for name in ("scrape_interval", "evaluation_interval", "retention"):
        if not _DURATION_RE.match(_text(cfg.get(name))):
            errors.append("llm_monitoring_%s=%r is not a Prometheus duration. Fix: set it such as %s"
                          % (name, cfg.get(name), {"retention": "15d"}.get(name, "15s")))
    _seconds(cfg.get("ttft_p95_target"), "llm_monitoring_ttft_p95_target", errors)
    targets = cfg.get("ttft_p95_targets")
    if targets not in (None, "") and not isinstance(targets, dict):
        errors.append("llm_monitoring_ttft_p95_targets must be a mapping of service name to seconds. Fix: set it such"
                      " as {chat: 1.5}")
    for name, value in sorted(_dict(targets).items()):
        _seconds(value, "llm_monitoring_ttft_p95_targets[%r]" % name, errors)
    return errors


def _labels(host, extra=None):
    labels = {"host": _text(host)}
    labels.update(dict((key, _text(value)) for key, value in (extra or {}).items() if _text(value)))
    return labels


def targets(hosts):
    """{job: [{targets: [address:port], labels: {...}}]} from hosts: {name: {services: [contract], router: {bind,
    metrics_port, ansible_host} or None, exporter: {address, port, ansible_host} or None}} (the action's gathering of
    hostvars). Sorted, so that the config is the same for the same inventory."""
    found = dict((job, []) for job in JOBS if job != "prometheus")
    for host in sorted(hosts):
        entry = _dict(hosts[host])
        for service in entry.get("services") or []:
            service = _dict(service)
            # A headless node of a deployment across hosts has no API server: its head carries the metrics.
            if not service.get("port") or not _text(service.get("address")) or service.get("headless"):
                continue
            address = "%s:%s" % (_router_plan.bracket(service["address"]), service["port"])
            labels = _labels(host, {"service": service.get("name"), "served_model": service.get("served_model_name"),
                                    "unit": service.get("unit")})
            found["vllm"].append({"targets": [address], "labels": labels})
            found["vllm-health"].append({"targets": [address], "labels": dict(labels)})
        router = entry.get("router")
        if isinstance(router, dict) and router.get("metrics_port"):
            address = router_address(router.get("bind"), None, router.get("ansible_host"), host)
            found["llm-router"].append({"targets": ["%s:%s" % (_router_plan.bracket(address), router["metrics_port"])],
                                        "labels": _labels(host)})
        exporter = entry.get("exporter")
        if isinstance(exporter, dict) and exporter.get("port"):
            address = router_address(exporter.get("address") or "0.0.0.0", None, exporter.get("ansible_host"), host)
            found["node"].append({"targets": ["%s:%s" % (_router_plan.bracket(address), exporter["port"])],
                                  "labels": _labels(host)})
    return found


def _yaml_list(items, indent):
    """static_configs as YAML text (JSON-compatible scalars, one target group per item)."""
    pad = " " * indent
    lines = []
    for item in items:
        lines.append("%s- targets: %s" % (pad, json.dumps(item["targets"])))
        lines.append("%s  labels: %s" % (pad, json.dumps(item["labels"], sort_keys=True)))
    return lines


def config(found, settings, rule_files):
    """prometheus.yml's text: global intervals, the rule files and a scrape job per JOBS entry that has targets."""
    cfg = _dict(settings)
    local = _text(cfg.get("listen_address"))
    local = "127.0.0.1" if local in ("0.0.0.0", "*", "") else "[::1]" if local == "::" else local
    lines = [
        "---",
        "# Managed by gpufleet.llm_stack (llm_monitoring): from the serving hosts' preflight facts and the",
        "# inventory. Changes here are overwritten.",
        "global:",
        "  scrape_interval: %s" % _text(cfg.get("scrape_interval")),
        "  evaluation_interval: %s" % _text(cfg.get("evaluation_interval")),
        "rule_files:",
    ]
    lines += ["  - %s" % json.dumps(path) for path in rule_files]
    lines.append("scrape_configs:")
    lines += ["  - job_name: prometheus", "    static_configs:"]
    lines += _yaml_list([{"targets": ["%s:%s" % (_router_plan.bracket(local), _text(cfg.get("port")))],
                          "labels": _labels(cfg.get("host"))}], 6)
    for job in JOBS[:-1]:
        if not found.get(job):
            continue
        lines.append("  - job_name: %s" % job)
        if job == "vllm-health":
            lines.append("    metrics_path: /health")
        lines.append("    static_configs:")
        lines += _yaml_list(found[job], 6)
    return "\n".join(lines) + "\n"


def targets_rules(found, default_target, per_service):
    """llm-stack-targets.rules.yml's text: llm_stack:ttft_p95_target_seconds per service (host, service labels),
    the inventory's target for it (llm_monitoring_ttft_p95_targets[name], else llm_monitoring_ttft_p95_target)."""
    per_service = _dict(per_service)
    lines = ["---", "# Managed by gpufleet.llm_stack (llm_monitoring): each service's TTFT p95 target, from the inventory.",
             "groups:", "  - name: llm-stack-targets", "    rules:"]
    rules = 0
    for item in found.get("vllm") or []:
        labels = item["labels"]
        value = float(per_service.get(labels.get("service"), default_target))
        lines += ["      - record: llm_stack:ttft_p95_target_seconds",
                  "        expr: vector(%s)" % repr(value),
                  "        labels: %s" % json.dumps({"host": labels["host"], "service": labels.get("service", "")},
                                                    sort_keys=True)]
        rules += 1
    if not rules:
        lines[-1] = "    rules: []"
    return "\n".join(lines) + "\n"


def plan(hosts, settings):
    """{errors, config, targets_rules, targets, summary, url, local_url, listen} of the role's settings (its variables without
    the llm_monitoring_ prefix, plus host: the monitoring host's inventory name and host_address: its address) and
    hosts (targets()' input)."""
    cfg = _dict(settings)
    errors = problems(cfg)
    result = {"errors": errors, "config": "", "targets_rules": "", "targets": {}, "summary": {}, "url": "",
              "local_url": "", "listen": ""}
    if errors:
        return result
    found = targets(hosts)
    rule_files = [_text(cfg.get("rules_dir")).rstrip("/") + "/" + name
                  for name in ("llm-stack.rules.yml", "llm-stack-targets.rules.yml")]
    port = int(_text(cfg.get("port")))
    bind = _text(cfg.get("listen_address"))
    local = "127.0.0.1" if bind in ("0.0.0.0", "*") else "[::1]" if bind == "::" else _router_plan.bracket(bind)
    public = router_address(bind, None, cfg.get("host_address"), cfg.get("host"))
    result.update(
        config=config(found, cfg, rule_files),
        targets_rules=targets_rules(found, float(_text(cfg.get("ttft_p95_target"))), cfg.get("ttft_p95_targets")),
        targets=found,
        summary=dict((job, sorted(target for item in found[job] for target in item["targets"])) for job in found),
        url="http://%s:%d" % (_router_plan.bracket(public), port),
        listen="%s:%d" % (_router_plan.bracket(bind), port),
        local_url="http://%s:%d" % (local, port))
    return result


def read_targets(body):
    """The active targets of Prometheus's /api/v1/targets answer: [{job, instance, host, service, health,
    last_error, last_scrape}], sorted; ValueError when the body is not that API's answer."""
    try:
        data = json.loads(body)
    except ValueError:
        raise ValueError("the targets API did not answer JSON: %r" % _text(body)[:200])
    if not isinstance(data, dict) or data.get("status") != "success" or not isinstance(data.get("data"), dict):
        raise ValueError("the targets API did not answer success: %r" % _text(body)[:200])
    found = []
    for target in data["data"].get("activeTargets") or []:
        if not isinstance(target, dict):
            continue
        labels = _dict(target.get("labels"))
        found.append({"job": _text(labels.get("job") or target.get("scrapePool")),
                      "instance": _text(labels.get("instance")), "host": _text(labels.get("host")),
                      "service": _text(labels.get("service")), "health": _text(target.get("health")),
                      "last_error": _text(target.get("lastError"))[:300], "last_scrape": _text(target.get("lastScrape"))})
    return sorted(found, key=lambda item: (item["job"], item["instance"]))


def targets_verdict(found, expected):
    """(ok, problems): every expected address:port of each job (plan()'s summary) is an active target that is up."""
    problems_found = []
    seen = dict(((item["job"], item["instance"]), item) for item in found)
    for job in sorted(expected):
        for instance in expected[job]:
            target = seen.get((job, instance))
            if target is None:
                problems_found.append("%s %s: not a target of Prometheus yet" % (job, instance))
            elif target["health"] != "up":
                problems_found.append("%s %s: %s%s" % (job, instance, target["health"] or "not scraped yet",
                                                       " (%s)" % target["last_error"] if target["last_error"] else ""))
    return not problems_found, problems_found


COLLECTOR_CHOICES = ("auto", "true", "false")


def _choice(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    text = _text(value).lower()
    return {"yes": "true", "on": "true", "1": "true", "no": "false", "off": "false", "0": "false"}.get(text, text)


def exporter_plan(settings):
    """{errors, collector, args, listen} of an exporter host: settings are the role's exporter variables without the
    llm_monitoring_ prefix (node_exporter_address, node_exporter_port, textfile_dir, gpu_collector,
    gpu_collector_interval, gpu_collector_timeout) plus gpu_count (the host's GPUs, the host_gpus filter's count) and
    service_mgr (the host's fact). collector: whether the GPU collector runs here (auto: where the host has GPUs);
    args: prometheus-node-exporter's ARGS."""
    cfg = _dict(settings)
    errors = []
    port = _whole(cfg.get("node_exporter_port"), "llm_monitoring_node_exporter_port", 1, 65535, errors, 9100)
    address = _text(cfg.get("node_exporter_address"))
    if address and not _ADDRESS_RE.match(address):
        errors.append("llm_monitoring_node_exporter_address=%r is not one address. Fix: set it such as 10.0.0.5, or"
                      " empty for every address" % address)
    textfile_dir = _text(cfg.get("textfile_dir"))
    if not textfile_dir.startswith("/") or re.search(r"\s", textfile_dir):
        errors.append("llm_monitoring_textfile_dir=%r is not an absolute path without blanks. Fix: set it such as"
                      " /var/lib/prometheus/node-exporter" % textfile_dir)
    choice = _choice(cfg.get("gpu_collector"))
    if choice not in COLLECTOR_CHOICES:
        errors.append("llm_monitoring_gpu_collector=%r is not auto, true or false. Fix: set it to auto (where the host"
                      " has GPUs)" % cfg.get("gpu_collector"))
    interval = _whole(cfg.get("gpu_collector_interval"), "llm_monitoring_gpu_collector_interval", 5, 3600, errors, 30)
    timeout = _whole(cfg.get("gpu_collector_timeout"), "llm_monitoring_gpu_collector_timeout", 1, 600, errors, 20)
    if interval and timeout and timeout * 3 + 5 > interval * 4:
        errors.append("llm_monitoring_gpu_collector_timeout=%d is too long for llm_monitoring_gpu_collector_interval=%d"
                      " (three commands of a run must end well within a few intervals). Fix: set the timeout to at most"
                      " %d" % (timeout, interval, max(1, (interval * 4 - 5) // 3)))
    if _text(cfg.get("service_mgr")) not in ("", "systemd"):
        errors.append("the host runs %s, not systemd: prometheus-node-exporter and the GPU collector run as systemd"
                      " units. Fix: set llm_monitoring_node_exporter: false for this host" % _text(cfg.get("service_mgr")))
    try:
        gpus = int(cfg.get("gpu_count") or 0)
    except (TypeError, ValueError):
        gpus = 0
    collector = choice == "true" or (choice == "auto" and gpus > 0)
    listen = "%s:%s" % (_router_plan.bracket(address), port) if address else ":%s" % port
    return {"errors": errors, "collector": collector,
            "args": "--web.listen-address=%s --collector.textfile.directory=%s" % (listen, textfile_dir),
            "listen": listen}
