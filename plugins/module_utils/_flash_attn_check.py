# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: the check of the installed flash-attn (files/flash_attn_check.py): its command, when it runs, its result.

flash_attn.py re-exports every name here its callers use; not part of the public API.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import shlex

from ansible_collections.gpufleet.llm_stack.plugins.module_utils._readers import as_bool as _bool, text as _text

CHECK_MARK = "FLASH_ATTN_CHECK "


def check_command(v, gpu_count, gpu_targets, targets, home):
    """{cmd, title} of files/flash_attn_check.py for this host.

    The kernels checked are the host's own GPUs' targets (what its wheel must
    hold), or the build targets on a host without GPUs of sm80 or newer (a
    build host), which then runs no forward pass.
    """
    usable = gpu_count if gpu_targets else 0
    archs = gpu_targets if usable else targets
    argv = ["flash_attn_check.py", "--expect-version", v["version"], "--archs", ",".join(str(t) for t in archs),
            "--gpus", str(usable), "--tolerance", str(v["check_tolerance"])]
    argv += ["--cpu-only-test-host"] if v["cpu_only_test_host"] else ["--cuda-home", home]
    title = "Check flash-attn: import"
    if gpu_targets:
        title += ", kernels for sm" + ";sm".join(str(t) for t in gpu_targets)
    if usable:
        title += ", a forward pass on GPU 0"
    return {"cmd": " ".join(shlex.quote(arg) for arg in argv), "title": title}


def check_result(stdout, rc=None, stderr=""):
    """What files/flash_attn_check.py printed: its JSON line, with ok, summary and failure added.

    summary: the success message; failure: the problems, or why there was no result.
    """
    found = None
    for line in _text(stdout).splitlines():
        if line.startswith(CHECK_MARK):
            try:
                found = json.loads(line[len(CHECK_MARK):])
            except ValueError:
                found = None
            break
    if not isinstance(found, dict):
        tail = _text(stderr)[-800:]
        return {"ok": False, "version": None, "elf_archs": [], "forward_max_abs_err": None, "skipped": [],
                "problems": [], "summary": "",
                "failure": "the check printed no result (exit %s): %s" % ("?" if rc is None else rc, tail)}
    res = dict(found)
    res.setdefault("problems", [])
    res.setdefault("skipped", [])
    res.setdefault("elf_archs", [])
    res.setdefault("forward_max_abs_err", None)
    res["ok"] = bool(res.get("ok")) and not res["problems"]
    summary = "flash-attn %s works" % (res.get("version") or "?")
    if res["elf_archs"]:
        summary += " (kernels: sm%s)" % ", sm".join(str(a) for a in res["elf_archs"])
    if res["forward_max_abs_err"] is not None:
        summary += " (forward max abs error %s)" % res["forward_max_abs_err"]
    res["summary"] = summary + "."
    res["failure"] = "; ".join(str(p) for p in res["problems"]) or ("" if res["ok"] else "the check failed")
    return res


def check_steps(build_plan, built=None, check_mode=False):
    """When the checks of the installed flash-attn run, once wheel_build has done this host's part.

    build_plan: the host's plan, whose verify_on_install and verify_without_install are flash_attn_build_verify's
    policy (always, changed, never); built: wheel_build's result (wheel_build_result), whose was_installed says that
    the key's wheel was in the venv before the run, or None where wheel_build did not run; check_mode: the task's.
    Returns {run, script}: run, the checks are included (a plan with a key whose policy checks after an install,
    and either always or after an install of this run); script, files/flash_attn_check.py runs (always, except in
    check mode where the wheel was not installed before: nothing there to check yet). Where wheel_build's result
    does not say whether the wheel was installed before, neither runs: no install of this run is known, and no
    installed wheel either.
    """
    plan = build_plan if isinstance(build_plan, dict) else {}
    known = isinstance(built, dict) and built.get("was_installed") is not None
    was_installed = known and _bool(built.get("was_installed"))
    run = plan.get("key") is not None and bool(plan.get("verify_on_install")) and (
        bool(plan.get("verify_without_install")) or (known and not was_installed))
    return {"run": run, "script": not check_mode or was_installed}
