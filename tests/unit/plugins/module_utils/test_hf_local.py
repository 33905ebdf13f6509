# -*- coding: utf-8 -*-
"""hf_local: checking, repairing and recording model directories, on real files."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os

import pytest

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import hf_local

SHA = "b793f2c2f4561216306b1de00763201a1ee10381"
OLD = "ebb87bd28a026ee5f72dd43368fc55bf866b1a5e"


def blob_id(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


CONTENT = {
    "config.json": json.dumps({"model_type": "qwen3_5", "architectures": ["Qwen3_5ForConditionalGeneration"]}).encode(),
    "model-00001-of-00002.safetensors": b"\x01" * 3000,
    "model-00002-of-00002.safetensors": b"\x02" * 2000,
    "model.safetensors.index.json": json.dumps({"metadata": {}, "weight_map": {
        "a.weight": "model-00001-of-00002.safetensors", "b.weight": "model-00002-of-00002.safetensors"}}).encode(),
    "sub/README.md": b"# tiny\n",
}


def expected(content=None):
    files = []
    for path, data in sorted((content or CONTENT).items()):
        entry = {"path": path, "size": len(data), "blob_id": blob_id(data), "sha256": None}
        if path.endswith(".safetensors"):
            entry["sha256"] = hashlib.sha256(data).hexdigest()
            entry["blob_id"] = "ff" * 20  # the blob id of the LFS pointer, not of the content
        files.append(entry)
    return files


def write_tree(root, content=None):
    for path, data in (content or CONTENT).items():
        target = os.path.join(str(root), path)
        if not os.path.isdir(os.path.dirname(target)):
            os.makedirs(os.path.dirname(target))
        with open(target, "wb") as handle:
            handle.write(data)


def hf_meta(root, path, commit, etag):
    meta = hf_local.metadata_path(str(root), path)
    if not os.path.isdir(os.path.dirname(meta)):
        os.makedirs(os.path.dirname(meta))
    with open(meta, "w") as handle:
        handle.write("%s\n%s\n%f\n" % (commit, etag, 1.0e10))
    return meta


def complete(root, types=("qwen3_5",)):
    """A checked directory with its manifest, as the role leaves it."""
    write_tree(root)
    report = hf_local.inspect(str(root), expected(), expected_model_types=list(types))
    assert report["ok"], report["problems"]
    hf_local.write_manifest(str(root), hf_local.build_manifest("Qwen/Qwen3.5-0.8B", "main", SHA, expected(),
                                                               report["stats"], report["model_type"]))
    return report


def test_complete_directory_is_ok(tmp_path):
    report = complete(tmp_path)
    assert report["problems"] == [] and report["bytes_to_fetch"] == 0
    assert report["model_type"] == "qwen3_5"
    assert set(report["status"].values()) == {"ok"}


def test_empty_directory_needs_everything(tmp_path):
    report = hf_local.inspect(str(tmp_path / "absent"), expected(), expected_model_types=["qwen3_5"])
    assert not report["ok"]
    assert report["missing"] == sorted(CONTENT)
    assert report["bytes_to_fetch"] == sum(len(d) for d in CONTENT.values())
    assert "config.json is missing" in report["problems"]


def test_wrong_size_and_wrong_content_are_damaged(tmp_path):
    write_tree(tmp_path)
    with open(str(tmp_path / "model-00001-of-00002.safetensors"), "wb") as handle:
        handle.write(b"\x01" * 100)
    with open(str(tmp_path / "model-00002-of-00002.safetensors"), "wb") as handle:
        handle.write(b"\x03" * 2000)
    with open(str(tmp_path / "sub" / "README.md"), "wb") as handle:
        handle.write(b"# tin?\n")
    report = hf_local.inspect(str(tmp_path), expected())
    assert report["damaged"] == ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                                 "sub/README.md"]
    assert "model-00001-of-00002.safetensors has 100 bytes, the hub lists 3000" in report["problems"]
    assert "model-00002-of-00002.safetensors does not match the hub's checksum" in report["problems"]
    assert report["bytes_to_fetch"] == 3000 + 2000 + len(CONTENT["sub/README.md"])
    # The index points at damaged shards.
    assert any("references model-00001-of-00002.safetensors, which is not present and intact" in p
               for p in report["problems"])


def test_checksum_never_checks_sizes_only(tmp_path):
    write_tree(tmp_path)
    with open(str(tmp_path / "model-00002-of-00002.safetensors"), "wb") as handle:
        handle.write(b"\x03" * 2000)
    assert hf_local.inspect(str(tmp_path), expected(), checksum="never")["ok"]


def test_manifest_spares_rehashing_unchanged_large_files(tmp_path, monkeypatch):
    monkeypatch.setattr(hf_local, "SMALL_FILE", 10)
    complete(tmp_path)
    calls = []
    real = hf_local.sha256_file
    monkeypatch.setattr(hf_local, "sha256_file", lambda path: calls.append(path) or real(path))
    assert hf_local.inspect(str(tmp_path), expected())["ok"]
    assert calls == []
    # A file whose mtime changed is hashed again and caught.
    shard = str(tmp_path / "model-00002-of-00002.safetensors")
    with open(shard, "r+b") as handle:
        handle.write(b"\x09")
    report = hf_local.inspect(str(tmp_path), expected())
    assert report["damaged"] == ["model-00002-of-00002.safetensors"]
    assert calls == [shard]


def test_checksum_always_catches_what_the_stat_hides(tmp_path, monkeypatch):
    monkeypatch.setattr(hf_local, "SMALL_FILE", 10)
    complete(tmp_path)
    shard = str(tmp_path / "model-00002-of-00002.safetensors")
    st = os.stat(shard)
    with open(shard, "r+b") as handle:
        handle.write(b"\x09")
    os.utime(shard, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert hf_local.inspect(str(tmp_path), expected())["ok"]
    assert hf_local.inspect(str(tmp_path), expected(), checksum="always")["damaged"] == [
        "model-00002-of-00002.safetensors"]


def test_index_must_reference_listed_shards(tmp_path):
    content = dict(CONTENT)
    content["model.safetensors.index.json"] = json.dumps({"weight_map": {
        "a.weight": "model-00001-of-00002.safetensors", "c.weight": "model-00003-of-00002.safetensors"}}).encode()
    write_tree(tmp_path, content)
    report = hf_local.inspect(str(tmp_path), expected(content))
    assert report["problems"] == [
        "model.safetensors.index.json references model-00003-of-00002.safetensors, which is not among the files "
        "fetched (the repository lacks it at this revision, or the include/exclude patterns left it out)"]


def test_excluded_shard_is_reported_by_the_index_check(tmp_path):
    files = [f for f in expected() if f["path"] != "model-00002-of-00002.safetensors"]
    write_tree(tmp_path)
    report = hf_local.inspect(str(tmp_path), files)
    assert len(report["problems"]) == 1 and "model-00002-of-00002.safetensors" in report["problems"][0]


def test_index_without_weight_map(tmp_path):
    content = dict(CONTENT, **{"model.safetensors.index.json": b"{}"})
    write_tree(tmp_path, content)
    assert hf_local.inspect(str(tmp_path), expected(content))["problems"] == ["model.safetensors.index.json has no weight_map"]


def test_model_type_is_checked(tmp_path):
    write_tree(tmp_path)
    report = hf_local.inspect(str(tmp_path), expected(), expected_model_types=["qwen3_5_text"])
    assert report["problems"] == ["config.json has model_type 'qwen3_5'; this stack expects one of qwen3_5_text"]
    assert report["model_type"] == "qwen3_5"
    files = [f for f in expected() if f["path"] != "config.json"]
    report = hf_local.inspect(str(tmp_path), files, expected_model_types=["qwen3_5"])
    assert report["problems"][0].startswith("config.json is not among the files fetched")
    assert hf_local.inspect(str(tmp_path), files)["ok"]


def test_incomplete_files_are_resumable_or_stale(tmp_path):
    write_tree(tmp_path)
    files = expected()
    shard = [f for f in files if f["path"] == "model-00002-of-00002.safetensors"][0]
    os.unlink(str(tmp_path / shard["path"]))
    download = tmp_path / ".cache" / "huggingface" / "download"
    download.mkdir(parents=True)
    (download / ("a1b2c3.%s.incomplete" % shard["sha256"])).write_bytes(b"\x02" * 500)
    (download / ("d4e5f6.%s.incomplete" % ("0" * 64))).write_bytes(b"old")
    (download / ("070809.%s.incomplete" % shard["sha256"])).write_bytes(b"\x02" * 5000)  # larger than the file
    # huggingface_hub >= 1.17 writes process-unique partial files that no later run can resume.
    (download / ("0a0b0c.%s.1f2e3d4c.incomplete" % shard["sha256"])).write_bytes(b"\x02" * 10)
    report = hf_local.inspect(str(tmp_path), files)
    assert report["resumable_incomplete"] == [".cache/huggingface/download/a1b2c3.%s.incomplete" % shard["sha256"]]
    assert sorted(report["stale_incomplete"]) == sorted([
        ".cache/huggingface/download/070809.%s.incomplete" % shard["sha256"],
        ".cache/huggingface/download/0a0b0c.%s.1f2e3d4c.incomplete" % shard["sha256"],
        ".cache/huggingface/download/d4e5f6.%s.incomplete" % ("0" * 64)])
    actions = hf_local.prepare(str(tmp_path), files, dict(report, seedable=[], damaged=[]))
    assert len(actions) == 3
    assert [p.name for p in download.iterdir()] == ["a1b2c3.%s.incomplete" % shard["sha256"]]


def test_all_partials_are_stale_once_complete(tmp_path):
    write_tree(tmp_path)
    download = tmp_path / ".cache" / "huggingface" / "download"
    download.mkdir(parents=True)
    files = expected()
    (download / ("a1b2c3.%s.incomplete" % files[1]["sha256"])).write_bytes(b"\x01")
    report = hf_local.inspect(str(tmp_path), files)
    assert report["ok"] and report["stale_incomplete"] and not report["resumable_incomplete"]


def test_seed_reuses_unchanged_files_of_the_current_revision(tmp_path):
    old = tmp_path / OLD
    complete(old)
    meta = hf_meta(old, "model-00001-of-00002.safetensors", OLD, expected()[1]["sha256"])
    new_content = dict(CONTENT, **{"model-00002-of-00002.safetensors": b"\x07" * 2000})
    new = tmp_path / SHA
    report = hf_local.inspect(str(new), expected(new_content), seed_from=str(old))
    assert report["seedable"] == ["config.json", "model-00001-of-00002.safetensors", "model.safetensors.index.json",
                                  "sub/README.md"]
    assert report["bytes_to_fetch"] == 2000
    actions = hf_local.prepare(str(new), expected(new_content), report, seed_from=str(old))
    assert "reused model-00001-of-00002.safetensors from %s" % old in actions
    assert os.stat(str(new / "model-00001-of-00002.safetensors")).st_ino == \
        os.stat(str(old / "model-00001-of-00002.safetensors")).st_ino
    # The hf client's metadata comes along (a copy, so the client can rewrite it).
    new_meta = hf_local.metadata_path(str(new), "model-00001-of-00002.safetensors")
    assert open(new_meta).read() == open(meta).read()
    assert os.stat(new_meta).st_ino != os.stat(meta).st_ino
    again = hf_local.inspect(str(new), expected(new_content))
    assert again["missing"] == ["model-00002-of-00002.safetensors"]


def test_seed_ignores_files_changed_since_the_manifest(tmp_path):
    old = tmp_path / OLD
    complete(old)
    shard = str(old / "model-00001-of-00002.safetensors")
    with open(shard, "ab") as handle:
        handle.write(b"\x00")
    report = hf_local.inspect(str(tmp_path / SHA), expected(), seed_from=str(old))
    assert "model-00001-of-00002.safetensors" not in report["seedable"]


def test_prepare_removes_damaged_files_and_their_client_metadata(tmp_path):
    write_tree(tmp_path)
    shard = str(tmp_path / "model-00001-of-00002.safetensors")
    with open(shard, "wb") as handle:
        handle.write(b"\x01" * 10)
    meta = hf_meta(tmp_path, "model-00001-of-00002.safetensors", SHA, expected()[1]["sha256"])
    report = hf_local.inspect(str(tmp_path), expected())
    actions = hf_local.prepare(str(tmp_path), expected(), report)
    assert actions == ["removed damaged model-00001-of-00002.safetensors"]
    assert not os.path.exists(shard) and not os.path.exists(meta)


def test_manifest_is_written_once(tmp_path):
    report = complete(tmp_path)
    manifest = hf_local.read_manifest(str(tmp_path))
    assert manifest["repo_id"] == "Qwen/Qwen3.5-0.8B" and manifest["commit"] == SHA and manifest["revision"] == "main"
    assert manifest["file_count"] == 5 and manifest["total_size"] == sum(len(d) for d in CONTENT.values())
    assert [f["path"] for f in manifest["files"]] == sorted(CONTENT)
    again = hf_local.build_manifest("Qwen/Qwen3.5-0.8B", "main", SHA, expected(), report["stats"], "qwen3_5")
    assert hf_local.write_manifest(str(tmp_path), again) is False
    moved = hf_local.build_manifest("Qwen/Qwen3.5-0.8B", SHA, SHA, expected(), report["stats"], "qwen3_5")
    assert hf_local.write_manifest(str(tmp_path), moved) is True
    assert oct(os.stat(str(tmp_path / hf_local.MANIFEST_NAME)).st_mode & 0o777) == "0o644"


def test_unreadable_manifest_is_ignored(tmp_path):
    (tmp_path / hf_local.MANIFEST_NAME).write_text("{not json")
    assert hf_local.read_manifest(str(tmp_path)) is None


def test_paths_cannot_leave_the_directory(tmp_path):
    with pytest.raises(ValueError):
        hf_local.safe_join(str(tmp_path), "../etc/passwd")
    with pytest.raises(ValueError):
        hf_local.safe_join(str(tmp_path), "/etc/passwd")
    assert hf_local.safe_join(str(tmp_path), "a/../b") == str(tmp_path / "b")


def test_free_bytes_of_a_path_not_created_yet(tmp_path):
    assert hf_local.free_bytes(str(tmp_path / "x" / "y")) == hf_local.free_bytes(str(tmp_path))


def test_revisions_to_prune(tmp_path):
    names = ["a" * 40, "b" * 40, "c" * 40, "d" * 40]
    for index, name in enumerate(names):
        (tmp_path / name).mkdir()
        manifest = tmp_path / name / hf_local.MANIFEST_NAME
        manifest.write_text("{}")
        os.utime(str(manifest), (1000 + index, 1000 + index))
    (tmp_path / ("e" * 40)).mkdir()  # an abandoned, incomplete revision
    (tmp_path / "notes").mkdir()
    os.symlink("d" * 40, str(tmp_path / "current"))
    # current d; newest other complete is c; b and a go, and the incomplete e.
    assert hf_local.revisions_to_prune(str(tmp_path), 2, "d" * 40) == ["a" * 40, "b" * 40, "e" * 40]
    assert hf_local.revisions_to_prune(str(tmp_path), 1, "d" * 40) == ["a" * 40, "b" * 40, "c" * 40, "e" * 40]
    assert hf_local.revisions_to_prune(str(tmp_path), 9, "d" * 40) == ["e" * 40]
    # The revision being fetched is never removed, complete or not.
    assert "e" * 40 not in hf_local.revisions_to_prune(str(tmp_path), 2, "e" * 40)
    assert hf_local.revisions_to_prune(str(tmp_path / "absent"), 2, "d" * 40) == []
