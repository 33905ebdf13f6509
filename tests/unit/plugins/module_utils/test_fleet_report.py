# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report: host states, the summary, stable JSON that two runs can diff, Markdown, the timing table."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import fleet_report as fr

ALL = list(fr.PHASES)
CONTRACT_OK = {"ok": True, "errors": [], "arch_list": "8.0", "stack": {}}


def served_record(key="k80", compiled=False, source="controller_cache", bytes_=0, files=0):
    return {
        "llm_stack_host": dict(CONTRACT_OK),
        "phases_done": ALL,
        "cuda_toolkit_result": {"version": "12.8.1", "dir": "/usr/local/cuda-12.8"},
        "torch_result": {"version": "2.10.0+cu128"},
        "flash_attn_build_result": {"version": "2.8.3", "build_key": key, "arch_list": "8.0", "wheel": "fa.whl",
                                    "source": source, "compiled": compiled},
        "vllm_source_result": {"version": "0.19.1", "transformers": "5.5.4", "method": "wheel"},
        "qwen_model_fetch_result": {"repo_id": "Qwen/Qwen3.5-9B", "revision": "main", "commit": "a" * 40,
                                    "files_downloaded": files, "bytes_downloaded": bytes_},
        "vllm_serve_result": {"endpoint": "http://gpu-1:8000/v1", "served_model_name": "qwen", "healthy": True,
                              "benchmark": {"request_throughput": 1.5, "tpot_mean_ms": 20.0, "misses": []}},
    }


def fleet():
    installed = served_record(key="k90", compiled=True, source="built", bytes_=1024, files=2)
    del installed["vllm_serve_result"]
    return {
        "gpu-1": served_record(),
        "gpu-2": installed,
        "gpu-3": {"llm_stack_host": {"ok": False, "errors": ["x", "y"]}, "phases_done": []},
        "gpu-4": {"phases_done": []},
        "gpu-5": dict(served_record(), phases_done=["preflight", "cuda_toolkit"]),
    }


def test_states():
    report = fr.build_report(fleet(), ALL, "cache-1")
    states = dict((n, (e["state"], e["stopped_after"])) for n, e in report["hosts"].items())
    assert states == {"gpu-1": ("served", None), "gpu-2": ("installed", None), "gpu-3": ("failed_preflight", None),
                      "gpu-4": ("unreachable", None), "gpu-5": ("failed", "cuda_toolkit")}
    assert report["summary"]["states"] == {"served": 1, "installed": 1, "failed_preflight": 1, "unreachable": 1,
                                           "failed": 1}
    assert report["cache_host"] == "cache-1"


def test_summary_counts_keys_compiles_hits_and_bytes():
    s = fr.build_report(fleet(), ALL)["summary"]
    assert s["build_keys"]["flash_attn"] == ["k80", "k90"]
    assert s["compiles"] == 1
    # gpu-1 and gpu-5 reused the controller cache's wheel.
    assert s["cache_hits"] == 2
    assert (s["files_downloaded"], s["bytes_downloaded"]) == (2, 1024)
    # Endpoints of served hosts only (gpu-5 stopped, though a fact from before says healthy).
    assert s["endpoints"] == ["http://gpu-1:8000/v1"]


def test_roles_skipped_by_tags_say_not_run():
    record = {"llm_stack_host": dict(CONTRACT_OK), "phases_done": ALL,
              "qwen_model_fetch_result": {"repo_id": "Qwen/Qwen3.5-9B", "revision": "v2", "commit": "b" * 40}}
    entry = fr.build_report({"gpu-1": record}, ALL)["hosts"]["gpu-1"]
    assert entry["state"] == "installed"
    assert entry["stack"] == {"cuda": "not run", "torch": "not run", "flash_attn": "not run", "vllm": "not run",
                              "transformers": "not run"}
    assert entry["toolkit"] == "not run"
    assert entry["serving"]["health"] == "not run"
    assert entry["model"]["revision"] == "v2"
    # The arch list falls back to preflight's contract.
    assert entry["arch_list"] == "8.0"


def test_phases_of_a_partial_run():
    record = {"llm_stack_host": dict(CONTRACT_OK), "phases_done": ["preflight", "model"]}
    report = fr.build_report({"gpu-1": record}, ["model", "preflight"])
    assert report["phases"] == ["preflight", "model"]
    assert report["hosts"]["gpu-1"]["state"] == "installed"


def test_unhealthy_service_is_not_served():
    record = served_record()
    record["vllm_serve_result"]["healthy"] = False
    entry = fr.build_report({"gpu-1": record}, ALL)["hosts"]["gpu-1"]
    assert (entry["state"], entry["serving"]["health"]) == ("installed", "unhealthy")


def test_json_is_stable_and_two_runs_diff():
    first = fr.build_report(fleet(), ALL)
    text = fr.to_json(first)
    # The same facts in another order give the same text: sorted keys, no time stamps.
    shuffled = dict(reversed(list(fleet().items())))
    assert fr.to_json(fr.build_report(shuffled, ALL)) == text
    assert json.loads(text) == first
    assert fr.diff_reports(first, json.loads(text)) == []
    # A second run: nothing downloaded, nothing compiled, gpu-2 now serves.
    records = fleet()
    records["gpu-2"] = served_record(key="k90", compiled=False, source="controller_cache")
    second = fr.build_report(records, ALL)
    changes = fr.diff_reports(json.loads(text), json.loads(fr.to_json(second)))
    assert "hosts.gpu-2.state: \"installed\" -> \"served\"" in changes
    assert "summary.compiles: 1 -> 0" in changes
    assert "summary.bytes_downloaded: 1024 -> 0" in changes
    assert not any(line.startswith("hosts.gpu-1.") for line in changes)


def test_markdown_lists_every_host_and_the_summary():
    md = fr.to_markdown(fr.build_report(fleet(), ALL, "cache-1"))
    assert md.startswith("# Fleet report\n")
    assert "| 5 | 1 | 1 | 1 | 1 | 1 |" in md
    assert "Cache host: cache-1." in md
    assert "- failed preflight: gpu-3" in md
    assert "- unreachable: gpu-4" in md
    row = [line for line in md.splitlines() if line.startswith("| gpu-1 |")][0]
    assert "served" in row and "/usr/local/cuda-12.8" in row and "1.50 req/s" in row and "TPOT 20.0 ms" in row and "main (aaaaaaaaaaaa)" in row
    row5 = [line for line in md.splitlines() if line.startswith("| gpu-5 |")][0]
    assert "failed after cuda_toolkit" in row5
    assert "1.0 KiB" in md


def test_report_does_not_change_its_input():
    records = fleet()
    before = copy.deepcopy(records)
    fr.build_report(records, ALL)
    assert records == before


def test_phase_table():
    table = fr.phase_table([("preflight", 10), ("torch", 30)]).splitlines()
    assert table[0].split() == ["phase", "seconds", "share"]
    assert table[1].split() == ["preflight", "10.0", "25.0%"]
    assert table[2].split() == ["torch", "30.0", "75.0%"]
    assert table[-1].split() == ["total", "40.0"]
    assert fr.phase_table([]).splitlines()[-1].split() == ["total", "0.0"]


def test_endpoint_of_a_service_on_every_address():
    assert fr.public_endpoint({"endpoint": "http://127.0.0.1:8000", "bind": "0.0.0.0"}, "gpu-1") == "http://gpu-1:8000"
    assert fr.public_endpoint({"endpoint": "http://127.0.0.1:8000", "bind": "127.0.0.1"}, "gpu-1") == \
        "http://127.0.0.1:8000"
    assert fr.public_endpoint({"endpoint": "http://10.0.0.5:8000", "bind": "10.0.0.5"}, "gpu-1") == "http://10.0.0.5:8000"


def test_gpu_memory_held_by_others_is_in_the_report():
    """The gate's reading (vllm_health's gpu.others), as the role records it in vllm_serve_result."""
    record = served_record()
    record["vllm_serve_result"]["gpu_others"] = [
        {"pid": 9386, "used_mib": 28940, "gpus": 1, "uid": 998, "user": "vllm", "whose": "leftover",
         "cmdline": "VLLM::EngineCore", "unit": None},
        "not a reading"]
    report = fr.build_report({"gpu-1": record, "gpu-2": served_record()}, ALL)
    assert report["hosts"]["gpu-1"]["serving"]["gpu_others"] == [
        "pid 9386 (user vllm, 28940 MiB on 1 GPU(s), leftover): VLLM::EngineCore"]
    assert report["hosts"]["gpu-2"]["serving"]["gpu_others"] == []
    md = fr.to_markdown(report)
    assert "## GPU memory held by processes that are not the service's\n\n- gpu-1: pid 9386 (user vllm, 28940 MiB" in md
    assert "gpu-2: pid" not in md
    assert "GPU memory held" not in fr.to_markdown(fr.build_report({"gpu-2": served_record()}, ALL))


def test_a_build_hosts_compiles_for_the_others_count_per_key():
    """flash_attn_build_for_fleet: the build host compiles the GPU hosts' keys (sm80, sm90) and installs one of them;
    the GPU hosts compile nothing. The summary counts each key's compile once."""
    build = served_record(key="k80", compiled=False, source="controller_cache")
    del build["vllm_serve_result"]
    build["flash_attn_build_result"]["fleet_builds"] = [
        {"build_key": "k90", "compiled": True, "wheel": "fa90.whl"},
        {"build_key": "k80", "compiled": True, "wheel": "fa80.whl"}]
    records = {"build-1": build, "gpu-1": served_record(key="k80"), "gpu-2": served_record(key="k90")}
    report = fr.build_report(records, ALL)
    s = report["summary"]
    assert s["compiles"] == 2 and s["compiles_by_key"] == {"k80": 1, "k90": 1}
    assert s["build_keys"]["flash_attn"] == ["k80", "k90"]
    assert report["hosts"]["build-1"]["flash_attn"]["fleet_builds"] == [
        {"build_key": "k80", "compiled": True}, {"build_key": "k90", "compiled": True}]
    assert report["hosts"]["gpu-1"]["flash_attn"]["fleet_builds"] == []
    md = fr.to_markdown(report)
    assert "- compiles in this run: 2; wheels reused" in md
    # A GPU host that compiled its key as well (it ran before the build host): the key shows twice.
    records["gpu-2"] = served_record(key="k90", compiled=True, source="built")
    s = fr.build_report(records, ALL)["summary"]
    assert s["compiles"] == 3 and s["compiles_by_key"] == {"k80": 1, "k90": 2}
    assert "- compiles in this run: 3 (more than once: k90: 2); wheels reused" in fr.to_markdown(
        fr.build_report(records, ALL))
    # A rerun: the build host's keys are there, nothing compiled; results without the field are as before.
    build["flash_attn_build_result"]["fleet_builds"] = [{"build_key": "k90", "compiled": False}, "junk", {}]
    records = {"build-1": build}
    entry = fr.build_report(records, ALL)["hosts"]["build-1"]
    assert entry["flash_attn"]["fleet_builds"] == [{"build_key": "k90", "compiled": False}]
    assert fr.build_report({"gpu-1": served_record()}, ALL)["summary"]["compiles_by_key"] == {}


# --- several services per host, and the routers -------------------------------------------

def service(name, port, gpus, served, healthy=True, server=True, routers=("router-1", "router-2"), bench=None):
    """One dict of vllm_serve_results as roles/vllm_serve/tasks/service.yml records it."""
    return {"service": "vllm-%s" % name, "name": name, "mode": "systemd", "endpoint": "http://127.0.0.1:%d" % port,
            "bind": "0.0.0.0", "port": port, "gpus": gpus, "model": "/srv/models/%s" % served,
            "served_model_name": served, "tensor_parallel_size": len(gpus or [1]),
            "router_server": ("gpu-1_%s" % name) if server else None, "routers": list(routers) if server else [],
            "healthy": healthy, "gpu_others": [], "benchmark": bench}


def services_record(*services):
    record = served_record()
    record["vllm_serve_results"] = list(services)
    record["vllm_serve_result"] = services[0] if services else record["vllm_serve_result"]
    return record


def two_services():
    return services_record(
        service("qwen", 8000, [0, 1], "qwen", bench={"request_throughput": 2.0, "tpot_mean_ms": 15.0, "misses": ["x"]}),
        service("embed", 8001, [2], "embed"),
        service("scratch", 8002, [3], "scratch", server=False))


ROUTERS = {
    "router-1": {"endpoint": "http://router-1:8080", "healthy": True,
                 "models": {"qwen": ["gpu-1_qwen", "gpu-2_qwen"], "embed": ["gpu-1_embed"]}},
    "router-2": {"endpoint": "http://router-2:8080", "healthy": False, "models": {"qwen": ["gpu-2_qwen"]}},
    "router-3": None,
}


def test_every_service_is_listed_with_its_gate_benchmark_and_routers():
    report = fr.build_report({"gpu-1": two_services()}, ALL, routers=ROUTERS)
    services = report["summary"]["services"]
    assert [one["service"] for one in services] == ["vllm-qwen", "vllm-embed", "vllm-scratch"]
    qwen = services[0]
    assert qwen == {
        "host": "gpu-1", "service": "vllm-qwen", "name": "qwen", "gpus": [0, 1], "model": "/srv/models/qwen",
        "served_model_name": "qwen", "port": 8000, "endpoint": "http://gpu-1:8000", "tensor_parallel_size": 2,
        "gate": "healthy", "benchmark": {"request_throughput": 2.0, "tpot_mean_ms": 15.0, "misses": ["x"]},
        "router_server": "gpu-1_qwen",
        # router-2 lists gpu-2's server only; router-3 has no llm_router_result in this run.
        "routers": {"router-1": "listed", "router-2": "not in router", "router-3": "not run"},
        # No monitoring host in this run.
        "metrics": {"url": "", "scrape": "not scraped", "last_error": ""}}
    assert services[1]["routers"] == {"router-1": "listed", "router-2": "not in router", "router-3": "not run"}
    # A service kept out of the routers: no server, no membership.
    assert (services[2]["router_server"], services[2]["routers"]) == (None, {})
    assert report["hosts"]["gpu-1"]["state"] == "served"
    assert report["hosts"]["gpu-1"]["serving"]["services"] == ["vllm-qwen", "vllm-embed", "vllm-scratch"]
    assert report["summary"]["endpoints"] == ["http://gpu-1:8000", "http://gpu-1:8001", "http://gpu-1:8002"]


def test_the_routers_of_the_summary():
    routers = fr.build_report({"gpu-1": two_services()}, ALL, routers=ROUTERS)["summary"]["routers"]
    assert routers == [
        {"host": "router-1", "endpoint": "http://router-1:8080", "healthy": True,
         "models": {"embed": ["gpu-1_embed"], "qwen": ["gpu-1_qwen", "gpu-2_qwen"]}},
        {"host": "router-2", "endpoint": "http://router-2:8080", "healthy": False, "models": {"qwen": ["gpu-2_qwen"]}},
        {"host": "router-3", "endpoint": "", "healthy": None, "models": {}}]
    # Without routers (no group llm_router), none; a router's odd models are read as far as they go.
    assert fr.build_report({"gpu-1": two_services()}, ALL)["summary"]["routers"] == []
    odd = fr.build_report({}, ALL, routers={"r": {"models": {"m": "gpu-1_a", "n": ["b", "", None, "a", "b"]}}})
    assert odd["summary"]["routers"] == [{"host": "r", "endpoint": "", "healthy": False,
                                          "models": {"m": [], "n": ["a", "b"]}}]


MONITORING = {
    "mon-2": None,
    "mon-1": {"url": "http://mon-1:9090", "healthy": True, "summary": {}, "targets": [
        {"job": "vllm", "instance": "10.0.1.5:8001", "host": "gpu-1", "service": "embed", "health": "down",
         "last_error": "connection refused", "last_scrape": "2026-12-07T01:57:55Z"},
        {"job": "vllm", "instance": "10.0.1.5:8000", "host": "gpu-1", "service": "qwen", "health": "up",
         "last_error": "", "last_scrape": "2026-12-07T01:57:54Z"},
        {"job": "vllm-health", "instance": "10.0.1.5:8000", "host": "gpu-1", "service": "qwen", "health": "up",
         "last_error": "", "last_scrape": "2026-12-07T01:57:54Z"},
        "not a target"]},
}


def test_each_service_links_to_its_metrics_and_its_last_scrape():
    report = fr.build_report({"gpu-1": two_services()}, ALL, routers=ROUTERS, monitoring=MONITORING)
    services = report["summary"]["services"]
    assert services[0]["metrics"] == {
        "url": "http://mon-1:9090/graph?g0.expr=%7Bjob%3D%22vllm%22%2Chost%3D%22gpu-1%22%2Cservice%3D%22qwen%22%7D",
        "scrape": "up", "last_error": ""}
    assert services[1]["metrics"]["scrape"] == "down" and services[1]["metrics"]["last_error"] == "connection refused"
    assert services[2]["metrics"] == {"url": "", "scrape": "not scraped", "last_error": ""}
    monitors = report["summary"]["monitoring"]
    assert [(m["host"], m["healthy"], len(m["targets"])) for m in monitors] == [("mon-1", True, 3), ("mon-2", None, 0)]
    assert [t["instance"] for t in monitors[0]["targets"]] == ["10.0.1.5:8000", "10.0.1.5:8001", "10.0.1.5:8000"]
    markdown = fr.to_markdown(report)
    assert "| [up](http://mon-1:9090/graph?g0.expr=%7Bjob" in markdown
    assert "## Monitoring: mon-1" in markdown and "Prometheus at http://mon-1:9090 (healthy)." in markdown
    assert "| vllm | 10.0.1.5:8001 | gpu-1 | embed | down (connection refused) |" in markdown
    assert "## Monitoring: mon-2" in markdown and "Prometheus at - (not run)." in markdown


def test_a_service_that_is_not_in_the_run_routers_list_is_looked_up_in_its_own():
    """The routers a service was put into (its routers) count too, where the run knows no such router."""
    one = service("qwen", 8000, [0], "qwen", routers=("router-9",))
    entry = fr.build_report({"gpu-1": services_record(one)}, ALL, routers={})["summary"]["services"][0]
    assert entry["routers"] == {"router-9": "not run"}


def test_a_host_is_served_only_when_every_service_passed_its_gate():
    record = two_services()
    record["vllm_serve_results"][1]["healthy"] = False
    report = fr.build_report({"gpu-1": record}, ALL, routers=ROUTERS)
    entry = report["hosts"]["gpu-1"]
    # The first service (vllm_serve_result) is healthy; the host is not served.
    assert (entry["state"], entry["serving"]["health"]) == ("installed", "unhealthy")
    assert [one["gate"] for one in report["summary"]["services"]] == ["healthy", "unhealthy", "healthy"]
    assert report["summary"]["endpoints"] == []
    # A gate that did not run (no reading) is not a pass either.
    record["vllm_serve_results"][1]["healthy"] = None
    report = fr.build_report({"gpu-1": record}, ALL)
    assert report["hosts"]["gpu-1"]["state"] == "installed"
    assert report["summary"]["services"][1]["gate"] == "not run"


def test_without_vllm_serve_results_the_first_service_is_the_host_s_one():
    """A host of a role before several services: vllm_serve_result alone, one service, out of the routers."""
    report = fr.build_report({"gpu-1": served_record()}, ALL, routers=ROUTERS)
    assert report["hosts"]["gpu-1"]["state"] == "served"
    entry = report["summary"]["services"][0]
    assert (entry["host"], entry["served_model_name"], entry["endpoint"], entry["gate"]) == (
        "gpu-1", "qwen", "http://gpu-1:8000/v1", "healthy")
    assert (entry["gpus"], entry["port"], entry["router_server"], entry["routers"]) == (None, None, None, {})
    # An empty list (the role stopped before its first service) falls back the same way; nothing at all: none.
    record = served_record()
    record["vllm_serve_results"] = []
    assert fr.build_report({"gpu-1": record}, ALL)["hosts"]["gpu-1"]["state"] == "served"
    del record["vllm_serve_result"]
    report = fr.build_report({"gpu-1": record}, ALL)
    assert (report["hosts"]["gpu-1"]["state"], report["summary"]["services"]) == ("installed", [])
    assert report["hosts"]["gpu-1"]["serving"]["health"] == "not run"


def test_a_host_that_stopped_lists_the_services_it_recorded_and_is_not_served():
    record = services_record(service("qwen", 8000, [0], "qwen"))
    record["phases_done"] = ALL[:-1]
    report = fr.build_report({"gpu-1": record}, ALL)
    assert report["hosts"]["gpu-1"]["state"] == "failed"
    assert [one["gate"] for one in report["summary"]["services"]] == ["healthy"]
    assert report["summary"]["endpoints"] == []


def test_gpu_memory_held_by_others_over_every_service():
    others = [{"pid": 7, "used_mib": 100, "gpus": 1, "user": "bob", "whose": "other", "cmdline": "python"}]
    record = two_services()
    record["vllm_serve_results"][1]["gpu_others"] = others
    record["vllm_serve_results"][2]["gpu_others"] = others
    lines = fr.build_report({"gpu-1": record}, ALL)["hosts"]["gpu-1"]["serving"]["gpu_others"]
    assert lines == ["pid 7 (user bob, 100 MiB on 1 GPU(s), other): python"]


def test_markdown_services_and_routers_tables():
    md = fr.to_markdown(fr.build_report({"gpu-1": two_services()}, ALL, routers=ROUTERS))
    lines = md.splitlines()
    assert "- services: 3, healthy in this run: 3" in lines
    assert "## Services" in lines and "## Routers" in lines
    assert ("| gpu-1 | vllm-qwen | 0,1 | /srv/models/qwen | qwen | 8000 | http://gpu-1:8000 | healthy"
            " | 2.00 req/s, TPOT 15.0 ms, 1 target(s) missed"
            " | gpu-1_qwen in router-1, router-2 (not in router), router-3 (not run) | not scraped |") in lines
    assert "| gpu-1 | vllm-scratch | 3 | /srv/models/scratch | scratch | 8002 | http://gpu-1:8002 | healthy | -" \
        " | out of the routers | not scraped |" in lines
    assert "| router-1 | http://router-1:8080 | healthy | embed: gpu-1_embed; qwen: gpu-1_qwen, gpu-2_qwen |" in lines
    assert "| router-2 | http://router-2:8080 | unhealthy | qwen: gpu-2_qwen |" in lines
    assert "| router-3 | - | not run | - |" in lines
    # A service with a server and no router at all; a single service's GPUs the plan chooses.
    lonely = services_record(service("qwen", 8000, None, "qwen", routers=()))
    md = fr.to_markdown(fr.build_report({"gpu-1": lonely}, ALL))
    assert "| gpu-1 | vllm-qwen | not pinned | /srv/models/qwen | qwen | 8000 | http://gpu-1:8000 | healthy | - " \
        "| gpu-1_qwen, no router |" in md
    assert "## Routers" not in md
    # Nothing served, no router: neither table.
    md = fr.to_markdown(fr.build_report(dict((n, r) for n, r in fleet().items() if n != "gpu-1" and n != "gpu-5"), ALL))
    assert "## Services" not in md and "## Routers" not in md and "- services: 0, healthy in this run: 0" in md


def test_json_with_services_and_routers_is_stable():
    first = fr.to_json(fr.build_report({"gpu-1": two_services()}, ALL, routers=ROUTERS))
    routers = dict(reversed(list(copy.deepcopy(ROUTERS).items())))
    routers["router-1"]["models"] = {"embed": ["gpu-1_embed"], "qwen": ["gpu-2_qwen", "gpu-1_qwen"]}
    assert fr.to_json(fr.build_report({"gpu-1": two_services()}, ALL, routers=routers)) == first
    records = {"gpu-1": two_services()}
    before = copy.deepcopy(records), copy.deepcopy(ROUTERS)
    fr.build_report(records, ALL, routers=ROUTERS)
    assert (records, ROUTERS) == before


SETTINGS = settings(max_examples=150, deadline=None)


@SETTINGS
@given(st.lists(st.sampled_from([True, False, None, "true", 1]), max_size=5), st.booleans())
def test_served_iff_every_service_passed_its_gate(gates, with_first):
    """A host that came through every phase is served exactly when it has services and each one's healthy is True."""
    record = served_record()
    del record["vllm_serve_result"]
    record["vllm_serve_results"] = [service("s%d" % index, 8000 + index, [index], "m%d" % index, healthy=healthy)
                                    for index, healthy in enumerate(gates)]
    if with_first and gates:
        record["vllm_serve_result"] = record["vllm_serve_results"][0]
    report = fr.build_report({"gpu-1": record}, ALL)
    served = bool(gates) and all(healthy is True for healthy in gates)
    assert (report["hosts"]["gpu-1"]["state"] == "served") is served
    assert (report["hosts"]["gpu-1"]["serving"]["health"] == "healthy") is served
    assert len(report["summary"]["services"]) == len(gates)
    assert (report["summary"]["states"]["served"] == 1) is served
