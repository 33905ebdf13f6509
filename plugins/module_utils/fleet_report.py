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
- ``llm_stack_phases_done``: the phases (plays of playbooks/site.yml) the
  host came through without failing.

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
STATES = ("served", "installed", "failed_preflight", "unreachable", "failed")
NOT_RUN = "not run"
# flash_attn_build_result.source values that reused a wheel built before.
CACHE_SOURCES = ("index", "controller_cache")


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def host_state(record, phases):
    """(state, stopped_after) of one host.

    record: {llm_stack_host, phases_done, <result facts>}; phases: the phases this run went through.
    - failed_preflight: preflight judged the host and refused it;
    - unreachable: nothing came back from the host (no preflight verdict, no phase done);
    - failed: the host stopped in a later phase (stopped_after: the last phase it finished);
    - served: every phase done and the service passed its health gate in this run;
    - installed: every phase done, no healthy service (serving not run or not asked for).
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
    if _dict(record.get("vllm_serve_result")).get("healthy") is True:
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
    serve = record.get("vllm_serve_result")
    arch_list = _text(_dict(fa).get("arch_list")) or _text(contract.get("arch_list"))
    if isinstance(serve, dict):
        serving = {
            "endpoint": public_endpoint(serve, name),
            "served_model_name": _text(serve.get("served_model_name")),
            "health": "healthy" if serve.get("healthy") is True else "unhealthy",
            "benchmark": serve.get("benchmark") if isinstance(serve.get("benchmark"), dict) else None,
            "gpu_others": gpu_others(serve.get("gpu_others")),
        }
    else:
        serving = {"endpoint": "", "served_model_name": "", "health": NOT_RUN, "benchmark": None, "gpu_others": []}
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


def build_report(records, phases=PHASES, cache_host=""):
    """The whole report: {format, phases, cache_host, hosts: {name: entry}, summary}.

    records: {host name: record} for every host the run targeted (see host_state for a record).
    """
    phases = [p for p in PHASES if p in (phases or PHASES)]
    hosts = dict((name, host_entry(name, _dict(records[name]), phases)) for name in sorted(records))
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
        "endpoints": sorted(e["serving"]["endpoint"] for e in hosts.values()
                            if e["state"] == "served" and e["serving"]["endpoint"]),
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


def to_markdown(report):
    """The report for people: the summary, then one table row per host."""
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
