# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gate's contract over a generated grid of stacks x host profiles (gate_grid.py).

- preflight (every part) reports exactly the union of what each part reports alone;
- where preflight passes, each role's own part, called with the inputs the role passes, passes;
- where preflight refuses and some stack passes on that host, the suggested stack passes the whole gate
  (once the runfile steps its block names are done); where it suggests none, no reference stack (every vLLM
  release x every build of its torch, with each Python the host has) passes either, unless the pins themselves
  pass but for a runfile step (STEP_RULES: the errors name the file, there is nothing to paste).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
import yaml

import gate_grid as G

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat, gate, gate_suggest
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat_matrix as M


# Refused cases without a suggestion checked against every reference stack: one in SAMPLE.
SAMPLE = 2
# Cases run again the way preflight includes the roles (role_gates): one in ROLE_GATES_SAMPLE.
ROLE_GATES_SAMPLE = 3


def _errors(result):
    return set(result["errors"])


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    tmpdir = str(tmp_path_factory.mktemp("gate_grid"))
    rows = []
    for name, stack, profile, runfiles in G.cases(tmpdir):
        params = G.preflight_params(stack, profile, runfiles)
        result = G.run(params)
        host_fact = gate.host_facts(params, result)
        rows.append({"name": name, "stack": stack, "profile": profile, "runfiles": runfiles, "params": params,
                     "result": result, "host_fact": host_fact})
    counts = {"cases": len(rows), "pass": sum(1 for row in rows if row["result"]["ok"])}
    counts["fail"] = counts["cases"] - counts["pass"]
    counts["suggested"] = sum(1 for row in rows if not row["result"]["ok"] and row["result"]["suggested"])
    counts["none"] = counts["fail"] - counts["suggested"]
    G.COUNTS.update(counts)
    return rows


def test_grid_is_generated_and_large(grid):
    assert len(grid) >= 500
    assert len(set(row["name"] for row in grid)) == len(grid)
    ok = [row for row in grid if row["result"]["ok"]]
    assert 50 < len(ok) < len(grid) - 50
    # every GPU class and every driver series meets the gate
    assert set(tuple(row["profile"]["gpus"]) for row in grid) >= set(tuple(g) for g in G.GPUS.values())
    assert set(row["profile"]["driver"] for row in grid) >= set(G.DRIVERS)
    assert set(row["profile"]["runfile"] for row in grid) == set(G.RUNFILE_MODES)
    assert set(row["profile"]["toolkit"] for row in grid) == set(G.TOOLKITS)


def test_preflight_is_the_union_of_the_parts(grid):
    for row in grid:
        union = set()
        for part in G.ALL_PARTS:
            union |= G.errors_of(dict(row["params"], parts=[part]))
        assert _errors(row["result"]) == union, row["name"]


def test_preflight_pass_means_every_role_passes(grid):
    for row in grid:
        if not row["result"]["ok"]:
            continue
        for part in G.ROLE_PARTS:
            params = G.role_params(part, row["stack"], row["profile"], row["runfiles"], row["host_fact"])
            errors = G.errors_of(params)
            assert not errors, (row["name"], part, errors)


def test_every_refusal_lists_fixes_naming_variables(grid):
    for row in grid:
        for problem in row["result"]["problems"]:
            assert problem["variables"], (row["name"], problem["msg"])
            if problem["severity"] == "error":
                assert "Fix: " in problem["msg"], problem["msg"]
            assert "cu1210" not in problem["msg"] and "cuXYZ build" not in problem["msg"]


def test_suggested_stack_passes_on_that_host(grid):
    for row in grid:
        suggested = row["result"]["suggested"]
        if row["result"]["ok"]:
            assert suggested is None and row["result"]["suggested_group_vars"] == ""
            continue
        if suggested is None:
            continue
        assert sorted(suggested) == sorted(compat.PINS)
        # as the gate sees the host (runfile settings and interpreter as they are): every error is a runfile step ...
        known = gate_suggest.candidate_params(row["params"], compat.validate(row["params"]), suggested)
        assert gate_suggest.passes(known), (row["name"], suggested, G.errors_of(known))
        steps = set(p["rule"] for p in gate.evaluate(known)[1] if p["severity"] == "error")
        block = row["result"]["suggested_group_vars"]
        runfile = compat.runfile_for(suggested["cuda_version"])["name"]
        if steps:
            assert steps <= gate_suggest.STEP_RULES and runfile in block, (row["name"], steps, block)
        # ... and on the host itself, once the block is pasted into group_vars and its steps are done
        pasted = G.preflight_params(G.apply_suggestion(row["stack"], suggested), G.after_steps(row["profile"]),
                                    row["runfiles"])
        assert not G.errors_of(pasted), (row["name"], suggested, G.errors_of(pasted))
        for pin in compat.PINS:
            assert '%s: "%s"' % (compat.VARIABLES[pin], suggested[pin]) in block
        # the steps are comments: the block is the pins alone for YAML
        assert sorted(yaml.safe_load(block)) == sorted(compat.VARIABLES[pin] for pin in compat.PINS)
        # the model family is kept
        if compat.qwen35_parts(row["stack"]["model"]):
            assert compat.qwen35_parts(suggested["model"])


def _reference_stacks(row):
    """Stacks to try on a host where nothing was suggested: every generated stack of the model's family, with each
    Python the host has, with and without flash-attn."""
    family = bool(compat.qwen35_parts(row["stack"]["model"]))
    pythons = list(row["profile"]["pythons"]) + ([row["profile"]["venv"]] if row["profile"]["venv"] else [])
    for dummy, stack in G.stacks():
        if bool(compat.qwen35_parts(stack["model"])) != family:
            continue
        if bool(row["stack"]["vllm_version"]) != bool(stack["vllm_version"]):
            continue
        for python in pythons or [stack["python_version"]]:
            for flash_attn in (stack["flash_attn_version"], ""):
                if flash_attn == "" and row["stack"]["flash_attn_version"]:
                    continue
                yield dict(stack, python_version=python, flash_attn_version=flash_attn,
                           model=compat.nearest_qwen35(row["stack"]["model"]) if family else row["stack"]["model"])


def _steps_only(row):
    """The pins pass but for a runfile step (a runfile to download, its checksum)."""
    errors = [p["rule"] for p in row["result"]["problems"] if p["severity"] == "error"]
    return bool(errors) and set(errors) <= gate_suggest.STEP_RULES


def test_pins_that_pass_but_for_a_runfile_step_get_no_suggestion(grid):
    rows = [row for row in grid if _steps_only(row)]
    assert rows
    for row in rows:
        assert row["result"]["suggested"] is None, row["name"]
        runfile = compat.runfile_for(row["stack"]["cuda_version"])["name"]
        assert all(runfile in message for message in row["result"]["errors"]), row["name"]


def test_no_suggestion_means_no_reference_stack_passes(grid):
    cache = {}
    checked = 0
    refused = [row for row in grid if not row["result"]["ok"] and row["result"]["suggested"] is None
               and not _steps_only(row)
               and not any(p["rule"] in gate_suggest.UNFIXABLE for p in row["result"]["problems"]
                           if p["severity"] == "error")]
    # every SAMPLE-th of them, to keep make unit fast
    for row in refused[::SAMPLE]:
        p = compat.validate(row["params"])
        for stack in _reference_stacks(row):
            known = gate_suggest.candidate_params(row["params"], p, stack)
            key = repr(sorted((k, repr(v)) for k, v in known.items() if k != "raw_pins"))
            if key not in cache:
                cache[key] = gate_suggest.passes(known)
            assert not cache[key], (row["name"], stack)
            checked += 1
    assert checked > 0


def test_preflight_through_the_role_gates_gives_the_same_verdict(grid):
    """Preflight as the role makes its call: its own parts (matrix, host), the roles' gates given back (role_gates),
    every option through stack_compat's argument spec: the same verdict and the same suggested stack."""
    for row in grid[::ROLE_GATES_SAMPLE]:
        params = G.preflight_role_gates_params(row["stack"], row["profile"], row["runfiles"], row["host_fact"])
        result = G.run(params)
        assert set(result["errors"]) == _errors(row["result"]), row["name"]
        assert result["suggested"] == row["result"]["suggested"], row["name"]
        assert result["suggested_group_vars"] == row["result"]["suggested_group_vars"], row["name"]


def test_one_release_in_another_spelling_gets_the_same_verdict(grid):
    """0.19.1.0 is 0.19.1 under PEP 440: the same problems, the same suggestion, on every host."""
    rows = [row for row in grid if row["stack"]["vllm_version"] == "0.19.1.0"]
    assert rows
    for row in rows:
        plain = G.run(dict(row["params"], vllm_version="0.19.1"))
        assert sorted(p["rule"] for p in row["result"]["problems"]) == sorted(p["rule"] for p in plain["problems"])
        assert row["result"]["suggested"] == plain["suggested"], row["name"]
        assert row["result"]["normalized"]["vllm_version"] == "0.19.1"


def test_unlisted_releases_are_refused_and_the_suggestion_is_listed(grid):
    rows = [row for row in grid if row["stack"]["vllm_version"] in ("0.19.1.post1", "0.35.0")]
    assert rows
    for row in rows:
        assert not row["result"]["ok"]
        assert "vllm-known" in set(p["rule"] for p in row["result"]["problems"] if p["severity"] == "error")
        if row["result"]["suggested"]:
            assert compat.listed(M.VLLM, row["result"]["suggested"]["vllm_version"]), row["name"]
    assert any(row["result"]["suggested"] for row in rows)


def test_preflight_prints_the_vllm_method_the_role_takes(grid):
    """vllm_source_method auto: preflight's vllm_method (its report's "vLLM from:" line) is what vllm_source's plan
    takes on that host, from the same facts (the contract preflight sets)."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm
    seen = set()
    for row in grid:
        stack, fact = row["stack"], row["host_fact"]
        if not stack["vllm_version"]:
            assert row["result"]["vllm_method"] is None
            continue
        choice = (row["result"]["vllm_method"], row["result"]["vllm_method_reason"])
        assert (fact["vllm_method"], fact["vllm_method_reason"]) == choice
        inputs = {"method": "auto", "version": stack["vllm_version"], "distribution": "vllm", "target_device": "cuda",
                  "torch_version": stack["torch_version"], "torch_cuda": stack["torch_cuda"],
                  "cpu_only_test_host": row["profile"]["test_host"]}
        # preflight's contract holds the host's GPUs (roles/preflight: contract.gpu)
        gpu = {"count": len(row["profile"]["gpus"]), "compute_caps": row["profile"]["gpus"],
               "driver_version": row["profile"]["driver"]}
        plan = vllm.plan(inputs, {"llm_stack_host": dict(fact, gpu=gpu)})
        assert (plan["method"], plan["method_reason"]) == choice, row["name"]
        seen.add(plan["method"])
    assert seen == {"wheel", "source"}
