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
  - The client's output is collected and written to the log when it ends, each line with its credentials
    masked (URL passwords, C(Authorization) values, Hugging Face tokens, the O(token), and the values of
    O(environment) variables whose names hold C(TOKEN), C(KEY), C(SECRET), C(PASSWORD), C(PASSWD), C(AUTH) or
    C(CREDENTIAL), switches such as C(0) or C(true) and values under 4 characters aside); so are the result and
    every message.
  - O(repo_id), O(revision), O(include), O(exclude), O(local_dir) and O(endpoint) are checked before anything
    runs, so that no value can be read by the client as an option (such as C(--help)).
  - >-
    The files C(.llm_stack_manifest.json) and C(.llm_stack_manifest.json.tmp) at the top of the repository are
    always excluded: the names belong to the manifest of M(gpufleet.llm_stack.hf_model_verify).
  - On failure, the module fails with the last lines of the log. The client is stopped, with every process it
    started, after O(timeout) seconds.
  - Meant to run with C(async) for large models.
author:
  - gpufleet maintainers (@gpufleet)
options:
  hf:
    description: Path of the C(hf) executable (in the stack's virtualenv).
    type: path
    required: true
  repo_id:
    description: Model repository id, C(ORG/NAME) (the hub's rule, surrounding whitespace stripped).
    type: str
    required: true
  revision:
    description: Revision to fetch; pass the commit SHA resolved once for the fleet so that every host gets the same files.
    type: str
    required: true
  local_dir:
    description: Directory to download into (an absolute path).
    type: path
    required: true
  include:
    description: Glob patterns of files to fetch (C(--include)); none may start with C(-).
    type: list
    elements: str
    default: []
  exclude:
    description: Glob patterns of files to leave out (C(--exclude)); none may start with C(-).
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
  timeout:
    description:
      - Seconds the client may run; then it is stopped (with every process it started), the files fetched so
        far are kept for the next run, and the module fails saying so.
      - Keep it below the task's C(async) limit, so that the module reports the timeout itself.
    type: int
    default: 21000
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
  description: Exit status of the client; null when it was stopped by O(timeout).
  returned: when it ran
  type: int
timed_out:
  description: Whether the client was stopped because it ran longer than O(timeout).
  returned: when it ran
  type: bool
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

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import hf_hub
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.hf_download import (
    InputError, build_command, check_input, client_environment, secrets_of)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.proc import run
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import mask_credentials

# Files of the client's own bookkeeping, not of the model.
BOOKKEEPING = os.path.join(".cache", "huggingface")
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


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


def append_log(path, lines, secrets):
    """Append lines to the log, each masked; the log is never opened through a symbolic link."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _O_NOFOLLOW | _O_CLOEXEC, 0o640)
    with os.fdopen(fd, "a") as log:
        for line in lines:
            log.write(mask_credentials(line, secrets) + "\n")


def tail(path, lines, secrets=()):
    if lines <= 0:
        return []
    try:
        fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC)
        with os.fdopen(fd, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(size - 64 * 1024, 0))
            text = handle.read().decode("utf-8", "replace")
    except (IOError, OSError):
        return []
    return [mask_credentials(line, secrets) for line in text.splitlines()[-lines:]]


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
            timeout=dict(type="int", default=21000),
        ),
        supports_check_mode=True,
    )
    secrets = secrets_of(module.params)
    result = dict(log_path=module.params["log_path"])
    try:
        params = check_input(module.params)
    except InputError as exc:
        module.fail_json(msg=mask_credentials(str(exc), secrets), cmd=[], **result)
    argv = build_command(params)
    result["cmd"] = [mask_credentials(arg, secrets) for arg in argv]
    endpoint_shown = mask_credentials(hf_hub.display_endpoint(params["endpoint"]), secrets)
    what = "hf download of %s at %s from %s" % (params["repo_id"], params["revision"], endpoint_shown)
    if module.check_mode:
        # The client may not be installed yet in check mode (its install was only reported).
        module.exit_json(changed=True, **result)
    if not os.access(params["hf"], os.X_OK):
        module.fail_json(msg="hf: %s is not an executable hf client (huggingface_hub >= 1.0)" % params["hf"], **result)

    log_path = params["log_path"]
    try:
        log_dir = os.path.dirname(log_path)
        if log_dir and not os.path.isdir(log_dir):
            os.makedirs(log_dir, 0o750)
        append_log(log_path, ["=== %s %s (HF_ENDPOINT=%s)" % (
            datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"), " ".join(result["cmd"]), endpoint_shown)], secrets)
    except (IOError, OSError) as exc:
        module.fail_json(msg="log_path: cannot write the log %s (%s); it must be a plain file (not a symbolic "
                             "link) in a writable directory" % (log_path, exc.strerror or exc), **result)

    before = snapshot(params["local_dir"])
    env = dict(os.environ)
    env.update(client_environment(params))
    # sh only merges stderr into stdout, in order; the client's arguments hold no secret.
    proc = run(["/bin/sh", "-c", 'exec "$@" 2>&1', "hf-download"] + argv, timeout=params["timeout"], env=env)
    after = snapshot(params["local_dir"])
    changed_files = sorted(path for path in after if before.get(path) != after[path])
    output = (proc.stdout or "").splitlines() + (proc.stderr or "").splitlines()
    if proc.timed_out:
        status = "stopped after %d seconds (timeout)" % params["timeout"]
    elif proc.rc is None or proc.rc < 0 or (proc.rc != 0 and proc.error and not output):
        status = "ended abnormally: %s" % (proc.error or "no exit status")
    else:
        status = "exit status %d" % proc.rc
    try:
        append_log(log_path, output + ["=== %s, %d file(s) changed" % (status, len(changed_files))], secrets)
    except (IOError, OSError) as exc:
        module.warn("Could not append to the log %s: %s" % (log_path, exc.strerror or exc))
    result.update(rc=proc.rc, timed_out=proc.timed_out, changed_files=changed_files)
    if proc.timed_out or proc.rc != 0:
        count = params["log_tail_lines"]
        lines = []
        if count:
            lines = tail(log_path, count, secrets) or [mask_credentials(line, secrets) for line in output[-count:]]
        if proc.timed_out:
            head = ("%s did not finish within %d seconds and was stopped (option timeout). The files fetched so far "
                    "are kept, and the next run goes on from them; raise timeout (and the task's async limit) for a "
                    "large model or a slow link." % (what, params["timeout"]))
        else:
            head = "%s failed (%s)." % (what, status)
        module.fail_json(
            msg=mask_credentials("%s Last lines of %s:\n%s" % (head, log_path, "\n".join(lines)), secrets),
            changed=bool(changed_files), log_tail=lines, **result)
    module.exit_json(changed=bool(changed_files), **result)


if __name__ == "__main__":
    main()
