# -*- coding: utf-8 -*-
"""torch_probe on captured probe output (tests/fixtures/torch_probe), and the
flash-attn check script the flash_attn_build role ships."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import python_probe
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import torch_probe as tp

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
FIX = os.path.join(REPO, "tests", "fixtures", "torch_probe")
CHECK_SCRIPT = os.path.join(REPO, "roles", "flash_attn_build", "files", "flash_attn_check.py")
H200_ARCHS = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]


def fixture(name):
    with open(os.path.join(FIX, name)) as f:
        return f.read()


def probe(name):
    return python_probe.parse_probe_output(fixture(name))


def names(problems):
    return [p["name"] for p in problems]


# --- parsing ------------------------------------------------------------------

def test_parse_h200_probe():
    info = probe("probe-h200-torch2.11.0-cu130.txt")
    t = info["torch"]
    assert (t["version"], t["cuda"], t["cuda_available"], t["cxx11_abi"]) == ("2.11.0+cu130", "13.0", True, True)
    assert t["arch_list"] == H200_ARCHS
    assert t["devices"] == [{"capability": "9.0", "index": 0, "memory_total_mib": 143155, "name": "NVIDIA H200"}]
    assert info["python"]["abi_tag"] == "cp312"
    assert info["libcuda"] == {"error": None, "loaded": True, "path": "/usr/local/nvidia/lib64/libcuda.so.580.159.04"}
    # the PyPI wheel's metadata has no local label; torch.__version__ has it
    assert info["distributions"]["torch"]["version"] == "2.11.0"
    assert info["distributions"]["flash-attn"] is None


def test_parse_probe_without_import_reads_version_py():
    t = probe("probe-h200-noimport.txt")["torch"]
    assert (t["version"], t["cuda"], t["imported"]) == ("2.11.0+cu130", "13.0", False)
    assert "cxx11_abi" not in t


def test_parse_cpu_test_host_probe():
    info = probe("probe-debian12-torch2.13.0-cpu.txt")
    assert info["torch"]["version"] == "2.13.0+cpu" and info["torch"]["cuda"] is None
    assert info["libcuda"]["loaded"] is False and "libcuda.so.1" in info["libcuda"]["error"]
    fa = info["distributions"]["flash-attn"]
    assert fa["version"] == "2.8.3" and fa["file_problems"] == []
    assert fa["direct_url"]["url"].startswith("file:///")


def test_parse_interpreter():
    assert python_probe.parse_probe_output(fixture("interpreter-debian12-python3.11.txt")) == {
        "version": "3.11.2", "executable": "/usr/bin/python3", "venv": True, "ensurepip": True}


@pytest.mark.parametrize("text", ["", "Traceback (most recent call last):\n  boom\n", "TORCH_PROBE_JSONX {}"])
def test_parse_without_result_raises(text):
    with pytest.raises(python_probe.ProbeError):
        python_probe.parse_probe_output(text)


# --- requirements ---------------------------------------------------------------

@pytest.mark.parametrize("spec,expected", [
    ("torch==2.10.0+cu128", ("torch", "2.10.0+cu128")),
    ("Flash_Attn", ("flash-attn", None)),
    ("torchvision == 0.25.0", ("torchvision", "0.25.0")),
])
def test_parse_requirement(spec, expected):
    assert tp.parse_requirement(spec) == expected


@pytest.mark.parametrize("spec", ["torch>=2.10", "torch==", "git+https://x", "", "torch[opt]==1"])
def test_parse_requirement_rejects_what_cannot_be_checked(spec):
    with pytest.raises(ValueError):
        tp.parse_requirement(spec)


@pytest.mark.parametrize("installed,wanted,ok", [
    ("2.10.0+cu128", "2.10.0", True),
    ("2.10.0+cu128", "2.10.0+cu128", True),
    ("2.10.0+cu126", "2.10.0+cu128", False),
    ("2.10.0", "2.10.0+cu128", False),
    ("2.10.1", "2.10.0", False),
    (None, "2.10.0", False),
    ("0.8.2", None, True),
    (None, None, False),
])
def test_version_satisfies(installed, wanted, ok):
    assert tp.version_satisfies(installed, wanted) is ok


def test_unmet_requirements_on_cpu_probe():
    dists = probe("probe-debian12-torch2.13.0-cpu.txt")["distributions"]
    assert tp.unmet_requirements(["einops", "ninja==1.13.2", "flash_attn==2.8.3"], dists) == []
    assert tp.unmet_requirements(["einops==0.7.0", "psutil", "ninja"], dists) == ["einops==0.7.0", "psutil"]


# --- CUDA builds and archs -------------------------------------------------------

@pytest.mark.parametrize("cuda,tag", [("13.0", "cu130"), ("12.8", "cu128"), (None, "cpu"), ("11.8", "cu118"),
                                      ("12.10", None)])
def test_cuda_build_tag(cuda, tag):
    # compat.torch_cuda_tag is the one cu-tag function; CUDA 12.10 has no tag
    assert tp.cuda_build_tag(cuda) == tag


def test_no_cu_tag_code_of_its_own():
    with open(os.path.join(REPO, "plugins", "module_utils", "torch_probe.py")) as f:
        source = f.read()
    assert "def cuda_of_build_tag" not in source and '"cu%d%d"' not in source


@pytest.mark.parametrize("cap,ok", [
    ("9.0", True), ("8.0", True), ("8.9", True),  # L40S runs sm_86 code
    ("10.3", True), ("12.1", True), ("7.5", True),
    ("7.0", False),  # V100: sm_75 code does not run on 7.0
    ("11.0", False), ("junk", False),
])
def test_arch_covered_by_h200_torch(cap, ok):
    assert tp.arch_covered(cap, H200_ARCHS) is ok


def test_ptx_covers_newer_devices():
    assert tp.arch_covered("9.0", ["sm_80", "compute_80"])
    assert not tp.arch_covered("7.5", ["compute_80"])
    assert tp.arch_covered("9.0", ["sm_90a"])


# --- diagnosis --------------------------------------------------------------------

H200 = dict(expect_version="2.11.0", expect_local="cu130", gpu_count=1, driver_version="580.159.04", compute_caps=["9.0"])


def h200(**changes):
    """The H200 host's expectations, with some changed."""
    kw = dict(H200)
    kw.update(changes)
    return kw


def test_h200_passes():
    problems, notes, gpu_checks = tp.diagnose(probe("probe-h200-torch2.11.0-cu130.txt"), **H200)
    assert (problems, notes, gpu_checks) == ([], [], "passed")


def test_wrong_cuda_build():
    problems, dummy, gpu_checks = tp.diagnose(probe("probe-h200-torch2.11.0-cu130.txt"), **h200(expect_local="cu128"))
    assert names(problems) == ["cuda_build_mismatch"]
    assert "CUDA 13.0" in problems[0]["msg"] and "cu128" in problems[0]["msg"]


def test_wrong_version():
    problems, dummy, dummy2 = tp.diagnose(probe("probe-h200-torch2.11.0-cu130.txt"), **h200(expect_version="2.10.0"))
    assert names(problems) == ["torch_version_mismatch"]
    assert "pip install torch==2.10.0+cu130" in problems[0]["msg"]


def test_cuda_build_newer_than_driver():
    # the same torch on a 570 driver (CUDA 12.8 at most): compat's driver rule, whose fix names a real build
    problems, dummy, gpu_checks = tp.diagnose(probe("probe-h200-torch2.11.0-cu130.txt"), **h200(driver_version="570.124.06"))
    assert names(problems) == ["cuda_build_newer_than_driver"] and gpu_checks == "failed"
    assert "needs driver >= 580" in problems[0]["msg"]
    assert "set llm_stack_torch_cuda to cu128 (a build of torch 2.11.0 this driver runs)" in problems[0]["msg"]


def test_driver_below_the_release_driver_is_a_note():
    # 12.9 was released with driver 575.51.03: a 570 driver runs torch's cu129 build through minor version compatibility
    info = probe("probe-h200-torch2.11.0-cu130.txt")
    info["torch"]["cuda"] = "12.9"  # hand-edited: the cu129 build of the same release
    problems, notes, gpu_checks = tp.diagnose(info, **h200(expect_local="cu129", driver_version="570.124.06"))
    assert problems == [] and gpu_checks == "passed"
    assert len(notes) == 1 and "minor version compatibility" in notes[0]


def test_libcuda_unresolvable():
    # hand-edited from the H200 capture: what a host without the driver's libcuda reports
    info = probe("probe-h200-cuda-visible-devices-empty.txt")
    info["libcuda"] = {"loaded": False, "path": None,
                       "error": "libcuda.so.1: cannot open shared object file: No such file or directory"}
    problems, dummy, gpu_checks = tp.diagnose(info, **H200)
    assert names(problems) == ["libcuda_unresolvable"]
    assert "ldconfig" in problems[0]["msg"] and "cannot open shared object file" in problems[0]["msg"]


def test_cuda_unavailable_with_libcuda_present():
    problems, dummy, gpu_checks = tp.diagnose(probe("probe-h200-cuda-visible-devices-empty.txt"), **H200)
    assert names(problems) == ["cuda_unavailable"] and "CUDA_VISIBLE_DEVICES" in problems[0]["msg"]


def test_cpu_build_on_gpu_host():
    problems, dummy, gpu_checks = tp.diagnose(probe("probe-debian12-torch2.13.0-cpu.txt"),
                                              expect_version="2.13.0", expect_local="cu130", gpu_count=1)
    assert names(problems) == ["cpu_only_build"] and gpu_checks == "failed"
    assert "--index-url" in problems[0]["msg"]


def test_cpu_build_on_gpu_host_even_with_the_test_switch():
    problems, dummy, dummy2 = tp.diagnose(probe("probe-debian12-torch2.13.0-cpu.txt"), expect_version="2.13.0",
                                          expect_local="cu130", gpu_count=1, cpu_only_test_host=True)
    assert names(problems) == ["cpu_only_build"]


def test_cpu_build_on_build_host_without_gpu():
    problems, dummy, gpu_checks = tp.diagnose(probe("probe-debian12-torch2.13.0-cpu.txt"),
                                              expect_version="2.13.0", expect_local="cu130", gpu_count=0)
    assert names(problems) == ["cpu_only_build"]
    assert gpu_checks == "skipped: no GPU on this host (a build host)"


def test_cpu_build_accepted_on_cpu_only_test_host():
    problems, notes, gpu_checks = tp.diagnose(probe("probe-debian12-torch2.13.0-cpu.txt"), expect_version="2.13.0",
                                              expect_local="cpu", gpu_count=0, cpu_only_test_host=True)
    assert problems == []
    assert len(notes) == 1 and "llm_stack_cpu_only_test_host" in notes[0]
    assert gpu_checks == "skipped: CPU-only test host (llm_stack_cpu_only_test_host)"


def test_gpu_not_covered_by_torch_arch_list():
    info = probe("probe-h200-torch2.11.0-cu130.txt")
    info["torch"]["devices"][0]["capability"] = "7.0"  # hand-edited: a V100 under a CUDA 13 torch
    problems, dummy, gpu_checks = tp.diagnose(info, **h200(compute_caps=["7.0"]))
    assert names(problems) == ["arch_not_in_build"] and "no kernel image" in problems[0]["msg"]
    # the fix names the build of that release whose wheels still carry sm_70
    assert "Fix: set llm_stack_torch_cuda to cu126 (the cu126 build of torch 2.11.0 with kernels for 7.0)" in problems[0]["msg"]
    problems, dummy, dummy2 = tp.diagnose(info, **h200(compute_caps=["3.5"]))
    assert "no torch 2.11.0 build in the matrix covers 3.5, 7.0: pin a torch release" in problems[0]["msg"]


def test_arch_fix_names_a_build():
    info = probe("probe-h200-torch2.11.0-cu130.txt")
    info["torch"]["arch_list"] = ["sm_80", "sm_90"]  # hand-edited: a build without Blackwell kernels
    info["torch"]["devices"][0]["capability"] = "12.0"
    problems, dummy, dummy2 = tp.diagnose(info, **h200(compute_caps=["12.0"]))
    assert names(problems) == ["arch_not_in_build"]
    assert "Fix: set llm_stack_torch_cuda to cu130 (the cu128 or cu130 builds of torch 2.11.0 with kernels for 12.0)" \
        in problems[0]["msg"]


@pytest.mark.parametrize("changes", [{}, {"expect_version": None}, {"expect_local": None}, {"expect_local": "cpu"},
                                     {"index_url": "https://mirror.example/whl"}])
def test_fix_messages_name_real_builds(changes):
    problems, dummy, dummy2 = tp.diagnose(probe("probe-debian12-torch2.13.0-cpu.txt"), gpu_count=1,
                                          **dict({"expect_version": "2.13.0", "expect_local": "cu130"}, **changes))
    assert problems and all("cuXYZ" not in p["msg"] and "VERSION" not in p["msg"] for p in problems)


def test_pip_hint():
    assert tp.pip_hint("2.13.0", "cu130") == "pip install torch==2.13.0+cu130 --index-url https://download.pytorch.org/whl/cu130"
    assert tp.pip_hint("2.13.0", "cpu", wheelhouse="/opt/w") == "pip install torch==2.13.0+cpu --no-index --find-links /opt/w"
    assert tp.pip_hint(installed={"version": "2.11.0+cu130", "cuda_build": "cu130"}, index_url="https://m/x") == \
        "pip install torch==2.11.0+cu130 --index-url https://m/x"
    assert tp.pip_hint() == "pip install torch"


def test_fewer_devices_than_gpus_is_a_note():
    problems, notes, gpu_checks = tp.diagnose(probe("probe-h200-torch2.11.0-cu130.txt"), **h200(gpu_count=2))
    assert problems == [] and gpu_checks == "passed" and "1 of the host's 2 GPUs" in notes[0]


def test_torch_missing_and_broken():
    info = probe("probe-debian12-torch2.13.0-cpu.txt")
    missing = dict(info, torch=None)
    assert names(tp.diagnose(missing, expect_version="2.13.0")[0]) == ["torch_missing"]
    broken = copy.deepcopy(info)
    broken["torch"]["error"] = "import torch: ImportError: libtorch_cpu.so: cannot open shared object file"
    problems, dummy, gpu_checks = tp.diagnose(broken, expect_version="2.13.0", expect_local="cpu")
    assert names(problems) == ["torch_import_failed"] and gpu_checks == "failed"


# --- flash_attn_check.py (roles/flash_attn_build/files) -----------------------------

def load_check_script():
    import importlib.util
    spec = importlib.util.spec_from_file_location("flash_attn_check", CHECK_SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_elf_archs_of_real_cuobjdump_output():
    check = load_check_script()
    assert check.elf_archs(fixture("cuobjdump-list-elf-libtorch_cuda_linalg.txt")) == [80, 86, 90, 100, 120]
    assert check.elf_archs(fixture("cuobjdump-list-elf-no-device-code.txt")) == []


def run_check(args, pythonpath=None):
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    proc = subprocess.run([sys.executable, CHECK_SCRIPT] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, env=env, check=False)
    line = [x for x in proc.stdout.splitlines() if x.startswith("FLASH_ATTN_CHECK ")]
    assert len(line) == 1, (proc.stdout, proc.stderr)
    return proc.returncode, json.loads(line[0][len("FLASH_ATTN_CHECK "):])


@pytest.fixture
def python_only_flash_attn(tmp_path):
    """A site dir laid out like a flash-attn wheel built with FLASH_ATTENTION_SKIP_CUDA_BUILD=TRUE:
    the package's __init__ imports the CUDA extension first thing, as the real one does."""
    pkg = tmp_path / "flash_attn"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('__version__ = "2.8.3"\n\nimport flash_attn_2_cuda as flash_attn_gpu  # noqa\n')
    dist = tmp_path / "flash_attn-2.8.3.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: flash_attn\nVersion: 2.8.3\n")
    return str(tmp_path)


def test_check_script_without_flash_attn():
    rc, res = run_check(["--archs", "90"])
    assert rc == 1 and not res["ok"] and "not installed" in res["problems"][0]


def test_check_script_python_only_build_on_cpu_only_test_host(python_only_flash_attn):
    rc, res = run_check(["--archs", "80", "--expect-version", "2.8.3", "--cpu-only-test-host"], python_only_flash_attn)
    assert rc == 0 and res["ok"] and res["version"] == "2.8.3"
    assert "FLASH_ATTENTION_SKIP_CUDA_BUILD=TRUE" in res["skipped"][0]


def test_check_script_python_only_build_fails_on_a_real_host(python_only_flash_attn):
    rc, res = run_check(["--archs", "80", "--gpus", "1"], python_only_flash_attn)
    assert rc == 1 and "flash_attn_2_cuda" in res["problems"][0]


def test_check_script_version_mismatch(python_only_flash_attn):
    rc, res = run_check(["--expect-version", "2.8.4", "--cpu-only-test-host"], python_only_flash_attn)
    assert rc == 1 and "2.8.4 was expected" in res["problems"][0]


# --- PROBE_SCRIPT itself, on a torch tree laid out like a wheel's ------------------

@pytest.fixture
def torch_tree(tmp_path):
    """site dir with torch/version.py and torch/_C*.so; importing this torch raises, so a test sees whether
    the probe imported it."""
    pkg = tmp_path / "site" / "torch"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('raise ImportError("probe imported torch")\n')
    (pkg / "version.py").write_text("__version__ = '2.13.0+cpu'\ncuda = None\n")
    (pkg / "_C.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\0" * 64)
    return tmp_path


def run_probe(tree, **args):
    env = dict(os.environ, PYTHONPATH=str(tree / "site"))
    proc = subprocess.run([sys.executable, "-c", tp.PROBE_SCRIPT, json.dumps(args)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, env=env, check=True)
    return python_probe.parse_probe_output(proc.stdout)["torch"]


def test_probe_reads_version_py_without_import(torch_tree):
    t = run_probe(torch_tree, import_torch=False)
    assert (t["version"], t["cuda"], t["imported"]) == ("2.13.0+cpu", None, False)
    assert "error" not in t and "cxx11_abi" not in t
    assert sorted(t["signature"]) == ["_C.cpython-311-x86_64-linux-gnu.so", "python", "version.py"]
    assert t["signature"]["_C.cpython-311-x86_64-linux-gnu.so"][0] == 64


def test_probe_takes_a_matching_record_instead_of_importing(torch_tree):
    sig = run_probe(torch_tree, import_torch=False)["signature"]
    record = torch_tree / "torch.json"
    record.write_text(json.dumps({"version": "2.13.0+cpu", "signature": sig, "cxx11_abi": True, "arch_list": []}))
    t = run_probe(torch_tree, import_torch=False, record=str(record))
    assert t["from_record"] == str(record) and t["cxx11_abi"] is True and t["arch_list"] == []
    assert "error" not in t and t["imported"] is False


def test_probe_imports_when_the_record_is_stale_or_missing(torch_tree):
    sig = run_probe(torch_tree, import_torch=False)["signature"]
    record = torch_tree / "torch.json"
    record.write_text(json.dumps({"version": "2.13.0+cpu", "signature": sig, "cxx11_abi": True, "arch_list": []}))
    # a reinstall rewrites the extension
    (torch_tree / "site" / "torch" / "_C.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\0" * 65)
    t = run_probe(torch_tree, import_torch=False, record=str(record))
    assert "from_record" not in t and "probe imported torch" in t["error"]
    t = run_probe(torch_tree, import_torch=False, record=str(torch_tree / "missing.json"))
    assert "probe imported torch" in t["error"]


def test_probe_reports_a_torch_that_does_not_import(torch_tree):
    t = run_probe(torch_tree, import_torch=True, distributions=["torch"])
    assert t["imported"] is False and t["error"] == "import torch: ImportError: probe imported torch"
    problems, dummy, gpu_checks = tp.diagnose({"torch": t}, expect_version="2.13.0", expect_local="cpu")
    assert names(problems) == ["torch_import_failed"]


# --- the probe's distributions: found as importlib.metadata finds them, without importing it --------

def dist_info(site, dirname, version, files=None, metadata_file="METADATA"):
    path = site / dirname
    path.mkdir(parents=True)
    (path / metadata_file).write_text("Metadata-Version: 2.1\nName: x\nVersion: %s\nSummary: s\n\nVersion: 0-body\n"
                                      % version)
    for name, text in (files or {}).items():
        (path / name).write_text(text)
    return path


def probe_distributions(paths, names, verify=False):
    """PROBE_SCRIPT's distributions with sys.path = paths + the interpreter's own, and importlib.metadata's view."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(str(p) for p in paths))
    proc = subprocess.run([sys.executable, "-c", tp.PROBE_SCRIPT, json.dumps({"distributions": names,
                                                                              "verify_files": verify})],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env,
                          check=True)
    got = python_probe.parse_probe_output(proc.stdout)["distributions"]
    reference = subprocess.run([sys.executable, "-c", """
import json, sys
from importlib import metadata
out = {}
for name in json.loads(sys.argv[1]):
    try:
        d = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        out[name] = None
        continue
    out[name] = {"version": d.version, "direct_url": json.loads(d.read_text("direct_url.json") or "null")}
print(json.dumps(out))
""", json.dumps(names)], stdout=subprocess.PIPE, universal_newlines=True, env=env, check=True)
    return got, json.loads(reference.stdout)


def test_probe_finds_distributions_as_importlib_metadata_does(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    dist_info(first, "flash_attn-2.8.3.dist-info", "2.8.3",
              {"direct_url.json": json.dumps({"url": "file:///opt/wheels/flash_attn-2.8.3-cp311-linux_x86_64.whl"})})
    dist_info(second, "flash_attn-2.7.0.dist-info", "2.7.0")      # shadowed: the first directory wins
    dist_info(second, "Ninja-1.13.0.dist-info", "1.13.0")
    dist_info(second, "ruamel.yaml-0.19.1.dist-info", "0.19.1")
    dist_info(second, "legacy_pkg-1.0-py3.11.egg-info", "1.0", metadata_file="PKG-INFO")
    (second / "flat_egg-2.0-py3.11.egg-info").write_text("Metadata-Version: 1.1\nName: flat-egg\nVersion: 2.0\n")
    (second / "not_a_dist-1.0.dist-info").mkdir()                 # no metadata: version null, as importlib says
    names = ["flash-attn", "Flash_Attn", "flash.attn", "ninja", "NINJA", "ruamel-yaml", "ruamel.yaml", "legacy-pkg",
             "flat-egg", "not-a-dist", "not-installed"]
    got, reference = probe_distributions([first, second], names)
    assert got == reference
    assert got["Flash_Attn"]["version"] == "2.8.3" and got["flash-attn"]["direct_url"]["url"].endswith(".whl")
    assert got["flat-egg"]["version"] == "2.0" and got["not-installed"] is None


def test_probe_distributions_match_importlib_metadata_for_everything_installed():
    """Every distribution of the interpreter running the tests, found by the probe as importlib.metadata finds it."""
    from importlib import metadata
    names = sorted({d.metadata["Name"] for d in metadata.distributions() if d.metadata["Name"]})
    got, reference = probe_distributions([], names)
    assert len(names) > 20 and got == reference


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["-", "_", "."]), min_size=1, max_size=3), st.booleans())
def test_probe_name_spellings(separators, upper):
    """PEP 503 spellings of one name all find the same distribution."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        site = __import__("pathlib").Path(tmp)
        dist_info(site, "my_pkg_name-1.2.3.dist-info", "1.2.3")
        spelled = "my" + separators[0] + "pkg" + separators[-1] + "name"
        spelled = spelled.upper() if upper else spelled
        got, reference = probe_distributions([site], [spelled])
        assert got == reference and got[spelled]["version"] == "1.2.3"


def test_probe_verifies_files_against_the_record(tmp_path):
    import base64
    import hashlib
    site = tmp_path / "site"
    (site / "pkg").mkdir(parents=True)
    (site / "pkg" / "__init__.py").write_text("x = 1\n")
    digest = base64.urlsafe_b64encode(hashlib.sha256(b"x = 1\n").digest()).decode().rstrip("=")
    dist_info(site, "pkg-1.0.dist-info", "1.0", {"RECORD": "pkg/__init__.py,sha256=%s,6\npkg/gone.py,sha256=abc,1\n"
                                                           "pkg-1.0.dist-info/RECORD,,\n" % digest})
    got, dummy = probe_distributions([site], ["pkg"], verify=True)
    assert got["pkg"]["file_problems"] == ["pkg/gone.py (missing)"]
    (site / "pkg" / "__init__.py").write_text("x = 2\n")
    got, dummy = probe_distributions([site], ["pkg"], verify=True)
    assert got["pkg"]["file_problems"] == ["pkg/__init__.py (modified)", "pkg/gone.py (missing)"]


# --- what the torch role does with a reading ---------------------------------------------------

def test_install_plan():
    assert tp.install_plan("2.10.0", "cu128", gpu_count=8) == {
        "build": "cu128", "spec": "torch==2.10.0+cu128", "default_index_url": "https://download.pytorch.org/whl/cu128",
        "source": "https://download.pytorch.org/whl/cu128", "proxy": False, "pip_cert": "", "pip_cert_environment": {}}
    # CPU-only test host without GPUs: the CPU build, from the wheelhouse
    assert tp.install_plan("2.13.0", "cu130", gpu_count=0, cpu_only_test_host=True, wheelhouse="/opt/w") == {
        "build": "cpu", "spec": "torch==2.13.0+cpu", "default_index_url": "https://download.pytorch.org/whl/cpu",
        "source": "wheelhouse /opt/w", "proxy": False, "pip_cert": "", "pip_cert_environment": {}}
    # the test switch never applies on a host with GPUs; a given spec and index are taken as they are, masked
    plan = tp.install_plan("2.13.0", "cu130", gpu_count=1, cpu_only_test_host=True, pip_spec="torch==2.13.0",
                           index_url="https://u:p@mirror/whl")
    assert (plan["build"], plan["spec"], plan["source"]) == ("cu130", "torch==2.13.0", "https://***@mirror/whl")
    # through the cache host's package proxy: its index of the host's build (the CPU build on a CPU-only test host)
    plan = tp.install_plan("2.10.0", "cu128", gpu_count=8, package_index_url="https://cache-1:8081")
    assert plan["default_index_url"] == plan["source"] == "https://cache-1:8081/root/cu128/+simple/"
    plan = tp.install_plan("2.13.0", "cu130", cpu_only_test_host=True, package_index_url="https://cache-1:8081/",
                           package_index_ca_path="/opt/llm-stack/package-index-ca.pem")
    assert (plan["build"], plan["default_index_url"]) == ("cpu", "https://cache-1:8081/root/cpu/+simple/")
    assert plan["proxy"] and plan["pip_cert_environment"] == {"PIP_CERT": "/opt/llm-stack/package-index-ca.pem"}
    # an index given in torch_index_url is the source; the wheelhouse too
    plan = tp.install_plan("2.10.0", "cu128", gpu_count=8, index_url="https://mirror/whl",
                           package_index_url="https://cache-1:8081")
    assert plan["source"] == "https://mirror/whl" and not plan["proxy"] and plan["pip_cert"] == ""


def test_needs_install():
    info = probe("probe-h200-torch2.11.0-cu130.txt")
    info["venv_exists"] = True
    assert tp.needs_install(info, [], []) is False
    assert tp.needs_install(info, [], ["torchvision==0.26.0"]) is True
    assert tp.needs_install(info, [{"name": "cuda_build_mismatch", "msg": ""}], []) is True
    # a driver or device problem is not fixed by reinstalling torch
    assert tp.needs_install(info, [{"name": "cuda_unavailable", "msg": ""}], []) is False
    assert tp.needs_install({"venv_exists": False}, [], []) is True


def test_failure_message():
    assert tp.failure_message("/v", [], []) == ""
    assert tp.failure_message("/v", [{"name": "cpu_only_build", "msg": "m."}], ["einops"]) == \
        "torch in /v: 2 problem(s):\n- cpu_only_build: m.\n- not installed: einops"


def test_report_on_a_gpu_host_and_in_check_mode():
    info = probe("probe-h200-torch2.11.0-cu130.txt")
    assert tp.report_lines(info, "passed", ["a note"], gpu_count=1) == [
        "torch 2.11.0+cu130 (CUDA 13.0, C++11 ABI True) on Python 3.12.3 (cp312); GPU checks passed; "
        "torch.cuda.is_available() true, capability (9, 0), arch list sm_75 sm_80 sm_86 sm_90 sm_100 sm_120", "a note"]
    assert tp.report_lines({}, "skipped: no venv", [], check_mode=True, install=True, install_text="t would be installed") \
        == ["check mode: t would be installed"]
    assert tp.report_lines({"venv": "/v", "torch": None}, "skipped: no venv", []) == ["torch in /v: not installed"]
    cpu = probe("probe-debian12-torch2.13.0-cpu.txt")
    assert tp.report_lines(cpu, "skipped: no GPU on this host (a build host)", [])[1] == (
        "Not checked here, for want of a GPU: torch.cuda.is_available(), the devices, the arch list and libcuda.")


def test_record_round_trip(tmp_path):
    torch = probe("probe-h200-torch2.11.0-cu130.txt")["torch"]
    record = tp.record_of(torch)
    assert tp.read_record(str(tmp_path)) is None
    tp.write_record(str(tmp_path), record)
    assert tp.read_record(str(tmp_path)) == record
    assert tp.record_path(str(tmp_path)) == str(tmp_path / ".llm_stack" / "torch.json")


def test_record_is_not_written_through_a_symlink(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / ".llm_stack").symlink_to(outside)
    with pytest.raises(OSError, match="symbolic link"):
        tp.write_record(str(venv), {"version": "x"})
    assert list(outside.iterdir()) == []
