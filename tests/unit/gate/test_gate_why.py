# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Regression tests: each case under "Why" of the one-gate work and the loose inputs of the hardening work.

Each one is refused at preflight (every part), or passes every role's own part.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import pytest
import yaml

import gate_grid as G

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat, gate, gate_suggest
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat_matrix as M
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.compat import StackInputError

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
ROLE_PARTS = tuple(G.ROLE_PARTS)


def defaults():
    with open(os.path.join(REPO, "roles", "llm_stack", "defaults", "main.yml")) as handle:
        data = yaml.safe_load(handle)
    return dict((pin, data[compat.VARIABLES[pin]]) for pin in compat.PINS)


GUIDE = {"cuda_version": "12.1", "torch_version": "2.3.1", "torch_cuda": "cu121", "python_version": "3.10",
         "flash_attn_version": "2.6.3", "vllm_version": "0.19.1", "transformers_version": "4.41.2",
         "model": "Qwen/Qwen3.5-7B"}

# An H100 host on the 550 driver (supports CUDA 12.4), Pythons 3.10 to 3.12, no toolkit, runfile checksum set.
H100_550 = {"gpus": ["9.0"], "driver": "550.54.15", "toolkit": None, "runfile": "url",
            "pythons": ["3.10", "3.11", "3.12"], "venv": None, "test_host": False, "require_gpu": True,
            "gpu_error": "", "arch_list": ""}


@pytest.fixture
def runfiles(tmp_path):
    return G.controller_dir(str(tmp_path))


def preflight(stack, runfiles, **profile):
    return G.run(G.preflight_params(stack, dict(H100_550, **profile), runfiles))


def rules(result, severity="error"):
    return sorted(set(p["rule"] for p in result["problems"] if p["severity"] == severity))


def roles_pass(stack, runfiles, result, **profile):
    profile = dict(H100_550, **profile)
    params = G.preflight_params(stack, profile, runfiles)
    fact = gate.host_facts(params, result)
    return dict((part, sorted(G.errors_of(G.role_params(part, stack, profile, runfiles, fact)))) for part in ROLE_PARTS)


def test_driver_550_with_the_defaults_passes_preflight_and_every_role(runfiles):
    stack = defaults()
    result = preflight(stack, runfiles)
    assert result["ok"] is True, result["errors"]
    # the one driver rule: below the release's bundled driver is a warning, never an error; vllm_source_method auto
    # takes vLLM 0.19.1's release wheel (CUDA 12.9) here, through minor version compatibility
    assert rules(result, "warning") == ["cuda-driver-release", "torch-driver-release", "vllm-binary-driver-release"]
    assert result["vllm_method"] == "wheel"
    assert roles_pass(stack, runfiles, result) == {"cuda_toolkit": [], "torch": [], "flash_attn": [], "vllm": []}
    assert compat.driver_runtime_problems("550.54.15", "cu128")[0][:2] == ("warning", "torch-driver-release")
    assert compat.driver_runtime_problems("470.182.03", "cu128")[0][:2] == ("error", "torch-driver")


def test_cuda_x_y_is_refused_at_preflight_as_the_role_would(runfiles):
    stack = dict(defaults(), cuda_version="12.1")
    result = preflight(stack, runfiles)
    assert "cuda-version-format" in rules(result)
    message = [p["msg"] for p in result["problems"] if p["rule"] == "cuda-version-format"][0]
    assert message.startswith("llm_stack_cuda_version=12.1:")
    assert message.endswith('Fix: set llm_stack_cuda_version to "12.1.1"')
    # the matrix alone (the README's command line) still takes it
    assert gate.run_gate(dict(stack, parts=["matrix"]))["errors"] == []


def test_cuda_12_6_3_has_a_runfile(runfiles):
    entry = compat.runfile_for("12.6.3")
    assert entry == {"name": "cuda_12.6.3_560.35.05_linux.run", "driver": "560.35.05",
                     "url": "https://developer.download.nvidia.com/compute/cuda/12.6.3/local_installers/"
                            "cuda_12.6.3_560.35.05_linux.run"}
    stack = dict(defaults(), cuda_version="12.6.3", torch_cuda="cu126")
    result = preflight(stack, runfiles)
    assert result["ok"] is True, result["errors"]
    assert result["cuda_runfile"] == entry
    assert roles_pass(stack, runfiles, result)["cuda_toolkit"] == []
    # every release of the matrix has one, named as NVIDIA names it
    for release, driver in M.CUDA_RELEASE_DRIVER.items():
        assert compat.runfile_for(release)["name"] == "cuda_%s_%s_linux.run" % (release, driver)
    assert compat.runfile_for("12.6.2") is None and compat.runfile_for("12.6") is None


def test_url_source_without_checksum_is_refused_at_preflight(runfiles):
    stack = defaults()
    result = preflight(stack, runfiles, runfile="url-no-checksum")
    assert rules(result) == ["cuda-runfile-checksum"]
    message = result["errors"][0]
    assert "cuda_toolkit_runfile_checksum" in message and "md5sum.txt" in message and "Fix: " in message
    # no suggestion: no pin fixes a missing checksum
    assert result["suggested"] is None
    # a host that already has the toolkit needs no runfile
    assert preflight(stack, runfiles, runfile="url-no-checksum", toolkit="12.8.1")["ok"] is True
    # a controller copy does
    assert preflight(stack, runfiles, runfile="controller")["ok"] is True


@pytest.mark.parametrize("torch, fix", [("v2.10.0", 'set llm_stack_torch_version to "2.10.0"'),
                                        ("2.10.0+rocm6.2", 'set llm_stack_torch_version to "2.10.0" and'
                                                           ' llm_stack_torch_cuda to cu128')])
def test_torch_spellings_the_role_refuses_are_refused_at_preflight(runfiles, torch, fix):
    result = preflight(dict(defaults(), torch_version=torch), runfiles)
    assert "torch-version-format" in rules(result)
    assert any(fix in message for message in result["errors"]), result["errors"]
    assert result["suggested"]["torch_version"] == "2.10.0"
    assert result["normalized"]["torch_version"] == "2.10.0"


def test_the_guides_stack_is_refused_in_one_round_with_a_stack_that_passes(runfiles):
    result = preflight(GUIDE, runfiles)
    assert result["ok"] is False
    assert rules(result) == ["cuda-version-format", "model-transformers", "qwen35-model-id", "vllm-torch-pin",
                             "vllm-transformers"]
    for problem in result["problems"]:
        assert problem["variables"] and problem["part"] in ("matrix", "cuda_toolkit")
    suggested = result["suggested"]
    assert suggested == {"cuda_version": "12.8.1", "torch_version": "2.10.0", "torch_cuda": "cu128",
                         "python_version": "3.10", "flash_attn_version": "2.6.3", "vllm_version": "0.19.1",
                         "transformers_version": "5.5.4", "model": "Qwen/Qwen3.5-9B"}
    # round two: the block pasted into group_vars passes the whole gate and every role
    pasted = yaml.safe_load(result["suggested_group_vars"])
    stack = dict((pin, pasted[compat.VARIABLES[pin]]) for pin in compat.PINS)
    assert stack == suggested
    again = preflight(stack, runfiles)
    assert again["ok"] is True, again["errors"]
    assert "cu121" not in " ".join(again["compat_warnings"])
    assert roles_pass(stack, runfiles, again) == {"cuda_toolkit": [], "torch": [], "flash_attn": [], "vllm": []}


def test_suggested_group_vars_quotes_versions():
    result = gate.run_gate(dict(GUIDE, gpus=["8.9"]))
    block = result["suggested_group_vars"]
    assert 'llm_stack_python_version: "3.10"' in block
    assert 'llm_stack_torch_version: "2.10.0"  # was "2.3.1"' in block
    assert isinstance(yaml.safe_load(block)["llm_stack_python_version"], str)


# Issue 11 (hardening), stack_compat's items.

def test_v_prefixed_vllm_gets_every_vllm_rule():
    plain = gate.run_gate(dict(GUIDE, cuda_version="12.1.1"))
    prefixed = gate.run_gate(dict(GUIDE, cuda_version="12.1.1", vllm_version="v0.19.1"))
    assert rules(prefixed) == rules(plain)
    assert "vllm-torch-pin" in rules(prefixed) and "vllm-known" not in rules(prefixed, "warning")
    assert prefixed["normalized"]["vllm_version"] == "0.19.1"


@pytest.mark.parametrize("option, value", [
    ("torch_version", u"\uff12.10.0"),
    ("cuda_version", u"12.\u0668.1"),
    ("vllm_version", "0." + "1" * 5000),
    ("transformers_version", "9" * 5000),
    ("driver_version", "5" * 5000 + ".1"),
    ("gpus", ["0.0"]),
    ("gpus", [u"\uff19.0"]),
    ("torch_cuda", "12.10"),
    ("model", "Qwen/" + "Q" * 500),
])
def test_loose_input_is_a_clean_error_naming_the_option(option, value):
    with pytest.raises(StackInputError) as err:
        params = dict(defaults(), gpus=["9.0"])
        params[option] = value
        gate.run_gate(params)
    assert err.value.option == option
    assert len(str(err.value)) < 400


def test_qwen35_without_a_size_hits_the_model_id_rule():
    result = gate.run_gate(dict(defaults(), model="Qwen/Qwen3.5"))
    assert rules(result) == ["qwen35-model-id"]
    assert result["suggested"]["model"] == "Qwen/Qwen3.5-9B"


def test_cuda_12_10_never_suggests_cu1210():
    assert compat.cuda_tag_or_none("12.10") is None
    with pytest.raises(StackInputError):
        compat.torch_cuda_tag("12.10")
    result = gate.run_gate(dict(defaults(), cuda_version="12.10.0", gpus=["9.0"]))
    text = " ".join(result["errors"] + result["compat_warnings"])
    assert "cu1210" not in text
    result = gate.run_gate(dict(defaults(), cuda_version="12.10.0", torch_cuda="cpu", gpus=["9.0"]))
    assert "cu1210" not in " ".join(result["errors"]) and "set llm_stack_torch_cuda to cu128" in " ".join(result["errors"])


def test_torch_build_arch_fix_names_an_actual_build():
    result = gate.run_gate(dict(defaults(), torch_cuda="cu126", cuda_version="12.6.3", gpus=["10.0"]))
    message = [p["msg"] for p in result["problems"] if p["rule"] == "torch-build-archs"][0]
    fix = message.split("Fix: ", 1)[1]
    assert re.search(r"set llm_stack_torch_cuda to cu12[89]|cu130", fix), fix
    tag = re.search(r"cu[0-9]{3}", fix).group(0)
    assert compat.torch_cuda_version(tag) in compat.torch_builds("2.10.0")
    # no build of that torch release covers the GPU: the fix names a torch release and its build
    old = gate.run_gate(dict(defaults(), torch_version="2.6.0", torch_cuda="cu126", cuda_version="12.6.3",
                             vllm_version="", gpus=["10.0"]))
    message = [p["msg"] for p in old["problems"] if p["rule"] == "torch-build-archs"][0]
    assert re.search(r"set llm_stack_torch_version to 2\.[0-9]+\.0 with llm_stack_torch_cuda cu1[23][0-9]", message)


def test_driver_too_old_for_the_build_names_builds_it_runs():
    message = compat.driver_runtime_problems("520.61.05", "cu128", torch_version="2.6.0")[0][2]
    assert "set llm_stack_torch_cuda to cu118" in message
    message = compat.driver_runtime_problems("470.182.03", "cu128", torch_version="2.10.0")[0][2]
    assert "upgrade the driver to >= 525.60.13" in message


def test_no_suggestion_when_the_pins_pass_or_nothing_passes():
    assert gate.run_gate(dict(defaults(), gpus=["9.0"]))["suggested"] is None
    # a 450 driver runs no torch release vLLM pins
    result = gate.run_gate(dict(defaults(), gpus=["8.0"], driver_version="450.80.02"))
    assert result["ok"] is False and result["suggested"] is None and result["suggested_group_vars"] == ""
    # without vLLM, an older torch does
    result = gate.run_gate(dict(defaults(), gpus=["8.0"], driver_version="450.80.02", vllm_version="",
                                model="Qwen/Qwen2.5-7B-Instruct", transformers_version="4.41.2"))
    assert result["suggested"]["torch_cuda"] == "cu118" and result["suggested"]["cuda_version"] == "11.8.0"
    assert gate_suggest.passes(dict(defaults(), gpus=["8.0"], driver_version="450.80.02",
                                    **dict(result["suggested"])))


# The first run's items 4 and 5: versions judged by PEP 440, unlisted releases refused, the model's floors.

QWEN3_GUIDE = dict(GUIDE, model="Qwen/Qwen3-8B")
ALLOW = "llm_stack_allow_unlisted_versions"


def unlisted_message(result, rule="vllm-known"):
    found = [p for p in result["problems"] if p["rule"] == rule]
    assert len(found) == 1, result["problems"]
    return found[0]


def test_vllm_0_19_1_0_passes_like_0_19_1(runfiles):
    plain = preflight(defaults(), runfiles)
    zero = preflight(dict(defaults(), vllm_version="0.19.1.0"), runfiles)
    assert zero["ok"] is True, zero["errors"]
    assert rules(zero, "warning") == rules(plain, "warning")
    assert not [p for p in zero["problems"] if p["rule"] == "vllm-known"]
    assert zero["normalized"]["vllm_version"] == "0.19.1"
    # the torch and transformers pins alike
    same = preflight(dict(defaults(), torch_version="2.10.0.0", transformers_version="5.5.4.0"), runfiles)
    assert rules(same) == ["torch-version-format"] and same["normalized"]["torch_version"] == "2.10.0"
    assert 'Fix: set llm_stack_torch_version to "2.10.0"' in same["errors"][0]
    assert same["normalized"]["transformers_version"] == "5.5.4"


@pytest.mark.parametrize("vllm, nearest", [("0.19.1.post1", "0.19.1"), ("0.19.1rc1", "0.19.1"), ("0.19.2", "0.19.1"), ("0.35.0", "0.34.0")])
def test_unlisted_vllm_is_refused_with_the_variable_and_both_fixes(runfiles, vllm, nearest):
    result = preflight(dict(defaults(), vllm_version=vllm), runfiles)
    assert result["ok"] is False
    assert rules(result) == ["vllm-known"]
    problem = unlisted_message(result)
    message = problem["msg"]
    assert message.startswith("llm_stack_vllm_version=%s: vLLM %s is not in the matrix (it lists %s to %s)"
                              % (vllm, vllm, M.VLLM_FLOOR, max(M.VLLM, key=compat.Version)))
    assert "its torch pin, Python range, transformers requirement and release wheel CUDA are not checked" in message
    fixes = message.split("Fix: ", 1)[1]
    assert "run `make matrix`" in fixes and "set %s: true" % ALLOW in fixes
    assert fixes.endswith("set llm_stack_vllm_version to %s (the nearest listed)" % nearest)
    assert problem["variables"] == ["llm_stack_vllm_version", ALLOW]
    # the suggestion is the nearest listed release, and it passes (round two)
    assert result["suggested"]["vllm_version"] == nearest
    pasted = preflight(G.apply_suggestion(defaults(), result["suggested"]), runfiles)
    assert pasted["ok"] is True, pasted["errors"]


@pytest.mark.parametrize("vllm", ["0.19.1.post1", "0.35.0"])
def test_unlisted_vllm_with_qwen3_and_old_torch_is_refused_in_one_round(runfiles, vllm):
    """The issue's case: the guide's torch 2.3.1/cu121 and transformers 4.41.2 for Qwen/Qwen3-8B, vLLM unlisted."""
    stack = dict(QWEN3_GUIDE, vllm_version=vllm)
    result = preflight(stack, runfiles)
    assert result["ok"] is False
    assert rules(result) == ["cuda-version-format", "model-transformers", "vllm-known"]
    model = unlisted_message(result, "model-transformers")["msg"]
    assert model.startswith("llm_stack_model=Qwen/Qwen3-8B / llm_stack_transformers_version=4.41.2: Qwen3 models"
                            " need transformers >= 4.51.0")
    # one round: the suggested stack passes the whole gate and every role
    suggested = result["suggested"]
    assert suggested["model"] == "Qwen/Qwen3-8B" and suggested["vllm_version"] in M.VLLM
    again = preflight(G.apply_suggestion(stack, suggested), runfiles)
    assert again["ok"] is True, again["errors"]
    assert roles_pass(G.apply_suggestion(stack, suggested), runfiles, again) == {
        "cuda_toolkit": [], "torch": [], "flash_attn": [], "vllm": []}


@pytest.mark.parametrize("vllm", ["0.19.1.post1", "0.35.0"])
def test_the_opt_in_keeps_every_other_rule(runfiles, vllm):
    stack = dict(QWEN3_GUIDE, vllm_version=vllm)
    params = dict(G.preflight_params(stack, H100_550, runfiles), allow_unlisted_versions=True)
    result = G.run(params)
    assert result["ok"] is False
    assert rules(result) == ["cuda-version-format", "model-transformers"]
    warning = unlisted_message(result)
    assert warning["severity"] == "warning" and "%s=true accepts it" % ALLOW in warning["msg"]
    # what the release's row would check is not; everything else is
    assert not [p for p in result["problems"] if p["rule"].startswith("vllm-") and p["rule"] != "vllm-known"]
    fixed = dict(params, cuda_version="12.1.1", transformers_version="4.51.3")
    fixed["raw_pins"] = dict(params["raw_pins"], llm_stack_cuda_version="12.1.1",
                             llm_stack_transformers_version="4.51.3")
    assert G.run(fixed)["ok"] is True
    # the same stack without vLLM: the model's floor holds all the same
    alone = G.run(dict(params, vllm_version=""))
    assert rules(alone) == ["cuda-version-format", "model-transformers"]


def test_vllm_0_34_0_before_the_refresh_is_refused(runfiles, monkeypatch):
    """What the gate did with 0.34.0 before make matrix added it: refused, no longer waved through."""
    stack = dict(QWEN3_GUIDE, vllm_version="0.34.0")
    before = dict((key, value) for key, value in M.VLLM.items() if key != "0.34.0")
    monkeypatch.setattr(M, "VLLM", before)
    result = preflight(stack, runfiles)
    assert rules(result) == ["cuda-version-format", "model-transformers", "vllm-known"]
    assert "set llm_stack_vllm_version to 0.33.0 (the nearest listed)" in unlisted_message(result)["msg"]
    monkeypatch.undo()
    after = preflight(stack, runfiles)
    assert rules(after) == ["cuda-version-format", "model-transformers", "vllm-python", "vllm-torch-pin",
                            "vllm-transformers"]


@pytest.mark.parametrize("option, value, rule", [("torch_version", "2.15.0", "torch-known"),
                                                 ("torch_version", "2.10.7", "torch-known"),
                                                 ("transformers_version", "5.5.5", "transformers-known")])
def test_unlisted_torch_and_transformers_are_refused_alike(runfiles, option, value, rule):
    stack = dict(defaults(), vllm_version="", **{option: value})
    result = preflight(stack, runfiles)
    assert rule in rules(result)
    message = unlisted_message(result, rule)["msg"]
    assert message.startswith("%s=%s:" % (compat.VARIABLES[option], value))
    assert "make matrix" in message and "set %s: true" % ALLOW in message
    params = dict(G.preflight_params(stack, H100_550, runfiles), allow_unlisted_versions=True)
    assert rule in rules(G.run(params), "warning") and rule not in rules(G.run(params))


def _flat(tasks):
    """The tasks of a task file, those inside blocks included."""
    for task in tasks or []:
        yield task
        if isinstance(task, dict):
            for key in ("block", "rescue", "always"):
                yield from _flat(task.get(key))


def test_every_gate_call_that_takes_these_pins_passes_the_opt_in():
    """The opt-in reaches stack_compat from preflight and from each role's own gate (torch's through its action)."""
    found = 0
    for root, dummy, files in os.walk(os.path.join(REPO, "roles")):
        for name in files:
            if not name.endswith(".yml") or "tasks" not in root:
                continue
            with open(os.path.join(root, name)) as handle:
                tasks = yaml.safe_load(handle) or []
            for task in _flat(tasks):
                args = task.get("gpufleet.llm_stack.stack_compat") if isinstance(task, dict) else None
                if not args or not set(args) & {"vllm_version", "torch_version", "transformers_version"}:
                    continue
                found += 1
                assert args.get("allow_unlisted_versions") == "{{ %s }}" % ALLOW, (root, name, task["name"])
    assert found >= 3
    with open(os.path.join(REPO, "roles", "torch", "vars", "main.yml")) as handle:
        assert yaml.safe_load(handle)["torch_gate_inputs"]["allow_unlisted_versions"] == "{{ %s }}" % ALLOW


# A real mixed fleet's first run: suggestions for every runfile source.

@pytest.mark.parametrize("mode", G.RUNFILE_MODES)
def test_the_preflight_call_shape_suggests_a_stack_for_every_runfile_source(runfiles, mode):
    """The example inventory's setting (cuda_toolkit_runfile_source: controller) reaches preflight through the
    cuda_toolkit role's gate (role_gates); preflight's own call leaves the runfile options at stack_compat's
    defaults. A pin that no runfile concerns (a Qwen3.5 size that does not exist) gets its suggestion all the same."""
    stack = dict(defaults(), model="Qwen/Qwen3.5-7B")
    profile = dict(H100_550, runfile=mode, toolkit="12.8.1" if mode == "url-no-checksum" else None)
    params = G.preflight_params(stack, profile, runfiles)
    fact = gate.host_facts(params, G.run(params))
    result = G.run(G.preflight_role_gates_params(stack, profile, runfiles, fact))
    assert rules(result) == ["qwen35-model-id"]
    assert result["suggested"] == dict(stack, model="Qwen/Qwen3.5-9B")


def test_a_gpu_below_sm80_passes_preflight_as_flash_attn_build_skips_it(runfiles):
    """flash_attn_build_below_sm80 (default skip) reaches preflight only through the flash_attn gate's inputs:
    preflight's own matrix part takes it from there, as flash_attn_build would (a warning, not an error)."""
    stack = defaults()
    profile = dict(H100_550, gpus=["7.5"])
    params = G.preflight_params(stack, profile, runfiles)
    result = G.run(params)
    assert result["ok"] is True, result["errors"]
    again = G.run(G.preflight_role_gates_params(stack, profile, runfiles, gate.host_facts(params, result)))
    assert again["ok"] is True, again["errors"]
    assert "flash-attn-below-sm80" in rules(again, "warning")


@pytest.mark.parametrize("mode, step", [
    ("controller-one", "and set cuda_toolkit_runfile_src to that path"),
    ("mirror", "# and cuda_toolkit_runfile_url: your mirror's copy of cuda_12.8.1_570.124.06_linux.run"),
    ("url", "# and cuda_toolkit_runfile_checksum: the md5 of cuda_12.8.1_570.124.06_linux.run from"),
    ("controller", None),
])
def test_a_suggested_release_without_its_runfile_at_hand_names_what_to_download(runfiles, mode, step):
    """A B200 on CUDA 12.6 and torch's cu126 build (neither knows sm_100): the suggestion moves to cu128 and CUDA
    12.8.1, whichever the runfile source; where 12.8.1's runfile is not at hand, the block says what to download and
    set."""
    stack = dict(defaults(), cuda_version="12.6.3", torch_cuda="cu126")
    profile = dict(H100_550, gpus=["10.0"], driver="580.159.04", runfile=mode)
    params = G.preflight_params(stack, profile, runfiles)
    result = G.run(params)
    assert rules(result) == ["arch-first-cuda", "torch-build-archs"]
    assert result["suggested"] == dict(stack, cuda_version="12.8.1", torch_cuda="cu128")
    block = result["suggested_group_vars"]
    steps = [line for line in block.splitlines() if line.startswith("# and") or line.startswith("#  ")]
    if step is None:
        # every runfile is on the controller: nothing to download
        assert steps == []
    else:
        assert step in block, block
    if mode == "controller-one":
        folder = os.path.join(runfiles, "only", "12.6.3")
        assert "download cuda_12.8.1_570.124.06_linux.run from" in block
        assert "to %s and set" % os.path.join(folder, "cuda_12.8.1_570.124.06_linux.run") in block
    # the preflight call shape gives the same block
    again = G.run(G.preflight_role_gates_params(stack, profile, runfiles, gate.host_facts(params, result)))
    assert again["suggested_group_vars"] == block


# A real mixed fleet's first run: vllm_source_method auto, the default.

@pytest.mark.parametrize("driver, method, why", [
    ("550.54.15", "wheel", "auto: driver 550.54.15 runs vLLM 0.19.1's release wheel (CUDA 12.9, torch==2.10.0) through"
                           " minor version compatibility; its torch pin is the stack's torch, and torch's cu128 build"
                           " brings the CUDA 12 runtime its kernels link"),
    ("570.133.20", "wheel", "auto: driver 570.133.20 runs vLLM 0.19.1's release wheel (CUDA 12.9, torch==2.10.0)"
                            " through minor version compatibility;"),
    ("580.159.04", "wheel", "auto: driver 580.159.04 runs vLLM 0.19.1's release wheel (CUDA 12.9, torch==2.10.0); its"
                            " torch pin"),
])
def test_the_example_stack_takes_the_release_wheel_on_drivers_550_570_580(runfiles, driver, method, why):
    """The example inventory's stack (vLLM 0.19.1, torch 2.10.0+cu128): preflight says which method vllm_source
    takes and why, in its result, in the host's contract (the report's "vLLM from:" line) and through the role gates'
    call shape, and every role's own gate passes."""
    stack = defaults()
    profile = dict(H100_550, driver=driver, runfile="controller")
    params = G.preflight_params(stack, profile, runfiles)
    result = G.run(params)
    assert result["ok"] is True, result["errors"]
    assert result["vllm_method"] == method and result["vllm_method_reason"].startswith(why)
    fact = gate.host_facts(params, result)
    assert (fact["vllm_method"], fact["vllm_method_reason"]) == (method, result["vllm_method_reason"])
    again = G.run(G.preflight_role_gates_params(stack, profile, runfiles, fact))
    assert (again["vllm_method"], again["vllm_method_reason"]) == (method, result["vllm_method_reason"])
    # the driver released with CUDA 12.9 is 575.51.03: below it, the warning of minor version compatibility
    assert ("vllm-binary-driver-release" in rules(result, "warning")) == (driver != "580.159.04")
    assert roles_pass(stack, runfiles, result, driver=driver, runfile="controller") == {
        "cuda_toolkit": [], "torch": [], "flash_attn": [], "vllm": []}


def test_a_cu128_fleet_on_vllm_0_20_builds_from_source_and_says_why(runfiles):
    """vLLM 0.20.0's release wheel is CUDA 13.0 (libcudart.so.13); torch 2.11.0's cu128 build brings the CUDA 12
    runtime, the build a fleet on 570 drivers runs: auto takes source, and preflight says why."""
    stack = dict(defaults(), vllm_version="0.20.0", torch_version="2.11.0", transformers_version="5.5.4")
    profile = dict(H100_550, driver="570.133.20")
    result = G.run(G.preflight_params(stack, profile, runfiles))
    assert result["ok"] is True, result["errors"]
    assert result["vllm_method"] == "source"
    assert "links libcudart.so.13, which torch's cu128 build does not bring" in result["vllm_method_reason"]
    # on a build host (no driver) of the same fleet: the pins decide, and they say source too
    build = dict(profile, gpus=[], driver=None, require_gpu=False, arch_list="8.0;9.0")
    assert G.run(G.preflight_params(stack, build, runfiles))["vllm_method"] == "source"
    # with the example stack, a build host takes the wheel: nothing runs vLLM's kernels there
    result = G.run(G.preflight_params(defaults(), build, runfiles))
    assert result["vllm_method"] == "wheel" and "no NVIDIA driver (a build host)" in result["vllm_method_reason"]
