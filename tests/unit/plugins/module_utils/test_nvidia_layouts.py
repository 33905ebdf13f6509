# -*- coding: utf-8 -*-
"""nvidia-smi version layouts (header, --version, -q -x), the fallbacks between them, timeouts and odd bytes."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type


import pytest

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import nvidia
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.proc import ProcResult
from nvidia_smi_replay import fake_runner, read

QUERY = tuple(nvidia.query_args())
H200_CSV = None


def answering(answers, calls=None):
    """run_command stand-in from {args tuple: (rc, out, err) or ProcResult}."""
    def run(argv):
        if calls is not None:
            calls.append(tuple(argv[1:]))
        return answers[tuple(argv[1:])]
    return run


def timed_out(argv=(), timeout=30):
    return ProcResult(rc=None, timed_out=True, argv=list(argv), timeout=timeout,
                      error="nvidia-smi did not answer within %d seconds" % timeout)


# --- the header layouts -----------------------------------------------------

@pytest.mark.parametrize("cls, driver, cuda", [
    ("h200", "580.159.04", "13.0"),     # real capture, classic layout
    ("h100-590", "590.48.01", "13.1"),  # classic layout as 590 prints it
    ("b200-610", "610.43.02", "13.3"),  # KMD Version / CUDA UMD Version
    ("t4-470", "470.182.03", "11.4"),   # 79-column layout of 470
])
def test_every_header_layout(cls, driver, cuda):
    reading = nvidia.read_header(read(cls, "nvidia-smi.txt"))
    assert (reading["driver"], reading["cuda"], reading["missing"]) == (driver, cuda, [])
    assert nvidia.parse_header(read(cls, "nvidia-smi.txt")) == (driver, cuda)


def test_610_header_lines_from_public_captures():
    for line, expected in [
        ("| NVIDIA-SMI 610.43.02              KMD Version: 610.43.02     CUDA UMD Version: 13.3     |",
         ("610.43.02", "13.3")),
        ("| NVIDIA-SMI 610.62                 KMD Version: 610.62        CUDA UMD Version: 13.3     |",
         ("610.62", "13.3")),
        ("| NVIDIA-SMI 595.80                 Driver Version: 595.80         CUDA Version: 13.2     |",
         ("595.80", "13.2")),
    ]:
        assert nvidia.parse_header(line) == expected


def test_unknown_header_names_the_missing_fields():
    reading = nvidia.read_header(read("header-unknown", "nvidia-smi.txt"))
    assert reading["driver"] is None and reading["cuda"] is None and not reading["cuda_na"]
    assert reading["missing"] == ["'Driver Version:' or 'KMD Version:'", "'CUDA Version:' or 'CUDA UMD Version:'"]


def test_header_na():
    reading = nvidia.read_header("| NVIDIA-SMI 418.92  Driver Version: 418.92  CUDA Version: N/A |")
    assert (reading["driver"], reading["cuda"], reading["cuda_na"], reading["missing"]) == ("418.92", None, True, [])


def test_a_process_name_below_the_header_is_not_read():
    text = read("h200", "nvidia-smi.txt").replace("CUDA Version: 13.0", "CUDA Version: x   ")
    text = text.replace("No running processes found      ", "CUDA Version: 99.9 Driver Version: 1.2")
    reading = nvidia.read_header(text)
    assert reading["cuda"] is None and reading["driver"] == "580.159.04"


# --- nvidia-smi --version -----------------------------------------------------

@pytest.mark.parametrize("cls, driver, cuda", [
    ("h200", "580.159.04", "13.0"),     # real capture
    ("h100-590", "590.48.01", "13.1"),
    ("b200-610", "610.43.02", "13.3"),
])
def test_every_version_layout(cls, driver, cuda):
    reading = nvidia.read_version_output(read(cls, "version.txt"))
    assert (reading["driver"], reading["cuda"], reading["missing"]) == (driver, cuda, [])


def test_version_610_ignores_the_deprecated_lines_and_prefers_the_new_ones():
    text = ('DRIVER version      : 600.1.1\nCUDA Version        : 12.0\n'
            'KMD version         : 610.57.04\nCUDA UMD version    : 13.3\n')
    reading = nvidia.read_version_output(text)
    assert (reading["driver"], reading["cuda"]) == ("610.57.04", "13.3")


def test_version_unknown_layout_names_the_missing_fields():
    reading = nvidia.read_version_output(read("header-unknown", "version.txt"))
    assert reading["cuda"] is None
    assert reading["missing"] == ["'DRIVER version' or 'KMD version'", "'CUDA Version' or 'CUDA UMD version'"]


# --- nvidia-smi -q -x ---------------------------------------------------------

@pytest.mark.parametrize("cls, driver, cuda", [
    ("h200", "580.159.04", "13.0"),            # real capture
    ("t4-470", "470.182.03", "11.4"),
    ("b200-610", "610.43.02", "13.3"),
    ("header-unknown", "700.10.01", "14.0"),   # <kmd_version> / <cuda_umd_version>
])
def test_every_xml_layout(cls, driver, cuda):
    reading = nvidia.read_xml_versions(read(cls, "smi-q.xml"))
    assert (reading["driver"], reading["cuda"], reading["missing"]) == (driver, cuda, [])


def test_xml_values_with_a_deprecation_note():
    text = ("<driver_version>610.57.04 [Deprecated; will be removed in CUDA 14.0. Use KMD Version instead]"
            "</driver_version><cuda_version>13.3 [Deprecated]</cuda_version>")
    reading = nvidia.read_xml_versions(text)
    assert (reading["driver"], reading["cuda"]) == ("610.57.04", "13.3")


def test_xml_na_and_missing():
    assert nvidia.read_xml_versions("<cuda_version>N/A</cuda_version>")["cuda_na"] is True
    assert nvidia.read_xml_versions("<nvidia_smi_log/>")["missing"] == [
        "<driver_version> or <kmd_version>", "<cuda_version> or <cuda_umd_version>"]


# --- read_gpus: which calls, which source -------------------------------------

def test_610_driver_reads_the_header_and_nothing_more():
    run, calls = fake_runner("b200-610")
    facts, warnings = nvidia.read_gpus(run, "nvidia-smi")
    assert calls == [list(QUERY), []]
    assert warnings == []
    assert facts["gpu_count"] == 2 and facts["gpu_compute_caps"] == ["10.0"]
    assert (facts["gpu_driver_version"], facts["gpu_driver_cuda_version"]) == ("610.43.02", "13.3")
    assert facts["gpu_driver_cuda_version_source"] == "header"


def test_h200_source_is_the_header():
    facts = nvidia.read_gpus(fake_runner("h200")[0], "nvidia-smi")[0]
    assert facts["gpu_driver_cuda_version_source"] == "header"


def test_unknown_header_falls_back_to_version_then_xml_and_says_so():
    run, calls = fake_runner("header-unknown")
    facts, warnings = nvidia.read_gpus(run, "nvidia-smi")
    assert calls == [list(QUERY), [], ["--version"], ["-q", "-x"]]
    assert facts["gpu_driver_cuda_version"] == "14.0"
    assert facts["gpu_driver_cuda_version_source"] == "xml"
    assert facts["gpu_driver_version"] == "700.10.01" and facts["gpu_error"] is None
    assert len(warnings) == 1
    assert "'CUDA Version:' or 'CUDA UMD Version:'" in warnings[0]
    assert "'CUDA Version' or 'CUDA UMD version'" in warnings[0]
    assert "read from `nvidia-smi -q -x`" in warnings[0]


def test_header_without_version_uses_the_610_version_output():
    answers = {
        QUERY: (0, read("b200-610", "query.csv"), ""),
        (): (0, "| NVIDIA-SMI 610.43.02   (a new header layout)   |\n", ""),
        ("--version",): (0, read("b200-610", "version.txt"), ""),
    }
    calls = []
    facts, warnings = nvidia.read_gpus(answering(answers, calls), "nvidia-smi")
    assert calls == [QUERY, (), ("--version",)]
    assert (facts["gpu_driver_cuda_version"], facts["gpu_driver_cuda_version_source"]) == ("13.3", "version")
    assert "the nvidia-smi header has no" in warnings[0] and "read from `nvidia-smi --version`" in warnings[0]


def test_no_layout_known_anywhere_warns_naming_every_field():
    # regression: a renamed field gave a silent null driver CUDA version
    answers = {
        QUERY: (0, read("h200", "query.csv"), ""),
        (): (0, "| NVIDIA-SMI 999.1   Kernel: 999.1   Runtime: 15.0 |\n", ""),
        ("--version",): (0, "NVIDIA-SMI version : 999.1\n", ""),
        ("-q", "-x"): (0, "<nvidia_smi_log><attached_gpus>1</attached_gpus></nvidia_smi_log>", ""),
    }
    facts, warnings = nvidia.read_gpus(answering(answers), "nvidia-smi")
    assert facts["gpu_driver_cuda_version"] is None and facts["gpu_driver_cuda_version_source"] is None
    assert facts["gpu_error"] is None and facts["gpu_count"] == 1
    assert len(warnings) == 1
    for field in ("'CUDA Version:' or 'CUDA UMD Version:'", "'CUDA Version' or 'CUDA UMD version'",
                  "<cuda_version> or <cuda_umd_version>"):
        assert field in warnings[0]


def test_na_header_stops_and_warns():
    answers = {
        QUERY: (0, read("h200", "query.csv"), ""),
        (): (0, "| NVIDIA-SMI 418.92  Driver Version: 418.92  CUDA Version: N/A |\n", ""),
    }
    calls = []
    facts, warnings = nvidia.read_gpus(answering(answers, calls), "nvidia-smi")
    assert calls == [QUERY, ()]
    assert facts["gpu_driver_cuda_version"] is None
    assert "reports the CUDA version as N/A" in warnings[0]


def test_driver_version_from_the_header_when_the_query_has_none():
    csv = read("h200", "query.csv").replace("580.159.04", "[N/A]")
    answers = {QUERY: (0, csv, ""), (): (0, read("b200-610", "nvidia-smi.txt"), "")}
    facts = nvidia.read_gpus(answering(answers), "nvidia-smi")[0]
    assert facts["gpu_driver_version"] == "610.43.02"


# --- query fields a driver rejects --------------------------------------------

def test_driver_that_rejects_driver_version_is_asked_for_kmd_version():
    kmd = ("index", "name", "uuid", "compute_cap", "kmd_version", "memory.total", "pci.bus_id")
    answers = {
        QUERY: (2, 'Field "driver_version" is not a valid field to query.\n\n', ""),
        tuple(nvidia.query_args(kmd)): (0, read("b200-610", "query.csv"), ""),
        (): (0, read("b200-610", "nvidia-smi.txt"), ""),
    }
    calls = []
    facts, warnings = nvidia.read_gpus(answering(answers, calls), "nvidia-smi")
    assert calls == [QUERY, tuple(nvidia.query_args(kmd)), ()]
    assert facts["gpu_error"] is None and facts["gpu_count"] == 2
    assert facts["gpu_driver_version"] == "610.43.02" and warnings == []


def test_driver_that_rejects_both_fields():
    first = nvidia.query_args()
    no_cap = nvidia.query_args(nvidia.QUERY_FIELDS_NO_CAP)
    both = nvidia.query_args(("index", "name", "uuid", "kmd_version", "memory.total", "pci.bus_id"))
    answers = {
        tuple(first): (2, 'Field "compute_cap" is not a valid field to query.\n', ""),
        tuple(no_cap): (2, 'Field "driver_version" is not a valid field to query.\n', ""),
        tuple(both): (0, "0, Tesla T4, GPU-1, 470.182.03, 15109, 00000000:00:04.0\n", ""),
        (): (0, read("t4-470", "nvidia-smi.txt"), ""),
    }
    facts = nvidia.read_gpus(answering(answers), "nvidia-smi")[0]
    assert facts["gpu_compute_caps"] == ["7.5"] and facts["gpu_driver_version"] == "470.182.03"


def test_a_rejected_field_loop_is_bounded():
    calls = []
    always = (2, 'Field "compute_cap" is not a valid field to query.\n', "")
    facts = nvidia.read_gpus(lambda argv: calls.append(argv) or always, "nvidia-smi")[0]
    assert len(calls) == 2 and facts["gpu_error"].startswith("nvidia-smi exited with 2")


# --- timeouts -------------------------------------------------------------------

def test_query_timeout_is_a_gpu_error_not_a_failure():
    calls = []
    facts, warnings = nvidia.read_gpus(lambda argv: calls.append(argv) or timed_out(argv, 7), "nvidia-smi", 7)
    assert len(calls) == 1
    assert facts["gpu_error"].startswith("nvidia-smi did not answer within 7 seconds (a wedged GPU or driver?)")
    assert "listing the GPUs" in facts["gpu_error"] and "dmesg" in facts["gpu_error"]
    assert facts["gpu_count"] == 0 and facts["gpu_devices"] == []


def test_header_timeout_keeps_the_gpu_list_and_reports_the_host():
    answers = {QUERY: (0, read("h200", "query.csv"), ""), (): timed_out(timeout=30)}
    calls = []
    facts, warnings = nvidia.read_gpus(answering(answers, calls), "nvidia-smi", 30)
    assert calls == [QUERY, ()]
    assert facts["gpu_count"] == 1 and facts["gpu_driver_version"] == "580.159.04"
    assert facts["gpu_error"].startswith("nvidia-smi did not answer within 30 seconds (a wedged GPU or driver?)")
    assert "header" in facts["gpu_error"]


def test_fallback_timeout_stops_the_reading():
    answers = {
        QUERY: (0, read("h200", "query.csv"), ""),
        (): (0, read("header-unknown", "nvidia-smi.txt"), ""),
        ("--version",): timed_out(timeout=5),
    }
    calls = []
    facts = nvidia.read_gpus(answering(answers, calls), "nvidia-smi", 5)[0]
    assert calls == [QUERY, (), ("--version",)]
    assert "nvidia-smi --version" in facts["gpu_error"]


# --- bytes that are not UTF-8, and other hostile output ---------------------------

def test_non_utf8_in_the_gpu_list_is_parsed_and_named():
    out = read("h200", "query.csv").replace("NVIDIA H200", u"NVIDIA H200 \ufffd")
    answers = {QUERY: ProcResult(rc=0, stdout=out, decode_errors=True),
               (): (0, read("h200", "nvidia-smi.txt"), "")}
    facts, warnings = nvidia.read_gpus(answering(answers), "nvidia-smi")
    assert facts["gpu_error"] is None and facts["gpu_count"] == 1
    assert warnings == ["nvidia-smi printed bytes that are not UTF-8 (shown as U+FFFD) in the GPU list;"
                        " the GPU names may hold U+FFFD characters"]


def test_non_utf8_that_breaks_the_list_is_a_clear_error():
    answers = {QUERY: ProcResult(rc=0, stdout=u"0, H200, GPU-1, \ufffd.0, 580.1, 1, 0:0\n", decode_errors=True)}
    facts = nvidia.read_gpus(answering(answers), "nvidia-smi")[0]
    assert facts["gpu_error"].startswith("cannot parse nvidia-smi output:")
    assert facts["gpu_error"].endswith("nvidia-smi printed bytes that are not UTF-8 (shown as U+FFFD)")


@pytest.mark.parametrize("line", [
    "0, NVIDIA H200, GPU-x, 9.0, 5" + "8" * 5000 + ".1, 143771, 00000000:00:06.0",  # thousands of digits
    "9" * 5000 + ", NVIDIA H200, GPU-x, 9.0, 580.1, 143771, 00000000:00:06.0",
    "0, NVIDIA H200, GPU-x, 9.0, 580.1, 143771, 0:0\n0, NVIDIA H200, GPU-y, 9.0, 580.1, 143771, 0:1",  # index twice
    "0, NVIDIA H200, GPU-x, 9.0, not-a-driver, 143771, 00000000:00:06.0",
    "0, \"NVIDIA\x00H200, GPU-x, 9.0, 580.1, 1, 0:0",
])
def test_hostile_query_lines_are_clean_errors(line):
    with pytest.raises(ValueError):
        nvidia.parse_query_csv(line + "\n")


def test_huge_values_are_unknown_or_clean_errors():
    devices, dummy = nvidia.parse_query_csv("0, NVIDIA H200, GPU-x, 9.0, 580.1, %s, 0:0\n" % ("9" * 40))
    assert devices[0]["memory_total_mib"] is None
    with pytest.raises(ValueError, match="longer than 512 characters"):
        nvidia.parse_query_csv("0, NVIDIA H200, GPU-x, 9.0, 580.1, %s, 0:0\n" % ("9" * 5000))


def test_full_width_digits_are_not_versions():
    assert nvidia.parse_header(u"| NVIDIA-SMI 1  Driver Version: \uff15\uff18\uff10.1  CUDA Version: \uff11\uff13.0 |") == (None, None)
    with pytest.raises(ValueError):
        nvidia.parse_query_csv(u"\uff10, NVIDIA H200, GPU-x, 9.0, 580.1, 1, 0:0\n")
    with pytest.raises(ValueError):
        nvidia.parse_query_csv(u"0, NVIDIA H200, GPU-x, \uff19.0, 580.1, 1, 0:0\n")
