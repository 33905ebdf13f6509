#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: hf_model_verify
short_description: Check a local model directory against the hub's file list, repair it, record a manifest
version_added: "0.1.0"
description:
  - Compares a directory filled by C(hf download --local-dir) with the files the hub lists at a commit
    (the C(files) returned by M(gpufleet.llm_stack.hf_model_info)) - presence, size, the sha256 of Git LFS
    files and the git blob id of small files - checks that every C(*.safetensors.index.json) references
    only shards that are listed and present, and that C(config.json)'s C(model_type) is one the stack expects.
  - With all actions off it only reads, and reports how many bytes a download still has to bring and
    how much space is free.
  - O(seed) hard-links files that the O(seed_from) directory (another revision of the same model) holds
    with the same content, together with the C(hf) client's metadata for them, so a revision change only
    transfers what changed. O(remove_damaged) deletes files of the wrong size or content (and their client
    metadata) so the client fetches them again. O(clean_incomplete) deletes stale C(.incomplete) partial
    downloads, keeping those the client can resume.
  - O(write_manifest) writes a manifest (repo, revision, commit, files, sizes, digests) next to the files
    when, and only when, everything checks out. With an unchanged manifest and O(checksum=auto), large files
    whose size, mtime and inode are those recorded are not hashed again.
  - Every path is resolved (C(realpath)) before use; a file or directory that leads outside O(path) (or
    O(seed_from)) through a symbolic link makes the module fail before any change, naming the link.
    Deleting removes a symbolic link itself, never what it points to; new files (the manifest's temporary
    file, copies) are created with C(O_EXCL|O_NOFOLLOW), and the mode 0644 is set only on files created here.
  - >-
    A file named C(.llm_stack_manifest.json) or C(.llm_stack_manifest.json.tmp) at the top of O(files) is left
    out with a warning: those names belong to the manifest.
author:
  - gpufleet maintainers (@gpufleet)
options:
  path:
    description: The model directory (the C(--local-dir) of C(hf download)).
    type: path
    required: true
  repo_id:
    description: Model repository id, C(ORG/NAME), recorded in the manifest.
    type: str
    required: true
  revision:
    description: The revision asked for (branch, tag or SHA), recorded in the manifest.
    type: str
    required: true
  commit:
    description: The commit SHA the files belong to (exactly 40 lower-case hex digits, surrounding whitespace stripped).
    type: str
    required: true
  files:
    description:
      - The expected files, as returned by M(gpufleet.llm_stack.hf_model_info) in C(files).
      - Each item needs C(path) (relative, without C(..)) and C(size) (an integer, 0 or more); C(sha256)
        (64 hex digits) and C(blob_id) (40 hex digits) are optional.
    type: list
    elements: dict
    required: true
  checksum:
    description:
      - V(auto) hashes small files always, and large files unless the manifest recorded them with the same
        size, mtime and inode. V(always) hashes every file. V(never) checks sizes only.
    type: str
    choices: [auto, always, never]
    default: auto
  expected_model_types:
    description: Values of C(model_type) in C(config.json) that pass. Empty skips the check.
    type: list
    elements: str
    default: []
  seed_from:
    description: Another revision directory of the same model to reuse unchanged files from.
    type: path
  seed:
    description: Hard-link reusable files from O(seed_from).
    type: bool
    default: false
  remove_damaged:
    description: Delete files of the wrong size or content, and their client metadata.
    type: bool
    default: false
  clean_incomplete:
    description: Delete stale C(.incomplete) partial downloads (those no needed file can resume from).
    type: bool
    default: false
  write_manifest:
    description: Write the manifest when every check passes.
    type: bool
    default: false
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.changes
"""

EXAMPLES = r"""
- name: Check the model directory (changes nothing)
  gpufleet.llm_stack.hf_model_verify:
    path: /opt/llm-stack/models/Qwen/Qwen3.5-9B/{{ model.commit }}
    repo_id: "{{ model.repo_id }}"
    revision: "{{ model.revision }}"
    commit: "{{ model.commit }}"
    files: "{{ model.files }}"
    expected_model_types: [qwen3_5, qwen3_5_moe]
  register: state

- name: Record the manifest once the download is complete
  gpufleet.llm_stack.hf_model_verify:
    path: /opt/llm-stack/models/Qwen/Qwen3.5-9B/{{ model.commit }}
    repo_id: "{{ model.repo_id }}"
    revision: "{{ model.revision }}"
    commit: "{{ model.commit }}"
    files: "{{ model.files }}"
    expected_model_types: [qwen3_5, qwen3_5_moe]
    clean_incomplete: true
    write_manifest: true
"""

RETURN = r"""
ok:
  description: Every file is present and intact, the indexes and the model type check out.
  returned: always
  type: bool
problems:
  description: What is wrong, one line each.
  returned: always
  type: list
  elements: str
  sample: ["model-00003-of-00004.safetensors has 1048576 bytes, the hub lists 4932054528"]
missing:
  description: Expected files that are absent.
  returned: always
  type: list
  elements: str
damaged:
  description: Files of the wrong size or content.
  returned: always
  type: list
  elements: str
seedable:
  description: Needed files that O(seed_from) holds with the same content.
  returned: always
  type: list
  elements: str
resumable_incomplete:
  description: Partial downloads the client can resume.
  returned: always
  type: list
  elements: str
stale_incomplete:
  description: Partial downloads no needed file can use (before any clean-up).
  returned: always
  type: list
  elements: str
bytes_to_fetch:
  description: Bytes still to download (missing and damaged files that cannot be reused).
  returned: always
  type: int
free_bytes:
  description: Free bytes on the filesystem that holds O(path) (or its nearest existing parent).
  returned: always
  type: int
total_size:
  description: Bytes of the expected files.
  returned: always
  type: int
model_type:
  description: C(model_type) of C(config.json), when checked.
  returned: always
  type: str
actions:
  description: What was done (or would be done in check mode).
  returned: always
  type: list
  elements: str
manifest_path:
  description: Where the manifest is.
  returned: always
  type: str
manifest:
  description: The manifest as written (or as it would be written), when every check passes.
  returned: when ok
  type: dict
"""

import os
import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import hf_hub, hf_local
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import mask_credentials

_HEX40 = re.compile(r"[0-9a-f]{40}", re.ASCII)
_HEX64 = re.compile(r"[0-9a-f]{64}", re.ASCII)


class InputError(ValueError):
    """Bad module input; the message names the option."""


def _shown(value):
    text = mask_credentials(repr(value))
    return text if len(text) <= 200 else text[:197] + "..."


def normalize_files(files):
    """(normalized entries, reserved paths left out); InputError naming the item otherwise."""
    normalized, reserved, seen = [], [], set()
    for index, item in enumerate(files):
        where = "files: item %d (%s)" % (index, _shown(item))
        if not isinstance(item, dict):
            raise InputError("%s is not a dict with path and size" % where)
        path, size = item.get("path"), item.get("size")
        try:
            hf_local.check_relpath(path)
        except hf_local.PathError as exc:
            raise InputError("%s needs a relative path inside the model directory: %s" % (where, exc))
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise InputError("%s needs a size in bytes (an integer, 0 or more)" % where)
        sha256 = item.get("sha256") or None
        blob_id = item.get("blob_id") or None
        if sha256 is not None and not (isinstance(sha256, str) and _HEX64.fullmatch(sha256)):
            raise InputError("%s has a sha256 that is not 64 lower-case hex digits" % where)
        if blob_id is not None and not (isinstance(blob_id, str) and _HEX40.fullmatch(blob_id)):
            raise InputError("%s has a blob_id that is not 40 lower-case hex digits" % where)
        if path in hf_local.RESERVED_PATHS:
            reserved.append(path)
            continue
        if path in seen:
            raise InputError("%s lists %s a second time" % (where, _shown(path)))
        seen.add(path)
        normalized.append({"path": path, "size": size, "blob_id": blob_id, "sha256": sha256})
    return normalized, reserved


def check_input(params):
    """(repo_id, revision, commit, files, reserved) normalized; InputError naming the option otherwise."""
    for option in ("path", "seed_from"):
        if params[option] is not None and "\x00" in params[option]:
            raise InputError("%s: %s is not a usable path (it holds a NUL byte)" % (option, _shown(params[option])))
    try:
        repo_id = hf_hub.normalize_repo_id(params["repo_id"])
        revision = hf_hub.normalize_revision(params["revision"])
        commit = hf_hub.normalize_commit(params["commit"])
    except hf_hub.HubError as exc:
        raise InputError(exc.message)
    files, reserved = normalize_files(params["files"])
    if not files:
        raise InputError("files: is empty, nothing to check for %s" % repo_id)
    return repo_id, revision, commit, files, reserved


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            repo_id=dict(type="str", required=True),
            revision=dict(type="str", required=True),
            commit=dict(type="str", required=True),
            files=dict(type="list", elements="dict", required=True),
            checksum=dict(type="str", default="auto", choices=["auto", "always", "never"]),
            expected_model_types=dict(type="list", elements="str", default=[]),
            seed_from=dict(type="path"),
            seed=dict(type="bool", default=False),
            remove_damaged=dict(type="bool", default=False),
            clean_incomplete=dict(type="bool", default=False),
            write_manifest=dict(type="bool", default=False),
        ),
        required_if=[("seed", True, ["seed_from"])],
        supports_check_mode=True,
    )
    params = module.params
    try:
        repo_id, revision, commit, files, reserved = check_input(params)
    except InputError as exc:
        module.fail_json(msg=mask_credentials(str(exc)))
    root = os.path.abspath(params["path"])
    seed_from = os.path.abspath(params["seed_from"]) if params["seed_from"] else None
    for path in reserved:
        module.warn("files lists %s, the name of the manifest this module writes; that file is left out "
                    "(neither checked nor kept)." % path)

    try:
        report = hf_local.inspect(
            root, files, checksum=params["checksum"],
            expected_model_types=params["expected_model_types"], seed_from=seed_from)
    except hf_local.PathError as exc:
        module.fail_json(msg="path: %s. Nothing was changed." % mask_credentials(str(exc)))
    except (IOError, OSError) as exc:
        module.fail_json(msg="path: cannot read %s: %s. Nothing was changed." % (
            root, mask_credentials(str(exc.strerror or exc))))

    planned = dict(report)
    planned["seedable"] = report["seedable"] if params["seed"] else []
    planned["damaged"] = report["damaged"] if params["remove_damaged"] else []
    planned["stale_incomplete"] = report["stale_incomplete"] if params["clean_incomplete"] else []

    actions = []
    if planned["seedable"] or planned["damaged"] or planned["stale_incomplete"]:
        if module.check_mode:
            actions = (["would reuse %s" % p for p in planned["seedable"]]
                       + ["would remove damaged %s" % p for p in planned["damaged"]]
                       + ["would remove stale partial download %s" % p for p in planned["stale_incomplete"]])
        else:
            try:
                actions = hf_local.prepare(root, files, planned, seed_from=seed_from)
            except hf_local.PathError as exc:
                module.fail_json(msg="path: %s" % mask_credentials(str(exc)), problems=report["problems"])
            except (IOError, OSError, ValueError) as exc:
                module.fail_json(msg="Could not prepare %s: %s" % (root, mask_credentials(str(exc))),
                                 problems=report["problems"])

    manifest = None
    manifest_changed = False
    if report["ok"]:
        manifest = hf_local.build_manifest(repo_id, revision, commit, files, report["stats"], report["model_type"])
        if params["write_manifest"]:
            if module.check_mode:
                current = report["previous_manifest"]
                manifest_changed = current is None or hf_local.manifest_text(current) != hf_local.manifest_text(manifest)
            else:
                try:
                    manifest_changed = hf_local.write_manifest(root, manifest)
                except (IOError, OSError) as exc:
                    module.fail_json(msg="Could not write the manifest in %s: %s" % (root, mask_credentials(str(exc))),
                                     changed=bool(actions), actions=actions)
            if manifest_changed:
                actions.append("wrote %s" % hf_local.MANIFEST_NAME)

    try:
        free = hf_local.free_bytes(root)
    except (IOError, OSError):
        free = 0
    result = dict(
        changed=bool(actions),
        ok=report["ok"],
        problems=report["problems"],
        missing=report["missing"],
        damaged=report["damaged"],
        seedable=report["seedable"],
        resumable_incomplete=report["resumable_incomplete"],
        stale_incomplete=report["stale_incomplete"],
        bytes_to_fetch=report["bytes_to_fetch"],
        free_bytes=free,
        total_size=sum(entry["size"] for entry in files),
        model_type=report["model_type"],
        actions=actions,
        manifest_path=os.path.join(root, hf_local.MANIFEST_NAME),
    )
    if manifest is not None:
        result["manifest"] = manifest
    module.exit_json(**result)


if __name__ == "__main__":
    main()
