# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: the checks after vLLM's install (verdict) and the venv's record of them (.llm_stack/vllm.json): what the
record holds, whether it is current (record_state), and vllm_serve's refusal of a failed one.

vllm.py re-exports every name here its callers use; not part of the public API.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm_probe
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._readers import as_dict as _dict, text as _text
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._vllm_method import normalize_name, same_release
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import mask_credentials

# The format of the venv's record (.llm_stack/vllm.json): 2 records failed checks as well, the start imports and
# the digest of vLLM's own RECORD. A record of another format is stale: the checks run again.
RECORD_FORMAT = 2


def record_state(probe, distribution):
    """(state, reason) of the venv's record against what the venv holds now (a vllm_info result with the record):
    current, or missing, failed, stale; with vllm_source_verify changed anything but current runs the checks."""
    info = _dict(_dict(probe).get("info"))
    rec = info.get("record")
    dist = _dict(_dict(info.get("distributions")).get(distribution))
    torch = _dict(info.get("torch"))
    if not isinstance(rec, dict):
        return "missing", "no record of checks in the venv (.llm_stack/vllm.json)"
    if rec.get("unreadable"):
        return "stale", _text(rec["unreadable"])
    if rec.get("format") != RECORD_FORMAT:
        return "stale", "the record is of format %s, the checks of this collection write %d" % (
            rec.get("format"), RECORD_FORMAT)
    if rec.get("ok") is not True:
        return "failed", "the last checks failed: %s" % "; ".join(_text(p) for p in (rec.get("problems") or [])[:3])
    if normalize_name(rec.get("distribution")) != normalize_name(distribution) or not same_release(
            dist.get("version"), rec.get("version")):
        return "stale", "the record is of %s %s, the venv has %s %s" % (
            rec.get("distribution"), rec.get("version"), distribution, dist.get("version"))
    if dist.get("record_sha256") and rec.get("vllm_record_sha256") != dist.get("record_sha256"):
        return "stale", "vLLM's files are not those checked (its RECORD differs from the record's)"
    if torch.get("record_sha256") and _dict(rec.get("torch")).get("record_sha256") != torch.get("record_sha256"):
        return "stale", "torch is not the one checked (its RECORD differs from the record's)"
    return "current", "the record says vLLM %s passed its checks, and the venv holds what was checked" % (
        rec.get("version"))


# --- verify and record -----------------------------------------------------

def verdict(build_plan, before, after, host_caps=None):
    """The checks of an install: {ok, problems, checks, summary, record}.

    before/after: vllm_info results (before: torch_files=record at least; after: import_vllm, torch_files=verify).
    host_caps: the host's GPU compute capabilities (the extension must hold kernels for them).
    """
    build_plan = _dict(build_plan)
    b_info, a_info = _dict(_dict(before).get("info")), _dict(_dict(after).get("info"))
    problems, checks = [], {}
    dist = build_plan.get("distribution")
    pin = build_plan.get("version")
    vinfo = _dict(a_info.get("vllm"))
    # import vllm reports the pin
    if vinfo.get("error"):
        problems.append(vinfo["error"])
        checks["import"] = {"ok": False, "error": vinfo["error"]}
    else:
        ok = same_release(vinfo.get("version"), pin)
        checks["import"] = {"ok": ok, "version": vinfo.get("version")}
        if not ok:
            problems.append("import vllm reports %s, the pin is %s" % (vinfo.get("version"), pin))
    installed = _dict(_dict(a_info.get("distributions")).get(dist))
    if not same_release(installed.get("version"), pin):
        problems.append("the distribution %s is %s, the pin is %s" % (dist, installed.get("version"), pin))
    # the CLI
    cli = a_info.get("cli")
    if build_plan.get("cli"):
        cli = _dict(cli)
        ok = bool(cli.get("ok")) and same_release(cli.get("version"), pin)
        checks["cli"] = {"ok": ok, "version": cli.get("version"), "error": cli.get("error")}
        if not ok:
            problems.append("`%s` %s" % (" ".join(build_plan["cli"][-2:]), cli.get("error") or "reports %s"
                                         % cli.get("version")))
    else:
        checks["cli"] = {"ok": None, "skipped": build_plan.get("cli_skipped")}
    # torch byte for byte
    tb, ta = _dict(b_info.get("torch")), _dict(a_info.get("torch"))
    same = (tb.get("version") == ta.get("version") and tb.get("record_sha256") == ta.get("record_sha256")
            and bool(tb.get("record_sha256")))
    files_ok = not ta.get("file_problems") if ta.get("verified") else None
    checks["torch"] = {"ok": same and files_ok is not False, "version": ta.get("version"),
                       "record_sha256": ta.get("record_sha256"), "files_checked": ta.get("files_checked"),
                       "file_problems": (ta.get("file_problems") or [])[:10]}
    if not same:
        problems.append("torch changed: %s (RECORD %s) before, %s (RECORD %s) after" % (
            tb.get("version"), _text(tb.get("record_sha256"))[:12], ta.get("version"),
            _text(ta.get("record_sha256"))[:12]))
    if files_ok is False:
        problems.append("torch's files differ from its RECORD: %s" % ", ".join((ta.get("file_problems") or [])[:5]))
    # the compiled extensions the release loads at start, and their kernels for the host's GPUs
    checks["extension"] = extension_check(build_plan, vinfo.get("extension"), host_caps, problems)
    # the imports the engine makes at start, as the service's account
    checks["start"] = start_check_verdict(build_plan, a_info.get("start"), installed.get("version"), problems)
    # the model's architecture
    arch = build_plan.get("model_architecture")
    if arch:
        known = _dict(vinfo.get("registry")).get(arch)
        checks["model_architecture"] = {"ok": bool(known), "architecture": arch, "error": vinfo.get("registry_error")}
        if vinfo.get("registry_error"):
            problems.append(vinfo["registry_error"])
        elif not known:
            problems.append("vLLM %s's registry has no %s (Qwen3.5 needs vLLM 0.17.0 or newer). Fix: pin a vLLM"
                            " release that serves the model." % (pin, arch))
    else:
        checks["model_architecture"] = {"ok": None, "skipped": "vllm_source_model_architecture is empty"}
    ok = not problems
    ext = _dict(checks.get("extension"))
    summary = "vLLM %s (%s, method %s) in %s: import%s, torch %s unchanged%s%s%s" % (
        vinfo.get("version"), dist, build_plan.get("method"), build_plan.get("venv"),
        ", CLI" if checks["cli"].get("ok") else "", ta.get("version"),
        (", %s load" % ", ".join(ext.get("loaded") or [])) if ext.get("ok") else "",
        ", the engine's start imports pass as %s" % _dict(checks.get("start")).get("user")
        if _dict(checks.get("start")).get("ok") else "",
        (", %s in the registry" % arch) if _dict(checks.get("model_architecture")).get("ok") else "")
    return {"ok": ok, "problems": problems, "checks": checks, "summary": summary + ".",
            "record": record(build_plan, vinfo, installed, ta, checks, problems)}


def extension_check(build_plan, ext, host_caps, problems):
    """The check of the compiled extensions (vllm_info's extension reading): the release's own loader loaded at
    least one, without an error or a warning that an import failed; with the kernels listed, every library of
    vLLM's own kernels it loaded (vllm_probe.CORE_KERNELS_RE: _C, _C_stable_libtorch, _moe_C*) has kernels that run
    on each of host_caps. The other libraries are listed, not judged: _qutlass_C, FlashMLA and FlashAttention 3
    hold kernels for some archs only, and vLLM uses them on those GPUs alone (RV arch_specific names those that
    have none for the host)."""
    if build_plan.get("probe_platform") is None:
        return {"ok": None, "skipped": "VLLM_TARGET_DEVICE=empty (CPU-only test path): no kernels"}
    ext = _dict(ext)
    loaded = [_text(p) for p in ext.get("loaded")] if isinstance(ext.get("loaded"), list) else []
    entry = {"ok": True, "platform": ext.get("platform"), "loader": ext.get("loader"), "loaded": loaded,
             "shipped": ext.get("shipped") or [], "error": ext.get("error"), "warnings": ext.get("warnings") or []}
    fix = (" Fix: reinstall vLLM %s into %s (playbooks/vllm.yml checks again); a build for another torch or CUDA"
           " than the venv's does not load." % (build_plan.get("version"), build_plan.get("venv")))
    if not ext:
        entry["ok"] = False
        problems.append("vLLM's compiled extensions were not loaded (no reading)." + fix)
        return entry
    if ext.get("error"):
        entry["ok"] = False
        problems.append("vLLM's loader of its %s kernels failed: %s.%s" % (ext.get("platform"), ext["error"], fix))
    for line in entry["warnings"]:
        entry["ok"] = False
        problems.append("vLLM's loader of its %s kernels said: %s.%s" % (ext.get("platform"), line, fix))
    if not loaded and not ext.get("error"):
        entry["ok"] = False
        problems.append("vLLM's loader (%s) loaded none of the compiled libraries vLLM ships (%s).%s" % (
            ext.get("loader"), ", ".join(entry["shipped"]) or "none", fix))
    caps = [c for c in (host_caps or []) if c]
    if entry["platform"] != "cuda" or not caps:
        return entry
    kernels = ext.get("kernels")
    if kernels is None:
        entry["kernels"] = None
        entry["note"] = "the kernels were not listed (no cuobjdump in %s)" % build_plan.get("cuda_home")
        return entry
    entry["kernels"] = dict((path, _dict(item).get("archs") or []) for path, item in sorted(_dict(kernels).items()))
    with_kernels = [path for path in loaded if entry["kernels"].get(path)]
    for path in loaded:
        error = _dict(_dict(kernels).get(path)).get("error")
        if error:
            entry["ok"] = False
            problems.append("cannot list the kernels of vllm/%s: %s" % (path, error))
    if loaded and not with_kernels and not any(_dict(_dict(kernels).get(p)).get("error") for p in loaded):
        entry["ok"] = False
        problems.append("none of the libraries vLLM loads at start (%s) holds CUDA kernels: not a CUDA build."
                        % ", ".join(loaded) + fix)
    core = [path for path in with_kernels if vllm_probe.CORE_KERNELS_RE.match(path.rsplit("/", 1)[-1])]
    if loaded and with_kernels and not core:
        entry["ok"] = False
        problems.append("none of the libraries vLLM loads at start (%s) is one of its own kernels (_C,"
                        " _C_stable_libtorch, _moe_C): a layout this collection does not know." % ", ".join(loaded)
                        + fix)
    entry["arch_specific"] = {}
    for path in sorted(set(entry["kernels"]) - set(core)):
        missing = vllm_probe.kernels_missing(entry["kernels"][path], caps) if entry["kernels"][path] else []
        if missing:
            entry["arch_specific"][path] = entry["kernels"][path]
    for path in core:
        missing = vllm_probe.kernels_missing(entry["kernels"][path], caps)
        if missing:
            entry["ok"] = False
            has = ", ".join(entry["kernels"][path])
            problems.append("vllm/%s has no kernels for %s (it has %s). Fix: a vLLM build for this GPU: set"
                            " vllm_source_method: source with vllm_source_arch_list naming %s, or pin a release"
                            " whose wheel has them." % (path, ", ".join(missing), has, ", ".join(missing)))
    return entry


def start_check_verdict(build_plan, start, version, problems):
    """The check of the engine's start imports (vllm_info's start reading): each step passed; for a module an
    import missed, the distribution and version vLLM's metadata requires, and how to bring it."""
    plan_check = _dict(build_plan.get("start_check"))
    if not plan_check.get("run"):
        return {"ok": None, "skipped": plan_check.get("skipped") or "not asked"}
    start = _dict(start)
    user = start.get("user")
    entry = {"ok": bool(start.get("ok")) and not start.get("error"), "user": user, "note": start.get("note"),
             "platform": start.get("platform"), "failed": [], "missing": []}
    venv = build_plan.get("venv")
    if not start:
        problems.append("the engine's start imports were not run (no reading)")
        return dict(entry, ok=False)
    if start.get("error"):
        problems.append("the engine's start imports as %s: %s" % (user, start["error"]))
    explained = set()
    for item in start.get("missing") or []:
        item = _dict(item)
        reqs = item.get("requirements") or []
        explained.add(item.get("module"))
        entry["missing"].append({"module": item.get("module"), "requirement": reqs[0]["text"] if reqs else None})
        if not reqs:
            problems.append(
                "vLLM %s cannot start as %s: %s failed on the module %r, which no requirement of vLLM or of the"
                " installed packages names. Fix: install the package that provides it into %s, then run"
                " playbooks/vllm.yml again." % (version, user, item.get("step"), item.get("module"), venv))
            continue
        req, have = reqs[0], item.get("installed")
        state = ("%s is not installed" % req["name"]) if have is None else "%s %s is installed%s" % (
            req["name"], have, ", which does not meet it" if item.get("satisfied") is False else "")
        problems.append(
            "vLLM %s cannot start as %s: %s failed on the module %r. %s requires %s; %s. Fix: install %s into %s;"
            " with an exact list (vllm_source_requirements) add it there and its wheel to the wheelhouse, then run"
            " playbooks/vllm.yml again."
            % (version, user, item.get("step"), item.get("module"), req["required_by"], req["text"], state,
               req["text"], venv))
    for step in start.get("steps") or []:
        step = _dict(step)
        if step.get("ok") is not False:
            continue
        entry["failed"].append("%s: %s" % (step.get("step"), step.get("error")))
        if step.get("module") not in explained:
            problems.append("vLLM %s cannot start as %s: %s failed: %s" % (
                version, user, step.get("step"), step.get("error")))
    if start.get("device_type") is not None and start.get("device_type") != build_plan.get("probe_platform"):
        problems.append("vLLM finds the platform %s as %s, not %s: the service would not use its %s kernels (on a"
                        " GPU host: the account cannot open the GPU's devices, or the driver is not loaded)."
                        % (start.get("platform"), user, build_plan.get("probe_platform"),
                           build_plan.get("probe_platform")))
        entry["ok"] = False
    if entry["failed"]:
        entry["ok"] = False
    return entry


def record(build_plan, vinfo, installed, torch, checks, problems):
    """What the venv's record (.llm_stack/vllm.json) holds, for passed and failed checks alike: no time stamps, so a
    re-run writes nothing. record_state reads it back; vllm_serve refuses a vLLM whose record failed."""
    return {
        "format": RECORD_FORMAT,
        "ok": not problems,
        "problems": list(problems),
        "version": vinfo.get("version") or installed.get("version"),
        "pin": build_plan.get("version"),
        "distribution": build_plan.get("distribution"),
        "method": build_plan.get("method"),
        "target_device": build_plan.get("target_device"),
        "commit": build_plan.get("commit"),
        "git_url": build_plan.get("git_url_shown"),
        "key": build_plan.get("key"),
        "installed_from": mask_credentials(_text(_dict(installed.get("direct_url")).get("url"))),
        "vllm_record_sha256": installed.get("record_sha256"),
        "torch": {"version": torch.get("version"), "record_sha256": torch.get("record_sha256")},
        "checks": checks,
        "cpu_only_test_host": bool(build_plan.get("cpu_only_test_host")),
    }


def record_refusal(seen, venv):
    """vllm_serve's refusal of a vLLM whose record says its last checks failed: [] or one message with the fix.

    seen: vllm_serve_info's vllm reading (record_ok, record_problems); no record (a vLLM installed otherwise) is not
    refused.
    """
    seen = _dict(seen)
    if seen.get("record_ok") is not False:
        return []
    return ["vLLM %s in %s failed its checks when vllm_source last checked it (%s/.llm_stack/vllm.json): %s. Fix: bring"
            " what the checks name (the fix is in each), then run playbooks/vllm.yml again: it checks again, since a"
            " failed record counts as changed; vllm_serve starts vLLM once the record says it passed."
            % (seen.get("version"), venv, venv, "; ".join(_text(p) for p in (seen.get("record_problems") or [])[:5])
               or "no problem recorded")]
