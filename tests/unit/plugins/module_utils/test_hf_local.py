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
    # '..' is refused even where the result would stay inside: hub paths never hold it.
    with pytest.raises(ValueError):
        hf_local.safe_join(str(tmp_path), "a/../b")
    assert hf_local.safe_join(str(tmp_path), "a/./b") == str(tmp_path / "a" / "b")


def test_free_bytes_of_a_path_not_created_yet(tmp_path, monkeypatch):
    # The nearest existing parent is measured. Free space on a shared filesystem moves
    # between two live readings, so the probed path and the arithmetic are checked instead.
    probed = []

    class Stat(object):
        f_bavail = 7
        f_frsize = 4096

    def statvfs(path):
        probed.append(path)
        return Stat()

    monkeypatch.setattr(hf_local.os, "statvfs", statvfs)
    assert hf_local.free_bytes(str(tmp_path / "x" / "y")) == 7 * 4096
    assert probed == [str(tmp_path)]


def test_free_bytes_reads_the_filesystem(tmp_path):
    assert hf_local.free_bytes(str(tmp_path)) > 0


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


# --- symbolic links and paths that leave the model directory -------------------------------------------------


def outside_dir(tmp_path):
    """A directory next to the model directory, with a file that must survive."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.safetensors").write_bytes(b"\x01" * 10)
    (outside / "x.abc.incomplete").write_bytes(b"keep me")
    return outside


def test_directory_link_leaving_the_model_dir_is_refused(tmp_path):
    root = tmp_path / "model"
    root.mkdir()
    outside = outside_dir(tmp_path)
    os.symlink(str(outside), str(root / "sub"))
    files = [{"path": "sub/victim.safetensors", "size": 3000, "blob_id": None, "sha256": "ab" * 32}]
    with pytest.raises(hf_local.PathError) as err:
        hf_local.inspect(str(root), files)
    assert "sub/victim.safetensors" in str(err.value) and "outside" in str(err.value)
    # prepare() with a report built by hand refuses too, and deletes nothing
    report = {"seedable": [], "damaged": ["sub/victim.safetensors"], "stale_incomplete": []}
    with pytest.raises(hf_local.PathError):
        hf_local.prepare(str(root), files, report)
    assert (outside / "victim.safetensors").exists()


def test_cache_dir_link_leaving_the_model_dir_is_refused(tmp_path):
    root = tmp_path / "model"
    (root / ".cache" / "huggingface").mkdir(parents=True)
    outside = outside_dir(tmp_path)
    os.symlink(str(outside), str(root / ".cache" / "huggingface" / "download"))
    write_tree(root)
    with pytest.raises(hf_local.PathError):
        hf_local.inspect(str(root), expected())
    report = {"seedable": [], "damaged": [], "stale_incomplete": [".cache/huggingface/download/x.abc.incomplete"]}
    with pytest.raises(hf_local.PathError):
        hf_local.prepare(str(root), expected(), report)
    assert (outside / "x.abc.incomplete").exists()


def test_file_link_to_outside_is_refused(tmp_path):
    root = tmp_path / "model"
    write_tree(root)
    outside = outside_dir(tmp_path)
    os.unlink(str(root / "config.json"))
    os.symlink(str(outside / "victim.safetensors"), str(root / "config.json"))
    with pytest.raises(hf_local.PathError):
        hf_local.inspect(str(root), expected())


def test_link_inside_the_model_dir_is_followed_for_reading_and_removed_itself(tmp_path):
    root = tmp_path / "model"
    write_tree(root)
    (root / "elsewhere").mkdir()
    os.rename(str(root / "sub"), str(root / "elsewhere" / "sub"))
    os.symlink("elsewhere/sub", str(root / "sub"))
    assert hf_local.inspect(str(root), expected())["ok"]
    # A damaged file reached through a link inside the directory: the file in the directory goes, not more.
    (root / "elsewhere" / "sub" / "README.md").write_bytes(b"changed")
    report = hf_local.inspect(str(root), expected())
    assert report["damaged"] == ["sub/README.md"]
    hf_local.prepare(str(root), expected(), report)
    assert not (root / "elsewhere" / "sub" / "README.md").exists()
    assert (root / "sub").is_symlink()


def test_damaged_file_that_is_a_link_is_unlinked_not_followed(tmp_path):
    root = tmp_path / "model"
    write_tree(root)
    target = root / "real.bin"
    target.write_bytes(b"\x01" * 10)
    os.unlink(str(root / "model-00001-of-00002.safetensors"))
    os.symlink("real.bin", str(root / "model-00001-of-00002.safetensors"))
    report = hf_local.inspect(str(root), expected())
    assert report["damaged"] == ["model-00001-of-00002.safetensors"]
    hf_local.prepare(str(root), expected(), report)
    assert not os.path.lexists(str(root / "model-00001-of-00002.safetensors"))
    assert target.read_bytes() == b"\x01" * 10


def test_manifest_tmp_link_is_not_followed(tmp_path):
    root = tmp_path / "model"
    report = complete(root)
    outside = outside_dir(tmp_path)
    victim = outside / "victim.safetensors"
    os.chmod(str(victim), 0o600)
    os.symlink(str(victim), str(root / (hf_local.MANIFEST_NAME + ".tmp")))
    moved = hf_local.build_manifest("Qwen/Qwen3.5-0.8B", SHA, SHA, expected(), report["stats"], "qwen3_5")
    assert hf_local.write_manifest(str(root), moved) is True
    assert victim.read_bytes() == b"\x01" * 10
    assert oct(os.stat(str(victim)).st_mode & 0o777) == "0o600"
    assert hf_local.read_manifest(str(root))["revision"] == SHA
    assert not os.path.lexists(str(root / (hf_local.MANIFEST_NAME + ".tmp")))
    assert oct(os.lstat(str(root / hf_local.MANIFEST_NAME)).st_mode & 0o777) == "0o644"


def test_manifest_link_is_replaced_not_followed(tmp_path):
    root = tmp_path / "model"
    report = complete(root)
    outside = outside_dir(tmp_path)
    victim = outside / "victim.safetensors"
    os.unlink(str(root / hf_local.MANIFEST_NAME))
    os.symlink(str(victim), str(root / hf_local.MANIFEST_NAME))
    manifest = hf_local.build_manifest("Qwen/Qwen3.5-0.8B", "main", SHA, expected(), report["stats"], "qwen3_5")
    assert hf_local.write_manifest(str(root), manifest) is True
    assert victim.read_bytes() == b"\x01" * 10
    assert not os.path.islink(str(root / hf_local.MANIFEST_NAME))


def test_seed_does_not_write_through_a_link_in_the_new_directory(tmp_path):
    old = tmp_path / OLD
    complete(old)
    new = tmp_path / SHA
    new.mkdir()
    outside = outside_dir(tmp_path)
    os.symlink(str(outside), str(new / "sub"))
    with pytest.raises(hf_local.PathError):
        hf_local.inspect(str(new), expected(), seed_from=str(old))


def test_seed_copy_does_not_follow_a_planted_link(tmp_path, monkeypatch):
    old = tmp_path / OLD
    complete(old)
    hf_meta(old, "config.json", OLD, expected()[0]["blob_id"])
    new = tmp_path / SHA
    new.mkdir()
    outside = outside_dir(tmp_path)
    victim = outside / "victim.safetensors"
    report = hf_local.inspect(str(new), expected(), seed_from=str(old))

    # Hard links fail (another filesystem): the copy must not follow a link planted at the destination.
    def no_hard_links(*_args, **_kwargs):
        raise OSError(18, "cross-device link")

    monkeypatch.setattr(os, "link", no_hard_links)
    (new / "decoy").write_bytes(b"decoy")
    os.symlink("decoy", str(new / "config.json"))
    meta_dir = new / ".cache" / "huggingface" / "download"
    meta_dir.mkdir(parents=True)
    os.symlink("../../../decoy", str(meta_dir / "config.json.metadata"))
    hf_local.prepare(str(new), expected(), report, seed_from=str(old))
    assert (new / "decoy").read_bytes() == b"decoy"
    assert not os.path.islink(str(new / "config.json")) and not os.path.islink(str(meta_dir / "config.json.metadata"))
    assert (new / "config.json").read_bytes() == CONTENT["config.json"]
    # A link planted there that leads outside: refused before anything changes.
    os.unlink(str(new / "config.json"))
    os.symlink(str(victim), str(new / "config.json"))
    with pytest.raises(hf_local.PathError):
        hf_local.prepare(str(new), expected(), report, seed_from=str(old))
    assert victim.read_bytes() == b"\x01" * 10


def test_safe_join_refuses_nul_and_non_text(tmp_path):
    for bad in ["a\x00b", "", ".", "a/./../..", None, 5, b"x"]:
        with pytest.raises(hf_local.PathError):
            hf_local.safe_join(str(tmp_path), bad)


# --- prune -----------------------------------------------------------------------------------------------------


def revision_dirs(tmp_path, names):
    for index, name in enumerate(names):
        (tmp_path / name).mkdir()
        manifest = tmp_path / name / hf_local.MANIFEST_NAME
        manifest.write_text("{}")
        os.utime(str(manifest), (1000 + index, 1000 + index))


def test_prune_never_removes_the_revision_the_link_points_to(tmp_path):
    revision_dirs(tmp_path, ["a" * 40, "b" * 40, "c" * 40])
    os.symlink("a" * 40, str(tmp_path / "current"))
    # Fetching c while the link still names a (oldest): a stays.
    assert hf_local.revisions_to_prune(str(tmp_path), 1, "c" * 40) == ["b" * 40]


def test_prune_protects_an_absolute_link_target(tmp_path):
    revision_dirs(tmp_path, ["a" * 40, "b" * 40, "c" * 40])
    os.symlink(str(tmp_path / ("a" * 40)) + "/", str(tmp_path / "current"))
    assert hf_local.revisions_to_prune(str(tmp_path), 1, "c" * 40) == ["b" * 40]


def test_prune_with_a_dangling_or_foreign_link(tmp_path):
    revision_dirs(tmp_path, ["a" * 40, "b" * 40])
    os.symlink("/nonexistent/" + "a" * 40, str(tmp_path / "current"))
    assert hf_local.revisions_to_prune(str(tmp_path), 1, "b" * 40) == ["a" * 40]


def test_prune_refuses_a_current_commit_with_a_newline(tmp_path):
    revision_dirs(tmp_path, ["a" * 40, "b" * 40])
    with pytest.raises(ValueError):
        hf_local.revisions_to_prune(str(tmp_path), 1, "a" * 40 + "\n")


def test_prune_ignores_directory_names_with_a_newline(tmp_path):
    revision_dirs(tmp_path, ["a" * 40, "b" * 40 + "\n"])
    assert hf_local.revisions_to_prune(str(tmp_path), 1, "c" * 40) == ["a" * 40]


def test_seed_skips_files_that_lead_outside_the_seed_directory(tmp_path):
    old = tmp_path / OLD
    complete(old)
    outside = outside_dir(tmp_path)
    os.unlink(str(old / "config.json"))
    os.symlink(str(outside / "victim.safetensors"), str(old / "config.json"))
    report = hf_local.inspect(str(tmp_path / SHA), expected(), seed_from=str(old))
    assert "config.json" not in report["seedable"] and "sub/README.md" in report["seedable"]


def test_odd_json_gives_problems_not_exceptions(tmp_path):
    content = dict(CONTENT)
    content["model.safetensors.index.json"] = json.dumps({"weight_map": {"a": 5, "b": None}}).encode()
    content["config.json"] = b"[" * 100000
    write_tree(tmp_path, content)
    report = hf_local.inspect(str(tmp_path), expected(content), expected_model_types=["qwen3_5"])
    assert "model.safetensors.index.json has a weight_map entry that is not a file name" in report["problems"]
    assert any(p.startswith("config.json is not valid JSON") for p in report["problems"])


def test_hostile_manifest_is_ignored(tmp_path):
    write_tree(tmp_path)
    for body in ({"format": 1, "files": 5}, {"format": 1, "files": [{"path": ["x"]}, 3]}):
        (tmp_path / hf_local.MANIFEST_NAME).write_text(json.dumps(body))
        assert hf_local.inspect(str(tmp_path), expected())["ok"]
