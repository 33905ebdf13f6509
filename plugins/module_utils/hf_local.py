# -*- coding: utf-8 -*-
# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check, repair and record a model directory against the hub's file list.

The expected files come from hf_hub.model_info(): dicts with ``path``,
``size``, ``blob_id`` (git blob sha1) and ``sha256`` (Git LFS files only).

A model directory is the ``--local-dir`` of ``hf download``. Besides the
files, the hf client keeps ``.cache/huggingface/download/<file>.metadata``
(commit, etag, time) and, while a file is being fetched,
``.cache/huggingface/download/[<dir>/]<hash>.<etag>.incomplete``; the etag of
a file is its LFS sha256 or, for other files, its git blob id. A partial
download whose etag belongs to a file still needed is resumed by the client;
any other ``.incomplete`` file is stale.

After a successful check a manifest (``MANIFEST_NAME``) is written next to
the files: repo, revision, commit, and each file's size and digest, plus the
(size, mtime, inode) seen when its digest was last computed, so that a later
check with ``checksum='auto'`` hashes only files that changed since.

Where a model's directory is (``model_path``, the one layout rule), paths kept inside a directory and the files
written there without following links are in ``_hf_paths`` (private); their names are imported from here.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import re

from ansible_collections.gpufleet.llm_stack.plugins.module_utils._fs import free_bytes  # noqa: F401 pylint: disable=unused-import
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._hf_paths import (  # noqa: F401 pylint: disable=unused-import
    CHUNK, CURRENT_LINK, FILE_MODE, PathError, _copy_new, _link_or_copy, _makedirs_inside, _read_text_nofollow, _remove,
    check_relpath, create_file, model_path, safe_join)

MANIFEST_NAME = ".llm_stack_manifest.json"
MANIFEST_TMP_NAME = MANIFEST_NAME + ".tmp"
# Names at the top of a model directory that belong to this collection, not
# to the repository: a repository file of that name is never fetched or checked.
RESERVED_PATHS = (MANIFEST_NAME, MANIFEST_TMP_NAME)
MANIFEST_FORMAT = 1
HF_DOWNLOAD_DIR = os.path.join(".cache", "huggingface", "download")
# Files at most this large are always hashed (config, tokenizer, index...).
SMALL_FILE = 16 * 1024 * 1024
INCOMPLETE_RE = re.compile(r"[^.]+\.(?P<etag>[^.]+)\.incomplete", re.ASCII)
COMMIT_RE = re.compile(r"[0-9a-f]{40}", re.ASCII)


def is_commit(value):
    """True when value is exactly a 40-hex commit SHA (lower case, ASCII, nothing around it)."""
    return isinstance(value, str) and COMMIT_RE.fullmatch(value) is not None


def etag_of(entry):
    """The etag the hf client uses for a file: LFS sha256, else git blob id."""
    return entry.get("sha256") or entry.get("blob_id")


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def git_blob_sha1(path):
    size = os.path.getsize(path)
    digest = hashlib.sha1()
    digest.update(b"blob %d\0" % size)
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def stat_key(path):
    st = os.stat(path)
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def metadata_path(root, relpath):
    """The hf client's metadata file of relpath, checked to lie inside root."""
    check_relpath(relpath)
    return safe_join(root, HF_DOWNLOAD_DIR + "/" + relpath + ".metadata")


def read_manifest(root):
    """The manifest of a model directory, or None when absent, unreadable or a symbolic link."""
    text = _read_text_nofollow(os.path.join(root, MANIFEST_NAME))
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
        return None
    return data


def manifest_entries(manifest):
    if not manifest or not isinstance(manifest.get("files"), list):
        return {}
    return dict((item["path"], item) for item in manifest["files"]
                if isinstance(item, dict) and isinstance(item.get("path"), str))


def same_content(expected, recorded):
    """True when a manifest entry describes the same content as an expected file."""
    if not recorded or recorded.get("size") != expected["size"]:
        return False
    if expected.get("sha256"):
        return recorded.get("sha256") == expected["sha256"]
    return bool(expected.get("blob_id")) and recorded.get("blob_id") == expected["blob_id"]


def check_file(root, entry, recorded=None, checksum="auto"):
    """Check one file. Returns (status, stat_key or None).

    status is 'ok', 'missing', 'size' (wrong size) or 'checksum' (wrong content).
    """
    path = safe_join(root, entry["path"])
    if not os.path.isfile(path):
        return "missing", None
    key = stat_key(path)
    if key[0] != entry["size"]:
        return "size", key
    if checksum == "never":
        return "ok", key
    small = entry["size"] <= SMALL_FILE
    if (checksum == "auto" and not small and same_content(entry, recorded)
            and recorded.get("stat") == key):
        return "ok", key
    if entry.get("sha256"):
        if sha256_file(path) != entry["sha256"]:
            return "checksum", key
    elif entry.get("blob_id") and (small or checksum == "always"):
        if git_blob_sha1(path) != entry["blob_id"]:
            return "checksum", key
    return "ok", key


def list_incomplete(root):
    """Every .incomplete file under the hf download metadata of root (relative paths).

    The download directory must resolve inside root (PathError otherwise);
    the walk follows no symbolic link, and only plain files are listed.
    """
    if not os.path.lexists(os.path.join(root, HF_DOWNLOAD_DIR)):
        return []
    base = safe_join(root, HF_DOWNLOAD_DIR)
    found = []
    if not os.path.isdir(base):
        return found
    for dirpath, _dirnames, filenames in os.walk(base):
        for name in filenames:
            path = os.path.join(dirpath, name)
            if name.endswith(".incomplete") and not os.path.islink(path):
                found.append(os.path.relpath(path, root))
    found.sort()
    return found


def classify_incomplete(root, files, needed_paths):
    """Split partial downloads into (resumable, stale).

    Resumable: its etag is the etag of a file still needed and it is not
    larger than that file. Everything else is stale.
    """
    wanted = {}
    for entry in files:
        if entry["path"] in needed_paths and etag_of(entry):
            wanted[etag_of(entry)] = entry["size"]
    resumable, stale = [], []
    for rel in list_incomplete(root):
        match = INCOMPLETE_RE.fullmatch(os.path.basename(rel))
        etag = match.group("etag") if match else None
        try:
            size = os.path.getsize(os.path.join(root, rel))
        except OSError:
            continue
        if etag in wanted and size <= wanted[etag]:
            resumable.append(rel)
        else:
            stale.append(rel)
    return resumable, stale


def read_json(path):
    try:
        with open(path, "rb") as handle:
            return json.loads(handle.read()), None
    except (IOError, OSError) as exc:
        return None, "cannot read %s: %s" % (os.path.basename(path), exc.strerror or exc)
    except (ValueError, RecursionError) as exc:
        return None, "%s is not valid JSON: %s" % (os.path.basename(path), exc)


def check_indexes(root, files, present_ok):
    """Problems with *.safetensors.index.json files: shards referenced must be listed and present."""
    problems = []
    listed = set(entry["path"] for entry in files)
    for entry in files:
        if not entry["path"].endswith(".safetensors.index.json") or entry["path"] not in present_ok:
            continue
        data, error = read_json(safe_join(root, entry["path"]))
        if error:
            problems.append(error)
            continue
        weight_map = data.get("weight_map") if isinstance(data, dict) else None
        if not isinstance(weight_map, dict) or not weight_map:
            problems.append("%s has no weight_map" % entry["path"])
            continue
        base = os.path.dirname(entry["path"])
        names = set(weight_map.values())
        if not all(isinstance(name, str) and name for name in names):
            problems.append("%s has a weight_map entry that is not a file name" % entry["path"])
            continue
        for shard in sorted(names):
            shard_path = "/".join(filter(None, [base, shard]))
            if shard_path not in listed:
                problems.append(
                    "%s references %s, which is not among the files fetched (the repository lacks it at this "
                    "revision, or the include/exclude patterns left it out)" % (entry["path"], shard_path))
            elif shard_path not in present_ok:
                problems.append("%s references %s, which is not present and intact" % (entry["path"], shard_path))
    return problems


def check_model_type(root, files, present_ok, expected_types):
    """(model_type or None, problems)."""
    if not expected_types:
        return None, []
    if "config.json" not in set(entry["path"] for entry in files):
        return None, ["config.json is not among the files fetched, so its model_type cannot be checked "
                      "(expected one of %s)" % ", ".join(expected_types)]
    if "config.json" not in present_ok:
        return None, []  # reported as a missing or damaged file already
    data, error = read_json(safe_join(root, "config.json"))
    if error:
        return None, [error]
    model_type = data.get("model_type") if isinstance(data, dict) else None
    if model_type not in expected_types:
        return model_type, ["config.json has model_type %r; this stack expects one of %s" % (
            model_type, ", ".join(expected_types))]
    return model_type, []


def inspect(root, files, checksum="auto", expected_model_types=None, seed_from=None):
    """Compare root with the expected files. Changes nothing.

    Returns a dict with ok, problems, status (path -> status), missing,
    damaged, seedable (paths that seed_from holds with the same content),
    resumable_incomplete, stale_incomplete, bytes_to_fetch, stats.
    """
    previous = read_manifest(root)
    recorded = manifest_entries(previous)
    status, stats = {}, {}
    for entry in files:
        state, key = check_file(root, entry, recorded.get(entry["path"]), checksum)
        status[entry["path"]] = state
        if key is not None:
            stats[entry["path"]] = key
    ok_paths = set(path for path, state in status.items() if state == "ok")
    missing = sorted(path for path, state in status.items() if state == "missing")
    damaged = sorted(path for path, state in status.items() if state in ("size", "checksum"))
    needed = set(missing) | set(damaged)

    seedable = []
    if seed_from and os.path.isdir(seed_from) and os.path.realpath(seed_from) != os.path.realpath(root):
        seed_entries = manifest_entries(read_manifest(seed_from))
        for entry in files:
            if entry["path"] not in needed:
                continue
            recorded_seed = seed_entries.get(entry["path"])
            try:
                source = safe_join(seed_from, entry["path"])
            except PathError:
                continue  # never reuse what leads outside seed_from; the client fetches it
            if same_content(entry, recorded_seed) and os.path.isfile(source) and \
                    recorded_seed.get("stat") == stat_key(source):
                seedable.append(entry["path"])

    resumable, stale = classify_incomplete(root, files, needed - set(seedable))
    problems = []
    for path in missing:
        problems.append("%s is missing" % path)
    sizes = dict((entry["path"], entry["size"]) for entry in files)
    for path in damaged:
        if status[path] == "size":
            problems.append("%s has %d bytes, the hub lists %d" % (path, stats[path][0], sizes[path]))
        else:
            problems.append("%s does not match the hub's checksum" % path)
    problems.extend(check_indexes(root, files, ok_paths))
    model_type, type_problems = check_model_type(root, files, ok_paths, expected_model_types)
    problems.extend(type_problems)

    to_fetch = set(needed) - set(seedable)
    return {
        "ok": not problems,
        "problems": problems,
        "status": status,
        "missing": missing,
        "damaged": damaged,
        "seedable": sorted(seedable),
        "resumable_incomplete": resumable,
        "stale_incomplete": stale,
        "bytes_to_fetch": sum(sizes[path] for path in to_fetch),
        "model_type": model_type,
        "stats": stats,
        "previous_manifest": previous,
    }


def prepare(root, files, report, seed_from=None):
    """Act on an inspect() report: seed, drop damaged files, drop stale partials.

    - Files that seed_from holds with the same content are hard-linked (copied
      across filesystems) into root together with the hf client's metadata for
      them, so the client sees them as already downloaded.
    - Damaged files and their hf metadata are removed, so the client fetches
      them again.
    - Stale .incomplete files are removed; resumable ones are kept.

    Every path is checked with safe_join (PathError when it leaves root or
    seed_from), before anything is changed; a symbolic link in the way is
    removed itself, never followed.
    Returns the list of actions taken (strings).
    """
    seeds = [(path, safe_join(seed_from, path), safe_join(root, path),
              metadata_path(seed_from, path), metadata_path(root, path)) for path in report["seedable"]]
    damaged = [(path, safe_join(root, path), metadata_path(root, path))
               for path in report["damaged"] if path not in report["seedable"]]
    download_prefix = HF_DOWNLOAD_DIR + "/"
    stale = []
    for rel in report["stale_incomplete"]:
        if not (isinstance(rel, str) and rel.startswith(download_prefix) and rel.endswith(".incomplete")):
            raise PathError("%r is not a partial download of the hf client" % (rel,))
        stale.append((rel, safe_join(root, rel)))

    actions = []
    if not os.path.isdir(root):
        os.makedirs(root)
        actions.append("created %s" % root)
    for path, source, dest, source_meta, dest_meta in seeds:
        _link_or_copy(root, source, dest)
        if os.path.isfile(source_meta):
            _makedirs_inside(root, os.path.dirname(dest_meta))
            _remove(dest_meta)
            _copy_new(source_meta, dest_meta)
        actions.append("reused %s from %s" % (path, seed_from))
    for path, target, meta in damaged:
        _remove(target)
        _remove(meta)
        actions.append("removed damaged %s" % path)
    for rel, target in stale:
        if _remove(target):
            actions.append("removed stale partial download %s" % rel)
    return actions


def build_manifest(repo_id, revision, commit, files, stats, model_type=None):
    entries = []
    for entry in sorted(files, key=lambda item: item["path"]):
        item = {"path": entry["path"], "size": entry["size"]}
        if entry.get("sha256"):
            item["sha256"] = entry["sha256"]
        if entry.get("blob_id"):
            item["blob_id"] = entry["blob_id"]
        if entry["path"] in stats:
            item["stat"] = stats[entry["path"]]
        entries.append(item)
    return {
        "format": MANIFEST_FORMAT,
        "repo_id": repo_id,
        "revision": revision,
        "commit": commit,
        "model_type": model_type,
        "file_count": len(entries),
        "total_size": sum(item["size"] for item in entries),
        "files": entries,
    }


def manifest_text(manifest):
    return json.dumps(manifest, indent=2, sort_keys=True) + "\n"


def write_manifest(root, manifest):
    """Write the manifest atomically; True when the file changed.

    The temporary file is created new (O_EXCL|O_NOFOLLOW, mode 0644 set on it),
    after removing whatever was at its name (a link is removed, not followed);
    the rename then replaces the manifest's name itself, even if a link was there.
    """
    path = os.path.join(root, MANIFEST_NAME)
    text = manifest_text(manifest)
    if not os.path.islink(path) and _read_text_nofollow(path) == text:
        return False
    tmp = os.path.join(root, MANIFEST_TMP_NAME)
    _remove(tmp)
    create_file(tmp, text.encode("utf-8"))
    try:
        os.rename(tmp, path)
    except OSError:
        _remove(tmp)
        raise
    return True


def link_target_name(base, link_name):
    """Name of the revision directory under base that the link base/link_name points to, or None."""
    link = os.path.join(base, link_name)
    if not os.path.islink(link):
        return None
    try:
        target = os.readlink(link)
    except OSError:
        return None
    lexical = os.path.normpath(os.path.join(base, target))
    if os.path.dirname(lexical) == os.path.normpath(base):
        return os.path.basename(lexical)
    real = os.path.realpath(link)
    if os.path.dirname(real) == os.path.realpath(base):
        return os.path.basename(real)
    return None


def protected_revisions(base, current_commit, link_name="current"):
    """The revisions prune never removes: the current commit and the one the link points to."""
    if not is_commit(current_commit):
        raise ValueError("%r is not a 40-hex commit SHA" % (current_commit,))
    protected = set([current_commit])
    target = link_target_name(base, link_name)
    if target:
        protected.add(target)
    return sorted(protected)


def revisions_to_prune(base, keep, current_commit, link_name="current"):
    """Revision directories under base to remove, keeping the protected ones and the newest others.

    A revision directory is a directory (not a link) named by exactly a 40-hex
    commit. The current commit and the revision the link points to are never
    removed. Complete ones (with a manifest) are kept newest first (manifest
    time) up to keep in total, counting the current one; incomplete ones go.
    Raises ValueError when current_commit is not exactly a 40-hex SHA.
    """
    protected = protected_revisions(base, current_commit, link_name)
    if not os.path.isdir(base):
        return []
    complete, incomplete = [], []
    for name in os.listdir(base):
        path = os.path.join(base, name)
        if name == link_name or name in protected or not is_commit(name):
            continue
        if os.path.islink(path) or not os.path.isdir(path):
            continue
        manifest = os.path.join(path, MANIFEST_NAME)
        if os.path.isfile(manifest):
            complete.append((os.stat(manifest).st_mtime, name))
        else:
            incomplete.append(name)
    complete.sort(reverse=True)
    keep_others = max(keep - 1, 0)
    prune = [name for _mtime, name in complete[keep_others:]] + incomplete
    return sorted(prune)
