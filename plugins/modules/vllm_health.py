#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: vllm_health
short_description: The health gate of a vLLM server, run on its host
description:
  - Polls the server until all of these pass, or until I(timeout) seconds have passed; C(GET /health) answers 200;
    C(GET /v1/models) lists I(served_model_name); one real completion of I(max_tokens) tokens with the API key answers
    200 with text; the same request without the key is refused with 401.
  - The API key is read on the host from the environment file the role writes (I(key_file), mode 0600, the
    C(VLLM_API_KEY=) line); it is never an argument of the module, and it is masked in anything returned.
  - The key goes only to the service. Once something answers on the port, and before each request that carries the
    key, the gate reads the socket listening on the URL's address (or a wildcard) and port, from C(/proc/net/tcp) and
    C(/proc/net/tcp6), and the processes holding it (C(/proc/<pid>/fd)); each must be the service's main process
    (systemd's C(MainPID), C(supervisorctl pid PROGRAM)) or a descendant of it (check C(process tree)), or, while the
    service runs no main process, run as I(user) (check C(user)). A listener that is not the service's stops the gate
    at once, without the key, naming its pid, user and command line and the fix; only the unauthenticated
    C(GET /health) reached it.
  - Where C(nvidia-smi) exists, GPU memory held by processes that are not the service's is returned in
    RV(gpu.others) and shown as a warning.
  - Stops waiting early when the service manager has given up on the service (systemd C(failed), supervisord
    C(FATAL)). On failure it returns the last I(tail_lines) lines of the service's log (C(journalctl -u) for
    systemd, the program's log file for supervisord), after the earlier lines that report errors, with the key
    masked, and fails.
  - Requests go to the loopback address directly, never through a proxy; each has its own timeout.
version_added: "0.2.0"
author:
  - gpufleet maintainers (@gpufleet)
options:
  url:
    description: Base URL of the server, such as C(http://127.0.0.1:8000).
    type: str
    required: true
  served_model_name:
    description: The name C(/v1/models) must list and the completion asks for.
    type: str
    required: true
  key_file:
    description: The environment file with the C(VLLM_API_KEY=) line (readable by root only).
    type: path
    required: true
  timeout:
    description: Longest wait, in seconds, for the whole gate to pass.
    type: int
    default: 900
  poll:
    description: Seconds between two attempts.
    type: int
    default: 5
  request_timeout:
    description: Seconds one HTTP request may take.
    type: int
    default: 60
  max_tokens:
    description: Tokens the test completion asks for (its C(max_tokens)).
    type: int
    default: 4
  service:
    description: The service (systemd unit without C(.service), or supervisord program) whose state and log are read.
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
  log_file:
    description: The program's log file (supervisord mode).
    type: path
  user:
    description:
      - The service's user. The listener of a service that runs no main process (stopped, between two starts) must
        run as this user; compute processes of this user outside the service are named in the GPU warning.
      - Without it, a listener is the service's only by the process tree.
    type: str
  headless:
    description:
      - The service is a headless node of a deployment across hosts (rank above 0, no API server). I(url) is then the
        head's; the gate passes once this node's service runs and the head's C(GET /health) answers 200, which the
        head's engine only does with every node's ranks. The key is sent nowhere (it only masks the log's lines); the
        head's own gate sends the completion.
    type: bool
    default: false
  tail_lines:
    description: Lines of the service's log returned on failure.
    type: int
    default: 60
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.read_only
notes:
  - Runs the same in check mode (it only reads); a server that is not there fails the gate there too.
  - Runs as root, to read the open files of every process (a socket whose holder cannot be read is not the service's).
    Root without C(CAP_SYS_PTRACE) (a container's root, by default) reads those of another user's processes through a
    child process that runs as that user.
"""

EXAMPLES = r"""
- name: Check that vLLM answers, with the key and only with it
  gpufleet.llm_stack.vllm_health:
    url: http://127.0.0.1:8000
    served_model_name: Qwen/Qwen3.5-9B
    key_file: /etc/llm-stack/vllm/vllm-qwen-qwen3-5-9b.env
    service: vllm-qwen-qwen3-5-9b
    mode: systemd
    timeout: 900
"""

RETURN = r"""
ok:
  description: Whether every check passed.
  returned: always
  type: bool
checks:
  description: For C(health), C(models), C(completion) and C(unauthenticated), C(ok) and C(detail) of the last attempt.
  returned: always
  type: dict
summary:
  description: The checks in one line.
  returned: always
  type: str
waited:
  description: Seconds the gate waited.
  returned: always
  type: float
service:
  description: The service's state at the end (C(up), C(gave_up), C(state), C(pid), C(restarts)).
  returned: always
  type: dict
listener:
  description:
    - The last reading of the socket on the port; C(ok) (the key could be sent), C(check) (C(process tree) or C(user)),
      C(main_pid), C(where), C(sockets), C(holders) and C(impostors) (each C(pid), C(uid), C(user), C(cmdline)),
      C(message).
    - Null when nothing answered on the port.
  returned: always
  type: dict
gpu:
  description: The GPUs' compute processes that are not the service's, where C(nvidia-smi) exists.
  returned: always
  type: dict
  contains:
    checked:
      description: Whether C(nvidia-smi) was found.
      type: bool
    error:
      description: Why C(nvidia-smi --query-compute-apps) gave no list, else null.
      type: str
    others:
      description:
        - The compute processes that are not the service's, each C(pid), C(used_mib), C(gpus), C(uid), C(user),
          C(cmdline), C(unit) and C(whose) (C(leftover), C(other service), C(other user), C(unknown)).
      type: list
      elements: dict
    warning:
      description: The warning shown about them, else null.
      type: str
log_tail:
  description:
    - The lines of the service's log that report errors (the root cause of a failed start comes well before the last
      lines), then its last I(tail_lines) lines; the key masked. Only on failure.
  returned: on failure
  type: list
  elements: str
"""

import os
import stat
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import proc
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import serve_procs as S
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm_serve as V
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.local_http import http
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import mask_credentials


def listener(p):
    """Whose is the socket on the port (serve_procs.check_listener)."""
    return S.check_listener(p["url"], p["mode"], p["service"], p["supervisorctl"], p["user"])


def attempt(p, key):
    """(checks, listener verdict or None): one round of the gate; the key only goes to the service's listener."""
    base = p["url"].rstrip("/")
    timeout = p["request_timeout"]
    checks = {}
    status, text = http("GET", base + "/health", timeout)
    checks["health"] = {"ok": status == 200, "detail": "GET /health: %s" % (status or text)}
    # Something answered: whose socket is it? The requests with the key go to the service's only.
    owner = listener(p) if status else None
    if status != 200 or not owner["ok"]:
        return checks, owner
    status, text = http("GET", base + "/v1/models", timeout, key=key)
    listed = status == 200 and V.models_lists(text, p["served_model_name"])
    checks["models"] = {"ok": listed, "detail": "GET /v1/models: %s%s" % (
        status or text, "" if listed or status != 200 else ", %s not listed" % p["served_model_name"])}
    body = {"model": p["served_model_name"], "prompt": "Hello", "max_tokens": p["max_tokens"], "temperature": 0}
    status, text = http("POST", base + "/v1/completions", timeout, body=body, key=key)
    good, detail = V.completion_ok(text) if status == 200 else (False, "")
    checks["completion"] = {"ok": good, "detail": "POST /v1/completions with the key: %s%s" % (
        status or text, (", " + detail) if detail else "")}
    status, text = http("POST", base + "/v1/completions", timeout, body=body)
    checks["unauthenticated"] = {"ok": status == 401, "detail": "POST /v1/completions without the key: %s%s" % (
        status or text, "" if status == 401 else " (401 expected: the server answers without the key)")}
    return checks, owner


def attempt_headless(p):
    """One round of a headless node's gate: the head's GET /health (no key), while this node's service runs."""
    status, text = http("GET", p["url"].rstrip("/") + "/health", p["request_timeout"])
    state = service_state(p)
    running = state.get("state") or "not running"
    checks = {"node": {"ok": bool(state.get("up")), "detail": "this node's service: %s" % running},
              "head": {"ok": status == 200, "detail": "the head's GET /health: %s" % (status or text)}}
    return checks, state


def headless_gate(module, p, key):
    """A headless node (rank > 0 of a deployment across hosts) runs no API server: it passes once its service runs
    and the head's engine, which needs every node's ranks, answers /health; the head's own gate sends the
    completion."""
    start = time.time()
    deadline = start + max(1, p["timeout"])
    while True:
        checks, state = attempt_headless(p)
        verdict = V.headless_verdict(checks)
        if verdict["ok"] or state.get("gave_up") or time.time() + p["poll"] > deadline:
            break
        time.sleep(max(1, p["poll"]))
    result = dict(changed=False, ok=verdict["ok"], checks=checks, summary=verdict["summary"],
                  waited=round(time.time() - start, 1), service=state, listener=None, gpu=gpu_report(module, p))
    if verdict["ok"]:
        module.exit_json(**result)
    result["log_tail"] = log_tail(p, key)
    module.fail_json(msg="vLLM service %s (a headless node; head %s) failed its health gate: %s. Last lines of its"
                     " log:\n%s" % (p["service"], p["url"], verdict["summary"], "\n".join(result["log_tail"])),
                     **result)


def gpu_report(module, p):
    """{checked, error, others, warning}: GPU memory held by processes that are not the service's."""
    smi = S.find_smi(module)
    if not smi:
        return {"checked": False, "error": None, "others": [], "warning": None}
    main_pid = S.read_main_pid(p["mode"], p["service"], p["supervisorctl"])
    holders, error = S.read_gpu_holders(smi, p["mode"], p["service"], main_pid, p["user"], p["supervisorctl"])
    warning = S.gpu_warning(holders, p["service"])
    if warning:
        module.warn(warning)
    if error:
        module.warn("nvidia-smi --query-compute-apps failed, GPU memory not checked: %s" % error)
    return {"checked": True, "error": error, "warning": warning,
            "others": [entry for entry in holders if entry["whose"] != S.WHOSE_SERVICE]}


def service_state(p):
    if p["mode"] == "systemd":
        result = proc.run(["systemctl", "show", "-p", "ActiveState", "-p", "SubState", "-p", "MainPID", "-p",
                           "NRestarts", "%s.service" % p["service"]], timeout=30)
        return V.systemd_state(result.stdout if result.ok else "")
    if p["supervisorctl"] and os.path.exists(p["supervisorctl"][0]):
        result = proc.run(list(p["supervisorctl"]) + ["status", p["service"]], timeout=30)
        return V.supervisor_state(result.stdout, p["service"])
    return V.supervisor_state("", p["service"])


def log_tail(p, key):
    lines = max(1, p["tail_lines"])
    if p["mode"] == "systemd":
        result = proc.run(["journalctl", "-u", "%s.service" % p["service"], "-n", str(max(lines, 2000)), "--no-pager",
                           "-o", "short-iso"], timeout=30)
        text = result.stdout or result.stderr or result.error or ""
    elif p["log_file"]:
        try:
            # Never through a link: the log's directory may be writable by someone else than root.
            fd = os.open(p["log_file"], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as handle:
                if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                    raise IOError("not a regular file")
                handle.seek(0, os.SEEK_END)
                handle.seek(max(0, handle.tell() - 256 * 1024))
                text = handle.read().decode("utf-8", "replace")
        except (IOError, OSError) as exc:
            text = "cannot read %s: %s" % (p["log_file"], exc)
    else:
        text = "no log file given"
    return [mask_credentials(line, [key]) for line in V.log_excerpt(text.splitlines(), tail=lines)]


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", required=True),
            served_model_name=dict(type="str", required=True),
            key_file=dict(type="path", required=True, no_log=False),
            timeout=dict(type="int", default=900),
            poll=dict(type="int", default=5),
            request_timeout=dict(type="int", default=60),
            max_tokens=dict(type="int", default=4, no_log=False),
            service=dict(type="str", required=True),
            mode=dict(type="str", choices=["systemd", "supervisord"], required=True),
            supervisorctl=dict(type="list", elements="str", default=[]),
            log_file=dict(type="path"),
            tail_lines=dict(type="int", default=60),
            user=dict(type="str"),
            headless=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        with open(p["key_file"], "r") as handle:
            key = V.read_env_key(handle.read())
    except (IOError, OSError) as exc:
        module.fail_json(msg="Cannot read the API key from %s: %s. Fix: run the vllm_serve role, which writes it"
                         % (p["key_file"], exc), ok=False)
    if not key:
        module.fail_json(msg="%s has no VLLM_API_KEY line. Fix: run the vllm_serve role with vllm_serve_api_key set"
                         % p["key_file"], ok=False)
    module.no_log_values.add(key)
    if p["headless"]:
        # The key only masks the log's lines here: nothing is sent with it.
        headless_gate(module, p, key)

    start = time.time()
    deadline = start + max(1, p["timeout"])
    state = {}
    while True:
        checks, owner = attempt(p, key)
        verdict = V.health_verdict(checks)
        if verdict["ok"] or (owner and owner["final"] and not owner["ok"]):
            break
        state = service_state(p)
        if state.get("gave_up") or time.time() + p["poll"] > deadline:
            break
        time.sleep(max(1, p["poll"]))
    waited = round(time.time() - start, 1)
    state = service_state(p)
    if owner is None and not verdict["ok"]:
        # Nothing answered at the last attempt: name a process that holds the port all the same.
        owner = listener(p)
        owner = owner if owner["sockets"] else None
    summary = mask_credentials(verdict["summary"], [key])
    if owner is not None:
        summary += "; listener: %s" % owner["message"]
    result = dict(changed=False, ok=verdict["ok"], checks=checks, summary=summary, waited=waited, service=state,
                  listener=owner, gpu=gpu_report(module, p))
    if verdict["ok"]:
        module.exit_json(**result)
    result["log_tail"] = log_tail(p, key)
    if owner is not None and not owner["ok"] and owner["final"]:
        why, shown = owner["message"], mask_credentials(verdict["summary"], [key])
    elif state.get("gave_up"):
        why, shown = "the service manager gave up on it (%s)" % state.get("state"), summary
    else:
        why, shown = "not healthy after %ss" % waited, summary
    module.fail_json(msg="vLLM service %s at %s failed its health gate: %s. %s. Last lines of its log:\n%s"
                     % (p["service"], p["url"], why, shown, "\n".join(result["log_tail"])), **result)


if __name__ == "__main__":
    main()
