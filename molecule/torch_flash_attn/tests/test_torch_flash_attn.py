"""State after converge, idempotence, check and side_effect (CPU-only test path).

Two build keys: a and b (8.0 and 8.6, FA2 target sm80) share one, with b
as its designated builder; c (9.0, sm90) has the other. side_effect.yml
made a build of a broken sdist (2.8.3.post900) fail on a.

Each host is read once, by one script run with the venv's Python (every
remote command costs a round trip); the tests assert on what it printed.
"""

import glob
import hashlib
import json
import os
import re
import shlex

import pytest

VENV = "/opt/llm-stack/venv"
PY = VENV + "/bin/python"
LOG_DIR = "/var/log/llm-stack"
WHEEL_DIR = "/opt/llm-stack/wheels"
WHEEL = "flash_attn-2.8.3-py3-none-any.whl"
CACHE = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "wheel-cache")
ARCH = {"torch_flash_attn-a": "80", "torch_flash_attn-b": "80", "torch_flash_attn-c": "90"}
BUILDER = {"80": "torch_flash_attn-b", "90": "torch_flash_attn-c"}
BROKEN = "2.8.3.post900"
# The output of the scenario's playbooks (provisioner.env ANSIBLE_LOG_PATH).
PLAY_LOG = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "ansible.log")
# A progress line of gpufleet.llm_stack.run_logged: "progress [HOST] NAME: TEXT".
PROGRESS = re.compile(r"progress \[(?P<host>torch_flash_attn-[abc])\] (?P<name>.+?): (?P<text>.+)$")

READ_HOST = r'''
import base64, hashlib, json, os
import importlib.metadata as m

def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()

out = {}
import torch
out["torch"] = [torch.__version__, torch.version.cuda, torch.cuda.is_available()]
d = m.distribution("flash-attn")
out["flash_attn"] = d.version
out["direct_url"] = json.loads(d.read_text("direct_url.json"))
hashed = [f for f in d.files if f.hash]
out["record"] = {"files": len(d.files), "hashed": len(hashed), "bad": [str(f) for f in hashed
                 if base64.urlsafe_b64encode(hashlib.sha256(f.locate().read_bytes()).digest()).rstrip(b"=").decode() != f.hash.value]}
try:
    import flash_attn
    out["import"] = "ok"
except ModuleNotFoundError as e:
    out["import"] = "missing " + e.name
url = out["direct_url"]["url"]
out["installed_sha256"] = sha256(url[len("file://"):])
with open("%(venv)s/.llm_stack/flash-attn.json") as f:
    out["marker"] = json.load(f)
logs = sorted(x for x in os.listdir("%(log_dir)s") if x.startswith("wheel-build-"))
out["logs"] = {}
for x in logs:
    with open(os.path.join("%(log_dir)s", x)) as f:
        out["logs"][x] = f.read()
ledger = os.path.join("%(log_dir)s", "wheel-builds.jsonl")
out["ledger"] = []
if os.path.exists(ledger):
    with open(ledger) as f:
        out["ledger"] = [json.loads(line) for line in f if line.strip()]
print(json.dumps(out))
''' % {"venv": VENV, "log_dir": LOG_DIR}

_STATE = {}


def name_of(host):
    return host.backend.get_hostname()


def state(host):
    if name_of(host) not in _STATE:
        _STATE[name_of(host)] = json.loads(host.check_output(PY + " -c " + shlex.quote(READ_HOST)))
    return _STATE[name_of(host)]


def cache_entries():
    return sorted(e for e in os.listdir(CACHE) if not e.startswith("."))


def entry_for(arch):
    found = [e for e in cache_entries() if e.startswith("flash-attn-2.8.3-") and "-sm%s-" % arch in e]
    assert len(found) == 1, cache_entries()
    return found[0]


def sha256_local(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_controller_cache_holds_one_wheel_per_key():
    entries = cache_entries()
    assert len(entries) == 2, entries
    for arch, builder in BUILDER.items():
        entry = entry_for(arch)
        assert [os.path.basename(w) for w in glob.glob(os.path.join(CACHE, entry, "*.whl"))] == [WHEEL]
        with open(os.path.join(CACHE, entry, "key.json")) as f:
            key = json.load(f)
        assert key["built_on"] == builder
        assert key["key"]["archs"] == arch
        assert key["key"]["cuda_kernels"] is False  # CPU-only test path
        assert key["key"]["torch"] == "2.13.0+cpu"
        assert key["key"]["python_abi"] == "cp311"
    assert not [e for e in os.listdir(CACHE) if BROKEN in e]


def test_venv_has_the_pinned_torch_and_flash_attn(host):
    s = state(host)
    assert s["torch"] == ["2.13.0+cpu", None, False]
    assert s["flash_attn"] == "2.8.3"


def test_flash_attn_imports_up_to_its_cuda_extension(host):
    # CPU-only test path: the wheel has no CUDA extension by design.
    assert state(host)["import"] == "missing flash_attn_2_cuda"


def test_installed_flash_attn_is_the_cached_wheel(host):
    s = state(host)
    entry = entry_for(ARCH[name_of(host)])
    assert s["direct_url"]["url"] == "file://%s/%s/%s" % (WHEEL_DIR, entry, WHEEL)
    cached = sha256_local(os.path.join(CACHE, entry, WHEEL))
    assert s["installed_sha256"] == cached
    assert s["marker"]["entry"] == entry
    assert s["marker"]["sha256"] == cached
    assert s["marker"]["built_on"] == BUILDER[ARCH[name_of(host)]]


def test_installed_files_match_their_record(host):
    record = state(host)["record"]
    assert record["hashed"] > 10 and record["bad"] == []


@pytest.mark.parametrize("arch", sorted(BUILDER))
def test_each_key_was_built_once_by_its_builder(host, arch):
    s = state(host)
    entry = entry_for(arch)
    built = [e for e in s["ledger"] if e["entry"] == entry]
    log = "wheel-build-%s.log" % entry
    if BUILDER[arch] == name_of(host):
        # One build across converge, idempotence and check.
        assert [e["result"] for e in built] == ["built"]
        assert "FLASH_ATTENTION_SKIP_CUDA_BUILD=TRUE" in s["logs"][log]
        assert "Successfully built flash-attn" in s["logs"][log]
    else:
        assert built == []
        assert log not in s["logs"]


def test_failed_build_is_recorded_only_where_it_ran(host):
    s = state(host)
    failed = [e for e in s["ledger"] if e["result"] == "failed"]
    if name_of(host) == "torch_flash_attn-a":
        assert len(failed) == 1 and BROKEN in failed[0]["entry"]
        assert "csrc/cutlass is missing" in s["logs"][os.path.basename(failed[0]["log"])]
    else:
        assert failed == []


def progress_lines():
    with open(PLAY_LOG, encoding="utf-8", errors="replace") as f:
        return [m.groupdict() for m in map(PROGRESS.search, f.read().splitlines()) if m]


def test_long_commands_showed_progress_in_the_play_output():
    lines = progress_lines()
    torch = [line for line in lines if line["name"].startswith("pip install torch==2.13.0+cpu into /opt/llm-stack/venv")]
    # every host installed torch once, with the run announced and its end reported
    for host in ARCH:
        mine = [line["text"] for line in torch if line["host"] == host]
        assert mine[0] == "started, log /var/log/llm-stack/torch-install.log on the host", mine
        assert re.match(r"^done after \d+(m\d\d)?s \(exit status 0\)$", mine[-1]), mine
    builds = [line for line in lines if line["name"].startswith("Build flash-attn-2.8.3-")]
    assert sorted(set(line["host"] for line in builds if line["text"].startswith("done after"))) == sorted(BUILDER.values())
    # and a line while a command ran: the time elapsed, then what the log said
    running = [line["text"] for line in lines if re.match(r"^\d+(m\d\d)?s elapsed; ", line["text"])]
    assert running, lines
