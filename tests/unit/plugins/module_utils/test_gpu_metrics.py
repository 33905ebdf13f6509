# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_metrics, the GPU collector: its parsers on real nvidia-smi output (tests/fixtures/gpu_metrics/README.md), the
kernel log's Xid lines in the form NVIDIA documents, the owner of a GPU process from its cgroup, and the exposition
text of a whole run (failing sources included), checked line by line against the text format."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import gpu_metrics as G
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.proc import ProcResult

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "..", "fixtures", "gpu_metrics")
UUID = "GPU-e2be0dc1-c0da-c906-72cb-353d78a5653f"


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return handle.read()


# A sample line of the text exposition format: name{labels} value.
SAMPLE_RE = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\[\\"n])*",?)*\})? '
                       r'-?[0-9.e+-]+$')


def check_exposition(text):
    """Every line a HELP, a TYPE or a sample; each family's HELP and TYPE once, before its samples."""
    assert text.endswith("\n")
    seen = {}
    for line in text[:-1].split("\n"):
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            name = line.split(" ")[2]
            assert (line[2:6], name) not in seen, line
            seen[(line[2:6], name)] = True
            if line.startswith("# TYPE "):
                assert line.split(" ")[3] in ("gauge", "counter"), line
            continue
        assert SAMPLE_RE.match(line), line
        name = re.match(r"^[^{ ]+", line).group(0)
        assert ("TYPE", name) in seen, line


def test_the_queries():
    assert G.metrics_args() == [
        "--query-gpu=index,uuid,pci.bus_id,name,temperature.gpu,utilization.gpu,memory.used,memory.total,power.draw,"
        "ecc.errors.uncorrected.volatile.total,ecc.errors.corrected.volatile.total", "--format=csv,noheader,nounits"]
    assert G.apps_args() == ["--query-compute-apps=gpu_uuid,pid,used_memory", "--format=csv,noheader,nounits"]


def test_compute_apps_real_captures():
    assert G.parse_apps(fixture("compute-apps-h100-busy.csv")) == [
        {"uuid": UUID, "pid": 497, "used_bytes": 2426 * G.MIB}]
    assert G.parse_apps(fixture("compute-apps-h100-none.csv")) == []


def test_metrics_real_captures_of_an_h100():
    idle, busy = G.parse_metrics(fixture("metrics-h100-idle.csv")), G.parse_metrics(fixture("metrics-h100-busy.csv"))
    assert idle == [{"index": 0, "uuid": "GPU-5e53b8c1-d963-0f4d-8973-937bf074ab88", "pci_bus_id": "00000000:00:06.0",
                     "name": "NVIDIA H100 80GB HBM3", "temperature_celsius": 43.0, "utilization_ratio": 0.0,
                     "memory_used_bytes": 0, "memory_total_bytes": 81559 * G.MIB, "power_watts": 77.19,
                     "ecc_uncorrected": 0.0, "ecc_corrected": 0.0}]
    assert busy[0]["memory_used_bytes"] == 2667 * G.MIB and busy[0]["power_watts"] == 132.51


def test_the_collector_s_output_on_the_h100_is_its_render():
    # The output the collector wrote on the H100 while a torch process (not a service's) held 2 GiB.
    text = fixture("llm_gpu-h100-busy.prom")
    assert 'llm_gpu_foreign_memory_bytes{gpu="0"} 2787115008' in text
    assert 'llm_gpu_process_memory_bytes{gpu="0",pid="1070",owner="foreign"} 2787115008' in text
    gpus = G.parse_metrics(fixture("metrics-h100-busy.csv"))
    apps = [{"uuid": gpus[0]["uuid"], "pid": 1070, "used_bytes": 2787115008}]
    now = float(re.search(r"^llm_gpu_collector_last_run_timestamp_seconds (\S+)$", text, re.M).group(1))
    rendered = G.render(gpus, apps, {1070: "foreign"}, {}, {}, now)
    produced = [line for line in text.splitlines() if not line.startswith("#")]
    assert [line for line in rendered.splitlines() if not line.startswith("#") and "temperature" not in line
            and "power" not in line and "memory_used" not in line] == \
        [line for line in produced if "temperature" not in line and "power" not in line and "memory_used" not in line]


def test_metrics_values_and_na():
    text = ("0, GPU-1, 00000000:00:06.0, NVIDIA H200, 36, 0, 0, 143771, 128.45, 0, 0\n"
            "1, GPU-2, 00000000:00:07.0, NVIDIA H200, 81, 97, 140000, 143771, [N/A], [N/A], [Not Supported]\n")
    gpus = G.parse_metrics(text)
    assert gpus[0] == {"index": 0, "uuid": "GPU-1", "pci_bus_id": "00000000:00:06.0", "name": "NVIDIA H200",
                       "temperature_celsius": 36.0, "utilization_ratio": 0.0, "memory_used_bytes": 0,
                       "memory_total_bytes": 143771 * G.MIB, "power_watts": 128.45, "ecc_uncorrected": 0.0,
                       "ecc_corrected": 0.0}
    assert gpus[1]["utilization_ratio"] == 0.97 and gpus[1]["power_watts"] is None
    assert gpus[1]["ecc_uncorrected"] is None and gpus[1]["ecc_corrected"] is None


@pytest.mark.parametrize("text, message", [
    ("0, GPU-1, 00000000:00:06.0, NVIDIA H200, 36\n", "has 5 fields, expected 11"),
    ("x, GPU-1, 00000000:00:06.0, NVIDIA H200, 36, 0, 0, 143771, 128.45, 0, 0\n", "without a GPU index"),
    ("0, GPU-1, 00000000:00:06.0, NVIDIA H200, hot, 0, 0, 143771, 128.45, 0, 0\n", "temperature.gpu 'hot'"),
    ("0, a, b, c, 1, 1, 1, 1, 1, 1, 1\n0, a, b, c, 1, 1, 1, 1, 1, 1, 1\n", "index 0 twice"),
])
def test_metrics_refuses_what_does_not_parse(text, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        G.parse_metrics(text)


def test_xid_lines_in_nvidias_documented_form():
    log = "\n".join([
        "NVRM: Xid (PCI:0000:00:06): 79, pid=1234, name=python3, GPU has fallen off the bus.",
        "NVRM: Xid (PCI:0000:00:06): 79, pid=1234, name=python3, GPU has fallen off the bus.",
        "NVRM: Xid (PCI:0000:3b:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error",
        "[  12.3] NVRM: Xid (PCI:0000:00:07.0): 13, Graphics Exception",
        "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  580.159.04",
    ])
    assert G.parse_xids(log) == {(0, 0, 6): {79: 2}, (0, 0x3b, 0): {48: 1}, (0, 0, 7): {13: 1}}
    assert G.pci_key("00000000:00:06.0") == (0, 0, 6) and G.pci_key("0000:3B:00") == (0, 0x3b, 0)
    assert G.pci_key("bogus") is None and G.pci_key(None) is None


@pytest.mark.parametrize("cgroup, who", [
    ("0::/system.slice/vllm-chat.service\n", "vllm-chat"),
    ("0::/system.slice/vllm-chat.service/engine\n", "vllm-chat"),
    ("12:memory:/system.slice/supervisor.service\n0::/system.slice/supervisor.service\n", "supervisor"),
    ("0::/user.slice/user-1000.slice/session-3.scope\n", "foreign"),
    ("0::/system.slice/vllm-chat.service.bak/x\n", "foreign"),
    (None, "unknown"),
])
def test_owner_from_the_cgroup(cgroup, who):
    assert G.owner(cgroup) == who


def test_owner_of_a_real_capture():
    """A torch process started by hand on a GPU host: foreign."""
    assert G.owner(fixture("cgroup-h100-host.txt")) == "foreign"


def runner(answers):
    calls = []

    def run(argv, timeout):
        calls.append((argv, timeout))
        for prefix, result in answers:
            if argv[:len(prefix)] == prefix:
                return result
        return ProcResult(rc=127, argv=argv, error="no such program")
    return run, calls


METRICS = "0, %s, 00000000:00:06.0, NVIDIA H100 80GB HBM3, 35, 100, 2950, 81559, 250.5, 0, 0\n" % UUID


def test_a_whole_run():
    answers = [
        (["/usr/bin/nvidia-smi", G.metrics_args()[0]], ProcResult(rc=0, stdout=METRICS)),
        (["/usr/bin/nvidia-smi", G.apps_args()[0]], ProcResult(rc=0, stdout=fixture("compute-apps-h100-busy.csv")
                                                               + "%s, 600, 512\n" % UUID)),
        (["journalctl"], ProcResult(rc=0, stdout="NVRM: Xid (PCI:0000:00:06): 79, pid=1, GPU has fallen off the bus.\n")),
    ]
    run, calls = runner(answers)
    cgroups = {497: "0::/user.slice/session-1.scope\n", 600: "0::/system.slice/vllm-chat.service\n"}
    text = G.collect(run, "/usr/bin/nvidia-smi", timeout=7, read_cgroup_of=cgroups.get, now=1700000000.5)
    check_exposition(text)
    assert [argv[0] for argv, dummy in calls] == ["/usr/bin/nvidia-smi", "/usr/bin/nvidia-smi", "journalctl"]
    assert all(timeout == 7 for dummy, timeout in calls)
    for line in ('llm_gpu_collector_up{source="nvidia-smi"} 1', 'llm_gpu_collector_up{source="xid"} 1',
                 'llm_gpu_collector_last_run_timestamp_seconds 1700000000',
                 'llm_gpu_info{gpu="0",name="NVIDIA H100 80GB HBM3",uuid="%s",pci_bus_id="00000000:00:06.0"} 1' % UUID,
                 'llm_gpu_utilization_ratio{gpu="0"} 1', 'llm_gpu_power_watts{gpu="0"} 250.5',
                 'llm_gpu_memory_used_bytes{gpu="0"} %d' % (2950 * G.MIB),
                 'llm_gpu_process_memory_bytes{gpu="0",pid="497",owner="foreign"} %d' % (2426 * G.MIB),
                 'llm_gpu_process_memory_bytes{gpu="0",pid="600",owner="vllm-chat"} %d' % (512 * G.MIB),
                 'llm_gpu_foreign_memory_bytes{gpu="0"} %d' % (2426 * G.MIB),
                 'llm_gpu_xid_errors_total{gpu="0",xid="none"} 0', 'llm_gpu_xid_errors_total{gpu="0",xid="79"} 1'):
        assert line in text.splitlines(), line
    assert "llm_gpu_collector_error" not in text


def test_no_nvidia_smi_and_no_kernel_log():
    run, calls = runner([(["dmesg"], ProcResult(rc=1, stderr="dmesg: read kernel buffer failed: Operation not permitted"))])
    text = G.collect(run, "nvidia-smi", now=5)
    check_exposition(text)
    lines = text.splitlines()
    assert 'llm_gpu_collector_up{source="nvidia-smi"} 0' in lines
    assert 'llm_gpu_collector_up{source="compute-apps"} 0' in lines
    assert 'llm_gpu_collector_up{source="xid"} 0' in lines
    assert any(line.startswith('llm_gpu_collector_error{source="xid",reason="dmesg exited with 1: dmesg: read kernel')
               for line in lines)
    assert not any(line.startswith("llm_gpu_info") for line in lines)
    assert [argv[0] for argv, dummy in calls] == ["nvidia-smi", "journalctl", "dmesg"]


def test_a_hung_nvidia_smi_is_reported_with_its_timeout():
    run, dummy = runner([(["nvidia-smi"], ProcResult(rc=None, timed_out=True, timeout=20)),
                         (["journalctl"], ProcResult(rc=1, stdout="", stderr=""))])
    text = G.collect(run, "nvidia-smi", timeout=20, now=5)
    check_exposition(text)
    assert 'llm_gpu_collector_error{source="nvidia-smi",reason="nvidia-smi --query-gpu did not answer within 20s"} 1' \
        in text.splitlines()
    # journalctl --grep with no match exits 1: read, nothing found.
    assert 'llm_gpu_collector_up{source="xid"} 1' in text.splitlines()


def test_label_values_are_escaped():
    gpus = G.parse_metrics('0, GPU-"x"\\y, 00000000:00:06.0, Odd "name", 1, 1, 1, 1, 1, 1, 1\n')
    text = G.render(gpus, [], {}, {}, {}, 0)
    check_exposition(text)
    assert 'name="Odd \\"name\\"",uuid="GPU-\\"x\\"\\\\y"' in text


def test_write_atomic(tmp_path):
    path = str(tmp_path / "llm_gpu.prom")
    G.write_atomic(path, "a 1\n")
    G.write_atomic(path, "a 2\n")
    assert open(path).read() == "a 2\n" and oct(os.stat(path).st_mode & 0o777) == "0o644"
    assert os.listdir(str(tmp_path)) == ["llm_gpu.prom"]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_the_parsers_raise_only_valueerror(text):
    for parse in (G.parse_metrics, G.parse_apps):
        try:
            parse(text)
        except ValueError:
            pass
    G.parse_xids(text)
    G.owner(text)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 7), st.text(max_size=30), st.floats(0, 1000, allow_nan=False)),
                max_size=4, unique_by=lambda item: item[0]))
def test_any_readings_render_valid_exposition(rows):
    gpus = [{"index": index, "uuid": "GPU-%d" % index, "pci_bus_id": None, "name": name,
             "temperature_celsius": value, "utilization_ratio": None, "memory_used_bytes": int(value),
             "memory_total_bytes": None, "power_watts": value, "ecc_uncorrected": None, "ecc_corrected": 0.0}
            for index, name, value in rows]
    check_exposition(G.render(gpus, [], {}, {}, {"xid": 'bad "log"\n'}, 0))


def test_the_role_copies_every_module_the_collector_imports():
    """roles/llm_monitoring copies llm_monitoring_collector_modules to the host: gpu_metrics and, transitively,
    every module_utils file it imports (the host has no collection installed)."""
    import yaml
    utils = os.path.join(HERE, "..", "..", "..", "..", "plugins", "module_utils")
    with open(os.path.join(utils, "..", "..", "roles", "llm_monitoring", "vars", "main.yml"), encoding="utf-8") as f:
        listed = set(yaml.safe_load(f)["llm_monitoring_collector_modules"])
    needed, todo = set(), ["gpu_metrics"]
    while todo:
        name = todo.pop()
        if name in needed:
            continue
        needed.add(name)
        with open(os.path.join(utils, name + ".py"), encoding="utf-8") as handle:
            text = handle.read()
        todo += re.findall(r"plugins\.module_utils(?:\.|\s+import\s+)(\w+)", text)
    assert set(name + ".py" for name in needed) == listed
