# -*- coding: utf-8 -*-
"""nvcc_facts driven through AnsibleModule against toolkit trees built in tmp dirs."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import sys

import pytest

from ansible_collections.gpufleet.llm_stack.plugins.modules import nvcc_facts

HERE = os.path.dirname(os.path.abspath(__file__))
H200_NVCC = os.path.abspath(os.path.join(HERE, "..", "..", "..", "fixtures", "gpu", "h200", "nvcc-version.txt"))


def toolkit(path, sdk, nvcc_build, with_nvcc=True):
    os.makedirs(os.path.join(path, "bin"))
    with open(os.path.join(path, "version.json"), "w") as handle:
        json.dump({"cuda": {"name": "CUDA SDK", "version": sdk}, "cuda_nvcc": {"name": "CUDA NVCC", "version": nvcc_build}},
                  handle, indent=3)
    if with_nvcc:
        script = os.path.join(path, "bin", "nvcc")
        with open(script, "w") as handle:
            handle.write("#!%s\n# test-only stand-in: prints the nvcc --version recorded on the H200 host\n"
                         "import sys\nsys.stdout.write(open(%r).read())\n" % (sys.executable, H200_NVCC))
        os.chmod(script, 0o755)


@pytest.fixture
def root(tmp_path, monkeypatch):
    base = tmp_path / "usr-local"
    base.mkdir()
    toolkit(str(base / "cuda-13.0"), "13.0.2", "13.0.88")
    toolkit(str(base / "cuda-12.8"), "12.8.1", "12.8.93", with_nvcc=False)
    os.symlink("cuda-13.0", str(base / "cuda"))
    os.symlink("cuda-13.0", str(base / "cuda-13"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    return str(base)


def test_h200_like_host(run_module, root):
    kind, result, warnings = run_module(nvcc_facts.main, {"toolkit_root": root})
    assert kind == "exit" and result["changed"] is False and warnings == []
    facts = result["ansible_facts"]
    assert facts["nvcc_path"] == os.path.join(root, "cuda", "bin", "nvcc")
    assert (facts["nvcc_version"], facts["nvcc_build"], facts["nvcc_error"]) == ("13.0", "13.0.88", None)
    assert facts["cuda_home_link"] == os.path.realpath(os.path.join(root, "cuda-13.0"))
    assert [(t["path"], t["version"], t["nvcc_build"]) for t in facts["cuda_toolkits"]] == [
        (os.path.join(root, "cuda-12.8"), "12.8.1", "12.8.93"),
        (os.path.join(root, "cuda-13.0"), "13.0.2", "13.0.88"),
    ]


def test_prefixes_and_warnings(run_module, root, tmp_path):
    extra = str(tmp_path / "opt" / "cuda-12.1")
    toolkit(extra, "12.1.1", "12.1.105", with_nvcc=False)
    missing = str(tmp_path / "opt" / "nothing")
    kind, result, warnings = run_module(nvcc_facts.main, {"toolkit_root": root, "prefixes": [extra, missing]})
    assert [t["version"] for t in result["ansible_facts"]["cuda_toolkits"]] == ["12.1.1", "12.8.1", "13.0.2"]
    assert warnings == ["prefix %s is not a directory; skipped" % missing]


def test_no_toolkit_is_not_an_error(run_module, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    kind, result, dummy = run_module(nvcc_facts.main, {"toolkit_root": str(tmp_path)})
    assert kind == "exit"
    assert result["ansible_facts"] == {"nvcc_path": None, "nvcc_version": None, "nvcc_build": None, "nvcc_error": None,
                                       "cuda_toolkits": [], "cuda_home_link": None, "cuda_home_link_dangling": None}


def test_nvcc_on_path_wins_over_root(run_module, root, tmp_path, monkeypatch):
    other = str(tmp_path / "other")
    toolkit(other, "13.0.2", "13.0.88")
    monkeypatch.setenv("PATH", os.path.join(other, "bin"))
    facts = run_module(nvcc_facts.main, {"toolkit_root": root})[1]["ansible_facts"]
    assert facts["nvcc_path"] == os.path.join(other, "bin", "nvcc")


def test_explicit_nvcc_must_exist(run_module, root, tmp_path):
    missing = str(tmp_path / "nvcc")
    kind, result, dummy = run_module(nvcc_facts.main, {"toolkit_root": root, "nvcc_path": missing})
    assert kind == "fail" and result["msg"].startswith("nvcc_path=%s is not an executable file" % missing)


def test_check_mode_reports_the_same(run_module, root):
    normal = run_module(nvcc_facts.main, {"toolkit_root": root})[1]
    checked = run_module(nvcc_facts.main, {"toolkit_root": root, "_ansible_check_mode": True})[1]
    assert normal == checked


def test_torch_info_reads_the_toolkits_as_nvcc_facts_does(run_module, root, tmp_path, monkeypatch):
    """torch_info read_toolkits: nvcc_facts' own reading with its defaults, returned as toolkits, never as facts."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import nvcc
    from ansible_collections.gpufleet.llm_stack.plugins.modules import torch_info
    monkeypatch.setattr(nvcc, "DEFAULT_ROOT", root)
    kind, alone, dummy = run_module(nvcc_facts.main, {"toolkit_root": root})
    kind, result, warnings = run_module(torch_info.main, {"venv": str(tmp_path / "no-venv"), "read_toolkits": True,
                                                          "set_facts": False})
    assert kind == "exit" and result["changed"] is False and warnings == []
    assert result["toolkits"] == alone["ansible_facts"]
    assert result["toolkits"]["nvcc_version"] == "13.0" and len(result["toolkits"]["cuda_toolkits"]) == 2
    assert "ansible_facts" not in result
    kind, unread, dummy = run_module(torch_info.main, {"venv": str(tmp_path / "no-venv"), "set_facts": False})
    assert unread["toolkits"] is None
