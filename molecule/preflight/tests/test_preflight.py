"""Preflight on a mixed fleet: compatible hosts pass with the right arch
list, incompatible hosts fail with every problem named, and no host is
changed."""

import json
import os
import subprocess

import pytest


PROJECT = os.environ.get("MOLECULE_PROJECT_DIRECTORY", os.getcwd())

EXPECTED_ARCH = {
    "preflight-h200": "9.0",
    "preflight-a100x8": "8.0",
    "preflight-mixed": "8.0;8.9",
}


@pytest.fixture(scope="module")
def fleet_run():
    """Run playbooks/preflight.yml over the whole scenario fleet once."""
    env = dict(os.environ)
    env.update(
        ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
        ANSIBLE_COLLECTIONS_PATH=os.path.join(PROJECT, ".collections"),
        ANSIBLE_NOCOLOR="1",
    )
    proc = subprocess.run(
        [
            "ansible-playbook",
            "-i",
            os.environ["MOLECULE_INVENTORY_FILE"],
            os.path.join(PROJECT, "playbooks", "preflight.yml"),
        ],
        env=env,
        cwd=PROJECT,
        capture_output=True,
        text=True,
        check=False,
    )
    # Two hosts are meant to fail: ansible-playbook exits 2.
    assert proc.returncode == 2, proc.stdout[-4000:] + proc.stderr[-4000:]
    return json.loads(proc.stdout)


def _task_result(run, host, task_name):
    for play in run["plays"]:
        for task in play["tasks"]:
            # Task names carry their role's prefix: "ROLE : NAME".
            if task["task"]["name"].split(" : ")[-1] == task_name and host in task["hosts"]:
                return task["hosts"][host]
    raise AssertionError("no result of %r for %s" % (task_name, host))


def _report(run, host):
    res = _task_result(run, host, "Record the verdict and the arch list this host builds for")
    return res["ansible_facts"]["llm_stack_preflight"]


def test_nothing_changed_on_any_host(fleet_run):
    for host, stats in fleet_run["stats"].items():
        assert stats["changed"] == 0, host


@pytest.mark.parametrize("name", sorted(EXPECTED_ARCH))
def test_compatible_hosts_pass_with_their_own_arch_list(fleet_run, name):
    assert fleet_run["stats"][name]["failures"] == 0
    report = _report(fleet_run, name)
    assert report["ok"] is True, report["errors"]
    assert report["torch_cuda_arch_list"] == EXPECTED_ARCH[name]
    assert report["errors"] == []


def test_h200_report_matches_the_real_capture(fleet_run):
    report = _report(fleet_run, "preflight-h200")
    assert report["gpu_count"] == 1
    assert report["gpu_names"] == ["NVIDIA H200"]
    assert report["compute_caps"] == ["9.0"]
    assert report["driver_version"] == "580.159.04"
    assert report["driver_cuda_version"] == "13.0"
    summary = _task_result(fleet_run, "preflight-h200", "Show the preflight report")["msg"]
    assert summary[0] == "preflight preflight-h200: PASS"
    assert any("NVIDIA H200" in line and "9.0" in line for line in summary)


def test_old_driver_host_fails_with_each_problem_and_fix(fleet_run):
    assert fleet_run["stats"]["preflight-t4old"]["failures"] == 1
    report = _report(fleet_run, "preflight-t4old")
    assert report["ok"] is False
    errors = "\n".join(report["errors"])
    # Driver 470 is too old for CUDA 12.8, and FA2 needs sm80.
    assert "llm_stack_cuda_version" in errors and "470" in errors
    assert "llm_stack_flash_attn_version" in errors and "7.5" in errors
    # The old driver has no compute_cap field: the capability came from a fallback.
    assert report["compute_caps"] == ["7.5"]
    assert report["compute_cap_source"] != "query"
    failed = _task_result(fleet_run, "preflight-t4old", "Stop this host before any change, listing every problem")
    assert "nothing was changed" in failed["msg"]


def test_broken_driver_host_fails_naming_the_driver(fleet_run):
    assert fleet_run["stats"]["preflight-nodriver"]["failures"] == 1
    report = _report(fleet_run, "preflight-nodriver")
    assert report["ok"] is False
    assert any("couldn't communicate with the NVIDIA driver" in e for e in report["errors"])


def test_host_left_untouched(host):
    # prepare.yml left a marker; nothing on the system may be newer apart
    # from the replayed nvidia-smi data it installed itself.
    newer = host.check_output(
        "find /etc /opt /usr /var/lib /srv -xdev -newer /var/tmp/preflight-marker "
        "-not -path '/etc/nvidia-smi-fake*' -print"
    )
    assert newer == ""
    assert not host.file("/opt/llm-stack").exists
