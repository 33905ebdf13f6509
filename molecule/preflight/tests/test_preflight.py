"""Preflight on a mixed fleet: compatible hosts pass with the right arch
list, incompatible hosts fail with every problem named (and a complete stack
that would pass, where one exists), a hung nvidia-smi stops only its own
host, and no host is changed."""

import json
import os
import re
import subprocess

import pytest
import yaml


PROJECT = os.environ.get("MOLECULE_PROJECT_DIRECTORY", os.getcwd())

EXPECTED_ARCH = {
    "preflight-h200": "9.0",
    "preflight-a100x8": "8.0",
    "preflight-mixed": "8.0;8.9",
}
GATE_TASK = "Check the whole chain and record what the roles build for"


def _json_output(text):
    """The JSON document of ansible.posix.json in the output: the scenario's other callbacks (profile_tasks) write
    lines before and after it."""
    start = re.search(r"^\{$", text, re.MULTILINE)
    assert start, text[-4000:]
    return json.JSONDecoder().raw_decode(text, start.start())[0]


def _run_preflight(*extra):
    env = dict(os.environ)
    env.update(
        ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
        ANSIBLE_COLLECTIONS_PATH=os.path.join(PROJECT, ".collections"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_INJECT_FACT_VARS="False",
    )
    return subprocess.run(
        ["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"],
         os.path.join(PROJECT, "playbooks", "preflight.yml")] + list(extra),
        env=env, cwd=PROJECT, capture_output=True, text=True, check=False,
    )


@pytest.fixture(scope="module")
def fleet_run():
    """Run playbooks/preflight.yml over the whole scenario fleet once."""
    proc = _run_preflight()
    # Some hosts are meant to fail: ansible-playbook exits 2.
    assert proc.returncode == 2, proc.stdout[-4000:] + proc.stderr[-4000:]
    return _json_output(proc.stdout)


def _task_result(run, host, task_name):
    for play in run["plays"]:
        for task in play["tasks"]:
            # Task names carry their role's prefix: "ROLE : NAME".
            if task["task"]["name"].split(" : ")[-1] == task_name and host in task["hosts"]:
                return task["hosts"][host]
    raise AssertionError("no result of %r for %s" % (task_name, host))


def _gate(run, host):
    return _task_result(run, host, GATE_TASK)


def _report(run, host):
    return _gate(run, host)["ansible_facts"]["llm_stack_host"]


def test_nothing_changed_on_any_host(fleet_run):
    for host, stats in fleet_run["stats"].items():
        assert stats["changed"] == 0, host


@pytest.mark.parametrize("name", sorted(EXPECTED_ARCH))
def test_compatible_hosts_pass_with_their_own_arch_list(fleet_run, name):
    assert fleet_run["stats"][name]["failures"] == 0
    report = _report(fleet_run, name)
    assert report["ok"] is True, report["errors"]
    assert report["arch_list"] == EXPECTED_ARCH[name]
    assert report["arch_list_source"] == "gpus"
    assert report["errors"] == []
    # The contract the later roles read.
    assert report["venv"] == "/opt/llm-stack/venv"
    assert report["cuda"]["home"] == "/usr/local/cuda-12.8"
    assert report["stack"]["torch_cuda"] == "cu128"


def test_h200_report_matches_the_real_capture(fleet_run):
    report = _report(fleet_run, "preflight-h200")
    assert report["gpu"]["count"] == 1
    assert report["gpu"]["names"] == ["NVIDIA H200"]
    assert report["gpu"]["compute_caps"] == ["9.0"]
    assert report["gpu"]["driver_version"] == "580.159.04"
    assert report["gpu"]["driver_cuda_version"] == "13.0"
    summary = _task_result(fleet_run, "preflight-h200", "Show the preflight report")["msg"]
    assert summary[0] == "preflight preflight-h200: PASS"
    assert any("NVIDIA H200" in line and "9.0" in line for line in summary)
    # vllm_source_method auto: driver 580 runs vLLM 0.19.1's release wheel (CUDA 12.9), which fits torch 2.10.0+cu128.
    assert report["vllm_method"] == "wheel"
    assert report["vllm_method_reason"].startswith("auto: driver 580.159.04 runs vLLM 0.19.1's release wheel")
    assert "vLLM from: wheel (%s)" % report["vllm_method_reason"] in summary


def test_old_driver_host_fails_with_each_problem_and_fix(fleet_run):
    assert fleet_run["stats"]["preflight-t4old"]["failures"] == 1
    report = _report(fleet_run, "preflight-t4old")
    assert report["ok"] is False
    errors = "\n".join(report["errors"])
    # Driver 470 is too old for CUDA 12.8.
    assert "llm_stack_cuda_version" in errors and "470" in errors
    # FA2 needs sm80: flash_attn_build leaves the T4 out (flash_attn_build_below_sm80: skip, the default), so
    # preflight warns as the role would, and does not refuse the host for it.
    warnings = "\n".join(report["warnings"])
    assert "llm_stack_flash_attn_version" in warnings and "7.5" in warnings
    assert "flash_attn_build_below_sm80=skip" in warnings and "FlashAttention-2" not in errors
    # vllm_source_method auto: driver 470 runs no CUDA 12, so not vLLM 0.19.1's release wheel either.
    assert report["vllm_method"] == "source" and "driver 470" in report["vllm_method_reason"]
    # The old driver has no compute_cap field: the capability came from a fallback.
    assert report["gpu"]["compute_caps"] == ["7.5"]
    assert report["gpu"]["compute_cap_source"] != "query"
    failed = _task_result(fleet_run, "preflight-t4old", "Stop this host before any change, listing every problem")
    assert "nothing was changed" in failed["msg"]


def test_broken_driver_host_fails_naming_the_driver(fleet_run):
    assert fleet_run["stats"]["preflight-nodriver"]["failures"] == 1
    report = _report(fleet_run, "preflight-nodriver")
    assert report["ok"] is False
    assert any("couldn't communicate with the NVIDIA driver" in e for e in report["errors"])


def test_hung_nvidia_smi_stops_only_its_host(fleet_run):
    assert fleet_run["stats"]["preflight-wedged"]["failures"] == 1
    report = _report(fleet_run, "preflight-wedged")
    assert report["ok"] is False
    assert any("did not answer within 5 seconds" in e for e in report["errors"]), report["errors"]
    for name in EXPECTED_ARCH:
        assert fleet_run["stats"][name]["failures"] == 0


def test_missing_controller_runfile_is_caught_before_any_change(fleet_run):
    assert fleet_run["stats"]["preflight-norunfile"]["failures"] == 1
    report = _report(fleet_run, "preflight-norunfile")
    assert report["ok"] is False
    assert any("cuda_toolkit_runfile_src" in e for e in report["errors"]), report["errors"]


def test_guide_stack_is_refused_in_one_round_with_a_stack_that_passes(fleet_run, tmp_path):
    report = _report(fleet_run, "preflight-guide")
    assert report["ok"] is False
    errors = "\n".join(report["errors"])
    # Every problem at once: the CUDA version format the cuda_toolkit role
    # needs, vLLM's torch pin and transformers range, Qwen3.5's needs.
    for variable in ("llm_stack_cuda_version", "llm_stack_torch_version",
                     "llm_stack_transformers_version", "llm_stack_model"):
        assert variable in errors, variable
    suggested = report["suggested"]
    assert suggested, "no suggested stack"
    block = _gate(fleet_run, "preflight-guide")["suggested_group_vars"]
    summary = "\n".join(_task_result(fleet_run, "preflight-guide", "Show the preflight report")["msg"])
    assert block.strip().splitlines()[0] in summary
    # Pasting the block into the inventory makes the host pass.
    pins = yaml.safe_load(block)
    assert pins["llm_stack_model"].startswith("Qwen/Qwen3.5-")
    extra = tmp_path / "suggested.yml"
    extra.write_text(block)
    proc = _run_preflight("--limit", "preflight-guide", "-e", "@%s" % extra)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    rerun = _json_output(proc.stdout)
    assert _report(rerun, "preflight-guide")["ok"] is True


def test_unlisted_vllm_is_refused_and_the_opt_in_keeps_every_other_rule(tmp_path):
    """The first run's item 4 on the guide's host: Qwen/Qwen3-8B with torch 2.3.1/cu121, transformers 4.41.2 and
    a vLLM release newer than the matrix. Refused in one round, naming make matrix and the opt-in; with
    llm_stack_allow_unlisted_versions the release is a warning and the model's transformers floor still stops it."""
    stack = {"llm_stack_vllm_version": "0.35.0", "llm_stack_model": "Qwen/Qwen3-8B"}
    extra = tmp_path / "unlisted.yml"
    extra.write_text(yaml.safe_dump(stack))
    proc = _run_preflight("--limit", "preflight-guide", "-e", "@%s" % extra)
    assert proc.returncode == 2, proc.stdout[-4000:] + proc.stderr[-2000:]
    report = _report(_json_output(proc.stdout), "preflight-guide")
    errors = "\n".join(report["errors"])
    assert "llm_stack_vllm_version=0.35.0: vLLM 0.35.0 is not in the matrix" in errors
    assert "run `make matrix`" in errors and "set llm_stack_allow_unlisted_versions: true" in errors
    assert "Qwen3 models need transformers >= 4.51.0" in errors
    assert report["suggested"]["vllm_version"] == "0.34.0"
    extra.write_text(yaml.safe_dump(dict(stack, llm_stack_allow_unlisted_versions=True)))
    proc = _run_preflight("--limit", "preflight-guide", "-e", "@%s" % extra)
    assert proc.returncode == 2, proc.stdout[-4000:] + proc.stderr[-2000:]
    report = _report(_json_output(proc.stdout), "preflight-guide")
    assert not [e for e in report["errors"] if "is not in the matrix" in e], report["errors"]
    assert [w for w in report["warnings"] if "llm_stack_allow_unlisted_versions=true accepts it" in w]
    assert [e for e in report["errors"] if "Qwen3 models need transformers >= 4.51.0" in e], report["errors"]


def test_host_left_untouched(host):
    # prepare.yml left a marker; nothing on the system may be newer apart
    # from the replayed nvidia-smi data it installed itself.
    newer = host.check_output(
        "find /etc /opt /usr /var/lib /srv -xdev -newer /var/tmp/preflight-marker "
        "-not -path '/etc/nvidia-smi-fake*' -print"
    )
    assert newer == ""
    assert not host.file("/opt/llm-stack").exists
