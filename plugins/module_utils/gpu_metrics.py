# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU health as Prometheus metrics: the llm_monitoring role's collector for node-exporter's textfile collector.

One run reads, each call bounded in time (proc.run):

1. ``nvidia-smi --query-gpu=index,uuid,pci.bus_id,name,temperature.gpu,utilization.gpu,memory.used,memory.total,
   power.draw,ecc.errors.uncorrected.volatile.total,ecc.errors.corrected.volatile.total --format=csv,noheader,nounits``;
2. ``nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory --format=csv,noheader,nounits``, and for each process
   its ``/proc/<pid>/cgroup``: the process belongs to a service when its cgroup is a ``vllm-*.service`` unit (the
   vllm_serve role's systemd units) or supervisord's (``supervisor.service``, the role's supervisord mode); any other
   process holding GPU memory is foreign;
3. the kernel log of this boot (``journalctl -k -b``, else ``dmesg``), for ``NVRM: Xid (PCI:...): <code>`` lines,
   counted per GPU (by PCI address) and code.

and writes the text exposition format atomically (a temporary file renamed over the output), so that
node-exporter never reads half a file. A source that fails (no nvidia-smi, a timeout, a line that does not parse)
gives ``llm_gpu_collector_up{source=...} 0`` and its reason as a label of ``llm_gpu_collector_error``; the others are
still written. Nothing here raises for any input.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import os
import re
import sys
import time

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import nvidia
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._fs import write_atomic
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import proc

METRIC_FIELDS = ("index", "uuid", "pci.bus_id", "name", "temperature.gpu", "utilization.gpu", "memory.used",
                 "memory.total", "power.draw", "ecc.errors.uncorrected.volatile.total",
                 "ecc.errors.corrected.volatile.total")
APPS_FIELDS = ("gpu_uuid", "pid", "used_memory")
FORMAT = "--format=csv,noheader,nounits"
DEFAULT_TIMEOUT = 20
MIB = 1024 * 1024
SOURCES = ("nvidia-smi", "compute-apps", "xid")

# NVRM: Xid (PCI:0000:00:06): 79, pid=..., GPU has fallen off the bus.  (NVIDIA's Xid documentation's form)
_XID_RE = re.compile(r"NVRM: Xid \(PCI:([0-9a-fA-F]{1,8}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})(?:\.[0-7])?\):"
                     r"\s*(\d{1,4})\b", re.ASCII)
_BUS_ID_RE = re.compile(r"^([0-9a-fA-F]{1,8}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})(?:\.[0-7])?$", re.ASCII)
_UNIT_RE = re.compile(r"/(vllm-[A-Za-z0-9_.@:-]{1,200})\.service(?:/|$)", re.ASCII)
_SUPERVISOR_RE = re.compile(r"/supervisor(?:d)?\.service(?:/|$)", re.ASCII)
_NUMBER_RE = re.compile(r"^\d{1,15}(?:\.\d{1,6})?$", re.ASCII)


def metrics_args():
    return ["--query-gpu=" + ",".join(METRIC_FIELDS), FORMAT]


def apps_args():
    return ["--query-compute-apps=" + ",".join(APPS_FIELDS), FORMAT]


def _number(value, what, index):
    """A reading as a float, None where nvidia-smi has none ([N/A], [Not Supported]); ValueError otherwise."""
    value = value.strip()
    if nvidia.is_na(value):
        return None
    if not _NUMBER_RE.match(value):
        raise ValueError("nvidia-smi reported %s %r for GPU %s" % (what, value[:40], index))
    return float(value)


def _rows(text, fields, what):
    rows = []
    for line in (text or "").splitlines():
        if not line.strip():
            continue
        values = [value.strip() for value in line.split(",")]
        if len(values) != len(fields):
            raise ValueError("nvidia-smi %s line has %d fields, expected %d (%s): %r"
                             % (what, len(values), len(fields), ",".join(fields), line[:200]))
        rows.append(dict(zip(fields, values)))
    return rows


def parse_metrics(text):
    """[{index, uuid, pci_bus_id, name, temperature_celsius, utilization_ratio, memory_used_bytes,
    memory_total_bytes, power_watts, ecc_uncorrected, ecc_corrected}] of the --query-gpu output (METRIC_FIELDS);
    a reading nvidia-smi does not have is None. ValueError on a line that does not parse."""
    gpus = []
    seen = set()
    for row in _rows(text, METRIC_FIELDS, "--query-gpu"):
        if not re.match(r"^\d{1,4}$", row["index"], re.ASCII):
            raise ValueError("nvidia-smi --query-gpu line without a GPU index: %r" % row["index"][:40])
        index = int(row["index"])
        if index in seen:
            raise ValueError("nvidia-smi listed GPU index %d twice" % index)
        seen.add(index)
        read = dict((field, _number(row[field], field, index)) for field in METRIC_FIELDS[4:])
        gpus.append({
            "index": index,
            "uuid": None if nvidia.is_na(row["uuid"]) else row["uuid"][:80],
            "pci_bus_id": None if nvidia.is_na(row["pci.bus_id"]) else row["pci.bus_id"][:40],
            "name": row["name"][:80],
            "temperature_celsius": read["temperature.gpu"],
            "utilization_ratio": None if read["utilization.gpu"] is None else read["utilization.gpu"] / 100.0,
            "memory_used_bytes": None if read["memory.used"] is None else int(read["memory.used"]) * MIB,
            "memory_total_bytes": None if read["memory.total"] is None else int(read["memory.total"]) * MIB,
            "power_watts": read["power.draw"],
            "ecc_uncorrected": read["ecc.errors.uncorrected.volatile.total"],
            "ecc_corrected": read["ecc.errors.corrected.volatile.total"],
        })
    gpus.sort(key=lambda gpu: gpu["index"])
    return gpus


def parse_apps(text):
    """[{uuid, pid, used_bytes}] of the --query-compute-apps output (APPS_FIELDS), one line per process and GPU;
    none when no process runs. ValueError on a line that does not parse."""
    apps = []
    for row in _rows(text, APPS_FIELDS, "--query-compute-apps"):
        if not re.match(r"^\d{1,10}$", row["pid"], re.ASCII):
            raise ValueError("nvidia-smi --query-compute-apps line without a pid: %r" % row["pid"][:40])
        used = _number(row["used_memory"], "used_memory", "of pid " + row["pid"])
        apps.append({"uuid": row["gpu_uuid"][:80], "pid": int(row["pid"]),
                     "used_bytes": None if used is None else int(used) * MIB})
    return apps


def pci_key(text):
    """(domain, bus, device) of a PCI address as nvidia-smi (00000000:00:06.0) or the kernel log (0000:00:06)
    writes it; None when it is not one."""
    match = _BUS_ID_RE.match((text or "").strip())
    return tuple(int(part, 16) for part in match.groups()) if match else None


def parse_xids(text):
    """{(domain, bus, device): {code: count}} of the kernel log's ``NVRM: Xid (PCI:...): <code>`` lines."""
    found = {}
    for line in (text or "").splitlines():
        match = _XID_RE.search(line)
        if not match:
            continue
        key = tuple(int(part, 16) for part in match.groups()[:3])
        codes = found.setdefault(key, {})
        codes[int(match.group(4))] = codes.get(int(match.group(4)), 0) + 1
    return found


def owner(cgroup_text):
    """Who a GPU process belongs to, from its /proc/<pid>/cgroup: the vllm-* unit's name (vllm-chat, as the services'
    contract names it: the unit label of their metrics), 'supervisor' (the
    role's supervisord mode), 'foreign' for any other cgroup, 'unknown' when it could not be read (None)."""
    if cgroup_text is None:
        return "unknown"
    for line in cgroup_text.splitlines():
        path = line.split(":", 2)[-1]
        match = _UNIT_RE.search(path)
        if match:
            return match.group(1)
        if _SUPERVISOR_RE.search(path):
            return "supervisor"
    return "foreign"


_CONTROL_RE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f\x85\u2028\u2029]")


def _escape(value):
    """A label value in the text format: backslash, newline and quote escaped; other control characters (which
    nvidia-smi never prints, but a line-splitting reader could break on) as blanks."""
    value = _CONTROL_RE.sub(" ", str(value))
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels):
    if not labels:
        return ""
    return "{%s}" % ",".join('%s="%s"' % (name, _escape(value)) for name, value in labels)


def _value(value):
    if isinstance(value, float) and value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


class Exposition(object):
    """Metric families in the text exposition format, each with its HELP and TYPE once."""

    def __init__(self):
        self.families = []
        self.samples = {}

    def add(self, name, kind, help_text, labels, value):
        if value is None:
            return
        if name not in self.samples:
            self.families.append((name, kind, help_text))
            self.samples[name] = []
        self.samples[name].append("%s%s %s" % (name, _labels(labels), _value(value)))

    def text(self):
        lines = []
        for name, kind, help_text in self.families:
            lines.append("# HELP %s %s" % (name, help_text))
            lines.append("# TYPE %s %s" % (name, kind))
            lines.extend(self.samples[name])
        return "\n".join(lines) + "\n"


def render(gpus, apps, owners, xids, errors, now):
    """The exposition text. gpus, apps: the parsers' results (None where their source failed); owners: {pid: owner};
    xids: parse_xids()' result (None where the log could not be read); errors: {source: reason}; now: epoch seconds."""
    out = Exposition()
    for source in SOURCES:
        out.add("llm_gpu_collector_up", "gauge", "Whether the collector's source answered and parsed (1) or not (0).",
                [("source", source)], 0 if source in errors else 1)
    for source in SOURCES:
        if source in errors:
            out.add("llm_gpu_collector_error", "gauge", "Why a source of the collector failed (the reason label).",
                    [("source", source), ("reason", errors[source][:200])], 1)
    out.add("llm_gpu_collector_last_run_timestamp_seconds", "gauge", "When the collector last ran (epoch seconds).",
            [], float(int(now)))
    by_uuid = {}
    for gpu in gpus or []:
        gpu_label = ("gpu", str(gpu["index"]))
        by_uuid[gpu["uuid"]] = gpu
        out.add("llm_gpu_info", "gauge", "A GPU of the host (value 1), with its name, UUID and PCI bus id.",
                [gpu_label, ("name", gpu["name"]), ("uuid", gpu["uuid"] or ""), ("pci_bus_id", gpu["pci_bus_id"] or "")],
                1)
        for name, key, help_text in (
                ("llm_gpu_temperature_celsius", "temperature_celsius", "GPU core temperature."),
                ("llm_gpu_utilization_ratio", "utilization_ratio", "Share of the last sample period a kernel ran."),
                ("llm_gpu_memory_used_bytes", "memory_used_bytes", "GPU memory allocated by active contexts."),
                ("llm_gpu_memory_total_bytes", "memory_total_bytes", "GPU memory installed."),
                ("llm_gpu_power_watts", "power_watts", "Board power draw."),
                ("llm_gpu_ecc_uncorrected_errors", "ecc_uncorrected",
                 "Uncorrected ECC errors since the driver loaded (volatile)."),
                ("llm_gpu_ecc_corrected_errors", "ecc_corrected",
                 "Corrected ECC errors since the driver loaded (volatile).")):
            out.add(name, "gauge", help_text, [gpu_label], gpu[key])
    if apps is not None:
        foreign = dict((gpu["index"], 0) for gpu in gpus or [])
        for app in apps:
            gpu = by_uuid.get(app["uuid"])
            index = str(gpu["index"]) if gpu else app["uuid"]
            who = owners.get(app["pid"], "unknown")
            out.add("llm_gpu_process_memory_bytes", "gauge",
                    "GPU memory a process holds, with whose it is: a vllm-* unit, supervisor, foreign or unknown.",
                    [("gpu", index), ("pid", str(app["pid"])), ("owner", who)], app["used_bytes"] or 0)
            if who == "foreign" and gpu:
                foreign[gpu["index"]] += app["used_bytes"] or 0
        for index in sorted(foreign):
            out.add("llm_gpu_foreign_memory_bytes", "gauge",
                    "GPU memory held by processes that are not a service's.", [("gpu", str(index))], foreign[index])
    if xids is not None:
        by_pci = dict((pci_key(gpu["pci_bus_id"]), gpu) for gpu in gpus or [] if pci_key(gpu["pci_bus_id"]))
        for gpu in gpus or []:
            out.add("llm_gpu_xid_errors_total", "counter", "Xid errors of this boot in the kernel log, per code.",
                    [("gpu", str(gpu["index"])), ("xid", "none")], 0)
        for key in sorted(xids):
            gpu = by_pci.get(key)
            name = str(gpu["index"]) if gpu else "%04x:%02x:%02x" % key
            for code in sorted(xids[key]):
                out.add("llm_gpu_xid_errors_total", "counter", "Xid errors of this boot in the kernel log, per code.",
                        [("gpu", name), ("xid", str(code))], xids[key][code])
    return out.text()


def _reason(result, what):
    if result.timed_out:
        return "%s did not answer within %ss" % (what, result.timeout)
    lines = [line.strip() for line in (result.stdout + "\n" + result.stderr).splitlines() if line.strip()]
    text = " ".join(lines)[-300:] if lines else (result.error or "no output")
    return "%s exited with %s: %s" % (what, result.rc, text)


def read_cgroup(pid, root="/proc"):
    try:
        with open(os.path.join(root, str(pid), "cgroup"), encoding="utf-8", errors="replace") as handle:
            return handle.read(65536)
    except (IOError, OSError):
        return None


def _read(run, argv, timeout, parse, source, errors):
    """parse() of argv's output, or None with the reason in errors[source] (the command failed, or its output does
    not parse)."""
    result = run(argv, timeout)
    if not result.ok:
        errors[source] = _reason(result, "nvidia-smi " + argv[1].split("=")[0])
        return None
    try:
        return parse(result.stdout)
    except ValueError as exc:
        errors[source] = str(exc)
        return None


def collect(run, smi, timeout=DEFAULT_TIMEOUT, read_cgroup_of=read_cgroup, now=None):
    """The exposition text of one run. run(argv, timeout) -> proc.ProcResult (proc.run); smi: nvidia-smi's path."""
    errors = {}
    gpus = apps = xids = None
    owners = {}
    gpus = _read(run, [smi] + metrics_args(), timeout, parse_metrics, "nvidia-smi", errors)
    if gpus is not None:
        apps = _read(run, [smi] + apps_args(), timeout, parse_apps, "compute-apps", errors)
    else:
        errors["compute-apps"] = "nvidia-smi --query-gpu failed"
    for app in apps or []:
        owners[app["pid"]] = owner(read_cgroup_of(app["pid"]))
    for argv in (["journalctl", "-k", "-b", "--no-pager", "-o", "cat", "--grep", "NVRM: Xid"], ["dmesg"]):
        result = run(argv, timeout)
        # journalctl --grep exits 1 when no line matches.
        if result.ok or (argv[0] == "journalctl" and result.rc == 1 and not result.stderr.strip()):
            xids = parse_xids(result.stdout)
            errors.pop("xid", None)
            break
        errors["xid"] = _reason(result, argv[0])
    return render(gpus, apps, owners, xids, errors, time.time() if now is None else now)


def find_smi(path=None):
    """nvidia-smi's path: the given one, else the first of nvidia.SMI_SEARCH_DIRS that has it; None when none."""
    if path:
        return path
    for directory in nvidia.SMI_SEARCH_DIRS:
        candidate = os.path.join(directory, "nvidia-smi")
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(description="Write GPU health metrics for node-exporter's textfile collector.")
    parser.add_argument("--output", required=True, help="the .prom file to write (in the textfile directory)")
    parser.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT, help="seconds each command may take")
    parser.add_argument("--nvidia-smi", default=None, help="nvidia-smi's path (default: searched)")
    args = parser.parse_args(argv)
    smi = find_smi(args.nvidia_smi) or "nvidia-smi"
    text = collect(lambda command, timeout: proc.run(command, timeout=timeout), smi, timeout=max(1, args.timeout))
    if args.output == "-":
        sys.stdout.write(text)
    else:
        write_atomic(args.output, text)
    return 0
