# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read GPUs through nvidia-smi: the parsers and the calls gpu_facts makes.

Invocations, in order (each one through proc.run, with the module's timeout):

1. ``nvidia-smi --query-gpu=index,name,uuid,compute_cap,driver_version,memory.total,pci.bus_id
   --format=csv,noheader,nounits``: the GPU list, one call for all GPUs.
   A driver that rejects a field (``Field "compute_cap" is not a valid field
   to query.``, exit code 2) is asked again: without ``compute_cap`` (seen on
   470.x; the compute capability then comes from ``NAME_TABLE`` by product
   name, since ``nvidia-smi -q -x`` has no compute capability element), and
   with ``kmd_version`` in place of ``driver_version`` (deprecated in the 610
   drivers in favour of ``kmd_version``).
2. ``nvidia-smi`` (no arguments): for the newest CUDA the driver supports, in
   the header. No ``--query-gpu`` field carries it. Known header layouts:

   - ``Driver Version: 580.159.04     CUDA Version: 13.0`` (drivers up to the
     595 series; ``CUDA Version: N/A`` when the driver reports none);
   - ``KMD Version: 610.57.04     CUDA UMD Version: 13.3`` (610 and later).

3. Only when the header gave no CUDA version: ``nvidia-smi --version``, whose
   layouts are ``DRIVER version : X`` / ``CUDA Version : Y`` (up to 595) and
   ``KMD version : X`` / ``CUDA UMD version : Y`` (610 and later, where the
   old lines read ``Deprecated, see "KMD version" instead``).
4. Only when that gave none either: ``nvidia-smi -q -x``, its top-level
   ``<cuda_version>`` (or ``<cuda_umd_version>``) and ``<driver_version>``
   (or ``<kmd_version>``) elements.

An unknown layout never gives a silent null: a warning names the field that
was looked for. A call that does not answer within the timeout stops the
reading: ``gpu_error`` says so and the host is reported as broken, with the
GPUs read so far. When step 1 fails for another reason (driver not loaded, no
devices) the reason is returned as ``gpu_error`` and nothing else is run.

``parse_compute_apps`` reads ``--query-compute-apps=pid,used_memory`` for
the vllm_serve role's checks of whose processes hold GPU memory
(module_utils/serve_procs.py).

Every parser here returns a value or raises ValueError with a readable
message; nothing else escapes for any input.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import csv
import re

from ansible_collections.gpufleet.llm_stack.plugins.module_utils.proc import call as _call

# Where nvidia-smi is looked for besides PATH, and the seconds each call may take (gpu_facts' defaults).
SMI_SEARCH_DIRS = ["/usr/bin", "/usr/local/bin", "/usr/local/nvidia/bin"]
SMI_TIMEOUT = 30

QUERY_FIELDS = ("index", "name", "uuid", "compute_cap", "driver_version", "memory.total", "pci.bus_id")
QUERY_FIELDS_NO_CAP = tuple(field for field in QUERY_FIELDS if field != "compute_cap")
QUERY_FORMAT = "--format=csv,noheader,nounits"

# field nvidia-smi rejected -> what to ask instead (None: leave it out)
FIELD_FALLBACKS = {"compute_cap": None, "driver_version": "kmd_version"}

# the versions that appear in nvidia-smi output: 470.182.03, 595.80, 610.62; 13.0
_DRIVER_VERSION = r"\d{1,4}(?:\.\d{1,5}){1,3}"
_CUDA_VERSION = r"\d{1,3}\.\d{1,3}(?:\.\d{1,4})?"
_DRIVER_RE = re.compile(r"^(%s)(?![\d.])" % _DRIVER_VERSION, re.ASCII)
_CUDA_RE = re.compile(r"^(%s)(?![\d.])" % _CUDA_VERSION, re.ASCII)
_MAX_FIELD = 512


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

_PREFIX_RE = re.compile(r"^(?:NVIDIA\s+)?(?:Tesla\s+|GeForce\s+|Quadro\s+)?", re.IGNORECASE | re.ASCII)


def cap_from_name(name):
    """Compute capability for a product name from NAME_TABLE, or None."""
    short = _PREFIX_RE.sub("", (name or "").strip())
    for pattern, cap in NAME_TABLE:
        if re.search(pattern, short, re.IGNORECASE):
            return cap
    return None


_UNKNOWN_FIELD_RE = re.compile(r'Field "([^"\n]{1,200})" is not a valid field to query')


def unknown_field(output):
    """The field nvidia-smi rejected ('compute_cap'), or None."""
    match = _UNKNOWN_FIELD_RE.search(output or "")
    return match.group(1) if match else None


def _na(value):
    return value is None or value.strip() in ("", "[N/A]", "N/A", "[Not Supported]", "[Unknown Error]")


def is_na(value):
    """Whether nvidia-smi has no value there ([N/A], [Not Supported], an empty field)."""
    return _na(value)


def _to_int(value):
    if _na(value):
        return None
    match = re.match(r"^\s*(\d{1,15})(?!\d)", value, re.ASCII)
    return int(match.group(1)) if match else None


def _show(text, limit=200):
    text = text if len(text) <= limit else text[:limit - 3] + "..."
    return repr(text)


def parse_query_csv(text, fields=QUERY_FIELDS):
    """Parse ``--format=csv,noheader,nounits`` output into device dicts.

    Returns (devices, driver_version). ``kmd_version`` counts as
    ``driver_version``. Raises ValueError on a malformed line.
    """
    devices = []
    driver_version = None
    seen = set()
    lines = [line for line in (text or "").splitlines() if line.strip()]
    try:
        rows = list(csv.reader(lines, skipinitialspace=True))
    except csv.Error as exc:
        raise ValueError("nvidia-smi query output is not CSV: %s" % exc)
    for row in rows:
        if len(row) != len(fields):
            raise ValueError("nvidia-smi query line has %d fields, expected %d (%s): %s"
                             % (len(row), len(fields), ",".join(fields), _show(", ".join(row))))
        if any(len(value) > _MAX_FIELD for value in row):
            raise ValueError("nvidia-smi query line has a field longer than %d characters: %s"
                             % (_MAX_FIELD, _show(", ".join(row))))
        values = dict(zip(fields, (value.strip() for value in row)))
        if "kmd_version" in values and "driver_version" not in values:
            values["driver_version"] = values.pop("kmd_version")
        index = _to_int(values["index"])
        if index is None or not re.match(r"^\d{1,15}$", values["index"], re.ASCII):
            raise ValueError("nvidia-smi query line without a GPU index: %s" % _show(", ".join(row)))
        if index in seen:
            raise ValueError("nvidia-smi listed GPU index %d twice" % index)
        seen.add(index)
        cap = values.get("compute_cap")
        device = {
            "index": index,
            "name": values["name"],
            "uuid": None if _na(values["uuid"]) else values["uuid"],
            "compute_cap": None if cap is None or _na(cap) else cap,
            "memory_total_mib": _to_int(values["memory.total"]),
            "pci_bus_id": None if _na(values["pci.bus_id"]) else values["pci.bus_id"],
        }
        if device["compute_cap"] is not None and not re.match(r"^\d{1,2}\.\d{1,2}$", device["compute_cap"], re.ASCII):
            raise ValueError("nvidia-smi reported compute_cap %s for GPU %d" % (_show(device["compute_cap"]), index))
        driver = values["driver_version"]
        if not _na(driver):
            if not _DRIVER_RE.match(driver) or _DRIVER_RE.match(driver).group(1) != driver:
                raise ValueError("nvidia-smi reported driver_version %s for GPU %d" % (_show(driver), index))
            if driver_version is None:
                driver_version = driver
        devices.append(device)
    devices.sort(key=lambda item: item["index"])
    return devices, driver_version


# ---------------------------------------------------------------------------
# compute processes: --query-compute-apps

COMPUTE_APPS_FIELDS = ("pid", "used_memory")
_PID_RE = re.compile(r"^\d{1,10}$", re.ASCII)


def compute_apps_args():
    return ["--query-compute-apps=" + ",".join(COMPUTE_APPS_FIELDS), QUERY_FORMAT]


GPU_MEMORY_FIELDS = ("index", "memory.total", "memory.used")


def gpu_memory_args():
    return ["--query-gpu=" + ",".join(GPU_MEMORY_FIELDS), QUERY_FORMAT]


def parse_gpu_memory(text):
    """``nvidia-smi --query-gpu=index,memory.total,memory.used --format=csv,noheader,nounits``:
    [{index, total_mib, used_mib}], one line per GPU such as ``0, 143771, 4123``. A value nvidia-smi does not have
    (``[N/A]``) is None; a value with its unit (``143771 MiB``) is read too. Raises ValueError on any other line."""
    gpus = []
    for line in (text or "").splitlines():
        if not line.strip():
            continue
        fields = [field.strip() for field in line.split(",")]
        if len(fields) != len(GPU_MEMORY_FIELDS) or not re.match(r"^\d{1,4}$", fields[0], re.ASCII):
            raise ValueError("nvidia-smi --query-gpu line is not 'index, memory.total, memory.used': %s" % _show(line))
        values = []
        for name, field in zip(GPU_MEMORY_FIELDS[1:], fields[1:]):
            memory = field[:-4].strip() if field.endswith(" MiB") else field
            if _na(memory):
                values.append(None)
            elif re.match(r"^\d{1,12}$", memory, re.ASCII):
                values.append(int(memory))
            else:
                raise ValueError("nvidia-smi --query-gpu reported %s %s for GPU %s" % (name, _show(field), fields[0]))
        gpus.append({"index": int(fields[0]), "total_mib": values[0], "used_mib": values[1]})
    return gpus


def parse_compute_apps(text):
    """``nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits``: [{pid, used_mib}].

    One line per process and GPU it uses, such as ``480, 1542``; no line at
    all when no compute process runs (both real, from an H200 with driver
    580.159.04: tests/fixtures/vllm_serve/compute-apps-*.csv). used_mib is
    None where nvidia-smi has no value (``[N/A]``, ``[Not Supported]``); a
    value with its unit (``1542 MiB``, the output without ``nounits``) is
    read too. Raises ValueError on any other line.
    """
    apps = []
    for line in (text or "").splitlines():
        if not line.strip():
            continue
        fields = [field.strip() for field in line.split(",")]
        if len(fields) != len(COMPUTE_APPS_FIELDS) or not _PID_RE.match(fields[0]):
            raise ValueError("nvidia-smi --query-compute-apps line is not 'pid, used_memory': %s" % _show(line))
        memory = fields[1][:-4].strip() if fields[1].endswith(" MiB") else fields[1]
        if _na(memory):
            used = None
        elif re.match(r"^\d{1,12}$", memory, re.ASCII):
            used = int(memory)
        else:
            raise ValueError("nvidia-smi --query-compute-apps reported used_memory %s for pid %s"
                             % (_show(fields[1]), fields[0]))
        apps.append({"pid": int(fields[0]), "used_mib": used})
    return apps


# ---------------------------------------------------------------------------
# driver and CUDA versions: header, --version, -q -x

HEADER_LAYOUTS = (
    # (name, driver label, CUDA label), as printed in the nvidia-smi header
    ("classic", "Driver Version", "CUDA Version"),
    ("kmd-umd", "KMD Version", "CUDA UMD Version"),
)
_HEADER_DRIVER_RE = re.compile(r"(?:^|[\s|])(Driver|KMD) Version:[ \t]*(\S{0,64})", re.ASCII)
_HEADER_CUDA_RE = re.compile(r"(?:^|[\s|])(CUDA UMD|CUDA) Version:[ \t]*(\S{0,64})", re.ASCII)


def _reading(source, driver=None, cuda=None, cuda_na=False, missing=()):
    return {"source": source, "driver": driver, "cuda": cuda, "cuda_na": cuda_na, "missing": list(missing)}


def _labelled_reading(source, driver, cuda, cuda_na, labels):
    """A reading whose ``missing`` names the (driver, cuda) labels not found; CUDA 'N/A' is not missing."""
    missing = []
    if driver is None:
        missing.append(labels[0])
    if cuda is None and not cuda_na:
        missing.append(labels[1])
    return _reading(source, driver, cuda, cuda is None and cuda_na, missing)


def _value(pattern, text):
    """(version or None, is_na) from the text after a label."""
    text = (text or "").strip()
    if text.upper() in ("N/A", "[N/A]"):
        return None, True
    match = pattern.match(text)
    return (match.group(1), False) if match else (None, False)


def _header_block(text):
    """The header of plain nvidia-smi output: the lines above the first '|===' row."""
    lines = []
    for line in (text or "").splitlines()[:40]:
        if line.startswith("|="):
            break
        lines.append(line)
    return "\n".join(lines)


def read_header(text):
    """Driver and CUDA version from the header of plain ``nvidia-smi``.

    Returns {source: 'header', driver, cuda, cuda_na, missing}: missing names
    the labels looked for and not found (an unknown layout).
    """
    block = _header_block(text)
    driver = cuda = None
    cuda_na = False
    missing = []
    match = _HEADER_DRIVER_RE.search(block)
    if match:
        driver = _value(_DRIVER_RE, match.group(2))[0]
    else:
        missing.append("'Driver Version:' or 'KMD Version:'")
    match = _HEADER_CUDA_RE.search(block)
    if match:
        cuda, cuda_na = _value(_CUDA_RE, match.group(2))
    else:
        missing.append("'CUDA Version:' or 'CUDA UMD Version:'")
    return _reading("header", driver, cuda, cuda_na, missing)


def parse_header(text):
    """(driver_version, cuda_version) from plain ``nvidia-smi`` output; None where absent."""
    reading = read_header(text)
    return reading["driver"], reading["cuda"]


_VERSION_LINE_RE = re.compile(r"^[ \t]*([A-Za-z][A-Za-z -]{0,40}?)[ \t]*:[ \t]*(.{0,200})$", re.MULTILINE | re.ASCII)
_VERSION_KEYS = {
    "driver version": ("driver", 0),
    "kmd version": ("driver", 1),
    "cuda version": ("cuda", 0),
    "cuda umd version": ("cuda", 1),
}


def read_version_output(text):
    """Driver and CUDA version from ``nvidia-smi --version``.

    Both layouts: 'DRIVER version : X' / 'CUDA Version : Y', and the 610
    one, 'KMD version : X' / 'CUDA UMD version : Y' (the old lines then
    read 'Deprecated, see "KMD version" instead'). The new names win.
    """
    found = {"driver": {}, "cuda": {}}
    cuda_na = False
    for match in _VERSION_LINE_RE.finditer(text or ""):
        key = " ".join(match.group(1).lower().split())
        if key not in _VERSION_KEYS:
            continue
        what, rank = _VERSION_KEYS[key]
        value, na = _value(_DRIVER_RE if what == "driver" else _CUDA_RE, match.group(2))
        if what == "cuda" and na:
            cuda_na = True
        if value is not None:
            found[what].setdefault(rank, value)
    driver = found["driver"].get(1) or found["driver"].get(0)
    cuda = found["cuda"].get(1) or found["cuda"].get(0)
    return _labelled_reading("version", driver, cuda, cuda_na,
                             ("'DRIVER version' or 'KMD version'", "'CUDA Version' or 'CUDA UMD version'"))


_XML_RE = re.compile(r"<(driver_version|kmd_version|cuda_version|cuda_umd_version)>([^<]{0,200})</\1>", re.ASCII)


def read_xml_versions(text):
    """Driver and CUDA version from ``nvidia-smi -q -x``: the first <kmd_version> or
    <driver_version>, and <cuda_umd_version> or <cuda_version> (the new names win)."""
    found = {}
    for match in _XML_RE.finditer(text or ""):
        found.setdefault(match.group(1), match.group(2))
    driver = None
    for tag in ("kmd_version", "driver_version"):
        if tag in found and driver is None:
            driver = _value(_DRIVER_RE, found[tag])[0]
    cuda = None
    cuda_na = False
    for tag in ("cuda_umd_version", "cuda_version"):
        if tag in found and cuda is None:
            value, na = _value(_CUDA_RE, found[tag])
            cuda = value
            cuda_na = cuda_na or na
    return _labelled_reading("xml", driver, cuda, cuda_na,
                             ("<driver_version> or <kmd_version>", "<cuda_version> or <cuda_umd_version>"))


# ---------------------------------------------------------------------------
# running nvidia-smi

def error_reason(rc, out, err, error=None):
    """One readable line for a failed nvidia-smi call (error: proc's reason, used when it printed nothing)."""
    lines = [line.strip() for line in ((out or "") + "\n" + (err or "")).splitlines() if line.strip()]
    text = " ".join(lines) if lines else (error or "no output")
    if len(text) > 600:
        text = text[:597] + "..."
    return "nvidia-smi exited with %s: %s" % (rc, text)


def timeout_error(timeout, what):
    """gpu_error for a call that did not answer: the host is reported as broken."""
    return ("nvidia-smi did not answer within %s seconds (a wedged GPU or driver?) while %s; its processes were"
            " stopped. Fix: run nvidia-smi on this host and look for Xid errors in dmesg (a wedged GPU usually"
            " needs a GPU reset or a reboot); raise the timeout of gpu_facts only if the host is just slow"
            % (timeout, what))


NOT_UTF8 = "nvidia-smi printed bytes that are not UTF-8 (shown as U+FFFD)"


def empty_facts():
    return {
        "gpu_count": 0,
        "gpu_devices": [],
        "gpu_compute_caps": [],
        "gpu_driver_version": None,
        "gpu_driver_cuda_version": None,
        "gpu_driver_cuda_version_source": None,
        "gpu_error": None,
        "gpu_compute_cap_source": None,
        "gpu_nvidia_smi_path": None,
    }


def _query(run_command, smi_path):
    """Run the GPU query, asking again without (or instead of) fields the driver rejects.

    Returns (result, fields).
    """
    fields = list(QUERY_FIELDS)
    result = None
    for dummy in range(len(FIELD_FALLBACKS) + 1):
        result = _call(run_command, [smi_path] + query_args(fields))
        if result.timed_out or result.rc == 0:
            break
        rejected = unknown_field(result.stdout + "\n" + result.stderr)
        if rejected not in fields or rejected not in FIELD_FALLBACKS:
            break
        replacement = FIELD_FALLBACKS[rejected]
        if replacement is None or replacement in fields:
            fields.remove(rejected)
        else:
            fields[fields.index(rejected)] = replacement
    return result, tuple(fields)


def _sort_caps(caps):
    return sorted(set(caps), key=lambda cap: tuple(int(part) for part in cap.split(".")))


def _describe_missing(reading):
    what = {"header": "the nvidia-smi header", "version": "`nvidia-smi --version`", "xml": "`nvidia-smi -q -x`"}
    return "%s has no %s" % (what[reading["source"]], " and no ".join(reading["missing"]))


def _argv_text(argv):
    return "`%s`" % " ".join(["nvidia-smi"] + list(argv[1:]))


VERSION_STEPS = (
    ([], read_header, "reading the nvidia-smi header"),
    (["--version"], read_version_output, "reading nvidia-smi --version"),
    (["-q", "-x"], read_xml_versions, "reading nvidia-smi -q -x"),
)


def _read_versions(run_command, smi_path, timeout, warnings):
    """The driver's CUDA version from the header, else --version, else -q -x.

    Returns (driver, cuda, source, error); error is set when a call timed out.
    Every step that did not give the CUDA version is named in a warning.
    """
    notes = []
    driver = None
    for args, parse, doing in VERSION_STEPS:
        argv = [smi_path] + args
        result = _call(run_command, argv)
        if result.timed_out:
            return driver, None, None, timeout_error(timeout, doing)
        if result.rc != 0:
            reason = error_reason(result.rc, result.stdout, result.stderr, result.error)
            notes.append("%s failed: %s" % (_argv_text(argv), reason))
            continue
        if result.decode_errors:
            warnings.append("%s while %s" % (NOT_UTF8, doing))
        reading = parse(result.stdout)
        driver = driver or reading["driver"]
        if reading["cuda"] is not None:
            if notes:
                warnings.append("%s; the driver CUDA version %s was read from %s instead"
                                % ("; ".join(notes), reading["cuda"], _argv_text(argv)))
            return driver, reading["cuda"], reading["source"], None
        if reading["cuda_na"]:
            # a known layout that says N/A: the other outputs say the same
            notes.append("%s reports the CUDA version as N/A" % _argv_text(argv))
            break
        notes.append(_describe_missing(reading) + " (a layout gpu_facts does not know)")
    warnings.append("driver CUDA version unknown: %s. Preflight cannot check the driver against the CUDA pins of"
                    " this host. Fix: check nvidia-smi on the host; if its output looks right, its layout is new"
                    " and gpu_facts needs to learn it" % "; ".join(notes))
    return driver, None, None, None


def read_gpus(run_command, smi_path, timeout=30):
    """Run nvidia-smi as described in the module docstring; return (facts, warnings).

    run_command(argv) -> ProcResult (proc.run with the timeout bound), or a
    (rc, stdout, stderr) tuple. smi_path None means no nvidia-smi on the host:
    gpu_count 0, no error.
    """
    facts = empty_facts()
    warnings = []
    if not smi_path:
        return facts, warnings
    facts["gpu_nvidia_smi_path"] = smi_path

    result, fields = _query(run_command, smi_path)
    if result.timed_out:
        facts["gpu_error"] = timeout_error(timeout, "listing the GPUs")
        return facts, warnings
    if result.rc != 0:
        facts["gpu_error"] = error_reason(result.rc, result.stdout, result.stderr, result.error)
        return facts, warnings
    try:
        devices, driver_version = parse_query_csv(result.stdout, fields)
    except ValueError as exc:
        facts["gpu_error"] = "cannot parse nvidia-smi output: %s%s" % (
            exc, "; %s" % NOT_UTF8 if result.decode_errors else "")
        return facts, warnings
    if result.decode_errors:
        warnings.append("%s in the GPU list; the GPU names may hold U+FFFD characters" % NOT_UTF8)

    source = "query"
    for device in devices:
        if device["compute_cap"] is None:
            device["compute_cap"] = cap_from_name(device["name"])
            source = "name_table"
            if device["compute_cap"] is None:
                warnings.append("GPU %d (%s): compute capability unknown: the driver does not report it and the"
                                " name is not in the name table; set llm_stack_torch_cuda_arch_list for this host"
                                % (device["index"], device["name"]))

    facts.update({
        "gpu_count": len(devices),
        "gpu_devices": devices,
        "gpu_compute_caps": _sort_caps(d["compute_cap"] for d in devices if d["compute_cap"]),
        "gpu_driver_version": driver_version,
        "gpu_compute_cap_source": source if devices else None,
    })

    header_driver, cuda, cuda_source, error = _read_versions(run_command, smi_path, timeout, warnings)
    facts.update({
        "gpu_driver_version": driver_version or header_driver,
        "gpu_driver_cuda_version": cuda,
        "gpu_driver_cuda_version_source": cuda_source,
    })
    if error:
        facts["gpu_error"] = error
    elif devices and facts["gpu_driver_version"] is None:
        warnings.append("driver version unknown: neither the GPU query (driver_version) nor the nvidia-smi"
                        " header ('Driver Version:' or 'KMD Version:') gave one")
    return facts, warnings
