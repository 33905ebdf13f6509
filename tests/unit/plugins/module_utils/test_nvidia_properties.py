# -*- coding: utf-8 -*-
"""Property tests: every nvidia-smi output either parses to values that round-trip, or gives a clean error."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import csv
import io
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import nvidia

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
HEAVY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

driver_versions = st.builds(lambda parts: ".".join(str(p) for p in parts),
                            st.lists(st.integers(0, 9999), min_size=2, max_size=4))
cuda_versions = st.builds(lambda a, b: "%d.%d" % (a, b), st.integers(0, 999), st.integers(0, 999))
caps = st.builds(lambda a, b: "%d.%d" % (a, b), st.integers(1, 12), st.integers(0, 9))
# product names as nvidia-smi prints them: printable text, no line breaks, no padding, not an N/A marker
names = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp"), blacklist_characters="\x85"),
    min_size=1, max_size=40,
).map(lambda s: s.strip()).filter(lambda s: s and s not in ("N/A", "[N/A]", "[Not Supported]", "[Unknown Error]"))
uuids = st.uuids().map(lambda u: "GPU-%s" % u)
bus_ids = st.builds(lambda d, b: "%08X:%02X:00.0" % (d, b), st.integers(0, 0xFFFF), st.integers(0, 0xFF))


@st.composite
def device_lists(draw):
    count = draw(st.integers(1, 4))
    indexes = draw(st.lists(st.integers(0, 63), min_size=count, max_size=count, unique=True))
    devices = []
    for index in indexes:
        devices.append({
            "index": index,
            "name": draw(names),
            "uuid": draw(st.one_of(st.none(), uuids)),
            "compute_cap": draw(st.one_of(st.none(), caps)),
            "memory_total_mib": draw(st.one_of(st.none(), st.integers(0, 10 ** 9))),
            "pci_bus_id": draw(st.one_of(st.none(), bus_ids)),
        })
    return devices


def render_csv(devices, driver):
    """What nvidia-smi --query-gpu=... --format=csv,noheader,nounits prints (quoted where CSV needs it)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for d in devices:
        writer.writerow([d["index"], d["name"], d["uuid"] or "[N/A]", d["compute_cap"] or "[N/A]",
                         driver or "[N/A]", "[N/A]" if d["memory_total_mib"] is None else d["memory_total_mib"],
                         d["pci_bus_id"] or "[N/A]"])
    # nvidia-smi separates fields with ", "
    return "\n".join(line.replace(",", ", ") if '"' not in line else line for line in out.getvalue().splitlines())


@HEAVY
@given(device_lists(), st.one_of(st.none(), driver_versions))
def test_query_csv_round_trips(devices, driver):
    parsed, parsed_driver = nvidia.parse_query_csv(render_csv(devices, driver))
    assert parsed == sorted(devices, key=lambda d: d["index"])
    assert parsed_driver == driver


@SETTINGS
@given(st.text(max_size=300))
def test_query_csv_any_text_parses_or_is_a_clean_error(text):
    try:
        devices, driver = nvidia.parse_query_csv(text)
    except ValueError as exc:
        assert str(exc)
        return
    for device in devices:
        assert isinstance(device["index"], int)
        assert device["compute_cap"] is None or re.match(r"^\d{1,2}\.\d{1,2}$", device["compute_cap"])
    assert driver is None or re.match(r"^\d{1,4}(\.\d{1,5}){1,3}$", driver)


@SETTINGS
@given(st.lists(st.sampled_from(["0", "NVIDIA H200", "GPU-1", "9.0", "580.1", "[N/A]", "", "1.2.3.4.5", '"', ",",
                                 "\ufffd", "-1", " ", "x" * 600]), min_size=0, max_size=9))
def test_query_csv_field_soup_parses_or_is_a_clean_error(values):
    try:
        nvidia.parse_query_csv(", ".join(values) + "\n")
    except ValueError:
        pass


LAYOUTS = [("Driver Version", "CUDA Version"), ("KMD Version", "CUDA UMD Version")]


def header_line(smi, driver, cuda, labels):
    start = "| NVIDIA-SMI " + smi.ljust(23)
    middle = (labels[0] + ": " + driver).ljust(max(0, 90 - 9 - len(labels[1]) - 2 - len(start))) + " "
    return start + middle + labels[1] + ": " + cuda.ljust(9) + "|"


@SETTINGS
@given(driver_versions, st.one_of(cuda_versions, st.just("N/A")), st.sampled_from(LAYOUTS))
def test_header_round_trips(driver, cuda, labels):
    text = "Mon Jan  1 00:00:00 2026\n+----+\n%s\n+----+\n|====|\n" % header_line(driver, driver, cuda, labels)
    reading = nvidia.read_header(text)
    assert reading["driver"] == driver
    assert reading["cuda"] == (None if cuda == "N/A" else cuda)
    assert reading["cuda_na"] == (cuda == "N/A")
    assert reading["missing"] == []


@SETTINGS
@given(st.text(max_size=400))
def test_header_any_text_gives_versions_or_names_what_is_missing(text):
    reading = nvidia.read_header(text)
    assert reading["driver"] is None or re.match(r"^\d{1,4}(\.\d{1,5}){1,3}$", reading["driver"])
    assert reading["cuda"] is None or re.match(r"^\d{1,3}\.\d{1,3}(\.\d{1,4})?$", reading["cuda"])
    if reading["cuda"] is None and not reading["cuda_na"]:
        assert "'CUDA Version:' or 'CUDA UMD Version:'" in reading["missing"]


@SETTINGS
@given(driver_versions, cuda_versions, st.booleans())
def test_version_output_round_trips(driver, cuda, new_layout):
    if new_layout:
        text = ("NVIDIA-SMI version  : %s\nNVML version        : 1.0\n"
                'DRIVER version      : Deprecated, see "KMD version" instead\n'
                'CUDA version        : Deprecated, see "CUDA UMD version" instead\n'
                "KMD version         : %s\nCUDA UMD version    : %s\n" % (driver, driver, cuda))
    else:
        text = ("NVIDIA-SMI version  : %s\nNVML version        : 1.0\nDRIVER version      : %s\n"
                "CUDA Version        : %s\n" % (driver, driver, cuda))
    reading = nvidia.read_version_output(text)
    assert (reading["driver"], reading["cuda"], reading["missing"]) == (driver, cuda, [])


@SETTINGS
@given(driver_versions, cuda_versions, st.booleans())
def test_xml_round_trips(driver, cuda, new_names):
    tags = ("kmd_version", "cuda_umd_version") if new_names else ("driver_version", "cuda_version")
    text = "<nvidia_smi_log>\n\t<%s>%s</%s>\n\t<%s>%s</%s>\n</nvidia_smi_log>\n" % (
        tags[0], driver, tags[0], tags[1], cuda, tags[1])
    reading = nvidia.read_xml_versions(text)
    assert (reading["driver"], reading["cuda"], reading["missing"]) == (driver, cuda, [])


@SETTINGS
@given(st.text(max_size=400))
def test_version_and_xml_any_text_never_raise(text):
    for parse in (nvidia.read_version_output, nvidia.read_xml_versions):
        reading = parse(text)
        assert reading["cuda"] is None or re.match(r"^\d{1,3}\.\d{1,3}(\.\d{1,4})?$", reading["cuda"])


@SETTINGS
@given(st.text(max_size=200), st.text(max_size=200), st.integers(-300, 300))
def test_error_reason_any_output_is_one_bounded_line(out, err, rc):
    reason = nvidia.error_reason(rc, out, err)
    assert reason.startswith("nvidia-smi exited with %d: " % rc)
    assert len(reason) < 700


@pytest.mark.parametrize("text", ['Field "compute_cap" is not a valid field to query.', "", None, 'Field "' * 100])
def test_unknown_field_any_text(text):
    assert nvidia.unknown_field(text) in ("compute_cap", None)
