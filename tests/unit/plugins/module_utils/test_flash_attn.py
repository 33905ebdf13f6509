# -*- coding: utf-8 -*-
"""flash_attn_build's decisions, on real captures where there are some.

- The H200 GPU host (tests/fixtures/gpu/h200, tests/fixtures/torch_probe/probe-h200-*, and the numbers of
  docs/validation/h200.md item 4): the plan must give the build key, cache entry, environment and job counts
  that the real build used.
- The CPU-only test container (probe-debian12-torch2.13.0-cpu): what the torch_flash_attn scenario checks.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import flash_attn as F
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import gate
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import nvidia

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "..", "fixtures")


def fixture(*parts):
    with open(os.path.join(FIXTURES, *parts)) as handle:
        return handle.read()


def probe(name, **info):
    """A torch_info result around a captured probe (the module adds venv_exists and torch.cuda_build)."""
    data = json.loads(fixture("torch_probe", name).split(" ", 1)[1])
    data.update(venv_exists=True, **info)
    if data.get("torch"):
        data["torch"]["cuda_build"] = "cpu" if data["torch"]["cuda"] is None else "cu" + data["torch"]["cuda"].replace(".", "")
    return {"info": data, "unmet": []}


def gpu_facts(cls, name="query.csv", fields=nvidia.QUERY_FIELDS):
    devices, driver = nvidia.parse_query_csv(fixture("gpu", cls, name), fields)
    caps = sorted(set(d["compute_cap"] or nvidia.cap_from_name(d["name"]) for d in devices))
    return {"gpu_count": len(devices), "gpu_compute_caps": caps, "gpu_driver_version": driver}


def inputs(**over):
    base = dict(
        version="2.8.3", source="sdist", git_url="https://github.com/Dao-AILab/flash-attention.git", git_ref="v2.8.3",
        venv="/opt/llm-stack/venv", arch_list="", arch_scope="host", below_sm80="skip", max_jobs=0, nvcc_threads=0,
        gb_per_nvcc_thread=5.0, cuda_home="", cuda_version="13.0.2", cache_dir="/ctl/.cache/llm_stack/wheels",
        wheel_dir="/opt/llm-stack/wheels", index_url="", wheelhouse="", wheelhouse_dest="/opt/llm-stack/wheelhouse",
        build_requirements=["ninja", "packaging", "psutil", "setuptools", "wheel"], runtime_requirements=["einops"],
        verify="changed", check_tolerance=0.01, cpu_only_test_host=False, hostname="gpu-validate")
    base.update(over)
    return base


def cache_entry(plan):
    """The cache entry wheel_build names for a key (roles/wheel_build/vars/main.yml: to_json + sha256)."""
    digest = hashlib.sha256(json.dumps({"name": "flash-attn", "key": plan["key"]}, sort_keys=True).encode()).hexdigest()
    return "%s-%s" % (plan["label"], digest[:12])


# nvcc_facts on the H200 host (docs/validation/h200.md, item 1).
H200_NVCC = {
    "cuda_home_link": "/usr/local/cuda-13.0",
    "cuda_toolkits": [{"path": "/usr/local/cuda-13.0", "version": "13.0", "release": "13.0", "nvcc_build": "13.0.88",
                       "nvcc": "/usr/local/cuda-13.0/bin/nvcc", "source": "nvcc"}],
    "nvcc_path": "/usr/local/cuda/bin/nvcc", "nvcc_version": "13.0", "nvcc_build": "13.0.88",
}
# The builder of item 4: 16 vCPUs, 125.4 GB available.
H200_HARDWARE = {"processor_vcpus": 16, "memory_mb": {"nocache": {"free": 128410, "used": 1910}, "real": {"total": 128320}}}


# --- the real H200 build (docs/validation/h200.md, item 4) -------------------

def h200_plan(**over):
    return F.plan(inputs(venv="/opt/torch/.venv", **over), gpu_facts("h200"), probe("probe-h200-torch2.11.0-cu130.txt"),
                  H200_NVCC)


def test_h200_plan_names_the_cache_entry_of_the_real_build():
    plan = h200_plan()
    assert plan["ok"] and plan["build"]
    assert (plan["arch_list"], plan["arch_list_source"], plan["targets"]) == ("9.0", "gpus", [90])
    assert plan["key"] == {"flash_attn": "2.8.3", "source": "sdist", "torch": "2.11.0+cu130", "torch_cuda": "cu130",
                           "python_abi": "cp312", "cxx11_abi": True, "archs": "90", "cuda_kernels": True}
    assert cache_entry(plan) == "flash-attn-2.8.3-torch2.11.0_cu130-cp312-cxx11abiTRUE-sm90-6f14f4dfaca8"


def test_h200_build_environment_and_jobs_are_those_of_the_real_build():
    plan = h200_plan()
    built = F.with_jobs(plan, H200_HARDWARE)
    env = built["environment"]
    assert (env["FLASH_ATTN_CUDA_ARCHS"], env["TORCH_CUDA_ARCH_LIST"]) == ("90", "9.0")
    assert (env["MAX_JOBS"], env["NVCC_THREADS"]) == ("16", "1")
    assert env["FLASH_ATTENTION_FORCE_BUILD"] == "TRUE" and "FLASH_ATTENTION_SKIP_CUDA_BUILD" not in env
    assert built["log_header"][2] == "MAX_JOBS=16 NVCC_THREADS=1 (16 vCPUs, 125.4 GB available, 5.0 GB per nvcc thread)"


def test_h200_cuda_home_is_the_pinned_toolkit_not_the_link():
    # nvcc_path is /usr/local/cuda/bin/nvcc (a link through /etc/alternatives); the toolkit of the pinned
    # release 13.0.2 is /usr/local/cuda-13.0, which only reports its release.
    plan = h200_plan()
    assert plan["cuda_home"] == "/usr/local/cuda-13.0"
    assert plan["environment"]["CUDA_HOME"] == "/usr/local/cuda-13.0"
    assert plan["environment"]["PATH"].split(":")[:2] == ["/opt/torch/.venv/bin", "/usr/local/cuda-13.0/bin"]
    assert plan["required_paths"][0]["path"] == "/usr/local/cuda-13.0/bin/nvcc"


def test_h200_check_is_the_one_that_passed():
    plan = h200_plan()
    assert plan["check"]["title"] == "Check flash-attn: import, kernels for sm90, a forward pass on GPU 0"
    assert plan["check"]["cmd"] == ("flash_attn_check.py --expect-version 2.8.3 --archs 90 --gpus 1 --tolerance 0.01"
                                    " --cuda-home /usr/local/cuda-13.0")
    printed = {"ok": True, "problems": [], "skipped": [], "version": "2.8.3", "elf_archs": [90],
               "extension": "/opt/torch/.venv/lib/python3.12/site-packages/flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so",
               "forward_max_abs_err": 0.0009322166442871094, "tolerance": 0.01}
    result = F.check_result("noise\nFLASH_ATTN_CHECK " + json.dumps(printed, sort_keys=True) + "\n", 0)
    assert result["ok"]
    # The line the role printed on the H200 host.
    assert result["summary"] == "flash-attn 2.8.3 works (kernels: sm90) (forward max abs error 0.0009322166442871094)."


def with_flash_attn(result, url):
    """A torch_info result whose venv has flash-attn installed from url (pip's direct_url.json)."""
    result = json.loads(json.dumps(result))
    result["info"].setdefault("distributions", {})["flash-attn"] = {"version": "2.8.3", "direct_url": {"url": url}}
    return result


def test_h200_rerun_finds_the_keys_wheel_installed_and_has_nothing_to_do():
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_build as W

    first = h200_plan()
    assert (first["installed"], first["work"]) == (False, True)
    assert first["entry"] == cache_entry(first)
    # wheel_build names the same entry for the role's inputs, so both agree on "installed".
    state = W.plan({"name": "flash-attn", "key": first["key"], "label": first["label"], "requirement": "x",
                    "cache_dir": "/ctl/c", "wheel_dir": first["wheel_dir"], "installed_url": ""}, cached=[])
    assert state["entry"] == first["entry"]
    wheel = "flash_attn-2.8.3-cp312-cp312-linux_x86_64.whl"
    url = "file://%s/%s" % (state["host_entry"], wheel)
    again = F.plan(inputs(venv="/opt/torch/.venv"), gpu_facts("h200"),
                   with_flash_attn(probe("probe-h200-torch2.11.0-cu130.txt"), url), H200_NVCC)
    assert (again["installed"], again["installed_wheel"], again["work"]) == (True, wheel, False)
    assert F.build_result(again, {"source": "built", "compiled": True, "wheel": "stale"}) == {
        "version": "2.8.3", "build_key": first["entry"], "arch_list": "9.0", "wheel": wheel, "source": "present",
        "compiled": False, "fleet_builds": []}
    # A requirement gone from the venv (einops removed): the build tasks run to install it, nothing is built.
    unmet = with_flash_attn(probe("probe-h200-torch2.11.0-cu130.txt"), url)
    unmet["unmet"] = ["einops"]
    missing = F.plan(inputs(venv="/opt/torch/.venv"), gpu_facts("h200"), unmet, H200_NVCC)
    assert (missing["installed"], missing["work"], missing["unmet"]) == (True, True, ["einops"])
    # The check every run, a group that is not known yet: the build tasks run (wheel_build then installs nothing).
    assert F.plan(inputs(venv="/opt/torch/.venv", verify="always"), gpu_facts("h200"),
                  with_flash_attn(probe("probe-h200-torch2.11.0-cu130.txt"), url), H200_NVCC)["work"]
    assert F.plan(inputs(venv="/opt/torch/.venv", arch_scope="group"), gpu_facts("h200"),
                  with_flash_attn(probe("probe-h200-torch2.11.0-cu130.txt"), url), H200_NVCC)["work"]


@pytest.mark.parametrize("verify", ["always", "changed", "never", "sometimes"])
def test_the_plan_says_when_the_checks_run(verify):
    plan = F.plan(inputs(venv="/opt/torch/.venv", verify=verify), gpu_facts("h200"),
                  probe("probe-h200-torch2.11.0-cu130.txt"), H200_NVCC)
    assert (plan["verify_on_install"], plan["verify_without_install"]) == (
        verify in ("always", "changed"), verify == "always")
    for installed_before in (False, True):
        # tasks/build.yml: a block under verify_on_install, verify.yml under verify_without_install or the install;
        # before: verify == 'always' or (verify == 'changed' and not wheel_build_installed).
        assert (plan["verify_on_install"] and (plan["verify_without_install"] or not installed_before)) == (
            verify == "always" or (verify == "changed" and not installed_before))


@pytest.mark.parametrize("url", [
    "",
    "file:///opt/llm-stack/wheels/flash-attn-2.8.3-torch2.11.0_cu130-cp312-cxx11abiTRUE-sm90-000000000000/f.whl",
    "file:///elsewhere/flash-attn-2.8.3-torch2.11.0_cu130-cp312-cxx11abiTRUE-sm90-6f14f4dfaca8/f.whl",
    "https://example.org/flash-attn-2.8.3-torch2.11.0_cu130-cp312-cxx11abiTRUE-sm90-6f14f4dfaca8/f.whl",
])
def test_another_build_in_the_venv_is_not_the_keys(url):
    plan = F.plan(inputs(venv="/opt/torch/.venv"), gpu_facts("h200"),
                  with_flash_attn(probe("probe-h200-torch2.11.0-cu130.txt"), url), H200_NVCC)
    assert (plan["installed"], plan["installed_wheel"], plan["work"]) == (False, "", True)


def test_build_result_of_the_hosts_part():
    plan = h200_plan()
    outcome = {"source": "controller_cache", "compiled": "False", "wheel": "flash_attn-2.8.3-x.whl"}
    assert F.build_result(plan, outcome) == {
        "version": "2.8.3", "build_key": plan["entry"], "arch_list": "9.0", "wheel": "flash_attn-2.8.3-x.whl",
        "source": "controller_cache", "compiled": False, "fleet_builds": []}
    assert F.build_result(plan, dict(outcome, source="built", compiled=True))["compiled"] is True
    # no flash-attn of a key: T4 alone (nothing to build), or check mode before the venv exists
    t4 = F.plan(inputs(), gpu_facts("t4-470", "query-nocap.csv", nvidia.QUERY_FIELDS_NO_CAP),
                probe("probe-h200-torch2.11.0-cu130.txt"), H200_NVCC)
    assert not t4["work"] and F.build_result(t4, outcome) == {
        "version": "2.8.3", "build_key": "", "arch_list": "7.5", "wheel": "", "source": "none", "compiled": False,
        "fleet_builds": []}
    # a skipped reading (nothing to build on a T4) is no reading
    skipped = F.plan(inputs(), gpu_facts("t4-470", "query-nocap.csv", nvidia.QUERY_FIELDS_NO_CAP),
                     {"skipped": True, "changed": False}, H200_NVCC)
    assert skipped == F.plan(inputs(), gpu_facts("t4-470", "query-nocap.csv", nvidia.QUERY_FIELDS_NO_CAP), None,
                             H200_NVCC)
    assert skipped["key"] is None and skipped["torch_error"] is None and not skipped["work"]
    no_venv = F.plan(inputs(arch_list="9.0"), {}, {"info": {"venv_exists": False}, "unmet": []})
    assert no_venv["work"] and F.build_result(no_venv, None)["source"] == "none"
    with pytest.raises(F.FlashAttnError):
        F.build_result(None)


def test_h200_noimport_probe_without_record_is_not_enough_to_build():
    # probe with import_torch=false and no record: no C++11 ABI, so no key.
    plan = F.plan(inputs(), gpu_facts("h200"), probe("probe-h200-noimport.txt"), H200_NVCC)
    assert plan["key"] is None and "C++11 ABI" in plan["torch_error"]


# --- the CPU-only test path (torch_flash_attn scenario) ----------------------

@pytest.mark.parametrize("arch_list, target", [("8.0", 80), ("8.6", 80), ("9.0", 90)])
def test_cpu_only_test_host_key_matches_the_scenario(arch_list, target):
    plan = F.plan(inputs(arch_list=arch_list, cpu_only_test_host=True, venv="/opt/v", wheelhouse="/ctl/wheelhouse",
                         cuda_version="13.0.2", hostname="torch_flash_attn-a"),
                  {"gpu_count": 0, "gpu_compute_caps": []}, probe("probe-debian12-torch2.13.0-cpu.txt"))
    assert plan["key"] == {"flash_attn": "2.8.3", "source": "sdist", "torch": "2.13.0+cpu", "torch_cuda": "cpu",
                           "python_abi": "cp311", "cxx11_abi": True, "archs": str(target), "cuda_kernels": False}
    assert plan["label"] == "flash-attn-2.8.3-torch2.13.0_cpu-cp311-cxx11abiTRUE-sm%d-python-only" % target
    env = plan["environment"]
    assert env["FLASH_ATTENTION_SKIP_CUDA_BUILD"] == "TRUE" and "CUDA_HOME" not in env
    assert env["PATH"].startswith("/opt/v/bin:/usr/local/sbin")
    assert (env["PIP_NO_INDEX"], env["PIP_FIND_LINKS"]) == ("1", "/opt/llm-stack/wheelhouse")
    assert plan["push"] == [{"src": "/ctl/wheelhouse", "dest": "/opt/llm-stack/wheelhouse"}]
    assert plan["required_paths"] == [] and plan["cuda_home"] is None and not plan["read_toolkits"]
    assert plan["installed_url"] == "file:///tmp/dist/flash_attn-2.8.3-py3-none-any.whl"
    assert plan["check"]["cmd"].endswith("--archs %d --gpus 0 --tolerance 0.01 --cpu-only-test-host" % target)
    assert plan["check"]["title"] == "Check flash-attn: import"


def test_cpu_only_check_result_lists_the_skips():
    printed = {"ok": True, "problems": [], "skipped": ["CUDA extension: absent by design", "forward pass: CPU-only test host"],
               "version": "2.8.3", "extension": None, "elf_archs": [], "forward_max_abs_err": None, "tolerance": 0.01}
    result = F.check_result("FLASH_ATTN_CHECK " + json.dumps(printed), 0)
    assert result["ok"] and result["summary"] == "flash-attn 2.8.3 works." and len(result["skipped"]) == 2


# --- the arch list in force and FA2's targets -------------------------------

@pytest.mark.parametrize("cls, caps, targets", [
    ("h200", ["9.0"], [90]),
    ("a100x8", ["8.0"], [80]),
    ("l40s", ["8.9"], [80]),
    ("mixed", ["8.0", "8.9"], [80]),
    ("b200-610", ["10.0"], [100]),
])
def test_targets_of_the_captured_gpu_classes(cls, caps, targets):
    plan = F.plan(inputs(), gpu_facts(cls))
    assert (plan["caps"], plan["targets"], plan["gpu_targets"]) == (caps, targets, targets)
    assert plan["ok"] and plan["build"]


def test_t4_alone_is_left_out_with_a_message():
    facts = gpu_facts("t4-470", "query-nocap.csv", nvidia.QUERY_FIELDS_NO_CAP)
    plan = F.plan(inputs(hostname="t4-01"), facts)
    assert plan["below"] == ["7.5"] and plan["targets"] == [] and plan["ok"] and not plan["build"]
    assert plan["left_out"] == ("No flash-attn on t4-01: FA2 needs sm80 or newer and this host has only 7.5"
                                " (flash_attn_build_below_sm80=skip); nothing is built or installed here.")


def test_older_caps_are_left_out_of_a_mixed_list():
    plan = F.plan(inputs(arch_list="7.0;8.0 9.0", hostname="h"), {})
    assert (plan["targets"], plan["below"]) == ([80, 90], ["7.0"])
    assert plan["left_out"] == "FA2 needs sm80 or newer: 7.0 left out of the build on h (flash_attn_build_below_sm80=skip)."


def test_below_sm80_fail_is_the_gates_rule():
    # The gate (stack_compat, part flash_attn) stops the host with its own message: not an extra error.
    plan = F.plan(inputs(arch_list="7.5;9.0", below_sm80="fail", hostname="h"), {})
    assert not plan["ok"] and not plan["build"] and plan["left_out"] is None
    assert plan["errors"] == ["FA2 needs sm80 or newer; h builds for 7.5 (flash_attn_build_below_sm80=fail). Fix: set"
                              " flash_attn_build_below_sm80=skip to leave those GPUs out, or take them out of the arch list."]
    assert plan["gate"]["extra_errors"] == []


@pytest.mark.parametrize("arch_list, caps, targets", [
    ("9.0a;10.0f;12.0+PTX", ["9.0", "10.0", "12.0"], [90, 100, 120]),
    ("8.0 8.6;8.9", ["8.0", "8.6", "8.9"], [80]),
    ("10.3;10.0", ["10.0", "10.3"], [100]),
    (" 12.1 ", ["12.1"], [120]),
])
def test_arch_list_forms(arch_list, caps, targets):
    plan = F.plan(inputs(arch_list=arch_list), {})
    assert (plan["caps"], plan["targets"]) == (caps, targets)
    assert plan["environment"] is None  # no torch given: no key, no environment yet


def test_arch_list_precedence():
    host = {"llm_stack_host": {"arch_list": "8.0;9.0", "gpu": {"count": 1, "compute_caps": ["9.0"]}},
            "gpu_count": 2, "gpu_compute_caps": ["8.6"]}
    assert F.arch_in_force("10.0", host) == ("10.0", "variable")
    assert F.arch_in_force("", host) == ("8.0;9.0", "preflight")
    host["llm_stack_host"]["arch_list_source"] = "gpus"
    assert F.arch_in_force("", host) == ("8.0;9.0", "gpus")
    host["llm_stack_host"]["arch_list"] = ""
    assert F.arch_in_force("", host) == ("9.0", "gpus")  # preflight's GPUs, not the leftover gpu_* facts
    assert F.arch_in_force(None, {"gpu_compute_caps": ["8.0", "9.0"]}) == ("8.0;9.0", "gpus")
    assert F.arch_in_force("", {}) == ("", "")


def test_no_arch_list_on_a_host_without_gpus():
    plan = F.plan(inputs(hostname="build-01"), {"gpu_count": 0, "gpu_compute_caps": []})
    assert not plan["ok"] and not plan["build"]
    assert plan["errors"] == [
        "flash_attn_build_arch_list is empty on build-01 and the host has no GPUs to derive it from. Fix: set"
        " llm_stack_torch_cuda_arch_list for build hosts without GPUs (for example \"8.0;9.0\")."]


@pytest.mark.parametrize("arch_list", ["8.0;Hopper", "90", "9.0+ptx", "8.0,9.0", "7.5a"])
def test_bad_arch_list_names_the_variable(arch_list):
    plan = F.plan(inputs(arch_list=arch_list), {})
    assert not plan["ok"] and len(plan["errors"]) == 1
    assert plan["errors"][0].startswith("flash_attn_build_arch_list (default llm_stack_torch_cuda_arch_list)=%s is not an"
                                        " arch list: " % arch_list)


def test_a_target_fa2_does_not_build_is_refused():
    plan = F.plan(inputs(arch_list="9.0;11.0"), {})
    assert not plan["ok"] and not plan["build"]
    assert "no target sm110" in plan["errors"][0] and "take 11.0 out of the arch list" in plan["errors"][0]


def test_group_scope_builds_the_union_of_its_group():
    cpu = probe("probe-debian12-torch2.13.0-cpu.txt")
    facts = {"gpu_count": 0}
    a = F.plan(inputs(arch_list="8.0", arch_scope="group", cpu_only_test_host=True), facts, cpu)
    c = F.plan(inputs(arch_list="9.0", arch_scope="group", cpu_only_test_host=True), facts, cpu)
    other = F.plan(inputs(arch_list="12.0", arch_scope="group", cpu_only_test_host=True, version="2.8.2"), facts, cpu)
    assert a["group_id"] == c["group_id"] != other["group_id"]
    grouped = F.plan(inputs(arch_list="8.0", arch_scope="group", cpu_only_test_host=True), facts, cpu,
                     group=[a, c, other, None, {"group_id": None}])
    assert grouped["own_targets"] == [80] and grouped["targets"] == [80, 90]
    assert grouped["key"]["archs"] == "80;90" and grouped["environment"]["FLASH_ATTN_CUDA_ARCHS"] == "80;90"
    assert grouped["environment"]["TORCH_CUDA_ARCH_LIST"] == "8.0;9.0"
    # build.yml plans the group from the host's own plan, as main.yml plans from the first plan.
    assert F.plan(a, facts, cpu, group=[a, c, other, None, {"group_id": None}]) == grouped
    # arch_scope=host ignores the group
    assert F.plan(inputs(arch_list="8.0", cpu_only_test_host=True), facts, cpu, group=[c])["targets"] == [80]


# --- jobs --------------------------------------------------------------------

@pytest.mark.parametrize("cpus, free_gb, per, n, given, expected", [
    (16, 125.4, 5.0, 1, (0, 0), (16, 1)),   # H200 builder, sm90 alone (docs/validation/h200.md)
    (2, 20.0, 5.0, 1, (0, 0), (2, 1)),      # the README's 2-core host
    (16, 125.4, 5.0, 4, (0, 0), (4, 4)),    # four targets: 4 nvcc threads each
    (64, 50.0, 5.0, 2, (0, 0), (5, 2)),     # RAM-bound: 10 threads
    (8, 3.0, 5.0, 2, (0, 0), (1, 1)),       # never below one
    (16, 125.4, 5.0, 1, (3, 0), (3, 1)),    # flash_attn_build_max_jobs
    (16, 125.4, 5.0, 1, (0, 2), (8, 2)),    # flash_attn_build_nvcc_threads
])
def test_jobs(cpus, free_gb, per, n, given, expected):
    assert F.jobs(cpus, free_gb, per, n, *given) == expected


def test_jobs_without_hardware_facts_are_safe():
    plan = h200_plan()
    built = F.with_jobs(plan, {})
    assert (built["vcpus"], built["available_gb"], built["max_jobs"]) == (1, 4.0, 1)
    assert F.available_gb({"memfree_mb": 2047}) == 1.9


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 512), st.floats(0, 4096, allow_nan=False), st.floats(0.5, 64, allow_nan=False), st.integers(1, 4))
def test_derived_jobs_stay_within_the_budget(cpus, free_gb, per, n):
    jobs, threads = F.jobs(cpus, free_gb, per, n)
    budget = max(min(cpus, int(free_gb / per)), 1)
    assert jobs >= 1 and 1 <= threads <= min(n, 4) and jobs * threads <= budget


# --- toolkit, pip, source ---------------------------------------------------

def test_cuda_home_precedence():
    pre = {"llm_stack_host": {"cuda": {"home": "/usr/local/cuda-12.8"}}}
    assert F.cuda_home("/opt/cuda", pre, H200_NVCC, "13.0.2") == ("/opt/cuda", "flash_attn_build_cuda_home")
    assert F.cuda_home("", pre, H200_NVCC, "13.0.2") == ("/usr/local/cuda-12.8", "llm_stack_host.cuda.home")
    two = {"cuda_toolkits": [{"path": "/usr/local/cuda-12.8", "version": "12.8.1", "release": "12.8"},
                             {"path": "/usr/local/cuda-13.0", "version": "13.0.2", "release": "13.0"}],
           "nvcc_path": "/usr/local/cuda-13.0/bin/nvcc"}
    assert F.cuda_home("", {}, two, "12.8.1")[0] == "/usr/local/cuda-12.8"   # the pinned one, not the nvcc in use
    assert F.cuda_home("", {}, two, "12.8.0")[0] == "/usr/local/cuda-12.8"   # same release
    assert F.cuda_home("", {}, two, "12.6.3") == ("/usr/local/cuda-13.0", "nvcc_facts (nvcc_path)")
    assert F.cuda_home("", {}, None, "12.8.1") == ("/usr/local/cuda", "default")


def test_plan_asks_for_the_toolkits_only_when_nobody_named_one():
    assert F.plan(inputs(arch_list="9.0"), {})["read_toolkits"]
    assert not F.plan(inputs(arch_list="9.0"), {}, nvcc=H200_NVCC)["read_toolkits"]
    assert not F.plan(inputs(arch_list="9.0", cuda_home="/opt/cuda"), {})["read_toolkits"]
    assert not F.plan(inputs(arch_list="9.0"), {"llm_stack_host": {"cuda": {"home": "/usr/local/cuda-13.0"}}})["read_toolkits"]


def test_pip_environment():
    assert F.pip_environment("/ctl/wh", "/opt/wh", "https://idx") == {
        "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": "/opt/wh"}
    assert F.pip_environment("", "/opt/wh", "https://idx") == {"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_INDEX_URL": "https://idx"}
    assert F.pip_environment("", "/opt/wh", "") == {"PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def test_git_source_with_credentials():
    url = "https://bob:s3cret@git.example/flash-attention.git"
    plan = F.plan(inputs(arch_list="9.0", source="git", git_url=url, git_ref="fix/one two"), {})
    assert any("flash_attn_build_git_ref" in e for e in plan["errors"])
    plan = F.plan(inputs(arch_list="9.0", source="git", git_url=url, git_ref="v2.8.3"), {},
                  probe("probe-h200-torch2.11.0-cu130.txt"))
    assert plan["no_log"]
    assert plan["requirement"] == "flash-attn @ git+%s@v2.8.3" % url
    assert plan["source_id"] == "git+https://***@git.example/flash-attention.git@v2.8.3"
    assert "s3cret" not in json.dumps(plan["key"]) and "s3cret" not in plan["label"]
    assert plan["label"].startswith("flash-attn-2.8.3-git-v2.8.3-torch")
    assert plan["pip_args"] == ["--no-build-isolation"]


def test_index_url_with_credentials_hides_the_pip_steps():
    assert F.plan(inputs(arch_list="9.0", index_url="https://u:p@pypi.example/simple"), {})["no_log"]
    assert not F.plan(inputs(arch_list="9.0", index_url="https://pypi.example/simple"), {})["no_log"]


# --- inputs ------------------------------------------------------------------

@pytest.mark.parametrize("over, variable", [
    ({"arch_scope": "fleet"}, "flash_attn_build_arch_scope=fleet"),
    ({"verify": "sometimes"}, "flash_attn_build_verify=sometimes"),
    ({"max_jobs": "many"}, "flash_attn_build_max_jobs=many"),
    ({"max_jobs": -1}, "flash_attn_build_max_jobs=-1"),
    ({"nvcc_threads": 2.5}, "flash_attn_build_nvcc_threads=2.5"),
    ({"nvcc_threads": True}, "flash_attn_build_nvcc_threads=True"),
    ({"gb_per_nvcc_thread": 0}, "flash_attn_build_gb_per_nvcc_thread=0"),
    ({"gb_per_nvcc_thread": "five"}, "flash_attn_build_gb_per_nvcc_thread=five"),
    ({"check_tolerance": -0.1}, "flash_attn_build_check_tolerance=-0.1"),
    ({"cache_dir": ""}, "flash_attn_build_cache_dir is empty"),
    ({"venv": " "}, "flash_attn_build_venv is empty"),
    ({"wheel_dir": "wheels"}, "flash_attn_build_wheel_dir='wheels' is not an absolute path"),
    ({"build_requirements": ["ninja>=1.11"]}, "flash_attn_build_build_requirements has 'ninja>=1.11'"),
    ({"runtime_requirements": "einops"}, "flash_attn_build_runtime_requirements=einops is not a list"),
    ({"source": "git", "git_ref": ""}, "flash_attn_build_git_ref=''"),
])
def test_bad_inputs_name_the_variable_and_the_fix(over, variable):
    plan = F.plan(inputs(arch_list="9.0", **over), {})
    assert not plan["ok"] and not plan["build"]
    assert len(plan["errors"]) == 1 and plan["errors"][0].startswith(variable) and "Fix:" in plan["errors"][0]


def test_inputs_as_the_inventory_gives_them():
    plan = F.plan(inputs(arch_list="9.0", max_jobs="4", nvcc_threads="0", gb_per_nvcc_thread="2.5",
                         cpu_only_test_host="false", check_tolerance="0.02", build_requirements=[" ninja "]), {})
    assert plan["ok"] and (plan["max_jobs"], plan["gb_per_nvcc_thread"]) == (4, 2.5)
    assert not plan["cpu_only_test_host"] and plan["requirements"] == ["ninja", "einops"]
    assert "--tolerance 0.02" in plan["check"]["cmd"]


def test_wrong_shapes_are_the_callers_bug():
    with pytest.raises(F.FlashAttnError):
        F.plan(["version", "2.8.3"])
    with pytest.raises(F.FlashAttnError) as err:
        F.plan(inputs(flash_attn_build_version="2.8.3"))
    assert "unknown input(s): flash_attn_build_version" in str(err.value)
    with pytest.raises(F.FlashAttnError):
        F.with_jobs(F.plan(inputs(arch_list="9.0"), {}), {})


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(F.INPUTS)),
                       st.one_of(st.none(), st.booleans(), st.integers(-10, 10 ** 12), st.floats(allow_nan=True),
                                 st.text(max_size=40), st.lists(st.text(max_size=10), max_size=3))),
       st.one_of(st.none(), st.text(max_size=60)))
def test_any_input_gives_a_plan_not_an_exception(values, arch_list):
    if arch_list is not None:
        values["arch_list"] = arch_list
    plan = F.plan(values, {}, probe("probe-debian12-torch2.13.0-cpu.txt"))
    assert plan["ok"] == (plan["errors"] == [])
    assert set(plan["targets"]) <= set(F.FA2_TARGETS)
    assert not plan["build"] or (plan["ok"] and plan["targets"])


# --- planning again from the first plan ---------------------------------------

FACTS = [{}, None, {"gpu_count": 1, "gpu_compute_caps": ["9.0"]}, {"gpu_count": 2, "gpu_compute_caps": ["7.5", "8.6"]},
         {"llm_stack_host": {"arch_list": "8.0;9.0", "gpu": {"count": 1, "compute_caps": ["9.0"]},
                             "cuda": {"home": "/usr/local/cuda-13.0"}}}]


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(F.INPUTS)),
                       st.one_of(st.none(), st.booleans(), st.integers(-10, 10 ** 12), st.floats(allow_nan=False),
                                 st.text(max_size=40), st.lists(st.text(max_size=10), max_size=3))),
       st.sampled_from(FACTS), st.sampled_from(FACTS), st.booleans())
def test_a_plan_made_from_the_first_plan_is_the_plan_made_from_the_inputs(values, first_facts, facts, with_torch):
    """The role plans once from its variables, then again from that plan with the GPUs and the venv it read.

    Every problem of the inputs stays (the gate stops the host on them), and the result is the one the variables
    themselves would give, whatever the facts of the first plan were.
    """
    torch = probe("probe-debian12-torch2.13.0-cpu.txt") if with_torch else None
    first = F.plan(values, first_facts)
    again = F.plan(first, facts, torch)
    assert again == F.plan(values, facts, torch)
    assert set(first["input_problems"]["errors"]) <= set(again["errors"])
    assert F.no_log(first) == F.no_log(values) == again["no_log"]


def test_the_gate_of_a_replan_keeps_the_input_errors():
    first = F.plan(inputs(arch_list="9.0", max_jobs="many", verify="sometimes"), {})
    again = F.plan(first, {"gpu_count": 1, "gpu_compute_caps": ["9.0"]})
    assert len(again["gate"]["extra_errors"]) == 2 and not again["ok"] and not again["work"]


@pytest.mark.parametrize("plan", [
    {"inputs": [], "input_problems": {"errors": [], "gated": []}},
    {"inputs": {}, "input_problems": {"errors": "x", "gated": []}},
    {"inputs": {}, "input_problems": None},
])
def test_a_broken_earlier_plan_is_the_callers_bug(plan):
    with pytest.raises(F.FlashAttnError) as err:
        F.plan(plan)
    assert "an earlier plan" in str(err.value)


@pytest.mark.parametrize("over, hidden", [
    ({}, False),
    ({"index_url": "https://u:p@pypi.example/simple"}, True),
    ({"index_url": "https://pypi.example/simple"}, False),
    ({"git_url": "https://bob:s3cret@git.example/fa.git"}, False),
    ({"git_url": "https://bob:s3cret@git.example/fa.git", "source": "git"}, True),
    ({"git_url": "https://bob:s3cret@git.example/fa.git", "source": " git "}, True),
])
def test_no_log_reads_only_the_urls_and_the_source(over, hidden):
    assert F.no_log(inputs(**over)) is hidden
    assert F.no_log(dict((key, over[key]) for key in over)) is hidden
    assert F.plan(inputs(arch_list="9.0", **over), {})["no_log"] is hidden


# --- the venv's torch --------------------------------------------------------

@pytest.mark.parametrize("info, reason", [
    ({"venv_exists": False, "torch": None}, "(no venv)"),
    ({"venv_exists": True, "torch": None}, "(torch not installed)"),
    ({"venv_exists": True, "torch": {"error": "ImportError: libcudart.so.13"}}, "(ImportError: libcudart.so.13)"),
])
def test_a_venv_without_working_torch_stops_the_build(info, reason):
    plan = F.plan(inputs(arch_list="9.0", hostname="h"), {}, {"info": info, "unmet": ["ninja"]})
    assert plan["key"] is None and plan["environment"] is None
    assert plan["torch_error"] == ("/opt/llm-stack/venv on h has no working torch %s. flash-attn is built against the"
                                   " venv's torch. Fix: run gpufleet.llm_stack.torch first (playbooks/torch.yml)." % reason)
    assert plan["install_argv"] == ["/opt/llm-stack/venv/bin/python", "-m", "pip", "install", "--no-input", "ninja"]


# --- the check's output ------------------------------------------------------

def test_check_without_a_result_line():
    result = F.check_result("Traceback ...", 1, "x" * 900 + "ModuleNotFoundError: No module named 'torch'")
    assert not result["ok"]
    assert result["failure"].startswith("the check printed no result (exit 1): ")
    assert result["failure"].endswith("No module named 'torch'") and len(result["failure"]) < 900
    assert not F.check_result("FLASH_ATTN_CHECK {not json", None)["ok"]
    assert not F.check_result("FLASH_ATTN_CHECK [1, 2]", 0)["ok"]


def test_check_problems_are_the_failure():
    printed = {"ok": False, "problems": ["a", "b"], "skipped": [], "version": "2.8.3", "elf_archs": [80]}
    result = F.check_result("FLASH_ATTN_CHECK " + json.dumps(printed), 1)
    assert not result["ok"] and result["failure"] == "a; b"


# --- what the role's gate passes to stack_compat ------------------------------

def test_gate_options_leave_the_gates_own_checks_to_it():
    # An empty or malformed arch list and bad requirement formats: stack_compat (part flash_attn) finds them
    # itself; only what it does not check goes to extra_errors.
    plan = F.plan(inputs(arch_list="8.0;Hopper", build_requirements=["ninja>=1"], verify="sometimes"), {})
    assert len(plan["errors"]) == 3 and not plan["ok"]
    assert plan["gate"]["extra_errors"] == [e for e in plan["errors"] if e.startswith("flash_attn_build_verify=")]
    assert plan["gate"]["flash_attn_arch_list"] == "8.0;Hopper"
    plan = F.plan(inputs(arch_list="9.0;11.0"), {})
    assert plan["gate"]["extra_errors"] == plan["errors"] and "sm110" in plan["errors"][0]


def test_gate_options_for_a_list_from_the_gpus():
    plan = F.plan(inputs(), gpu_facts("mixed"))
    assert plan["gate"] == {"flash_attn_arch_list": "", "gpus": ["8.0", "8.9"], "extra_errors": []}
    contract = {"llm_stack_host": {"arch_list": "9.0", "arch_list_source": "gpus", "gpu": {"count": 1, "compute_caps": ["9.0"]}}}
    assert F.plan(inputs(), contract)["gate"]["flash_attn_arch_list"] == ""
    contract["llm_stack_host"]["arch_list_source"] = "inventory"
    assert F.plan(inputs(), contract)["gate"]["flash_attn_arch_list"] == "9.0"
    gate_options = F.plan(inputs(arch_list="8.0"), contract)["gate"]
    assert gate_options == {"flash_attn_arch_list": "8.0", "gpus": [], "extra_errors": []}


def test_build_host_with_an_older_gpu_checks_the_build_targets():
    # A T4 builder for a sm90 fleet: the wheel is checked for sm90 kernels, with no forward pass on the T4.
    facts = gpu_facts("t4-470", "query-nocap.csv", nvidia.QUERY_FIELDS_NO_CAP)
    plan = F.plan(inputs(arch_list="9.0"), facts, nvcc=H200_NVCC)
    assert plan["build"] and plan["gpu_targets"] == [] and plan["gate"]["gpus"] == []
    assert "--archs 90 --gpus 0 " in plan["check"]["cmd"] and plan["check"]["title"] == "Check flash-attn: import"


def gate_errors(plan, below, reqs):
    """What stack_compat's part flash_attn says of the options the role's gate passes."""
    params = {"parts": ["flash_attn"], "cuda_version": "12.8.1", "torch_version": "2.10.0", "flash_attn_version": "2.8.3",
              "flash_attn_source": "sdist", "flash_attn_below_sm80": below, "flash_attn_wheelhouse": "",
              "flash_attn_arch_list": plan["gate"]["flash_attn_arch_list"], "gpus": plan["gate"]["gpus"],
              "flash_attn_build_requirements": reqs, "flash_attn_runtime_requirements": [],
              "extra_errors": plan["gate"]["extra_errors"], "extra_warnings": []}
    dummy, problems = gate.evaluate(params)
    return [problem["msg"] for problem in problems if problem["severity"] == "error"]


ENTRIES = ["7.0", "7.5", "8.0", "8.6", "8.9", "9.0", "9.0a", "10.0", "10.0f", "10.3", "11.0", "12.0", "12.0+PTX",
           "12.1", "Hopper", "sm_90", "9"]
GPU_CAPS = ["6.0", "7.0", "7.5", "8.0", "8.6", "8.9", "9.0", "10.0", "12.0"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(ENTRIES), max_size=4), st.sampled_from([";", " ", "; "]),
       st.lists(st.sampled_from(GPU_CAPS), max_size=3, unique=True), st.sampled_from(["skip", "fail"]),
       st.lists(st.sampled_from(["ninja", "einops==0.8.2", "ninja>=1"]), max_size=2))
def test_the_plan_and_the_gate_agree(entries, sep, gpus, below, reqs):
    # The role builds exactly where its gate lets it: an error of either is an error of both.
    plan = F.plan(inputs(arch_list=sep.join(entries), below_sm80=below, build_requirements=reqs),
                  {"gpu_count": len(gpus), "gpu_compute_caps": sorted(gpus, key=float)})
    assert plan["ok"] == (gate_errors(plan, below, reqs) == [])


# --- the reading and the gate of the role's one step (flash_attn_build_state) ------------

@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(F.INPUTS)),
                       st.one_of(st.none(), st.booleans(), st.integers(-10, 10 ** 12), st.floats(allow_nan=False),
                                 st.text(max_size=40), st.lists(st.text(max_size=10), max_size=3))),
       st.sampled_from(FACTS), st.lists(st.text(max_size=20), max_size=2), st.sampled_from(["", "fa on h"]))
def test_the_gate_gets_the_variables_as_given_and_the_plans_part(values, facts, index_problems, fail_as):
    """The gate judges what the inventory says (not the plan's cleaned copy), so its own checks find every bad
    value; the plan adds the arch list or the GPUs in force and the errors only this role finds."""
    plan = F.plan(values, facts)
    options = F.gate_options(values, F.plan(plan, facts), "2.11.0", index_problems, fail_as)
    for option, key in F.GATE_INPUTS:
        assert options[option] == values.get(key, F.INPUTS[key][1])
    assert (options["flash_attn_arch_list"], options["gpus"]) == (plan["gate"]["flash_attn_arch_list"],
                                                                  plan["gate"]["gpus"])
    assert options["extra_errors"] == plan["gate"]["extra_errors"] + index_problems
    assert options["parts"] == ["flash_attn"] and options["torch_version"] == "2.11.0"
    assert (options["fail_as"], options["show_warnings"]) == (fail_as, bool(fail_as))


def test_reading_options_read_what_nobody_said():
    first = F.plan(inputs(cuda_home=""), {})
    options = F.reading_options(first, {})
    assert (options["read_gpus"], options["read_toolkits"], options["import_torch"]) == (True, True, False)
    assert options["requirements"] == ["ninja", "packaging", "psutil", "setuptools", "wheel", "einops"]
    assert options["distributions"] == ["flash-attn"] and options["set_facts"] is False
    preflight = {"llm_stack_host": {"arch_list": "9.0", "gpu": {"count": 1, "compute_caps": ["9.0"]},
                                    "cuda": {"home": "/usr/local/cuda-13.0"}}}
    known = F.reading_options(F.plan(inputs(cuda_home=""), preflight), preflight)
    assert (known["read_gpus"], known["read_toolkits"]) == (False, False)
    # A test host never reads the toolkits; the GPU facts of a reading count as known GPUs.
    test_host = F.plan(inputs(cuda_home="", cpu_only_test_host=True), {"gpu_count": 0})
    assert F.reading_options(test_host, {"gpu_count": 0})["read_toolkits"] is False
    assert F.reading_options(test_host, {"gpu_count": 0})["read_gpus"] is False


@pytest.mark.parametrize("call", [
    lambda: F.reading_options(inputs(), {}),
    lambda: F.reading_options(None, {}),
    lambda: F.gate_options(inputs(), {}, "2.11.0"),
    lambda: F.gate_options([], F.plan(inputs(), {}), "2.11.0"),
    lambda: F.gate_options(inputs(), F.plan(inputs(), {}), "2.11.0", index_problems="one"),
])
def test_reading_and_gate_options_refuse_wrong_shapes(call):
    with pytest.raises(F.FlashAttnError):
        call()


# The calls gpufleet.llm_stack.flash_attn_build_state makes: plan, with_jobs, build_result, check_result, no_log.

ROLE_INPUTS = {"version": "2.8.3", "venv": "/opt/llm-stack/venv", "arch_list": "8.0;9.0", "cache_dir": "/c",
               "wheel_dir": "/opt/llm-stack/wheels", "cpu_only_test_host": True, "hostname": "a"}
ROLE_TORCH = {"info": {"venv_exists": True, "python": {"abi_tag": "cp311"},
                       "torch": {"version": "2.13.0+cpu", "cuda": None, "cuda_build": "cpu", "cxx11_abi": True}},
              "unmet": []}


def test_role_plan_then_jobs():
    plan = F.plan(ROLE_INPUTS, facts={}, torch=ROLE_TORCH)
    assert plan["ok"] and plan["key"]["archs"] == "80;90"
    built = F.with_jobs(plan, {"processor_vcpus": 2, "memory_mb": {"nocache": {"free": 20480}}})
    assert (built["environment"]["MAX_JOBS"], built["environment"]["NVCC_THREADS"]) == ("1", "2")


@pytest.mark.parametrize("call, message", [
    (lambda: F.plan(dict(ROLE_INPUTS, flash_attn_build_venv="/v")), "unknown input(s)"),
    (lambda: F.with_jobs(F.plan(ROLE_INPUTS), {}), "made with the venv's torch"),
    (lambda: F.plan({"inputs": ROLE_INPUTS, "input_problems": {"errors": []}}), "an earlier plan"),
])
def test_role_wrong_inputs_raise(call, message):
    with pytest.raises(F.FlashAttnError) as err:
        call()
    assert message in str(err.value)


def test_role_result_of_a_plan_that_ran_the_build_tasks():
    plan = F.plan(ROLE_INPUTS, facts={}, torch=ROLE_TORCH)
    result = F.build_result(plan, {"source": "built", "compiled": True, "wheel": "w.whl"})
    assert result == {"version": "2.8.3", "build_key": plan["entry"], "arch_list": "8.0;9.0", "wheel": "w.whl",
                      "source": "built", "compiled": True, "fleet_builds": []}


def test_role_check_result_of_a_registered_script():
    printed = {"ok": True, "problems": [], "skipped": [], "version": "2.8.3", "elf_archs": [80, 90]}
    result = F.check_result("FLASH_ATTN_CHECK " + json.dumps(printed), 0, "")
    assert result["ok"] and result["summary"] == "flash-attn 2.8.3 works (kernels: sm80, sm90)."
    skipped = F.check_result(None, None, "")
    assert not skipped["ok"] and skipped["failure"].startswith("the check printed no result (exit ?)")


def test_role_plan_again_from_the_first_plan():
    first = F.plan(ROLE_INPUTS, facts={})
    assert F.plan(first, facts={}, torch=ROLE_TORCH) == F.plan(ROLE_INPUTS, facts={}, torch=ROLE_TORCH)


def test_role_no_log_of_the_inputs_and_of_a_plan():
    secret = dict(ROLE_INPUTS, index_url="https://u:p@pypi.example/simple")
    assert F.no_log(secret) and not F.no_log(ROLE_INPUTS)
    assert F.no_log(F.plan(secret, facts={}))


# --- a build host (flash_attn_build_for_fleet) --------------------------------------------------------------------

# The pins preflight normalizes into llm_stack_host.stack (the H200 host's stack, docs/validation/h200.md).
STACK = {"cuda_version": "13.0.2", "torch_version": "2.11.0", "torch_cuda": "cu130", "python_version": "3.12",
         "flash_attn_version": "2.8.3", "vllm_version": "0.19.1", "transformers_version": "5.5.4", "model": "q"}
H200_TORCH = "probe-h200-torch2.11.0-cu130.txt"


def contract(arch_list, ok=True, test_host=False, **stack):
    """preflight's llm_stack_host of a host (what fleet_plans reads of a host of a later batch)."""
    return {"ok": ok, "arch_list": arch_list, "stack": dict(STACK, **stack), "cpu_only_test_host": test_host}


def build_host(arch_list="8.0;8.9;9.0", **over):
    """The example inventory's build host: no GPU, its arch list, flash_attn_build_for_fleet, preflight's fact."""
    facts = {"llm_stack_host": dict(contract(arch_list), gpu={"count": 0, "compute_caps": []})}
    plan = F.plan(inputs(arch_list=arch_list, for_fleet=True, hostname="build-01", **over), facts,
                  probe(H200_TORCH), H200_NVCC)
    return plan, facts


def gpu_host(cls, name, **over):
    """A GPU host of the batch, its plan on its captured GPUs and the same torch (flash_attn_build_plan)."""
    return F.plan(inputs(hostname=name, **over), gpu_facts(cls), probe(H200_TORCH), H200_NVCC)


def fleet(builder, facts, members=(), later=None, builders=()):
    return F.fleet_plans(builder, list(members), later or {}, builders, facts=facts, torch=probe(H200_TORCH),
                         nvcc=H200_NVCC)


def test_the_build_host_compiles_the_keys_of_the_gpu_classes_not_its_own():
    """The issue: the build host's 8.0;8.9;9.0 is sm80+sm90 combined, a key no GPU class installs."""
    builder, facts = build_host()
    assert builder["targets"] == [80, 90] and builder["for_fleet"] and builder["work"]
    a100, l40s, h200 = gpu_host("a100x8", "gpu-a100-01"), gpu_host("l40s", "gpu-l40s-01"), gpu_host("h200", "gpu-h200-01")
    # H100 hosts in a later batch (llm_stack_serial): no plan yet, preflight's fact.
    plans = fleet(builder, facts, [builder, a100, l40s, h200, None], {"gpu-h100-01": contract("9.0")})
    assert [p["targets"] for p in plans] == [[80], [90]]
    # Exactly the keys, labels and cache entries the GPU hosts install: they find them built.
    assert [p["key"] for p in plans] == [a100["key"], h200["key"]] and l40s["key"] == a100["key"]
    assert [p["entry"] for p in plans] == [a100["entry"], h200["entry"]]
    assert plans[1]["label"] == "flash-attn-2.8.3-torch2.11.0_cu130-cp312-cxx11abiTRUE-sm90"
    assert plans[0]["environment"]["FLASH_ATTN_CUDA_ARCHS"] == "80" and plans[1]["check"]["cmd"].count("--archs 90")
    assert all(p["hostname"] == "build-01" and p["cuda_home"] == builder["cuda_home"] for p in plans)
    assert F.jobs_request(plans[1])["n_targets"] == 1
    # Its own key (sm80.90) is no one's: it installs the first fleet key's wheel, compiling nothing more.
    assert F.fleet_own_plan(builder, plans) is plans[0]
    # Without the H200 of the batch the H100 of a later batch alone asks for sm90.
    assert [p["targets"] for p in fleet(builder, facts, [a100], {"gpu-h100-01": contract("9.0")})] == [[80], [90]]


def test_the_build_host_installs_its_own_key_where_the_fleet_has_it():
    builder, facts = build_host("9.0")
    plans = fleet(builder, facts, [gpu_host("a100x8", "a"), gpu_host("h200", "h")])
    assert [p["targets"] for p in plans] == [[80], [90]]
    assert F.fleet_own_plan(builder, plans) is builder and builder["key"] == plans[1]["key"]


def test_a_build_host_alone_builds_for_its_own_arch_list():
    builder, facts = build_host()
    assert fleet(builder, facts, [builder], {}) == []
    assert F.fleet_own_plan(builder, []) is builder and builder["key"]["archs"] == "80;90"


@pytest.mark.parametrize("later", [
    contract("8.0", torch_version="2.10.0"),       # another torch pin
    contract("8.0", torch_cuda="cu128"),           # another CUDA build of torch
    contract("8.0", python_version="3.11"),        # another Python
    contract("8.0", flash_attn_version="2.8.2"),   # another flash-attn
    contract("8.0", test_host=True),               # the CPU-only test path
    contract("8.0", ok=False),                     # preflight refused it
    contract("7.5"),                               # only GPUs older than sm80: nothing to build
    contract(""),                                  # no arch list
    contract("11.0"),                              # a target FA2 does not build
    None, "junk", {},                              # no fact
])
def test_hosts_of_later_batches_that_do_not_share_the_group_are_ignored(later):
    builder, facts = build_host()
    assert F.fleet_targets(builder, [], {"gpu-x": later}, facts=facts) == {}
    # The same host with the build host's pins counts.
    assert F.fleet_targets(builder, [], {"gpu-x": contract("8.6")}, facts=facts) == {"gpu-x": [80]}


def test_members_of_the_batch_count_by_their_plans():
    builder, facts = build_host()
    other_version = gpu_host("a100x8", "gpu-a", version="2.8.2")
    other_builder = F.plan(inputs(arch_list="10.0", for_fleet=True, hostname="build-02"), facts, probe(H200_TORCH),
                           H200_NVCC)
    installed = dict(gpu_host("b200-610", "gpu-b"), work=False)   # its key's wheel installed already
    t4 = F.plan(inputs(hostname="gpu-t4"), gpu_facts("t4-470", "query-nocap.csv", nvidia.QUERY_FIELDS_NO_CAP),
                probe(H200_TORCH), H200_NVCC)
    stopped = dict(gpu_host("b200-610", "gpu-c"), ok=False)
    assert F.fleet_targets(builder, [other_version, other_builder, installed, t4, stopped, None], {}, facts=facts) == {}
    # A host of the batch never counts by its fact (a host of the batch without a plan stopped before it).
    h200 = gpu_host("h200", "gpu-h")
    assert F.fleet_targets(builder, [h200], {"gpu-h": contract("8.0")}, facts=facts) == {"gpu-h": [90]}
    # Other build hosts of later batches (flash_attn_build_for_fleet in hostvars) are no members either.
    assert F.fleet_targets(builder, [], {"build-02": contract("9.0")}, builders=["build-01", "build-02"],
                           facts=facts) == {}
    # Without its own fact the build host cannot tell the pins of later batches: none of them counts.
    assert F.fleet_targets(builder, [h200], {"gpu-x": contract("8.0")}, facts={}) == {"gpu-h": [90]}


def test_below_sm80_follows_the_build_hosts_rule():
    builder, facts = build_host()
    assert F.fleet_targets(builder, [], {"gpu-m": contract("7.5;8.6")}, facts=facts) == {"gpu-m": [80]}
    strict, facts = build_host(below_sm80="fail")
    # below_sm80=fail: the build host's own gate stops it on its own list only; a mixed host is not built for.
    assert F.fleet_targets(strict, [], {"gpu-m": contract("7.5;8.6")}, facts=facts) == {}


def test_duplicate_keys_collapse_and_the_group_scope_union_is_a_key():
    builder, facts = build_host()
    members = [gpu_host("a100x8", "a1"), gpu_host("a100x8", "a2"), gpu_host("l40s", "l1"), gpu_host("mixed", "m1")]
    later = dict(("h%d" % i, contract("8.0;8.9")) for i in range(5))
    plans = fleet(builder, facts, members, later)
    assert [p["targets"] for p in plans] == [[80]]
    # arch_scope=group hosts of the batch install their group's union (the build host's archs left out of it).
    cpu = probe("probe-debian12-torch2.13.0-cpu.txt")
    tb = F.plan(inputs(arch_list="8.0;9.0", for_fleet=True, cpu_only_test_host=True, hostname="b"), {}, cpu)
    ga = F.plan(inputs(arch_list="8.0", arch_scope="group", cpu_only_test_host=True, hostname="ga"), {}, cpu)
    gb = F.plan(inputs(arch_list="10.0", arch_scope="group", cpu_only_test_host=True, hostname="gb"), {}, cpu)
    group = [tb, ga, gb]
    ga, gb = [F.plan(p, {}, cpu, group=group) for p in (ga, gb)]
    assert ga["targets"] == gb["targets"] == [80, 100]
    assert [p["targets"] for p in F.fleet_plans(tb, [tb, ga, gb], {}, torch=cpu)] == [[80, 100]]
    # The build host's own plan ignores arch_scope=group.
    assert F.plan(dict(tb, inputs=dict(tb["inputs"], arch_scope="group")), {}, cpu, group=group)["targets"] == [80, 90]


def test_a_host_without_for_fleet_has_no_fleet():
    plain = gpu_host("h200", "gpu-h")
    assert plain["for_fleet"] is False
    assert F.fleet_targets(plain, [gpu_host("a100x8", "a")], {"x": contract("8.0")}) == {}
    # Its plan and result are as before: nothing built for others.
    assert F.build_result(plain, None)["fleet_builds"] == []
    # A plan without the venv's torch (no group yet) has no fleet either.
    first = F.plan(inputs(arch_list="9.0", for_fleet=True), {})
    assert first["group_id"] is None and F.fleet_plans(first, [plain]) == []


def test_the_build_host_works_even_with_its_key_installed():
    builder, facts = build_host("9.0")
    wheel = "flash_attn-2.8.3-cp312-cp312-linux_x86_64.whl"
    url = "file://%s/%s/%s" % (builder["wheel_dir"], builder["entry"], wheel)
    again = F.plan(inputs(arch_list="9.0", for_fleet=True, hostname="build-01"), facts,
                   with_flash_attn(probe(H200_TORCH), url), H200_NVCC)
    assert again["installed"] and again["work"]
    assert not F.plan(inputs(arch_list="9.0", hostname="build-01"), facts, with_flash_attn(probe(H200_TORCH), url),
                      H200_NVCC)["work"]


@pytest.mark.parametrize("value, expected", [(True, True), (False, False), ("true", True), ("no", False),
                                             ("False", False)])
def test_for_fleet_as_the_inventory_gives_it(value, expected):
    plan = F.plan(inputs(arch_list="9.0", for_fleet=value), {})
    assert plan["ok"] and plan["for_fleet"] is expected


@pytest.mark.parametrize("value", ["maybe", 1, 0, "", None, [True], {"a": 1}])
def test_for_fleet_not_a_boolean_names_the_variable(value):
    plan = F.plan(inputs(arch_list="9.0", for_fleet=value), {})
    assert not plan["ok"] and plan["for_fleet"] is False
    assert len(plan["errors"]) == 1 and plan["errors"][0].startswith("flash_attn_build_for_fleet=")
    assert "is not a boolean" in plan["errors"][0] and "Fix:" in plan["errors"][0]


def test_fleet_wrong_shapes_are_the_callers_bug():
    builder, facts = build_host()
    for call in (lambda: F.fleet_targets(None), lambda: F.fleet_targets({"for_fleet": True}),
                 lambda: F.fleet_targets(builder, "a100"), lambda: F.fleet_targets(builder, [], ["x"]),
                 lambda: F.fleet_own_plan(builder, None), lambda: F.fleet_builds(["x"])):
        with pytest.raises(F.FlashAttnError):
            call()


def test_the_result_lists_the_fleet_builds():
    builder, facts = build_host()
    built = [{"entry": "k90", "outcome": {"source": "built", "compiled": True, "wheel": "w90.whl"}},
             {"entry": "k80", "outcome": {"source": "none", "compiled": "false", "wheel": None}},
             {"entry": "k70", "outcome": None}]
    result = F.build_result(builder, {"source": "controller_cache", "compiled": False, "wheel": "w80.whl"}, built)
    assert result["fleet_builds"] == [{"build_key": "k70", "compiled": False, "wheel": ""},
                                      {"build_key": "k80", "compiled": False, "wheel": ""},
                                      {"build_key": "k90", "compiled": True, "wheel": "w90.whl"}]
    assert result["compiled"] is False and result["source"] == "controller_cache"


CAPS = ["7.5", "8.0", "8.6", "8.9", "9.0", "10.0", "12.0"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.lists(st.sampled_from(CAPS), min_size=1, max_size=3), st.booleans(), st.booleans()),
                max_size=6),
       st.sampled_from(["8.0;8.9;9.0", "9.0", "8.0;9.0;10.0"]))
def test_the_fleet_keys_are_exactly_the_member_keys_of_the_group(hosts, own):
    """For any arch lists of the other hosts, in the batch (a plan) or later (preflight's fact), sharing the group
    or not (another flash-attn), the fleet's keys are the distinct keys those of the group install."""
    builder, facts = build_host(own)
    members, later, expected = [builder], {}, set()
    for index, (caps, in_batch, same_group) in enumerate(hosts):
        name, text = "gpu-%d" % index, ";".join(caps)
        version = "2.8.3" if same_group else "2.8.2"
        plan = F.plan(inputs(arch_list=text, hostname=name, version=version), {}, probe(H200_TORCH), H200_NVCC)
        if in_batch:
            members.append(plan)
        else:
            later[name] = contract(text, flash_attn_version=version)
        if same_group and plan["build"]:
            expected.add(json.dumps(plan["key"], sort_keys=True))
    plans = fleet(builder, facts, members, later)
    keys = [json.dumps(p["key"], sort_keys=True) for p in plans]
    assert sorted(keys) == sorted(expected) and len(keys) == len(set(keys))
    assert [p["targets"] for p in plans] == sorted(p["targets"] for p in plans)
    own_plan = F.fleet_own_plan(builder, plans)
    assert own_plan is builder if (not plans or json.dumps(builder["key"], sort_keys=True) in keys) else own_plan is plans[0]
