# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read GPUs through nvidia-smi: the parsers and the calls gpu_facts makes.

Invocations, in order:

1. ``nvidia-smi --query-gpu=index,name,uuid,compute_cap,driver_version,memory.total,pci.bus_id
   --format=csv,noheader,nounits``: the GPU list, one call for all GPUs.
2. ``nvidia-smi`` (no arguments): only for the "CUDA Version" in its header,
   the newest CUDA the driver supports. No ``--query-gpu`` field carries it.
3. Only on drivers that reject the ``compute_cap`` field (seen on 470.x,
   which answers ``Field "compute_cap" is not a valid field to query.`` with
   exit code 2): the query again without ``compute_cap``; the compute
   capability then comes from ``NAME_TABLE`` by product name. ``nvidia-smi
   -q -x`` is no help there: its XML has no compute capability element (see
   the H200 capture in tests/fixtures/gpu/h200/smi-q.xml).

When step 1 fails for another reason (driver not loaded, no devices) the
reason is returned as ``gpu_error`` and nothing else is run.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import csv
import re

QUERY_FIELDS = ("index", "name", "uuid", "compute_cap", "driver_version", "memory.total", "pci.bus_id")
QUERY_FIELDS_NO_CAP = tuple(field for field in QUERY_FIELDS if field != "compute_cap")
QUERY_FORMAT = "--format=csv,noheader,nounits"


def query_args(fields=QUERY_FIELDS):
    return ["--query-gpu=" + ",".join(fields), QUERY_FORMAT]


# Compute capability by product name, for drivers without the compute_cap
# query field. Sources: NVIDIA's CUDA GPUs list
# (https://developer.nvidia.com/cuda-gpus) and the collection's version
# facts. First match wins; patterns run against the name with the
# "NVIDIA ", "Tesla ", "GeForce " and "Quadro " prefixes removed.
NAME_TABLE = (
    (r"^(GB|B)300\b", "10.3"),
    (r"^(GB|B)200\b|^B100\b", "10.0"),
    (r"^RTX PRO \d+ Blackwell|^RTX 50\d0", "12.0"),
    (r"^(GH|H)200\b|^H100\b|^H800\b|^H20\b", "9.0"),
    (r"^L40S?\b|^L4\b|^L20\b|^RTX 40\d0|^RTX \d+ Ada", "8.9"),
    (r"^A100\b|^A800\b|^A30\b|^PG506", "8.0"),
    (r"^A10G?\b|^A40\b|^A16\b|^A2\b|^RTX 30\d0|^RTX A\d{4}", "8.6"),
    (r"^T4G?\b|^RTX 20\d0|^RTX [4-8]000\b|^TITAN RTX|^GTX 16\d0", "7.5"),
    (r"^V100|^TITAN V\b|^GV100", "7.0"),
    (r"^P100\b", "6.0"),
    (r"^P40\b|^P4\b|^P6000\b|^GTX 10\d0|^TITAN Xp?\b", "6.1"),
    (r"^M60\b|^M40\b|^M6000\b|^GTX 9\d0", "5.2"),
    (r"^K80\b", "3.7"),
    (r"^K40|^K20", "3.5"),
)

_PREFIX_RE = re.compile(r"^(?:NVIDIA\s+)?(?:Tesla\s+|GeForce\s+|Quadro\s+)?", re.IGNORECASE)


def cap_from_name(name):
    """Compute capability for a product name from NAME_TABLE, or None."""
    short = _PREFIX_RE.sub("", name.strip())
    for pattern, cap in NAME_TABLE:
        if re.search(pattern, short, re.IGNORECASE):
            return cap
    return None


_UNKNOWN_FIELD_RE = re.compile(r'Field "([^"]+)" is not a valid field to query')


def unknown_field(output):
    """The field nvidia-smi rejected ('compute_cap'), or None."""
    match = _UNKNOWN_FIELD_RE.search(output or "")
    return match.group(1) if match else None


def _na(value):
    return value is None or value.strip() in ("", "[N/A]", "N/A", "[Not Supported]", "[Unknown Error]")


def _to_int(value):
    if _na(value):
        return None
    match = re.match(r"^\s*(\d+)", value)
    return int(match.group(1)) if match else None


def parse_query_csv(text, fields=QUERY_FIELDS):
    """Parse ``--format=csv,noheader,nounits`` output into device dicts.

    Returns (devices, driver_version). Raises ValueError on a malformed line.
    """
    devices = []
    driver_version = None
    rows = csv.reader((line for line in text.splitlines() if line.strip()), skipinitialspace=True)
    for row in rows:
        if len(row) != len(fields):
            raise ValueError("nvidia-smi query line has %d fields, expected %d (%s): %r"
                             % (len(row), len(fields), ",".join(fields), ", ".join(row)))
        values = dict(zip(fields, (value.strip() for value in row)))
        index = _to_int(values["index"])
        if index is None:
            raise ValueError("nvidia-smi query line without a GPU index: %r" % ", ".join(row))
        cap = values.get("compute_cap")
        device = {
            "index": index,
            "name": values["name"],
            "uuid": None if _na(values["uuid"]) else values["uuid"],
            "compute_cap": None if cap is None or _na(cap) else cap,
            "memory_total_mib": _to_int(values["memory.total"]),
            "pci_bus_id": None if _na(values["pci.bus_id"]) else values["pci.bus_id"],
        }
        if device["compute_cap"] is not None and not re.match(r"^\d+\.\d+$", device["compute_cap"]):
            raise ValueError("nvidia-smi reported compute_cap %r for GPU %d" % (device["compute_cap"], index))
        if driver_version is None and not _na(values["driver_version"]):
            driver_version = values["driver_version"]
        devices.append(device)
    devices.sort(key=lambda item: item["index"])
    return devices, driver_version


_HEADER_RE = re.compile(r"Driver Version:\s*(?P<driver>[0-9.]+)\s+CUDA Version:\s*(?P<cuda>[0-9.]+|N/A)")


def parse_header(text):
    """(driver_version, cuda_version) from plain ``nvidia-smi`` output; None where absent."""
    match = _HEADER_RE.search(text or "")
    if not match:
        return None, None
    cuda = match.group("cuda")
    return match.group("driver"), None if cuda == "N/A" else cuda


def error_reason(rc, out, err):
    """One readable line for a failed nvidia-smi call."""
    lines = [line.strip() for line in ((out or "") + "\n" + (err or "")).splitlines() if line.strip()]
    text = " ".join(lines) if lines else "no output"
    return "nvidia-smi exited with %s: %s" % (rc, text)


def empty_facts():
    return {
        "gpu_count": 0,
        "gpu_devices": [],
        "gpu_compute_caps": [],
        "gpu_driver_version": None,
        "gpu_driver_cuda_version": None,
        "gpu_error": None,
        "gpu_compute_cap_source": None,
        "gpu_nvidia_smi_path": None,
    }


def read_gpus(run_command, smi_path):
    """Run nvidia-smi as described in the module docstring; return (facts, warnings).

    run_command(args) -> (rc, stdout, stderr), such as AnsibleModule.run_command.
    smi_path None means no nvidia-smi on the host: gpu_count 0, no error.
    """
    facts = empty_facts()
    warnings = []
    if not smi_path:
        return facts, warnings
    facts["gpu_nvidia_smi_path"] = smi_path

    fields = QUERY_FIELDS
    rc, out, err = run_command([smi_path] + query_args(fields))
    if rc != 0 and unknown_field(out + "\n" + err) == "compute_cap":
        fields = QUERY_FIELDS_NO_CAP
        rc, out, err = run_command([smi_path] + query_args(fields))
    if rc != 0:
        facts["gpu_error"] = error_reason(rc, out, err)
        return facts, warnings
    try:
        devices, driver_version = parse_query_csv(out, fields)
    except ValueError as exc:
        facts["gpu_error"] = "cannot parse nvidia-smi output: %s" % exc
        return facts, warnings

    source = "query"
    for device in devices:
        if device["compute_cap"] is None:
            device["compute_cap"] = cap_from_name(device["name"])
            source = "name_table"
            if device["compute_cap"] is None:
                warnings.append("GPU %d (%s): compute capability unknown: the driver does not report it and the"
                                " name is not in the name table; set llm_stack_torch_cuda_arch_list for this host"
                                % (device["index"], device["name"]))

    rc, header, err = run_command([smi_path])
    header_driver, driver_cuda = parse_header(header) if rc == 0 else (None, None)
    if rc != 0:
        warnings.append("plain nvidia-smi failed, driver CUDA version unknown: %s" % error_reason(rc, header, err))
    elif driver_cuda is None:
        warnings.append("no 'CUDA Version' in the nvidia-smi header; driver CUDA version unknown")

    facts.update({
        "gpu_count": len(devices),
        "gpu_devices": devices,
        "gpu_compute_caps": sorted(set(d["compute_cap"] for d in devices if d["compute_cap"]),
                                   key=lambda cap: tuple(int(part) for part in cap.split("."))),
        "gpu_driver_version": driver_version or header_driver,
        "gpu_driver_cuda_version": driver_cuda,
        "gpu_compute_cap_source": source if devices else None,
    })
    return facts, warnings
