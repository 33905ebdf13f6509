#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: run_logged
short_description: Run one long command on the host with a log, and show its progress in the play output
version_added: "0.1.0"
description:
  - Starts I(argv) on the host in the background, detached from the connection, with its output in the log file
    I(log) (rewritten on every run, mode 0640, with a header that says what runs, where and when, the command line and
    the names of the environment variables). The command runs in a process group of its own; C(<log>.pid) and
    C(<log>.rc) name the run and hold its exit status.
  - While it runs, prints a progress line to the play output at least every I(progress_interval) seconds, with the
    time elapsed and, when the log says it, ninja's C([N/M]) step, the bytes or percent of a pip or C(hf download) transfer
    with an estimate of the time left, else the last line of the log.
  - When the command fails or runs past I(timeout) (its whole process group is then killed, and every process
    below it in the process tree, one that left the group with C(setsid) included), the task fails with the lines of
    the log that report errors and its last I(tail_lines) lines.
  - The environment reaches the command through the module's arguments and the supervisor's memory only, never a
    command line or a file. Values of variables named like secrets (C(*TOKEN*), C(*PASSWORD*), C(*SECRET*), C(*KEY),
    ...), of any length (but for switches named so, C(*_DISABLE_*), C(*_ENABLE_*), C(USE_*) ...), with the base64 of
    a C(user:password) in them, and credentials in URLs (C(https://user:pass@host)), C(Authorization) values and
    Hugging Face tokens are masked in the log, the progress lines and the result. The task keyword C(no_log) hides the result as usual; the
    masked end of the log is still shown when the command fails.
  - This is an action plugin with a module of the same name that it calls on the host (to start the run, then to read
    its status). Call it only as a task.
author:
  - gpufleet maintainers (@gpufleet)
options:
  name:
    description: What the command does, as the operator reads it in the progress lines and the log's header.
    type: str
  argv:
    description: The command, one argument per item; no shell reads it.
    type: list
    elements: str
    required: true
  environment:
    description:
      - Variables added to the command's environment. Put secrets here (an index URL with credentials, a token), never
        into I(argv). Values are never printed.
    type: dict
    default: {}
  log:
    description: Absolute path of the log on the host; its directory is created (mode 0755) when missing.
    type: path
    required: true
  log_header:
    description: Further lines written at the top of the log, each after C(# ).
    type: list
    elements: str
    default: []
  timeout:
    description: Longest the command may run, in seconds; then its process group is killed and the task fails.
    type: int
    default: 3600
  poll:
    description: Seconds between two checks on the running command (the first checks come sooner, for short commands).
    type: int
    default: 10
  progress_interval:
    description: Longest time, in seconds, between two progress lines in the play output (1 to 60).
    type: int
    default: 30
  tail_lines:
    description: Lines of the log shown when the command fails.
    type: int
    default: 40
  creates:
    description: A path on the host; when it exists, nothing runs and the task reports no change.
    type: path
  earlier:
    description:
      - What to do when a job of an earlier run still writes I(log) (its controller went away while it ran).
      - C(fail) refuses to start, naming that job. C(stop) ends it first (its process group and every process below
        it, the reason noted at the end of its log), then starts; only for a log that no other live run can own.
    type: str
    choices: [fail, stop]
    default: fail
  operation:
    description:
      - Set by the action plugin, never by a task. C(start) starts the run, C(status) reads it, C(stop) ends it.
    type: str
    choices: [start, status, stop]
    default: start
  job:
    description: Set by the action plugin, never by a task. The run that I(operation=status) or C(stop) reads or ends.
    type: str
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.changes
attributes:
  check_mode:
    support: full
    description: Runs nothing; reports a change unless I(creates) exists. Bad arguments fail in check mode too.
  action:
    support: full
    description: An action plugin of the same name drives the module.
notes:
  - The command keeps running if the connection or the controller goes away; it still ends at I(timeout). A second run
    on the same I(log) while the first one still writes it is refused, unless I(earlier=stop).
  - Long commands that print their progress only to a terminal show none here; C(pip) prints the size of each download
    (and, from pip 24.1, its bytes with C(--progress-bar raw)), C(pip -v) shows a build's ninja steps.
seealso:
  - module: ansible.builtin.command
"""

EXAMPLES = r"""
- name: Install torch into the venv, with its log and progress
  gpufleet.llm_stack.run_logged:
    name: pip install torch==2.10.0+cu128 into /opt/llm-stack/venv
    argv: [/opt/llm-stack/venv/bin/python, -m, pip, install, --no-input, torch==2.10.0+cu128]
    environment:
      PIP_INDEX_URL: "https://{{ vault_index_user }}:{{ vault_index_password }}@pypi.example.internal/whl/cu128"
    log: /var/log/llm-stack/torch-install.log
    log_header:
      - "index: https://***@pypi.example.internal/whl/cu128"
    timeout: 3600
  no_log: true

- name: Build a wheel, showing ninja's steps every 30 seconds at most
  gpufleet.llm_stack.run_logged:
    name: Build flash-attn 2.8.3 for sm80
    argv: [/opt/llm-stack/venv/bin/python, -m, pip, wheel, -v, --no-deps, --no-build-isolation, flash-attn==2.8.3]
    environment: {MAX_JOBS: "16", FLASH_ATTN_CUDA_ARCHS: "80"}
    log: /var/log/llm-stack/flash-attn-build.log
    timeout: 14400
    poll: 30
"""

RETURN = r"""
rc:
  description: Exit status of the command; null when it timed out or did not run.
  returned: when it ran
  type: int
  sample: 0
elapsed:
  description: Seconds the command ran.
  returned: when it ran
  type: float
  sample: 312.4
log:
  description: The log file on the host.
  returned: always
  type: str
  sample: /var/log/llm-stack/torch-install.log
cmd:
  description: The command line, credentials masked.
  returned: always
  type: str
  sample: /opt/llm-stack/venv/bin/python -m pip install --no-input torch==2.10.0+cu128
timed_out:
  description: Whether the command ran past I(timeout) and was killed.
  returned: when it ran
  type: bool
tail:
  description: The last I(tail_lines) lines of the log, credentials masked.
  returned: on failure
  type: list
  elements: str
error_lines:
  description: The first lines of the log that report an error (compiler and Python errors, ninja's C(FAILED)), credentials masked.
  returned: on failure
  type: list
  elements: str
progress:
  description: The last progress line shown.
  returned: when it ran
  type: str
  sample: "4m10s elapsed; [120/450] 26% flash_fwd_hdim128_bf16_sm80.cu; about 11m25s left"
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import run_logged as R

ARGUMENT_SPEC = dict(
    R.OPTIONS,
    operation=dict(type="str", choices=["start", "status", "stop"], default="start"),
    job=dict(type="str"),
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True,
                           required_if=[("operation", "status", ["job"]), ("operation", "stop", ["job"])])
    p = module.params
    environment = p["environment"] or {}
    secrets = R.secret_values(dict((str(k), "" if v is None else str(v)) for k, v in environment.items()))
    name = p["name"] or os.path.basename(p["argv"][0] if p["argv"] else "command")
    result = dict(log=p["log"], cmd=R.command_line(p["argv"] or [], secrets))
    try:
        if p["operation"] == "status":
            module.exit_json(changed=False, **dict(result, **R.job_status(p["log"], p["job"], p["tail_lines"])))
        if p["operation"] == "stop":
            module.exit_json(changed=True, **dict(result, **R.stop_job(p["log"], p["job"], "timeout (%d s)" % p["timeout"])))
        problems = R.option_problems(p)
        if problems:
            raise R.JobError("; ".join(problems))
        R.check_request(p["argv"], environment, p["log"], p["timeout"])
        if p["creates"] and os.path.exists(p["creates"]):
            module.exit_json(changed=False, ran=False, msg="%s exists: %s was not run" % (p["creates"], name), **result)
        if module.check_mode:
            module.exit_json(changed=True, ran=False, msg="check mode: %s would run" % name, **result)
        job = R.start_job(name, p["argv"], environment, p["log"], p["log_header"], p["timeout"], earlier=p["earlier"])
    except R.JobError as exc:
        module.fail_json(msg="%s: %s" % (name, exc), **result)
    module.exit_json(changed=True, ran=True, **dict(result, **job))


if __name__ == "__main__":
    main()
