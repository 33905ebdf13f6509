#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: vllm_serve_guard
short_description: Whose processes hold a vLLM service's port and the GPUs, checked on its host
description:
  - I(check=listener), before a client is given the API key (the vllm_serve role's benchmark); the socket listening on
    I(url)'s address (or a wildcard) and port, read from C(/proc/net/tcp) and C(/proc/net/tcp6), must be held by the
    service's main process (systemd's C(MainPID), C(supervisorctl pid PROGRAM)) or its descendants (check
    C(process tree)), or, while the service runs no main process, by processes of I(user) (check C(user)). Else the
    task fails naming the pid, user and command line of each holder and the fix. Nothing is sent to the port.
  - I(check=gpu), before a start, where C(nvidia-smi) exists, waits up to I(timeout) seconds until no compute process
    of I(user) that is not the service's (outside its process tree, another systemd unit or supervisord program) holds
    GPU memory, and, with I(gpus) and I(memory_utilization), until each of those GPUs has I(memory_utilization) of
    its memory free (vLLM refuses to start otherwise; not checked while a process of the service itself holds GPU
    memory, which its restart frees); then fails naming the holders (pid, memory, command line), each short GPU and
    the fix. Without C(nvidia-smi) it returns at once with RV(gpu) false and says the wait is skipped; when
    C(nvidia-smi) fails, it warns and does not wait.
  - The decisions are those of C(plugins/module_utils/serve_procs.py), as in M(gpufleet.llm_stack.vllm_health).
version_added: "0.2.0"
author:
  - gpufleet maintainers (@gpufleet)
options:
  check:
    description: C(listener) or C(gpu).
    type: str
    choices: [listener, gpu]
    required: true
  service:
    description: The service (systemd unit without C(.service), or supervisord program).
    type: str
    required: true
  mode:
    description: How the service runs.
    type: str
    choices: [systemd, supervisord]
    required: true
  supervisorctl:
    description: The supervisorctl command with its C(-c CONFIG) (supervisord mode).
    type: list
    elements: str
    default: []
  user:
    description: The service's user.
    type: str
    required: true
  url:
    description: Base URL of the server, such as C(http://127.0.0.1:8000) (I(check=listener)).
    type: str
  timeout:
    description: Longest wait, in seconds, for the GPUs (I(check=gpu)); 0 looks once.
    type: int
    default: 60
  poll:
    description: Seconds between two readings of the GPUs.
    type: int
    default: 5
  gpus:
    description: The indexes (as C(nvidia-smi) numbers them) of the GPUs the service will use (I(check=gpu)).
    type: list
    elements: int
    default: []
  memory_utilization:
    description: The share of each of I(gpus)'s memory the service asks for (vLLM's C(--gpu-memory-utilization)).
    type: float
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.read_only
notes:
  - Runs as root, to read the open files and the state of every process. Root without C(CAP_SYS_PTRACE) (a container's
    root, by default) reads those of another user's processes through a child process that runs as that user.
  - Runs the same in check mode (it only reads).
"""

EXAMPLES = r"""
- name: Check that the socket on the port is the service's before the benchmark gets the key
  gpufleet.llm_stack.vllm_serve_guard:
    check: listener
    url: http://127.0.0.1:8000
    service: vllm-qwen-qwen3-5-9b
    mode: systemd
    user: vllm

- name: Wait until no leftover process of vllm holds GPU memory
  gpufleet.llm_stack.vllm_serve_guard:
    check: gpu
    service: vllm-qwen-qwen3-5-9b
    mode: supervisord
    supervisorctl: [/opt/llm-stack/supervisor/bin/supervisorctl, -c, /etc/llm-stack/vllm/supervisord.conf]
    user: vllm
    timeout: 60
    gpus: [0, 1]
    memory_utilization: 0.9
"""

RETURN = r"""
msg:
  description: What was found, in one line.
  returned: always
  type: str
listener:
  description:
    - I(check=listener); C(ok), C(check) (C(process tree) or C(user)), C(main_pid), C(where), C(sockets), C(holders)
      and C(impostors) (each C(pid), C(uid), C(user), C(cmdline)), C(message).
  returned: when I(check=listener)
  type: dict
gpu:
  description: I(check=gpu); whether C(nvidia-smi) was found (false; the wait was skipped).
  returned: when I(check=gpu)
  type: bool
holders:
  description:
    - I(check=gpu); the compute processes at the last reading, each C(pid), C(used_mib), C(gpus), C(uid), C(user),
      C(cmdline), C(unit) and C(whose) (C(service), C(leftover), C(other service), C(other user), C(unknown)).
  returned: when I(check=gpu)
  type: list
  elements: dict
memory:
  description:
    - I(check=gpu) with I(gpus) and I(memory_utilization); each GPU's C(index), C(total_mib) and C(used_mib) at the
      last reading (empty when not read).
  returned: when I(check=gpu)
  type: list
  elements: dict
waited:
  description: I(check=gpu); seconds waited.
  returned: when I(check=gpu)
  type: float
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import serve_procs as S


def check_listener(module, p):
    verdict = S.check_listener(p["url"], p["mode"], p["service"], p["supervisorctl"], p["user"])
    if not verdict["ok"]:
        module.fail_json(msg="%s at %s: %s" % (p["service"], p["url"], verdict["message"]), listener=verdict)
    module.exit_json(changed=False, msg=verdict["message"], listener=verdict)


def check_gpu(module, p):
    smi = S.find_smi(module)
    if not smi:
        module.exit_json(changed=False, gpu=False, holders=[], waited=0.0,
                         msg="no nvidia-smi on this host: the wait for GPU memory held by leftover processes is skipped")
    start = time.time()
    deadline = start + max(0, p["timeout"])
    while True:
        main_pid = S.read_main_pid(p["mode"], p["service"], p["supervisorctl"])
        holders, error = S.read_gpu_holders(smi, p["mode"], p["service"], main_pid, p["user"], p["supervisorctl"])
        waited = round(time.time() - start, 1)
        if error:
            module.warn("nvidia-smi --query-compute-apps failed, the wait for GPU memory is skipped: %s" % error)
            module.exit_json(changed=False, gpu=True, holders=[], waited=waited, msg=error)
        verdict = S.gpu_wait_verdict(holders, p["service"], p["user"], waited)
        memory = []
        if verdict["ok"] and p["gpus"] and p["memory_utilization"]:
            memory, error = S.read_gpu_memory(smi)
            if error:
                module.warn("nvidia-smi --query-gpu failed, the wait for free GPU memory is skipped: %s" % error)
            else:
                verdict = S.gpu_memory_verdict(memory, p["gpus"], p["memory_utilization"], holders, p["service"],
                                               waited)
        if verdict["ok"] or time.time() + p["poll"] > deadline:
            break
        time.sleep(max(1, p["poll"]))
    if not verdict["ok"]:
        module.fail_json(msg="%s on this host: %s" % (p["service"], verdict["message"]), gpu=True, holders=holders,
                         memory=memory, waited=waited)
    module.exit_json(changed=False, gpu=True, holders=holders, memory=memory, waited=waited, msg=verdict["message"])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            check=dict(type="str", choices=["listener", "gpu"], required=True),
            service=dict(type="str", required=True),
            mode=dict(type="str", choices=["systemd", "supervisord"], required=True),
            supervisorctl=dict(type="list", elements="str", default=[]),
            user=dict(type="str", required=True),
            url=dict(type="str"),
            timeout=dict(type="int", default=60),
            poll=dict(type="int", default=5),
            gpus=dict(type="list", elements="int", default=[]),
            memory_utilization=dict(type="float"),
        ),
        required_if=[("check", "listener", ("url",))],
        supports_check_mode=True,
    )
    p = module.params
    if p["check"] == "listener":
        check_listener(module, p)
    check_gpu(module, p)


if __name__ == "__main__":
    main()
