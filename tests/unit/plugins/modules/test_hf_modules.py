# -*- coding: utf-8 -*-
"""hf_model_info, hf_model_verify, hf_download and hf_model_prune driven through AnsibleModule."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import io
import json
import os
import stat

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
    assert calls[0][3]["follow_redirects"] == "safe"


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
    assert kind == "fail" and "relative path" in result["msg"]


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
                             "--max-workers", "2", "--include", "*.json", "--exclude", "*.bin"]
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
    assert kind == "fail" and "keep must be 1 or more" in result["msg"]
