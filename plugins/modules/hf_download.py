#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: hf_download
short_description: Run C(hf download) into a local directory, with the token kept out of command lines and logs
version_added: "0.1.0"
description:
  - Runs the C(hf) command line client of huggingface_hub (1.0 or newer; C(huggingface-cli) no longer
    downloads there) as C(hf download REPO --revision R --local-dir D --max-workers N [--include G]... [--exclude G]...),
    appending its output to a log file on the host.
  - The token reaches the client only through its C(HF_TOKEN) environment variable, set for that process
    alone; it is on no command line (Ansible's C(environment) keyword would put it on the remote shell's
    command line) and in no file. Without a token, C(HF_TOKEN) is emptied and the client's stored login is
    not used.
  - The client skips files its metadata marks as downloaded at that commit; huggingface_hub up to 1.16 also
    resumes C(<hash>.<etag>.incomplete) partial files with HTTP Range requests (later releases restart them).
    Reports C(changed) only when a file under the directory changed.
  - On failure, the module fails with the last lines of the log.
  - Meant to run with C(async) for large models.
author:
  - gpufleet maintainers (@gpufleet)
options:
  hf:
    description: Path of the C(hf) executable (in the stack's virtualenv).
    type: path
    required: true
  repo_id:
    description: Model repository id, C(ORG/NAME).
    type: str
    required: true
  revision:
    description: Revision to fetch; pass the commit SHA resolved once for the fleet so that every host gets the same files.
    type: str
    required: true
  local_dir:
    description: Directory to download into.
    type: path
    required: true
  include:
    description: Glob patterns of files to fetch (C(--include)).
    type: list
    elements: str
    default: []
  exclude:
    description: Glob patterns of files to leave out (C(--exclude)).
    type: list
    elements: str
    default: []
  max_workers:
    description: Parallel file downloads (C(--max-workers)).
    type: int
    default: 8
  endpoint:
    description: Hub or mirror URL, given to the client as C(HF_ENDPOINT).
    type: str
    default: https://huggingface.co
  token:
    description: Access token for private or gated repositories, given to the client as C(HF_TOKEN) only.
    type: str
  log_path:
    description: Log file the client's output is appended to (created with mode 0640).
    type: path
    required: true
  log_tail_lines:
    description: Lines of the log shown when the download fails.
    type: int
    default: 40
  environment:
    description: Extra environment variables for the client (for instance C(HF_HUB_DOWNLOAD_TIMEOUT)).
    type: dict
    default: {}
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.changes
"""

EXAMPLES = r"""
- name: Download Qwen/Qwen3.5-9B at a pinned commit through the fleet mirror
  gpufleet.llm_stack.hf_download:
    hf: /opt/llm-stack/venv/bin/hf
    repo_id: Qwen/Qwen3.5-9B
    revision: c202236235762e1c871ad0ccb60c8ee5ba337b9a
    local_dir: /opt/llm-stack/models/Qwen/Qwen3.5-9B/c202236235762e1c871ad0ccb60c8ee5ba337b9a
    endpoint: http://cache-01.example.internal:8090
    token: "{{ vault_hf_token }}"
    log_path: /var/log/llm-stack/qwen_model_fetch-Qwen--Qwen3.5-9B.log
  async: 14400
  poll: 15
"""

RETURN = r"""
cmd:
  description: The command that ran (it holds no secret).
  returned: always
  type: list
  elements: str
rc:
  description: Exit status of the client.
  returned: when it ran
  type: int
log_path:
  description: The log file.
  returned: always
  type: str
log_tail:
  description: Last lines of the log, on failure.
  returned: failure
  type: list
  elements: str
changed_files:
  description: Files (relative to O(local_dir)) that appeared or changed.
  returned: when it ran
  type: list
  elements: str
"""

import datetime
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.llm_stack.plugins.module_utils.hf_hub import display_endpoint

# Files of the client's own bookkeeping, not of the model.
BOOKKEEPING = os.path.join(".cache", "huggingface")


def snapshot(root):
    """{relative path: (size, mtime_ns, inode)} of the files under root, bookkeeping excluded."""
    found = {}
    if not os.path.isdir(root):
        return found
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir == ".cache" or rel_dir.startswith(BOOKKEEPING) or rel_dir.startswith(".cache" + os.sep):
            dirnames[:] = []
            continue
        if rel_dir == ".":
            dirnames[:] = [d for d in dirnames if d != ".cache"]
        for name in filenames:
            path = os.path.join(dirpath, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            found[os.path.normpath(os.path.join(rel_dir, name))] = (st.st_size, st.st_mtime_ns, st.st_ino)
    return found


def build_command(params):
    argv = [
        params["hf"], "download", params["repo_id"],
        "--revision", params["revision"],
        "--local-dir", params["local_dir"],
        "--max-workers", str(params["max_workers"]),
    ]
    for pattern in params["include"]:
        argv.extend(["--include", pattern])
    for pattern in params["exclude"]:
        argv.extend(["--exclude", pattern])
    return argv


def client_environment(params):
    env = dict((str(k), str(v)) for k, v in params["environment"].items())
    env.update({
        "HF_ENDPOINT": params["endpoint"].rstrip("/"),
        # No version check against the package index, no telemetry, and no
        # progress bars in the log.
        "HF_HUB_DISABLE_UPDATE_CHECK": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "HF_HUB_OFFLINE": "0",
        "NO_COLOR": "1",
    })
    if params["token"]:
        env["HF_TOKEN"] = params["token"]
        env["HF_HUB_DISABLE_IMPLICIT_TOKEN"] = "0"
    else:
        # Neither a token from the environment of the connection nor a
        # stored login: the role decides which token is used.
        env["HF_TOKEN"] = ""
        env["HF_HUB_DISABLE_IMPLICIT_TOKEN"] = "1"
    return env


def tail(path, lines):
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(size - 64 * 1024, 0))
            text = handle.read().decode("utf-8", "replace")
    except (IOError, OSError):
        return []
    return text.splitlines()[-lines:]


def main():
    module = AnsibleModule(
        argument_spec=dict(
            hf=dict(type="path", required=True),
            repo_id=dict(type="str", required=True),
            revision=dict(type="str", required=True),
            local_dir=dict(type="path", required=True),
            include=dict(type="list", elements="str", default=[]),
            exclude=dict(type="list", elements="str", default=[]),
            max_workers=dict(type="int", default=8),
            endpoint=dict(type="str", default="https://huggingface.co"),
            token=dict(type="str", no_log=True),
            log_path=dict(type="path", required=True),
            log_tail_lines=dict(type="int", default=40),
            environment=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    params = module.params
    argv = build_command(params)
    result = dict(cmd=argv, log_path=params["log_path"])
    if params["max_workers"] < 1:
        module.fail_json(msg="max_workers must be 1 or more, got %d" % params["max_workers"], **result)
    if module.check_mode:
        # The client may not be installed yet in check mode (its install was only reported).
        module.exit_json(changed=True, **result)
    if not os.access(params["hf"], os.X_OK):
        module.fail_json(msg="%s is not an executable hf client (huggingface_hub >= 1.0)" % params["hf"], **result)

    log_dir = os.path.dirname(params["log_path"])
    if log_dir and not os.path.isdir(log_dir):
        os.makedirs(log_dir, 0o750)
    fd = os.open(params["log_path"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640)
    with os.fdopen(fd, "a") as log:
        log.write("=== %s %s (HF_ENDPOINT=%s)\n" % (
            datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"), " ".join(argv), display_endpoint(params["endpoint"])))

    before = snapshot(params["local_dir"])
    env = client_environment(params)
    env["LLM_STACK_HF_LOG"] = params["log_path"]
    # sh only redirects the output; the client's arguments hold no secret.
    rc, _out, _err = module.run_command(
        ["/bin/sh", "-c", 'exec "$@" >>"$LLM_STACK_HF_LOG" 2>&1', "hf-download"] + argv,
        environ_update=env,
    )
    after = snapshot(params["local_dir"])
    changed_files = sorted(path for path in after if before.get(path) != after[path])
    with open(params["log_path"], "a") as log:
        log.write("=== exit status %d, %d file(s) changed\n" % (rc, len(changed_files)))
    result.update(rc=rc, changed_files=changed_files)
    if rc != 0:
        lines = tail(params["log_path"], params["log_tail_lines"])
        module.fail_json(
            msg="hf download of %s at %s from %s failed (exit status %d). Last lines of %s:\n%s" % (
                params["repo_id"], params["revision"], display_endpoint(params["endpoint"]), rc, params["log_path"],
                "\n".join(lines)),
            changed=bool(changed_files), log_tail=lines, **result)
    module.exit_json(changed=bool(changed_files), **result)


if __name__ == "__main__":
    main()
