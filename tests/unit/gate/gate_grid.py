# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The grid of the gate's contract: stacks x host profiles, generated from the matrix.

A host profile is what the host and the inventory give besides the pins:
its GPUs, driver, installed toolkit, Pythons, the runfile settings. From a
profile and a stack this module builds exactly the options preflight
passes (every part) and those each role passes to its own part, the way
the roles' tasks/validate.yml do:

- cuda_toolkit: the pins it reads (cuda_version), the driver and GPUs,
  whether its release is installed, the runfile settings;
- torch: its pins, the driver and GPUs, python_info's interpreter for
  python<version>, the venv's Python, the wheelhouse and extra packages;
- flash_attn_build: its pins, the arch list preflight set (the fact
  llm_stack_host.arch_list), its options, the wheelhouse;
- vllm_source: its pins (torch's CUDA build among them), the driver,
  vllm_source_method auto (the default), distribution vllm, target cuda,
  an empty venv (a first run).

``preflight_role_gates_params`` builds preflight's own call as the role
makes it: parts matrix and host, each role's gate given back in
``role_gates``, every option through stack_compat's argument spec (so the
options preflight leaves out hold their defaults, runfile_source url among
them).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import itertools
import os

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat_matrix as M
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import gate
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.gate_options import OPTIONS
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.versions import Version

ALL_PARTS = ["matrix", "host", "cuda_toolkit", "torch", "flash_attn", "vllm"]
# The parts a role's own gate runs (tasks/validate.yml), in the order preflight includes them.
ROLE_PARTS = ["cuda_toolkit", "torch", "flash_attn", "vllm"]

# Filled by test_gate_grid.py, printed by conftest.py's pytest_terminal_summary.
COUNTS = {}

# GPU classes: name -> compute capabilities.
GPUS = {
    "V100": ["7.0"],
    "T4": ["7.5"],
    "A100": ["8.0"],
    "A10": ["8.6"],
    "L40S": ["8.9"],
    "H100": ["9.0"],
    "B200": ["10.0"],
    "RTX5090": ["12.0"],
}

# Drivers from the 450 to the 600 series (the newer ones as recorded in tests/fixtures/gpu).
DRIVERS = ["450.80.02", "470.182.03", "525.60.13", "535.104.05", "550.54.15", "560.35.05", "570.133.20",
           "575.57.08", "580.159.04", "590.48.01", "610.43.02"]

# Installed toolkit: none, or one release.
TOOLKITS = [None, "12.8.1", "13.0.2", "12.6.3"]

# Runfile settings (cuda_toolkit_runfile_*): the hosts download it from NVIDIA with a checksum, or without one;
# a controller copy, in a folder that holds the runfile of every release ("controller") or the pinned release's
# alone ("controller-one", the example inventory's setting); the hosts download it from an internal mirror
# (cuda_toolkit_runfile_url) with a checksum ("mirror").
RUNFILE_MODES = ["url", "url-no-checksum", "controller", "controller-one", "mirror"]
MIRROR = "https://mirror.example.internal/nvidia/cuda/"

# Pythons the host has (each with its venv module), and an existing venv's Python.
PYTHONS = [(["3.12"], None), (["3.10", "3.11", "3.12"], None), (["3.12"], "3.12"), ([], None)]

QWEN = "Qwen/Qwen3.5-9B"
NOT_QWEN = "Qwen/Qwen2.5-7B-Instruct"


def _stack(cuda, torch, tag, python, fa, vllm, transformers, model):
    return {"cuda_version": cuda, "torch_version": torch, "torch_cuda": tag, "python_version": python,
            "flash_attn_version": fa, "vllm_version": vllm, "transformers_version": transformers, "model": model}


def stacks():
    """(name, stack): every vLLM release x every CUDA build of its torch, plus the stacks of issue 10's Why and
    the unlisted releases of the first run's item 4."""
    found = []
    for vllm in sorted(M.VLLM, key=Version):
        entry = M.VLLM[vllm]
        suggest = entry["transformers_suggest"]
        transformers = suggest or compat._spec_floor(entry["transformers"])
        for build in compat.torch_builds(entry["torch"]):
            cuda = compat.release_of_minor(build) or compat.known_runfile_releases()[-1]
            found.append(("vllm%s-%s" % (vllm, compat._cu(build)),
                          _stack(cuda, entry["torch"], compat._cu(build), "3.12", "2.8.3", vllm, transformers,
                                 QWEN if suggest else NOT_QWEN)))
    found += [
        ("no-vllm-torch2.6-cu118", _stack("11.8.0", "2.6.0", "cu118", "3.10", "", "", "4.41.2", NOT_QWEN)),
        ("no-vllm-torch2.4-cu121", _stack("12.1.1", "2.4.0", "cu121", "3.11", "2.8.3", "", "4.41.2", NOT_QWEN)),
        ("guide", _stack("12.1", "2.3.1", "cu121", "3.10", "2.6.3", "0.19.1", "4.41.2", "Qwen/Qwen3.5-7B")),
        ("cuda-x.y", _stack("12.1", "2.10.0", "cu128", "3.12", "2.8.3", "0.19.1", "5.5.4", QWEN)),
        ("cuda-12.6.3", _stack("12.6.3", "2.10.0", "cu126", "3.12", "2.8.3", "0.19.1", "5.5.4", QWEN)),
        ("torch-v", _stack("12.8.1", "v2.10.0", "cu128", "3.12", "2.8.3", "0.19.1", "5.5.4", QWEN)),
        ("torch-rocm", _stack("12.8.1", "2.10.0+rocm6.2", "cu128", "3.12", "2.8.3", "0.19.1", "5.5.4", QWEN)),
        ("vllm-v", _stack("12.8.1", "2.3.1", "cu121", "3.10", "2.6.3", "v0.19.1", "4.41.2", QWEN)),
        # the first run's item 4: 0.19.1.0 is 0.19.1; a post release and a release newer than the matrix are not
        ("vllm-0.19.1.0", _stack("12.8.1", "2.10.0", "cu128", "3.12", "2.8.3", "0.19.1.0", "5.5.4", QWEN)),
        ("vllm-post", _stack("12.8.1", "2.10.0", "cu128", "3.12", "2.8.3", "0.19.1.post1", "5.5.4", QWEN)),
        ("vllm-next", _stack("13.0.2", "2.14.0", "cu130", "3.12", "2.8.3", "0.35.0", "5.16.1", QWEN)),
        ("qwen3-guide", _stack("12.1", "2.3.1", "cu121", "3.10", "2.6.3", "0.35.0", "4.41.2", "Qwen/Qwen3-8B")),
    ]
    return found


def host_profiles():
    """(name, profile): every GPU class x every driver, toolkits, Pythons and runfile modes in rotation,
    plus hosts without GPUs (a CPU-only test host, a build host, a host whose nvidia-smi fails)."""
    profiles = []
    for index, (gpu, driver) in enumerate(itertools.product(sorted(GPUS), DRIVERS)):
        pythons, venv = PYTHONS[index % len(PYTHONS)]
        label = "%s-%s-tk%s-%s-py%s" % (gpu, driver, TOOLKITS[index % len(TOOLKITS)],
                                        RUNFILE_MODES[index % len(RUNFILE_MODES)], "+".join(pythons) or "none")
        profiles.append((label,
                         {"gpus": GPUS[gpu], "driver": driver, "toolkit": TOOLKITS[index % len(TOOLKITS)],
                          "runfile": RUNFILE_MODES[index % len(RUNFILE_MODES)], "pythons": pythons, "venv": venv,
                          "test_host": False, "require_gpu": True, "gpu_error": "", "arch_list": ""}))
    profiles.append(("cpu-test-host", {"gpus": [], "driver": None, "toolkit": None, "runfile": "controller",
                                       "pythons": ["3.11", "3.12"], "venv": None, "test_host": True,
                                       "require_gpu": True, "gpu_error": "", "arch_list": "8.0"}))
    profiles.append(("build-host", {"gpus": [], "driver": None, "toolkit": None, "runfile": "url",
                                    "pythons": ["3.12"], "venv": None, "test_host": False, "require_gpu": False,
                                    "gpu_error": "", "arch_list": "8.0;9.0"}))
    profiles.append(("wedged-gpu", {"gpus": [], "driver": None, "toolkit": None, "runfile": "url",
                                    "pythons": ["3.12"], "venv": None, "test_host": False, "require_gpu": True,
                                    "gpu_error": "nvidia-smi did not answer within 30 seconds", "arch_list": ""}))
    return profiles


def controller_dir(tmpdir):
    """A controller directory holding the runfile of every known release (empty files), and under only/<release>/
    a folder per release holding that release's runfile alone."""
    path = os.path.join(tmpdir, "runfiles")
    if not os.path.isdir(path):
        os.makedirs(path)
        for release, entry in M.CUDA_RUNFILES.items():
            open(os.path.join(path, entry["name"]), "w").close()
            os.makedirs(os.path.join(path, "only", release))
            open(os.path.join(path, "only", release, entry["name"]), "w").close()
    return path


def _release(stack):
    """The release the toolkit role is asked for, canonical, or the raw pin."""
    try:
        return Version(stack["cuda_version"]).canonical()
    except Exception:  # pylint: disable=broad-except
        return stack["cuda_version"]


def host_inputs(stack, profile, runfiles):
    """What the host and the inventory give the gate besides the pins (the same for preflight and the roles)."""
    python = (stack["python_version"] or "").strip()
    try:
        python_mm = Version(python).major_minor()
    except Exception:  # pylint: disable=broad-except
        python_mm = python
    found = python_mm in profile["pythons"]
    runfile = compat.runfile_for(_release(stack))
    name = runfile["name"] if runfile else "cuda_%s_linux.run" % _release(stack)
    mode = profile["runfile"]
    src = ""
    if mode == "controller":
        src = os.path.join(runfiles, name)
    elif mode == "controller-one":
        src = os.path.join(runfiles, "only", _release(stack), name)
    return {
        "gpus": list(profile["gpus"]),
        "driver_version": profile["driver"],
        "toolkit_installed": profile["toolkit"] is not None and profile["toolkit"] == stack["cuda_version"],
        "runfile_source": "controller" if mode.startswith("controller") else "url",
        "runfile_checksum": "md5:" + "0" * 32 if mode in ("url", "mirror") else "",
        "runfile_src": src,
        "runfile_url": MIRROR + name if mode == "mirror" else "",
        "interpreter": {"found": found, "executable": "/usr/bin/python%s" % python_mm if found else None,
                        "version": python_mm + ".3" if found else None, "venv": found, "ensurepip": found,
                        "error": None if found else "python%s: not found" % python_mm},
        "venv_python": profile["venv"],
        "host_pythons": list(profile["pythons"]),
    }


def preflight_params(stack, profile, runfiles):
    """The options preflight passes: every part, with the host part's inputs."""
    params = dict(stack)
    params.update(host_inputs(stack, profile, runfiles))
    params.update({
        "parts": list(ALL_PARTS),
        "gpu_count": len(profile["gpus"]) if not profile["gpu_error"] else 0,
        "gpu_error": profile["gpu_error"],
        "require_gpu": profile["require_gpu"],
        "cpu_only_test_host": profile["test_host"],
        "arch_list": profile["arch_list"],
        "free_gb": 500.0, "min_free_gb": 40.0, "prefix": "/opt/llm-stack",
        "raw_pins": dict((compat.VARIABLES[pin], stack[pin]) for pin in compat.PINS),
        "flash_attn_source": "sdist", "flash_attn_below_sm80": "skip",
        "flash_attn_arch_list": profile["arch_list"],
    })
    params.update(VLLM_ROLE)
    return params


def role_params(part, stack, profile, runfiles, host_fact):
    """The options a role passes to its own part (tasks/validate.yml), given preflight's fact."""
    host = host_inputs(stack, profile, runfiles)
    common = {"parts": [part], "cuda_version": stack["cuda_version"], "gpus": host["gpus"],
              "driver_version": host["driver_version"]}
    if part == "cuda_toolkit":
        common.update(dict((key, host[key]) for key in
                           ("toolkit_installed", "runfile_source", "runfile_checksum", "runfile_src", "runfile_url")))
    elif part == "torch":
        common.update(dict((key, stack[key]) for key in ("torch_version", "torch_cuda", "python_version")))
        common.update(dict((key, host[key]) for key in ("interpreter", "venv_python")))
    elif part == "flash_attn":
        common.update(dict((key, stack[key]) for key in ("flash_attn_version", "torch_version")))
        common.update({"flash_attn_source": "sdist", "flash_attn_below_sm80": "skip",
                       "flash_attn_arch_list": host_fact["arch_list"]})
    elif part == "vllm":
        pins = ("torch_version", "torch_cuda", "python_version", "vllm_version", "transformers_version")
        common.update(dict((key, stack[key]) for key in pins))
        common.update(VLLM_ROLE, cpu_only_test_host=profile["test_host"])
    return common


# vllm_source's own options as its validate.yml passes them with the role's defaults (a venv without torch yet).
VLLM_ROLE = {"vllm_method": "auto", "vllm_distribution": "vllm", "vllm_target_device": "cuda", "vllm_venv_torch": ""}


# Each stack meets every SPREAD-th host profile, shifted per stack, so that
# every profile meets several stacks and the grid stays a few hundred cases.
SPREAD = 6


def cases(tmpdir):
    """(name, stack, profile, controller runfile dir) for the grid."""
    runfiles = controller_dir(tmpdir)
    profiles = host_profiles()
    for index, (stack_name, stack) in enumerate(stacks()):
        for number, (profile_name, profile) in enumerate(profiles):
            if (number + index) % SPREAD == 0 or not profile["gpus"]:
                yield "%s@%s" % (stack_name, profile_name), stack, profile, runfiles


def apply_suggestion(stack, suggested):
    """The stack after the suggested group_vars block is pasted."""
    new = dict(stack)
    new.update(suggested)
    return new


def after_steps(profile):
    """The host profile once the steps the suggested block names are done: a runfile of another release is
    downloaded (host_inputs points a controller source at the pasted release's file, a mirror URL at its name) and
    its checksum set."""
    if profile["runfile"] == "url-no-checksum":
        return dict(profile, runfile="url")
    return profile


def module_options(params):
    """params as stack_compat's argument spec makes them (defaults filled in), as a role's task hands them over."""
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
    given = dict((key, value) for key, value in params.items() if value is not None)
    validated = ArgumentSpecValidator(OPTIONS).validate(given)
    assert not validated.error_messages, validated.error_messages
    return validated.validated_parameters


def preflight_role_gates_params(stack, profile, runfiles, host_fact):
    """preflight's own stack_compat call as roles/preflight makes it: parts matrix and host, with the role gates'
    results (their inputs) in role_gates; each call through the module's argument spec."""
    gates = []
    for part in ROLE_PARTS:
        params = role_params(part, stack, profile, runfiles, host_fact)
        params["host_pythons"] = list(profile["pythons"])
        gates.append({"inputs": gate.inputs_of(module_options(params))})
    own = preflight_params(stack, profile, runfiles)
    for key in ("toolkit_installed", "runfile_source", "runfile_checksum", "runfile_src", "runfile_url", "interpreter",
                "venv_python", "host_pythons", "flash_attn_source", "flash_attn_below_sm80", "flash_attn_arch_list"):
        own.pop(key)
    for key in VLLM_ROLE:
        own.pop(key)
    own.update({"parts": ["matrix", "host"], "role_gates": gates})
    return module_options(own)


def run(params):
    """stack_compat's full result (with the suggestion)."""
    return gate.run_gate(params)


def errors_of(params):
    """The errors alone (no suggestion is searched)."""
    dummy, problems = gate.evaluate(params)
    return set(problem["msg"] for problem in problems if problem["severity"] == "error")
