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
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import hashlib
import json
import os
import re
import shutil

MANIFEST_NAME = ".llm_stack_manifest.json"
MANIFEST_FORMAT = 1
HF_DOWNLOAD_DIR = os.path.join(".cache", "huggingface", "download")
# Files at most this large are always hashed (config, tokenizer, index...).
SMALL_FILE = 16 * 1024 * 1024
CHUNK = 4 * 1024 * 1024
INCOMPLETE_RE = re.compile(r"^[^.]+\.(?P<etag>[^.]+)\.incomplete$")
COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")


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


def safe_join(root, relpath):
    """root/relpath, refusing paths that leave root."""
    if relpath.startswith("/") or relpath.startswith("\\"):
        raise ValueError("absolute path in repository listing: %s" % relpath)
    joined = os.path.normpath(os.path.join(root, relpath))
    if joined != root and not joined.startswith(root.rstrip(os.sep) + os.sep):
        raise ValueError("path leaves the model directory: %s" % relpath)
    return joined


def metadata_path(root, relpath):
    return safe_join(os.path.join(root, HF_DOWNLOAD_DIR), relpath + ".metadata")


def read_manifest(root):
    """The manifest of a model directory, or None when absent or unreadable."""
    path = os.path.join(root, MANIFEST_NAME)
    try:
        with open(path, "r") as handle:
            data = json.load(handle)
    except (IOError, OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
        return None
    return data


def manifest_entries(manifest):
    if not manifest:
        return {}
    return dict((item["path"], item) for item in manifest.get("files", []) if isinstance(item, dict) and "path" in item)


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
    """Every .incomplete file under the hf download metadata of root (relative paths)."""
    base = os.path.join(root, HF_DOWNLOAD_DIR)
    found = []
    if not os.path.isdir(base):
        return found
    for dirpath, _dirnames, filenames in os.walk(base):
        for name in filenames:
            if name.endswith(".incomplete"):
                found.append(os.path.relpath(os.path.join(dirpath, name), root))
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
        match = INCOMPLETE_RE.match(os.path.basename(rel))
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


def free_bytes(path):
    """Free bytes for an unprivileged writer on the filesystem that holds path (or its nearest existing parent)."""
    probe = os.path.abspath(path)
    while not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    st = os.statvfs(probe)
    return st.f_bavail * st.f_frsize


def read_json(path):
    try:
        with open(path, "r") as handle:
            return json.load(handle), None
    except (IOError, OSError) as exc:
        return None, "cannot read %s: %s" % (os.path.basename(path), exc.strerror or exc)
    except ValueError as exc:
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
        for shard in sorted(set(weight_map.values())):
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
            source = safe_join(seed_from, entry["path"])
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


def _remove(path):
    try:
        os.unlink(path)
        return True
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return False
        raise


def _link_or_copy(source, dest):
    parent = os.path.dirname(dest)
    if not os.path.isdir(parent):
        os.makedirs(parent)
    _remove(dest)
    try:
        os.link(source, dest)
    except OSError:
        shutil.copy2(source, dest)


def prepare(root, files, report, seed_from=None):
    """Act on an inspect() report: seed, drop damaged files, drop stale partials.

    - Files that seed_from holds with the same content are hard-linked (copied
      across filesystems) into root together with the hf client's metadata for
      them, so the client sees them as already downloaded.
    - Damaged files and their hf metadata are removed, so the client fetches
      them again.
    - Stale .incomplete files are removed; resumable ones are kept.
    Returns the list of actions taken (strings).
    """
    actions = []
    if not os.path.isdir(root):
        os.makedirs(root)
        actions.append("created %s" % root)
    for path in report["seedable"]:
        _link_or_copy(safe_join(seed_from, path), safe_join(root, path))
        source_meta = metadata_path(seed_from, path)
        if os.path.isfile(source_meta):
            dest_meta = metadata_path(root, path)
            if not os.path.isdir(os.path.dirname(dest_meta)):
                os.makedirs(os.path.dirname(dest_meta))
            shutil.copyfile(source_meta, dest_meta)
        actions.append("reused %s from %s" % (path, seed_from))
    for path in report["damaged"]:
        if path in report["seedable"]:
            continue
        _remove(safe_join(root, path))
        _remove(metadata_path(root, path))
        actions.append("removed damaged %s" % path)
    for rel in report["stale_incomplete"]:
        if _remove(os.path.join(root, rel)):
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
    """Write the manifest atomically; True when the file changed."""
    path = os.path.join(root, MANIFEST_NAME)
    text = manifest_text(manifest)
    try:
        with open(path, "r") as handle:
            if handle.read() == text:
                return False
    except (IOError, OSError):
        pass
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        handle.write(text)
    os.chmod(tmp, 0o644)
    os.rename(tmp, path)
    return True


def revisions_to_prune(base, keep, current_commit, link_name="current"):
    """Revision directories under base to remove, keeping current and the newest others.

    A revision directory is a 40-hex commit name. Complete ones (with a
    manifest) are kept newest first (manifest time) up to keep in total,
    counting the current one; incomplete ones other than current go.
    """
    if not os.path.isdir(base):
        return []
    complete, incomplete = [], []
    for name in os.listdir(base):
        path = os.path.join(base, name)
        if name == link_name or name == current_commit or not COMMIT_RE.match(name):
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
