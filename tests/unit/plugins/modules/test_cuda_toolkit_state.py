# -*- coding: utf-8 -*-
"""cuda_toolkit_state driven through AnsibleModule against toolkit trees built in tmp dirs.

The toolkit is laid out as the H200 host's CUDA 13.0 from NVIDIA's packages;
nvcc and ldconfig are stand-in scripts printing what that host printed
(tests/fixtures/gpu/h200).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os

import pytest

from ansible_collections.gpufleet.llm_stack.plugins.modules import cuda_toolkit_state

HERE = os.path.dirname(os.path.abspath(__file__))
H200 = os.path.abspath(os.path.join(HERE, "..", "..", "..", "fixtures", "gpu", "h200"))


def write(path, text, mode=None):
    if not os.path.isdir(os.path.dirname(path)):
        os.makedirs(os.path.dirname(path))
    with open(path, "w") as handle:
        handle.write(text)
    if mode:
        os.chmod(path, mode)


@pytest.fixture
def h200(tmp_path, monkeypatch):
    """<tmp>/usr/local/cuda-13.0 as NVIDIA's packages leave it, ldconfig on PATH printing the H200 capture."""
    base = str(tmp_path)
    root = base + "/usr/local"
    tk_dir = root + "/cuda-13.0"
    lib = tk_dir + "/targets/x86_64-linux/lib"
    os.makedirs(lib)
    os.symlink("targets/x86_64-linux/lib", tk_dir + "/lib64")
    write(lib + "/libcudart.so.13.0.96", "ELF stand-in\n")
    os.symlink("libcudart.so.13.0.96", lib + "/libcudart.so.13")
    write(tk_dir + "/bin/nvcc", "#!/bin/sh\n# test-only stand-in\ncat '%s/nvcc-version.txt'\n" % H200, 0o755)
    os.makedirs(base + "/etc/alternatives")
    os.symlink(tk_dir, base + "/etc/alternatives/cuda")
    os.symlink(base + "/etc/alternatives/cuda", root + "/cuda")
    with open(os.path.join(H200, "ldconfig-p-cuda.txt")) as handle:
        capture = handle.read().replace("/usr/local/", root + "/")
    write(base + "/ldconfig-p.txt", capture)
    write(base + "/bin/ldconfig", "#!/bin/sh\n# test-only stand-in\ncat '%s/ldconfig-p.txt'\n" % base, 0o755)
    monkeypatch.setenv("PATH", base + "/bin:/usr/bin:/bin")
    return {"base": base, "root": root, "dir": tk_dir,
            "args": {"version": "13.0.2", "prefix": root, "home_link": root + "/cuda", "toolkit_root": root,
                     "profile_script": base + "/etc/profile.d/cuda.sh"}}


def test_h200_packaged_toolkit(run_module, h200):
    kind, result, warnings = run_module(cuda_toolkit_state.main, h200["args"])
    assert kind == "exit" and result["changed"] is False and warnings == []
    assert (result["dir"], result["installed"], result["update_unknown"]) == (h200["dir"], True, True)
    assert result["nvcc"]["build"] == "13.0.88"
    assert result["linker"]["ok"] is True
    assert result["link"]["target"] == h200["base"] + "/etc/alternatives/cuda"
    plan = result["plan"]
    assert (plan["set_link"], plan["set_ldconfig"], plan["set_profile"], len(plan["kept"])) == (False, False, False, 3)
    assert result["errors"] == [] and result["install_check"] is None
    # The result is plain data (what a registered variable holds).
    json.dumps(result)


def test_documented_returns_are_returned(run_module, h200):
    import yaml
    documented = set(yaml.safe_load(cuda_toolkit_state.RETURN))
    result = run_module(cuda_toolkit_state.main, h200["args"])[1]
    assert documented == set(result) - {"changed"}


def test_fresh_host_in_check_mode(run_module, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    args = {"version": "12.8.1", "prefix": str(tmp_path / "opt"), "home_link": str(tmp_path / "cuda"),
            "toolkit_root": str(tmp_path), "runfile": str(tmp_path / "cuda_12.8.1_570.124.06_linux.run"),
            "runfile_checksum": "md5:" + "0" * 32, "_ansible_check_mode": True}
    kind, result, dummy = run_module(cuda_toolkit_state.main, args)
    assert kind == "exit" and result["installed"] is False and result["exists"] is False
    assert result["dir"] == str(tmp_path / "opt" / "cuda-12.8")
    assert result["missing_dirs"] == [str(tmp_path / "opt")]
    # the runfile is not there yet in check mode: nothing to say
    assert result["install_check"]["exists"] is False and result["install_check"]["errors"] == []
    assert result["plan"]["set_link"] is True


def test_runfile_checks(run_module, h200):
    runfile = h200["base"] + "/var/cache/cuda-toolkit/cuda_13.0.2_580.95.05_linux.run"
    write(runfile, "stand-in runfile\n")
    sha256 = hashlib.sha256(b"stand-in runfile\n").hexdigest()
    args = dict(h200["args"], runfile=runfile, runfile_checksum="sha256:" + sha256.upper(), tmpdir=h200["base"] + "/tmp")
    check = run_module(cuda_toolkit_state.main, args)[1]["install_check"]
    assert (check["exists"], check["size"], check["algorithm"], check["checksum"], check["checksum_ok"]) == (
        True, 17, "sha256", sha256, True)
    assert check["need_mb"] == 1 and check["errors"] == []
    assert [entry["variable"] for entry in check["free_mb"]] == ["cuda_toolkit_tmpdir", "cuda_toolkit_prefix"]
    # tmpdir does not exist: the free space of the directory it will be in
    assert check["free_mb"][0]["filesystem_of"] == h200["base"]

    md5 = hashlib.md5(b"another file\n").hexdigest()  # nosec - checks a test file's MD5, as NVIDIA publishes them
    check = run_module(cuda_toolkit_state.main, dict(args, runfile_checksum="md5:" + md5))[1]["install_check"]
    assert check["checksum_ok"] is False
    assert check["errors"][0].startswith("%s has md5 %s, which did not match cuda_toolkit_runfile_checksum"
                                         % (runfile, hashlib.md5(b"stand-in runfile\n").hexdigest()))  # nosec

    check = run_module(cuda_toolkit_state.main, dict(args, runfile_checksum="", min_free_mb=2 ** 40))[1]["install_check"]
    assert check["checksum_ok"] is None
    assert len(check["errors"]) == 2
    assert check["errors"][0].startswith("Not enough room: %s/tmp (cuda_toolkit_tmpdir) has " % h200["base"])
    assert "cuda_toolkit_min_free_mb" in check["errors"][1]


def test_the_plan_around_the_installer(run_module, h200):
    runfile = h200["base"] + "/var/cache/cuda-toolkit/cuda_13.0.2_580.95.05_linux.run"
    tmpdir = h200["base"] + "/tmp"
    result = run_module(cuda_toolkit_state.main, dict(h200["args"], runfile=runfile, tmpdir=tmpdir))[1]
    plan = result["plan"]
    assert plan["create_dirs"] == [{"path": tmpdir, "mode": "0700"}]
    assert plan["restore_link"] == {"state": "link", "src": h200["base"] + "/etc/alternatives/cuda", "force": True}
    assert plan["cleanup"] == [h200["dir"] + ".previous", runfile]
    assert result["gate_parts"] == ["matrix", "cuda_toolkit"]
    result = run_module(cuda_toolkit_state.main, dict(h200["args"], runfile=runfile, keep_runfile=True, collect=True))[1]
    assert result["plan"]["cleanup"] == [h200["dir"] + ".previous"]
    assert result["gate_parts"] == ["cuda_toolkit"]


def test_runfile_missing_after_download(run_module, h200):
    args = dict(h200["args"], runfile=h200["base"] + "/nothing.run")
    check = run_module(cuda_toolkit_state.main, args)[1]["install_check"]
    assert check["errors"] == ["%s/nothing.run is not on the host: getting the runfile did not leave it there."
                               % h200["base"]]


def test_malformed_checksum_is_named(run_module, h200):
    runfile = h200["base"] + "/x.run"
    write(runfile, "x")
    check = run_module(cuda_toolkit_state.main, dict(h200["args"], runfile=runfile, runfile_checksum="md5:abc"))[1]
    assert check["install_check"]["errors"][0].startswith("cuda_toolkit_runfile_checksum is 'md5:abc'")


def test_bad_version_is_an_error_not_a_failure(run_module, h200):
    kind, result, dummy = run_module(cuda_toolkit_state.main, dict(h200["args"], version="v13"))
    assert kind == "exit" and result["dir"] is None and result["installed"] is False
    assert result["errors"][0].startswith("cuda_toolkit_version is 'v13'")


def test_scan_warnings_are_module_warnings(run_module, h200):
    missing = h200["base"] + "/opt/none"
    dummy, result, warnings = run_module(cuda_toolkit_state.main, dict(h200["args"], scan_prefixes=[missing]))
    assert warnings == ["prefix %s is not a directory; skipped" % missing]
    assert "warnings" not in result


def test_timeout_must_be_positive(run_module, h200):
    kind, result, dummy = run_module(cuda_toolkit_state.main, dict(h200["args"], timeout=0))
    assert kind == "fail" and result["msg"].startswith("timeout is 0")


def test_no_ldconfig_anywhere(run_module, h200, monkeypatch):
    monkeypatch.setattr(cuda_toolkit_state.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: None)
    result = run_module(cuda_toolkit_state.main, h200["args"])[1]
    assert result["linker"]["error"] == "ldconfig: not found"
    assert result["installed"] is True and result["plan"]["set_ldconfig"] is True


RUNFILE_URL = "https://developer.download.nvidia.com/compute/cuda/13.0.2/local_installers/cuda_13.0.2_580.95.05_linux.run"


def test_the_download_of_the_runfile_is_fetch_command(run_module, h200):
    """With fetch_url the result carries the run_logged download the role runs: fetch_url.fetch_command's."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import fetch_url
    dest = h200["base"] + "/var/cache/cuda-toolkit/cuda_13.0.2_580.95.05_linux.run"
    for check_mode in (False, True):
        args = dict(h200["args"], fetch_url=RUNFILE_URL, fetch_dest=dest, _ansible_check_mode=check_mode)
        kind, result, dummy = run_module(cuda_toolkit_state.main, args)
        assert kind == "exit" and result["installed"] is True
        assert result["fetch"] == fetch_url.fetch_command("python3", RUNFILE_URL, dest)
        assert result["fetch"]["argv"][0] == "python3" and result["fetch"]["argv"][-1] == dest
        assert result["fetch"]["environment"] == {"LLM_STACK_FETCH_URL": RUNFILE_URL}
        assert result["fetch"]["no_log"] is False and RUNFILE_URL not in result["fetch"]["argv"]
    # Without fetch_url: none.
    assert run_module(cuda_toolkit_state.main, h200["args"])[1]["fetch"] is None


def test_a_url_with_credentials_is_downloaded_hidden(run_module, h200):
    url = "https://mirror-user:mirror-pw@mirror.example/cuda_13.0.2_580.95.05_linux.run"
    result = run_module(cuda_toolkit_state.main, dict(h200["args"], fetch_url=url, fetch_dest="/var/tmp/x.run"))[1]
    assert result["fetch"]["no_log"] is True and result["fetch"]["shown_url"] == "https://mirror.example/" \
        "cuda_13.0.2_580.95.05_linux.run"


@pytest.mark.parametrize("url, dest, msg", [
    ("", "/var/tmp/x.run", "fetch_command: the URL is empty"),
    ("ftp://mirror.example/x.run", "/var/tmp/x.run", "fetch_command: 'ftp://mirror.example/x.run' is not an http(s) or"
                                                     " file URL"),
    (RUNFILE_URL, "x.run", "fetch_command: the destination must be an absolute path, got 'x.run'"),
])
def test_a_download_that_cannot_run_fails_with_the_filters_message(run_module, h200, url, dest, msg):
    kind, result, dummy = run_module(cuda_toolkit_state.main, dict(h200["args"], fetch_url=url, fetch_dest=dest))
    assert kind == "fail" and result["msg"] == msg


def test_fetch_url_needs_fetch_dest(run_module, h200):
    kind, result, dummy = run_module(cuda_toolkit_state.main, dict(h200["args"], fetch_url=RUNFILE_URL))
    assert kind == "fail" and "fetch_dest" in result["msg"]


@pytest.mark.parametrize("given, expected", [
    ("https://user:s3cret@mirror.example/cuda/cuda_13.0.2_580.95.05_linux.run",
     "https://user:s3cret@mirror.example/cuda/cuda_13.0.2_580.95.05_linux.run"),
    ("", "https://developer.download.nvidia.com/compute/cuda/13.0.2/local_installers/cuda_13.0.2_580.95.05_linux.run"),
])
def test_the_download_fetches_the_url_as_given_not_the_gates_masked_one(given, expected):
    """The gate shows cuda_toolkit_runfile_url with its credentials masked; the download must use the URL itself."""
    import yaml
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import mask_credentials

    repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..")
    with open(os.path.join(repo, "roles", "cuda_toolkit", "tasks", "main.yml")) as handle:
        tasks = yaml.safe_load(handle)
    block = next(task for task in tasks if "block" in task)
    plan = next(task for task in block["block"] if "gpufleet.llm_stack.cuda_toolkit_state" in task)
    gate_url = mask_credentials(given) or expected
    variables = {"cuda_toolkit_runfile_url": given, "cuda_toolkit_runfile": {"url": gate_url}}
    templar = Templar(loader=DataLoader(), variables=variables)
    expression = trust_as_template(plan["gpufleet.llm_stack.cuda_toolkit_state"]["fetch_url"])
    assert templar.template(expression) == expected
    if given:
        assert gate_url != given and "s3cret" not in gate_url
