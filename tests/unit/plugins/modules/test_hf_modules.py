# -*- coding: utf-8 -*-
"""hf_model_info, hf_model_verify, hf_download and hf_model_prune driven through AnsibleModule."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import io
import json
import os
import stat

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import hf_local
from ansible_collections.gpufleet.llm_stack.plugins.modules import hf_download, hf_model_info, hf_model_prune, hf_model_verify

TOKEN = "hf_unitTestTokenThatMustNeverBePrinted"
SHA = "b793f2c2f4561216306b1de00763201a1ee10381"
REPO = "Qwen/Qwen3.5-0.8B"


class FakeResponse(object):
    def __init__(self, status, body, headers=None):
        self.status = status
        self.body = body
        self.headers = headers or {}

    def getcode(self):
        return self.status

    def read(self):
        return self.body


def fake_open_url(answers, calls):
    from ansible.module_utils.six.moves.urllib.error import HTTPError

    def open_url(url, method="GET", headers=None, **kwargs):
        calls.append((method, url, headers, kwargs))
        status, body, hdrs = answers[url]
        if status >= 300:
            raise HTTPError(url, status, "error", hdrs, io.BytesIO(body))
        return FakeResponse(status, body, hdrs)

    return open_url


def test_info_exits_with_commit_and_files(run_module, monkeypatch):
    calls = []
    endpoint = "http://127.0.0.1:28918"
    answers = {
        endpoint + "/api/models/%s/revision/main" % REPO: (200, json.dumps({"sha": SHA}).encode(), {}),
        endpoint + "/api/models/%s/tree/%s/?recursive=true&expand=false" % (REPO, SHA): (200, json.dumps([
            {"type": "file", "path": "config.json", "size": 10, "oid": "aa" * 20}]).encode(), {}),
    }
    monkeypatch.setattr(hf_model_info, "open_url", fake_open_url(answers, calls))
    kind, result, _warnings = run_module(hf_model_info.main, {"repo_id": REPO, "endpoint": endpoint, "token": TOKEN})
    assert kind == "exit" and result["changed"] is False
    assert result["commit"] == SHA and result["files"][0]["path"] == "config.json"
    assert calls[0][2]["Authorization"] == "Bearer " + TOKEN
    assert calls[0][3]["follow_redirects"] == "none"


def test_info_fails_with_kind_and_status_without_token(run_module, monkeypatch):
    calls = []
    endpoint = "http://127.0.0.1:28918"
    answers = {
        endpoint + "/api/models/%s/revision/v9" % REPO: (
            404, b'{"error":"Invalid rev id: v9"}', {"X-Error-Code": "RevisionNotFound"}),
    }
    monkeypatch.setattr(hf_model_info, "open_url", fake_open_url(answers, calls))
    kind, result, _warnings = run_module(hf_model_info.main, {"repo_id": REPO, "revision": "v9", "endpoint": endpoint,
                                                              "token": TOKEN})
    assert kind == "fail"
    assert result["error"] == "revision_not_found" and result["status"] == 404
    assert "Revision 'v9' of 'Qwen/Qwen3.5-0.8B'" in result["msg"]
    assert TOKEN not in json.dumps(result)


def tiny_model(root):
    files = []
    for path, data in {"config.json": b'{"model_type": "qwen3_5"}', "model.safetensors": b"\x05" * 64}.items():
        target = os.path.join(str(root), path)
        if not os.path.isdir(os.path.dirname(target)):
            os.makedirs(os.path.dirname(target))
        with open(target, "wb") as handle:
            handle.write(data)
        entry = {"path": path, "size": len(data),
                 "blob_id": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest(), "sha256": None}
        if path.endswith(".safetensors"):
            entry["sha256"] = hashlib.sha256(data).hexdigest()
        files.append(entry)
    return files


def verify_args(path, files, **extra):
    args = {"path": str(path), "repo_id": REPO, "revision": "main", "commit": SHA, "files": files,
            "expected_model_types": ["qwen3_5", "qwen3_5_moe"]}
    args.update(extra)
    return args


def test_verify_writes_the_manifest_once(run_module, tmp_path):
    files = tiny_model(tmp_path)
    kind, result, _w = run_module(hf_model_verify.main, verify_args(tmp_path, files, write_manifest=True))
    assert kind == "exit" and result["ok"] and result["changed"]
    assert result["actions"] == ["wrote %s" % hf_local.MANIFEST_NAME]
    assert result["manifest"]["commit"] == SHA and result["model_type"] == "qwen3_5"
    kind, result, _w = run_module(hf_model_verify.main, verify_args(tmp_path, files, write_manifest=True))
    assert result["ok"] and not result["changed"] and result["actions"] == []


def test_verify_in_check_mode_changes_nothing(run_module, tmp_path):
    files = tiny_model(tmp_path)
    with open(str(tmp_path / "model.safetensors"), "wb") as handle:
        handle.write(b"\x05" * 10)
    args = verify_args(tmp_path, files, remove_damaged=True, write_manifest=True, _ansible_check_mode=True)
    kind, result, _w = run_module(hf_model_verify.main, args)
    assert kind == "exit" and result["changed"] and not result["ok"]
    assert result["actions"] == ["would remove damaged model.safetensors"]
    assert os.path.getsize(str(tmp_path / "model.safetensors")) == 10
    assert not os.path.exists(str(tmp_path / hf_local.MANIFEST_NAME))
    args.pop("_ansible_check_mode")
    kind, result, _w = run_module(hf_model_verify.main, args)
    assert result["actions"] == ["removed damaged model.safetensors"]
    assert result["bytes_to_fetch"] == 64 and result["free_bytes"] > 0
    assert not os.path.exists(str(tmp_path / "model.safetensors"))


def test_verify_refuses_paths_outside_the_directory(run_module, tmp_path):
    kind, result, _w = run_module(hf_model_verify.main, verify_args(tmp_path, [{"path": "../x", "size": 1}]))
    assert kind == "fail" and "relative path" in result["msg"] and result["msg"].startswith("files: ")


def fake_hf(tmp_path, body):
    script = tmp_path / "hf"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def download_args(tmp_path, hf, **extra):
    args = {"hf": hf, "repo_id": REPO, "revision": SHA, "local_dir": str(tmp_path / "model"),
            "endpoint": "http://127.0.0.1:28918", "log_path": str(tmp_path / "log" / "fetch.log"),
            "include": ["*.json"], "exclude": ["*.bin"], "max_workers": 2}
    args.update(extra)
    return args


def test_download_gives_the_token_through_the_environment_only(run_module, tmp_path):
    hf = fake_hf(tmp_path, (
        'echo "argv: $*"\n'
        'test "$HF_TOKEN" = "%s" && echo "token given through the environment"\n'
        'echo "endpoint $HF_ENDPOINT progress-bars-off=$HF_HUB_DISABLE_PROGRESS_BARS"\n'
        '[ -f "$6/config.json" ] || { mkdir -p "$6" && echo data > "$6/config.json"; }\n' % TOKEN))
    kind, result, _w = run_module(hf_download.main, download_args(tmp_path, hf, token=TOKEN))
    assert kind == "exit" and result["changed"] and result["rc"] == 0
    assert result["changed_files"] == ["config.json"]
    assert result["cmd"] == [hf, "download", REPO, "--revision", SHA, "--local-dir", str(tmp_path / "model"),
                             "--max-workers", "2", "--include", "*.json", "--exclude", "*.bin",
                             "--exclude", hf_local.MANIFEST_NAME, "--exclude", hf_local.MANIFEST_NAME + ".tmp"]
    log = (tmp_path / "log" / "fetch.log").read_text()
    assert "token given through the environment" in log
    assert "endpoint http://127.0.0.1:28918 progress-bars-off=1" in log
    assert TOKEN not in log and TOKEN not in json.dumps(result)
    assert oct((tmp_path / "log" / "fetch.log").stat().st_mode & 0o777) == "0o640"
    # Nothing new the second time: not changed.
    kind, result, _w = run_module(hf_download.main, download_args(tmp_path, hf, token=TOKEN))
    assert kind == "exit" and not result["changed"]


def test_download_without_token_blanks_any_ambient_token(run_module, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_ambient")
    hf = fake_hf(tmp_path, 'echo "token=[$HF_TOKEN] implicit-off=$HF_HUB_DISABLE_IMPLICIT_TOKEN"\n')
    kind, result, _w = run_module(hf_download.main, download_args(tmp_path, hf))
    assert kind == "exit" and not result["changed"]
    assert "token=[] implicit-off=1" in (tmp_path / "log" / "fetch.log").read_text()


def test_download_failure_shows_the_log_tail(run_module, tmp_path):
    hf = fake_hf(tmp_path, 'i=0; while [ $i -lt 60 ]; do echo "line $i"; i=$((i+1)); done\n'
                           'echo "Repository Not Found for url" >&2; exit 3\n')
    kind, result, _w = run_module(hf_download.main, download_args(tmp_path, hf, log_tail_lines=5))
    assert kind == "fail" and result["rc"] == 3
    assert result["log_tail"][-2:] == ["Repository Not Found for url", "=== exit status 3, 0 file(s) changed"]
    assert len(result["log_tail"]) == 5
    assert "hf download of Qwen/Qwen3.5-0.8B at %s from http://127.0.0.1:28918 failed (exit status 3)" % SHA in result["msg"]


def test_download_check_mode_runs_nothing(run_module, tmp_path):
    hf = fake_hf(tmp_path, "touch \"$6.ran\"\n")
    kind, result, _w = run_module(hf_download.main, download_args(tmp_path, hf, _ansible_check_mode=True))
    assert kind == "exit" and result["changed"]
    assert not os.path.exists(str(tmp_path / "log"))


def test_download_needs_an_executable_client(run_module, tmp_path):
    kind, result, _w = run_module(hf_download.main, download_args(tmp_path, str(tmp_path / "missing")))
    assert kind == "fail" and "not an executable hf client" in result["msg"]


def test_prune_keeps_current_and_newest(run_module, tmp_path):
    for index, name in enumerate(["a" * 40, "b" * 40, "c" * 40]):
        (tmp_path / name).mkdir()
        (tmp_path / name / hf_local.MANIFEST_NAME).write_text("{}")
        os.utime(str(tmp_path / name / hf_local.MANIFEST_NAME), (100 + index, 100 + index))
    kind, result, _w = run_module(hf_model_prune.main, {"base": str(tmp_path), "current": "c" * 40,
                                                        "keep": 2, "_ansible_check_mode": True})
    assert result["changed"] and result["removed"] == [str(tmp_path / ("a" * 40))]
    assert (tmp_path / ("a" * 40)).exists()
    kind, result, _w = run_module(hf_model_prune.main, {"base": str(tmp_path), "current": "c" * 40, "keep": 2})
    assert not (tmp_path / ("a" * 40)).exists() and (tmp_path / ("b" * 40)).exists()
    kind, result, _w = run_module(hf_model_prune.main, {"base": str(tmp_path), "current": "c" * 40, "keep": 2})
    assert not result["changed"]


def test_prune_refuses_keep_zero(run_module, tmp_path):
    kind, result, _w = run_module(hf_model_prune.main, {"base": str(tmp_path), "current": "c" * 40, "keep": 0})
    assert kind == "fail" and result["msg"].startswith("keep: must be 1 or more")


# --- regression tests: hostile and odd input -------------------------------------------------------------------


def test_info_bad_endpoint_is_a_clean_failure(run_module):
    kind, result, _w = run_module(hf_model_info.main, {"repo_id": REPO, "endpoint": "http://[::1", "token": TOKEN})
    assert kind == "fail" and result["error"] == "bad_input"
    assert result["msg"].startswith("endpoint: ") and "http://[::1" in result["msg"]


def test_info_masks_the_token_and_url_passwords_in_failures(run_module, monkeypatch):
    def open_url(url, **kwargs):
        raise OSError("connect to %s with Bearer %s failed" % (url, TOKEN))

    monkeypatch.setattr(hf_model_info, "open_url", open_url)
    kind, result, _w = run_module(hf_model_info.main, {"repo_id": REPO, "endpoint": "https://bob:pw12345@mirror.example",
                                                       "token": "plain-secret-token"})
    assert kind == "fail" and result["error"] == "unavailable"
    text = json.dumps(result)
    assert "pw12345" not in text and "plain-secret-token" not in text and TOKEN not in text
    assert result["endpoint"] == "https://***@mirror.example"


def test_info_follows_no_redirect_itself(run_module, monkeypatch):
    calls = []
    endpoint = "http://127.0.0.1:28918"
    answers = {
        endpoint + "/api/models/%s/revision/main" % REPO: (302, b"", {"Location": "http://127.0.0.9:1/x"}),
        "http://127.0.0.9:1/x": (200, json.dumps({"sha": SHA}).encode(), {}),
        endpoint + "/api/models/%s/tree/%s/?recursive=true&expand=false" % (REPO, SHA): (200, json.dumps([
            {"type": "file", "path": "config.json", "size": 10, "oid": "aa" * 20}]).encode(), {}),
    }
    monkeypatch.setattr(hf_model_info, "open_url", fake_open_url(answers, calls))
    kind, result, _w = run_module(hf_model_info.main, {"repo_id": REPO, "endpoint": endpoint, "token": TOKEN})
    assert kind == "exit" and result["commit"] == SHA
    assert all(c[3]["follow_redirects"] == "none" and c[3]["use_netrc"] is False for c in calls)
    assert "Authorization" not in calls[1][2] and calls[2][2]["Authorization"] == "Bearer " + TOKEN


def test_info_warns_about_a_repository_file_named_like_the_manifest(run_module, monkeypatch):
    calls = []
    endpoint = "http://127.0.0.1:28918"
    answers = {
        endpoint + "/api/models/%s/revision/main" % REPO: (200, json.dumps({"sha": SHA}).encode(), {}),
        endpoint + "/api/models/%s/tree/%s/?recursive=true&expand=false" % (REPO, SHA): (200, json.dumps([
            {"type": "file", "path": "config.json", "size": 10, "oid": "aa" * 20},
            {"type": "file", "path": hf_local.MANIFEST_NAME, "size": 3, "oid": "bb" * 20}]).encode(), {}),
    }
    monkeypatch.setattr(hf_model_info, "open_url", fake_open_url(answers, calls))
    kind, result, warnings = run_module(hf_model_info.main, {"repo_id": REPO, "endpoint": endpoint})
    assert kind == "exit" and [f["path"] for f in result["files"]] == ["config.json"]
    assert result["skipped"] == [hf_local.MANIFEST_NAME]
    assert any(hf_local.MANIFEST_NAME in w for w in warnings)


def test_verify_refuses_a_directory_link_that_leads_outside(run_module, tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    files = tiny_model(model)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "model.safetensors").write_bytes(b"precious")
    (outside / "a.b.incomplete").write_bytes(b"precious")
    os.symlink(str(outside), str(model / "sub"))
    (model / ".cache" / "huggingface").mkdir(parents=True)
    os.symlink(str(outside), str(model / ".cache" / "huggingface" / "download"))
    files.append({"path": "sub/model.safetensors", "size": 64, "sha256": "ab" * 32, "blob_id": None})
    kind, result, _w = run_module(hf_model_verify.main, verify_args(model, files, remove_damaged=True,
                                                                    clean_incomplete=True, write_manifest=True))
    assert kind == "fail" and "symbolic link" in result["msg"] and result["msg"].startswith("path: ")
    assert (outside / "model.safetensors").read_bytes() == b"precious"
    assert (outside / "a.b.incomplete").read_bytes() == b"precious"


def test_verify_does_not_write_through_a_linked_temporary_manifest(run_module, tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    files = tiny_model(model)
    victim = tmp_path / "victim"
    victim.write_text("precious")
    victim.chmod(0o600)
    os.symlink(str(victim), str(model / (hf_local.MANIFEST_NAME + ".tmp")))
    kind, result, _w = run_module(hf_model_verify.main, verify_args(model, files, write_manifest=True))
    assert kind == "exit" and result["ok"] and result["changed"]
    assert victim.read_text() == "precious" and oct(victim.stat().st_mode & 0o777) == "0o600"


def test_verify_a_repository_that_lists_the_manifest_name_stays_verified(run_module, tmp_path):
    files = tiny_model(tmp_path)
    data = b"the repository's own file"
    (tmp_path / hf_local.MANIFEST_NAME).write_bytes(data)
    files.append({"path": hf_local.MANIFEST_NAME, "size": len(data),
                  "blob_id": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest(), "sha256": None})
    args = verify_args(tmp_path, files, remove_damaged=True, clean_incomplete=True, write_manifest=True)
    for _run in range(3):
        kind, result, warnings = run_module(hf_model_verify.main, args)
        assert kind == "exit" and result["ok"], result["problems"]
        assert result["damaged"] == [] and result["missing"] == []
        assert any(hf_local.MANIFEST_NAME in w for w in warnings)
    assert hf_local.read_manifest(str(tmp_path))["commit"] == SHA


@pytest.mark.parametrize("args, option", [
    ({"commit": "x" * 40}, "commit"),
    ({"commit": SHA + "\nx"}, "commit"),
    ({"repo_id": "--help"}, "repo_id"),
    ({"revision": "-x"}, "revision"),
    ({"files": [{"path": "a", "size": "big"}]}, "files"),
    ({"files": [{"path": "a", "size": -1}]}, "files"),
    ({"files": [{"path": "a", "size": True}]}, "files"),
    ({"files": [{"path": "a", "size": 1, "sha256": "nothex"}]}, "files"),
    ({"files": [{"path": "a", "size": 1, "blob_id": 12}]}, "files"),
    ({"files": [{"path": "a\x00b", "size": 1}]}, "files"),
    ({"files": [{"path": "a", "size": 1}, {"path": "a", "size": 2}]}, "files"),
])
def test_verify_bad_input_names_the_option(run_module, tmp_path, args, option):
    params = verify_args(tmp_path, tiny_model(tmp_path))
    params.update(args)
    kind, result, _w = run_module(hf_model_verify.main, params)
    assert kind == "fail" and result["msg"].startswith(option + ": ")


def test_download_refuses_option_like_repo_ids_before_running_anything(run_module, tmp_path):
    hf = fake_hf(tmp_path, 'touch "%s"\n' % (tmp_path / "ran"))
    for repo_id in ["--help", "-h", "Qwen/Qwen3.5-0.8B\n--help", "not a repo"]:
        kind, result, _w = run_module(hf_download.main, download_args(tmp_path, hf, repo_id=repo_id))
        assert kind == "fail" and result["msg"].startswith("repo_id: "), result["msg"]
    kind, result, _w = run_module(hf_download.main, download_args(tmp_path, hf, revision="--help"))
    assert kind == "fail" and result["msg"].startswith("revision: ")
    kind, result, _w = run_module(hf_download.main, download_args(tmp_path, hf, include=["--help"]))
    assert kind == "fail" and result["msg"].startswith("include: ")
    kind, result, _w = run_module(hf_download.main, download_args(tmp_path, hf, endpoint="http://[::1"))
    assert kind == "fail" and result["msg"].startswith("endpoint: ")
    kind, result, _w = run_module(hf_download.main, download_args(tmp_path, hf, local_dir="relative/dir"))
    assert kind == "fail" and result["msg"].startswith("local_dir: ")
    assert not (tmp_path / "ran").exists() and not (tmp_path / "log").exists()


def test_download_masks_credentials_in_every_line(run_module, tmp_path):
    endpoint = "http://bob:pw12345@127.0.0.1:28918"
    hf = fake_hf(tmp_path, (
        'echo "Retrying in 1s [Retry 1/5]: GET $HF_ENDPOINT/api/models/x failed"\n'
        'echo "headers: Authorization: Bearer $HF_TOKEN" >&2\n'
        'echo "token again: $HF_TOKEN proxy $HTTPS_PROXY"\n'
        'exit 4\n'))
    args = download_args(tmp_path, hf, endpoint=endpoint, token="a-plain-secret",
                         environment={"HTTPS_PROXY": "http://proxyuser:proxypw@proxy:3128", "MY_API_KEY": "k-9z7"})
    kind, result, _w = run_module(hf_download.main, args)
    assert kind == "fail" and result["rc"] == 4
    log = (tmp_path / "log" / "fetch.log").read_text()
    for text in (log, json.dumps(result)):
        for secret in ("pw12345", "a-plain-secret", "proxypw", "k-9z7"):
            assert secret not in text
    assert "GET http://***@127.0.0.1:28918/api/models/x failed" in log
    assert any("Retrying in 1s" in line for line in result["log_tail"])


def test_download_times_out_and_says_so(run_module, tmp_path):
    hf = fake_hf(tmp_path, 'echo started; sleep 60; echo never\n')
    kind, result, _w = run_module(hf_download.main, download_args(tmp_path, hf, timeout=1))
    assert kind == "fail" and result["timed_out"] is True and result["rc"] is None
    assert "did not finish within 1 seconds" in result["msg"] and "timeout" in result["msg"]
    assert "started" in (tmp_path / "log" / "fetch.log").read_text()


def test_download_never_downloads_the_manifest_name(run_module, tmp_path):
    hf = fake_hf(tmp_path, 'echo "argv: $*"\n')
    kind, result, _w = run_module(hf_download.main, download_args(tmp_path, hf))
    assert kind == "exit"
    assert result["cmd"][-4:] == ["--exclude", hf_local.MANIFEST_NAME, "--exclude", hf_local.MANIFEST_NAME + ".tmp"]


def test_download_token_is_in_no_argv(run_module, tmp_path):
    hf = fake_hf(tmp_path, 'cat /proc/$$/cmdline | tr "\\0" " "; echo; cat /proc/$PPID/cmdline | tr "\\0" " "; echo\n')
    kind, result, _w = run_module(hf_download.main, download_args(tmp_path, hf, token=TOKEN))
    assert kind == "exit"
    log = (tmp_path / "log" / "fetch.log").read_text()
    assert "download" in log and TOKEN not in log and TOKEN not in json.dumps(result)


def test_prune_keeps_the_current_commit_given_with_a_newline(run_module, tmp_path):
    for index, name in enumerate(["a" * 40, "b" * 40, "c" * 40]):
        (tmp_path / name).mkdir()
        (tmp_path / name / hf_local.MANIFEST_NAME).write_text("{}")
        os.utime(str(tmp_path / name / hf_local.MANIFEST_NAME), (100 + index, 100 + index))
    os.symlink("a" * 40, str(tmp_path / "current"))
    kind, result, _w = run_module(hf_model_prune.main, {"base": str(tmp_path), "current": "a" * 40 + "\n", "keep": 1})
    assert kind == "exit" and (tmp_path / ("a" * 40)).is_dir()
    assert result["removed"] == [str(tmp_path / ("b" * 40)), str(tmp_path / ("c" * 40))]
    assert result["protected"] == ["a" * 40]


def test_prune_keeps_what_the_link_points_to(run_module, tmp_path):
    for index, name in enumerate(["a" * 40, "b" * 40, "c" * 40]):
        (tmp_path / name).mkdir()
        (tmp_path / name / hf_local.MANIFEST_NAME).write_text("{}")
        os.utime(str(tmp_path / name / hf_local.MANIFEST_NAME), (100 + index, 100 + index))
    os.symlink("a" * 40, str(tmp_path / "current"))
    kind, result, _w = run_module(hf_model_prune.main, {"base": str(tmp_path), "current": "c" * 40, "keep": 1})
    assert kind == "exit" and (tmp_path / ("a" * 40)).is_dir() and (tmp_path / ("c" * 40)).is_dir()
    assert result["removed"] == [str(tmp_path / ("b" * 40))]
    assert result["protected"] == ["a" * 40, "c" * 40]


@pytest.mark.parametrize("args, option", [
    ({"current": "C" * 40}, "current"),
    ({"current": "a" * 40 + "\nx"}, "current"),
    ({"current": "\u0661" * 40}, "current"),
    ({"link_name": "../x"}, "link_name"),
    ({"link_name": ""}, "link_name"),
])
def test_prune_bad_input_names_the_option(run_module, tmp_path, args, option):
    params = {"base": str(tmp_path), "current": "a" * 40}
    params.update(args)
    kind, result, _w = run_module(hf_model_prune.main, params)
    assert kind == "fail" and result["msg"].startswith(option + ": ")


def test_nul_bytes_in_paths_are_clean_failures(run_module, tmp_path):
    kind, result, _w = run_module(hf_model_verify.main, verify_args(str(tmp_path) + "/a\x00b", tiny_model(tmp_path)))
    assert kind == "fail" and result["msg"].startswith("path: ")
    kind, result, _w = run_module(hf_model_prune.main, {"base": str(tmp_path) + "\x00", "current": "a" * 40})
    assert kind == "fail" and result["msg"].startswith("base: ")
    kind, result, _w = run_module(hf_download.main, download_args(tmp_path, "/bin/h\x00f"))
    assert kind == "fail" and result["msg"].startswith("hf: ")


ODD_TEXT = st.one_of(st.text(max_size=60), st.sampled_from(["--help", "-", "http://[::1", "a/b\n", "\x00", "Qwen/Qwen3.5-0.8B"]))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(repo_id=ODD_TEXT, revision=ODD_TEXT, endpoint=ODD_TEXT, pattern=ODD_TEXT)
def test_download_any_text_gives_exit_or_clean_failure(run_module, tmp_path, repo_id, revision, endpoint, pattern):
    args = download_args(tmp_path, "/nonexistent/hf", repo_id=repo_id, revision=revision, endpoint=endpoint,
                         include=[pattern], _ansible_check_mode=True)
    kind, result, _w = run_module(hf_download.main, args)
    assert kind in ("exit", "fail")
    if kind == "fail":
        assert result["msg"].split(":", 1)[0] in ("repo_id", "revision", "endpoint", "include")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(repo_id=ODD_TEXT, revision=ODD_TEXT, commit=ODD_TEXT, path=ODD_TEXT)
def test_verify_any_text_gives_exit_or_clean_failure(run_module, tmp_path, repo_id, revision, commit, path):
    args = verify_args(tmp_path / "model", [{"path": path, "size": 1}], repo_id=repo_id, revision=revision,
                       commit=commit, _ansible_check_mode=True)
    kind, result, _w = run_module(hf_model_verify.main, args)
    assert kind in ("exit", "fail")
    if kind == "fail":
        assert result["msg"].split(":", 1)[0] in ("repo_id", "revision", "commit", "files", "path")


def test_download_log_tail_lines_zero_shows_no_lines(run_module, tmp_path):
    hf = fake_hf(tmp_path, 'echo "line"; exit 2\n')
    kind, result, _w = run_module(hf_download.main, download_args(tmp_path, hf, log_tail_lines=0))
    assert kind == "fail" and result["log_tail"] == []


def test_download_does_not_mask_switches(run_module, tmp_path):
    hf = fake_hf(tmp_path, 'echo "revision $4 in 0.8B"\n')
    args = download_args(tmp_path, hf, environment={"HF_HUB_DISABLE_IMPLICIT_TOKEN": "0", "MY_AUTH_ON": "true"})
    kind, result, _w = run_module(hf_download.main, args)
    assert kind == "exit"
    assert "revision %s in 0.8B" % SHA in (tmp_path / "log" / "fetch.log").read_text()
