# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report: per host state and stack, the fleet summary, Markdown and JSON.

Pure functions over what the plays leave behind on each host (read from
hostvars by the action plugin gpufleet.llm_stack.fleet_report):

- ``llm_stack_host``: preflight's contract fact (ansible_facts);
- the result facts of the roles (``cuda_toolkit_result``, ``torch_result``,
  ``flash_attn_build_result``, ``vllm_source_result``,
  ``qwen_model_fetch_result``, ``vllm_serve_result``); a fact that is absent
  means the role did not run on the host in this run (skipped by tags, or the
  host stopped before it);
- ``vllm_serve_results``: vllm_serve's list of the host's services (one dict
  each; ``vllm_serve_result`` is the first); a host without it is read from
  ``vllm_serve_result`` alone, as one service;
- ``llm_stack_phases_done``: the phases (plays of playbooks/site.yml) the
  host came through without failing.

and, of each router (group ``llm_router``, not a host of the report play),
its ``llm_router_result``: endpoint, healthy, and models (served model name:
the HAProxy server names the router lists for it); of each monitoring host
(group ``llm_monitoring``), its ``llm_monitoring_result``: Prometheus's URL,
and each target with the state of its last scrape. Each service links to its
series in Prometheus with its last scrape's state (``metrics``).

The JSON form is stable: sorted keys, no time stamps, lists sorted, so two
runs' reports can be diffed (:func:`diff_reports`). Timings are kept apart
(:func:`phase_table`, used by the callback plugin phase_times).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpufleet.llm_stack.plugins.module_utils._readers import as_dict as _dict, raw_text as _text

FORMAT = 1

# The phases of playbooks/site.yml, in order, and the result fact of each.
PHASES = ("preflight", "cuda_toolkit", "torch", "flash_attn", "vllm", "model", "serve")
RESULT_FACTS = {
    "cuda_toolkit": "cuda_toolkit_result",
    "torch": "torch_result",
    "flash_attn": "flash_attn_build_result",
    "vllm": "vllm_source_result",
    "model": "qwen_model_fetch_result",
    "serve": "vllm_serve_result",
}
# vllm_serve's list of the host's services (vllm_serve_result is its first).
SERVICES_FACT = "vllm_serve_results"
# The routers' result fact (role llm_router, hosts of group llm_router).
ROUTER_FACT = "llm_router_result"
# The monitoring hosts' result fact (role llm_monitoring, hosts of group llm_monitoring).
MONITORING_FACT = "llm_monitoring_result"
NOT_SCRAPED = "not scraped"
STATES = ("served", "installed", "failed_preflight", "unreachable", "failed")
NOT_RUN = "not run"
# A service's router membership, per router: the router lists its server under its served model name, does not,
# or did not run in this run (no llm_router_result); a service without a router server is kept out of the routers.
LISTED = "listed"
NOT_LISTED = "not in router"
OUT_OF_ROUTERS = "out of the routers"
# flash_attn_build_result.source values that reused a wheel built before.
CACHE_SOURCES = ("index", "controller_cache")


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def host_services(record):
    """The host's services as vllm_serve recorded them: vllm_serve_results (the dicts of the list), else
    vllm_serve_result as the one service (a role of before several services), else []."""
    listed = record.get(SERVICES_FACT)
    results = [one for one in listed if isinstance(one, dict)] if isinstance(listed, list) else []
    if results:
        return results
    serve = record.get("vllm_serve_result")
    return [serve] if isinstance(serve, dict) else []


def gate(serve):
    """A service's health gate in this run: healthy, unhealthy, or not run (no reading)."""
    healthy = serve.get("healthy")
    if healthy is True:
        return "healthy"
    return NOT_RUN if healthy is None else "unhealthy"


def all_healthy(services):
    """True when the host has services and every one passed its health gate in this run."""
    return bool(services) and all(_dict(one).get("healthy") is True for one in services)


def host_state(record, phases):
    """(state, stopped_after) of one host.

    record: {llm_stack_host, phases_done, <result facts>}; phases: the phases this run went through.
    - failed_preflight: preflight judged the host and refused it;
    - unreachable: nothing came back from the host (no preflight verdict, no phase done);
    - failed: the host stopped in a later phase (stopped_after: the last phase it finished);
    - served: every phase done and every service of the host (host_services) passed its health gate in this run;
    - installed: every phase done, not every service healthy, or none (serving not run or not asked for).
    """
    done = [p for p in (record.get("phases_done") or []) if p in phases]
    contract = record.get("llm_stack_host")
    if "preflight" in phases and "preflight" not in done:
        if isinstance(contract, dict) and contract.get("ok") is False:
            return "failed_preflight", None
        if not done and not isinstance(contract, dict):
            return "unreachable", None
    missing = [p for p in phases if p not in done]
    if missing:
        last = [p for p in phases if p in done]
        return "failed", (last[-1] if last else None)
    if all_healthy(host_services(record)):
        return "served", None
    return "installed", None


def _version(result, key="version"):
    if not isinstance(result, dict):
        return NOT_RUN
    return _text(result.get(key)) or "unknown"


WILDCARDS = ("0.0.0.0", "::", "[::]")


def public_endpoint(serve, name):
    """The service's URL as clients of the fleet reach it.

    vllm_serve's own URL connects to loopback when the service binds every
    address; others reach it by the host's inventory name then.
    """
    url = _text(serve.get("endpoint"))
    if _text(serve.get("bind")) in WILDCARDS and url.startswith("http://127.0.0.1:"):
        return "http://%s:%s" % (name, url[len("http://127.0.0.1:"):])
    return url


def gpu_others(entries):
    """The gate's compute processes that are not the service's, one line each (serve_procs.gpu_line's form)."""
    lines = []
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict):
            used = entry.get("used_mib")
            lines.append("pid %s (user %s, %s MiB on %s GPU(s), %s): %s" % (
                _text(entry.get("pid")) or "?", _text(entry.get("user")) or "?", "?" if used is None else used,
                _text(entry.get("gpus")) or "?", _text(entry.get("whose")) or "?",
                _text(entry.get("cmdline")) or "not in the host's /proc"))
    return lines


def fleet_builds(builds):
    """A build host's builds for the other hosts (flash_attn_build_result.fleet_builds): [{build_key, compiled}],
    sorted; [] elsewhere."""
    found = []
    for build in builds if isinstance(builds, list) else []:
        if isinstance(build, dict) and _text(build.get("build_key")):
            found.append({"build_key": _text(build.get("build_key")), "compiled": build.get("compiled") is True})
    return sorted(found, key=lambda build: (build["build_key"], build["compiled"]))


def compiles_by_key(hosts):
    """{build key: compiles in this run} over the hosts' own builds and a build host's builds for the others."""
    counts = {}
    for entry in hosts.values():
        fa = entry["flash_attn"]
        compiled = [fa["build_key"]] if fa["compiled"] and fa["build_key"] else []
        compiled += [build["build_key"] for build in fa["fleet_builds"] if build["compiled"]]
        for key in compiled:
            counts[key] = counts.get(key, 0) + 1
    return counts


def host_entry(name, record, phases):
    """The report's entry of one host: state, stack installed, arch list, toolkit, model, serving."""
    state, stopped_after = host_state(record, phases)
    contract = _dict(record.get("llm_stack_host"))
    cuda = record.get("cuda_toolkit_result")
    torch = record.get("torch_result")
    fa = record.get("flash_attn_build_result")
    vllm = record.get("vllm_source_result")
    model = record.get("qwen_model_fetch_result")
    services = host_services(record)
    arch_list = _text(_dict(fa).get("arch_list")) or _text(contract.get("arch_list"))
    if services:
        # The host's first service (vllm_serve_result); health and gpu_others over all of them.
        serve = record.get("vllm_serve_result") if isinstance(record.get("vllm_serve_result"), dict) else services[0]
        others = []
        for one in services:
            others += [line for line in gpu_others(one.get("gpu_others")) if line not in others]
        serving = {
            "endpoint": public_endpoint(serve, name),
            "served_model_name": _text(serve.get("served_model_name")),
            "health": "healthy" if all_healthy(services) else "unhealthy",
            "benchmark": serve.get("benchmark") if isinstance(serve.get("benchmark"), dict) else None,
            "gpu_others": others,
            "services": [_text(one.get("service")) for one in services],
        }
    else:
        serving = {"endpoint": "", "served_model_name": "", "health": NOT_RUN, "benchmark": None, "gpu_others": [],
                   "services": []}
    return {
        "host": name,
        "state": state,
        "stopped_after": stopped_after,
        "preflight": {
            "ok": contract.get("ok") if contract else None,
            "errors": len(contract.get("errors") or []) if contract else 0,
        },
        "stack": {
            "cuda": _version(cuda),
            "torch": _version(torch),
            "flash_attn": _version(fa),
            "vllm": _version(vllm),
            "transformers": _version(vllm, "transformers"),
        },
        "arch_list": arch_list,
        "toolkit": _text(_dict(cuda).get("dir")) if isinstance(cuda, dict) else NOT_RUN,
        "flash_attn": {
            "build_key": _text(_dict(fa).get("build_key")),
            "source": _text(_dict(fa).get("source")) if isinstance(fa, dict) else NOT_RUN,
            "compiled": _dict(fa).get("compiled") is True,
            "fleet_builds": fleet_builds(_dict(fa).get("fleet_builds")),
        },
        "vllm": {
            "method": _text(_dict(vllm).get("method")) if isinstance(vllm, dict) else NOT_RUN,
            "build_key": _text(_dict(vllm).get("build_key")),
        },
        "model": {
            "repo_id": _text(_dict(model).get("repo_id")),
            "revision": _text(_dict(model).get("revision")) if isinstance(model, dict) else NOT_RUN,
            "commit": _text(_dict(model).get("commit")),
            "files_downloaded": _int(_dict(model).get("files_downloaded")),
            "bytes_downloaded": _int(_dict(model).get("bytes_downloaded")),
        },
        "serving": serving,
    }


def _number(value):
    """A whole number (a port, a GPU index, a size); None where there is none."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _gpu_list(value):
    """The service's GPU indexes as numbers; None where it pins none (the plan chooses them)."""
    if not isinstance(value, (list, tuple)):
        return None
    return [_number(gpu) if _number(gpu) is not None else _text(gpu) for gpu in value]


def router_entry(name, result):
    """The report's entry of one router: host, endpoint, healthy (None: llm_router did not run on it in this run),
    models: {served_model_name: [server names], sorted}."""
    if not isinstance(result, dict):
        return {"host": name, "endpoint": "", "healthy": None, "models": {}}
    models = {}
    for model, servers in _dict(result.get("models")).items():
        models[_text(model)] = sorted(set(_text(server) for server in (servers if isinstance(servers, list) else [])
                                          if _text(server)))
    return {"host": name, "endpoint": _text(result.get("endpoint")), "healthy": result.get("healthy") is True,
            "models": models}


def membership(server, served_model_name, names, routers):
    """{router: listed | not in router | not run} of a service's router server over the routers names.

    routers: {name: router_entry}; a router without an entry, or whose llm_router did not run, is ``not run``.
    """
    found = {}
    for router in sorted(set(names)):
        entry = routers.get(router)
        if not entry or entry["healthy"] is None:
            found[router] = NOT_RUN
        elif server in entry["models"].get(served_model_name, []):
            found[router] = LISTED
        else:
            found[router] = NOT_LISTED
    return found


def monitoring_entry(name, result):
    """The report's entry of one monitoring host: host, url, healthy (None: llm_monitoring did not run on it in this
    run), targets: [{job, instance, host, service, health, last_error, last_scrape}] (the last scrape of each)."""
    if not isinstance(result, dict):
        return {"host": name, "url": "", "healthy": None, "targets": []}
    targets = []
    for target in result.get("targets") or []:
        if isinstance(target, dict):
            targets.append(dict((key, _text(target.get(key))) for key in
                                ("job", "instance", "host", "service", "health", "last_error", "last_scrape")))
    targets.sort(key=lambda item: (item["job"], item["instance"]))
    return {"host": name, "url": _text(result.get("url")), "healthy": result.get("healthy") is True,
            "targets": targets}


def _quote(text):
    """Percent-encoding of a URL's query value (no library: the report runs in the controller's worker)."""
    safe = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~"
    return "".join(ch if ch in safe else "".join("%%%02X" % byte for byte in ch.encode("utf-8")) for ch in text)


def service_metrics(host, name, monitors):
    """Where a service's metrics are and the state of their last scrape: {url, scrape, last_error} from the first
    monitoring host (by name) that ran in this run; url '' and scrape 'not scraped' where none did or none has the
    service as a target of job vllm."""
    for monitor in sorted(monitors.values(), key=lambda item: item["host"]):
        if monitor["healthy"] is None:
            continue
        for target in monitor["targets"]:
            if target["job"] == "vllm" and target["host"] == host and target["service"] == name:
                expr = '{job="vllm",host="%s",service="%s"}' % (host, name)
                url = "%s/graph?g0.expr=%s" % (monitor["url"], _quote(expr)) if monitor["url"] else ""
                return {"url": url, "scrape": target["health"] or "unknown", "last_error": target["last_error"]}
    return {"url": "", "scrape": NOT_SCRAPED, "last_error": ""}


def service_entry(host, serve, routers, monitors=None):
    """The report's entry of one service of host (one dict of vllm_serve_results): where it runs, what it serves,
    its gate in this run, its benchmark and its router membership.

    routers: {name: router_entry} of the routers the run knows (group llm_router); the service is looked up in
    those and in the routers it was put into (its ``routers``). router_server None: kept out of the routers
    (routers {}).
    """
    server = _text(serve.get("router_server")) or None
    served = _text(serve.get("served_model_name"))
    tp = serve.get("tensor_parallel_size")
    names = list(routers) + [_text(r) for r in (serve.get("routers") or []) if _text(r)] \
        if isinstance(serve.get("routers"), list) else list(routers)
    return {
        "host": host,
        "service": _text(serve.get("service")),
        "name": _text(serve.get("name")),
        "gpus": _gpu_list(serve.get("gpus")),
        "model": _text(serve.get("model")),
        "served_model_name": served,
        "port": _number(serve.get("port")),
        "endpoint": public_endpoint(serve, host),
        "tensor_parallel_size": _number(tp) if _number(tp) is not None else (_text(tp) or None),
        "gate": gate(serve),
        "benchmark": serve.get("benchmark") if isinstance(serve.get("benchmark"), dict) else None,
        "router_server": server,
        "routers": membership(server, served, names, routers) if server else {},
        "metrics": service_metrics(host, _text(serve.get("name")), monitors or {}),
    }


def build_report(records, phases=PHASES, cache_host="", routers=None, monitoring=None):
    """The whole report: {format, phases, cache_host, hosts: {name: entry}, summary}.

    records: {host name: record} for every host the run targeted (see host_state for a record);
    routers: {router name: its llm_router_result, or None where the role did not run on it};
    monitoring: {monitoring host name: its llm_monitoring_result, or None where the role did not run on it}.
    The summary's ``services`` (every service of every host, in the hosts' order and each host's order) and
    ``routers`` (sorted by name) are the per-service and per-router parts of the report.
    """
    phases = [p for p in PHASES if p in (phases or PHASES)]
    hosts = dict((name, host_entry(name, _dict(records[name]), phases)) for name in sorted(records))
    router_entries = dict((name, router_entry(_text(name), result)) for name, result in _dict(routers).items())
    monitors = dict((name, monitoring_entry(_text(name), result)) for name, result in _dict(monitoring).items())
    services = [service_entry(name, one, router_entries, monitors)
                for name in sorted(records) for one in host_services(_dict(records[name]))]
    states = dict((s, sorted(n for n, e in hosts.items() if e["state"] == s)) for s in STATES)
    fa_keys = set(e["flash_attn"]["build_key"] for e in hosts.values() if e["flash_attn"]["build_key"])
    # A build host's keys for the others are the fleet's keys too (one of them may have stopped since).
    fa_keys.update(b["build_key"] for e in hosts.values() for b in e["flash_attn"]["fleet_builds"])
    by_key = compiles_by_key(hosts)
    vllm_keys = set(e["vllm"]["build_key"] for e in hosts.values() if e["vllm"]["build_key"])
    summary = {
        "hosts": len(hosts),
        "states": dict((s, len(states[s])) for s in STATES),
        "hosts_by_state": states,
        "build_keys": {"flash_attn": sorted(fa_keys), "vllm": sorted(vllm_keys)},
        # flash-attn compiles in this run, on the hosts for their own key and on build hosts for the others' keys.
        "compiles": sum(by_key.values()),
        "compiles_by_key": by_key,
        "cache_hits": sum(1 for e in hosts.values() if e["flash_attn"]["source"] in CACHE_SOURCES),
        "files_downloaded": sum(e["model"]["files_downloaded"] for e in hosts.values()),
        "bytes_downloaded": sum(e["model"]["bytes_downloaded"] for e in hosts.values()),
        # Every service of the served hosts (all of them passed their gates).
        "endpoints": sorted(one["endpoint"] for one in services
                            if hosts[one["host"]]["state"] == "served" and one["endpoint"]),
        "services": services,
        "routers": [router_entries[name] for name in sorted(router_entries)],
        "monitoring": [monitors[name] for name in sorted(monitors)],
    }
    return {"format": FORMAT, "phases": phases, "cache_host": _text(cache_host), "hosts": hosts, "summary": summary}


def to_json(report):
    """The diffable JSON text: sorted keys, two-space indent, a final newline."""
    return json.dumps(report, sort_keys=True, indent=2, separators=(",", ": ")) + "\n"


def _size(num):
    num = float(num)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if num < 1024 or unit == "GiB":
            return ("%d %s" % (num, unit)) if unit == "B" else ("%.1f %s" % (num, unit))
        num /= 1024.0
    return "%.1f GiB" % num  # pragma: no cover


def _cell(value):
    return (_text(value) or "-").replace("|", "\\|")


def _bench(bench):
    if not isinstance(bench, dict):
        return "-"
    parts = []
    if isinstance(bench.get("request_throughput"), (int, float)):
        parts.append("%.2f req/s" % bench["request_throughput"])
    if isinstance(bench.get("tpot_mean_ms"), (int, float)):
        parts.append("TPOT %.1f ms" % bench["tpot_mean_ms"])
    if bench.get("misses"):
        parts.append("%d target(s) missed" % len(bench["misses"]))
    return ", ".join(parts) or "-"


def _per_key(counts):
    """' (key: n, ...)' where a key was compiled more than once in this run; '' where none was."""
    again = sorted("%s: %d" % (key, n) for key, n in (counts or {}).items() if n > 1)
    return " (more than once: %s)" % ", ".join(again) if again else ""


def _gpus_cell(gpus):
    if gpus is None:
        return "not pinned"
    return ",".join(str(gpu) for gpu in gpus) or "-"


def _membership_cell(service):
    """Where the service's server is: the routers that list it, those that do not, those that did not run."""
    if not service["router_server"]:
        return OUT_OF_ROUTERS
    if not service["routers"]:
        return "%s, no router" % service["router_server"]
    parts = [router if state == LISTED else "%s (%s)" % (router, state)
             for router, state in sorted(service["routers"].items())]
    return "%s in %s" % (service["router_server"], ", ".join(parts))


def _metrics_cell(metrics):
    """The last scrape's state, with the link to the service's series in Prometheus."""
    if not metrics["url"]:
        return metrics["scrape"]
    return "[%s](%s)" % (metrics["scrape"], metrics["url"])


def _router_gate(router):
    return NOT_RUN if router["healthy"] is None else ("healthy" if router["healthy"] else "unhealthy")


def _models_cell(models):
    return "; ".join("%s: %s" % (model, ", ".join(servers) or "no server")
                     for model, servers in sorted(models.items())) or "-"


def to_markdown(report):
    """The report for people: the summary, one table row per host, per service and per router."""
    s = report["summary"]
    lines = [
        "# Fleet report",
        "",
        "Phases run: %s." % ", ".join(report["phases"]),
        "Cache host: %s." % (report["cache_host"] or "none"),
        "",
        "## Summary",
        "",
        "| hosts | served | installed | failed preflight | unreachable | failed |",
        "| --- | --- | --- | --- | --- | --- |",
        "| %d | %d | %d | %d | %d | %d |" % ((s["hosts"],) + tuple(s["states"][k] for k in STATES)),
        "",
        "- flash-attn build keys: %s" % (", ".join(s["build_keys"]["flash_attn"]) or "none"),
        "- vLLM build keys: %s" % (", ".join(s["build_keys"]["vllm"]) or "none"),
        "- compiles in this run: %d%s; wheels reused from the index or cache: %d" % (
            s["compiles"], _per_key(s["compiles_by_key"]), s["cache_hits"]),
        "- model files downloaded in this run: %d (%s)" % (s["files_downloaded"], _size(s["bytes_downloaded"])),
        "- endpoints serving: %s" % (", ".join(s["endpoints"]) or "none"),
        "- services: %d, healthy in this run: %d" % (
            len(s["services"]), sum(1 for one in s["services"] if one["gate"] == "healthy")),
    ]
    for state in ("failed_preflight", "unreachable", "failed"):
        if s["hosts_by_state"][state]:
            lines.append("- %s: %s" % (state.replace("_", " "), ", ".join(s["hosts_by_state"][state])))
    lines += [
        "",
        "## Hosts",
        "",
        "| host | state | CUDA | torch | flash-attn | vLLM | transformers | arch list | toolkit | model revision"
        " | serving | endpoint | benchmark |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name in sorted(report["hosts"]):
        e = report["hosts"][name]
        state = e["state"] + ((" after %s" % e["stopped_after"]) if e["stopped_after"] else "")
        model = e["model"]
        revision = model["revision"]
        if model["commit"] and model["commit"] != revision:
            revision = "%s (%s)" % (revision, model["commit"][:12])
        row = [name, state, e["stack"]["cuda"], e["stack"]["torch"], e["stack"]["flash_attn"], e["stack"]["vllm"],
               e["stack"]["transformers"], e["arch_list"], e["toolkit"], revision, e["serving"]["health"],
               e["serving"]["endpoint"], _bench(e["serving"]["benchmark"])]
        lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    if s["services"]:
        lines += [
            "",
            "## Services",
            "",
            "| host | service | GPUs | model | served name | port | endpoint | gate | benchmark | routers | metrics |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for one in s["services"]:
            row = [one["host"], one["service"], _gpus_cell(one["gpus"]), one["model"], one["served_model_name"],
                   one["port"], one["endpoint"], one["gate"], _bench(one["benchmark"]), _membership_cell(one),
                   _metrics_cell(one["metrics"])]
            lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    if s["routers"]:
        lines += ["", "## Routers", "", "| router | endpoint | gate | models (servers) |", "| --- | --- | --- | --- |"]
        for router in s["routers"]:
            row = [router["host"], router["endpoint"], _router_gate(router), _models_cell(router["models"])]
            lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    for monitor in s.get("monitoring") or []:
        lines += ["", "## Monitoring: %s" % monitor["host"], "",
                  "Prometheus at %s (%s)." % (monitor["url"] or "-", _router_gate(monitor)), "",
                  "| job | target | host | service | last scrape |", "| --- | --- | --- | --- | --- |"]
        for target in monitor["targets"]:
            state = target["health"] + (" (%s)" % target["last_error"] if target["last_error"] else "")
            row = [target["job"], target["instance"], target["host"], target["service"], state]
            lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    held = [(name, line) for name in sorted(report["hosts"])
            for line in report["hosts"][name]["serving"].get("gpu_others") or []]
    if held:
        lines += ["", "## GPU memory held by processes that are not the service's", ""]
        lines += ["- %s: %s" % (name, line) for name, line in held]
    return "\n".join(lines) + "\n"


def diff_reports(old, new):
    """What changed between two reports, one line per leaf: ``path: old -> new`` (empty: the same)."""
    out = []

    def walk(path, a, b):
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b)):
                walk(path + [str(key)], a.get(key), b.get(key))
        elif a != b:
            out.append("%s: %s -> %s" % (".".join(path), json.dumps(a, sort_keys=True), json.dumps(b, sort_keys=True)))

    walk([], old, new)
    return out


def phase_table(rows):
    """A per-phase timing table: rows are (phase, seconds); a total line at the end."""
    names = [_text(row[0]) for row in rows]
    secs = [float(row[1]) for row in rows]
    width = max([len("phase"), len("total")] + [len(name) for name in names])
    total = sum(secs)
    lines = ["phase".ljust(width) + "  " + "seconds".rjust(9) + "  " + "share".rjust(6)]
    for name, sec in zip(names, secs):
        share = (100.0 * sec / total) if total else 0.0
        lines.append(name.ljust(width) + "  " + ("%.1f" % sec).rjust(9) + "  " + ("%.1f%%" % share).rjust(6))
    lines.append("total".ljust(width) + "  " + ("%.1f" % total).rjust(9))
    return "\n".join(lines)
