# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report: host states, the summary, stable JSON that two runs can diff, Markdown, the timing table."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json

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
