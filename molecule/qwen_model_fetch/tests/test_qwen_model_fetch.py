"""Verifier of the qwen_model_fetch scenario (TEST-ONLY fleet, stand-in hub).

Runs after converge (v1 on both hosts) and side_effect.yml (revision change to
main = v2, a repaired interruption on node2, refused bad requests). Checks the
final state of the hosts and, on the controller, the stand-in hub's access
log, the outputs of every run and the process command line watcher.
"""

import json
import os
import re
import subprocess
import tempfile
from collections import Counter

import pytest
import testinfra.utils.ansible_runner

INVENTORY = os.environ["MOLECULE_INVENTORY_FILE"]
testinfra_hosts = testinfra.utils.ansible_runner.AnsibleRunner(INVENTORY).get_hosts("llm_hosts")

PROJECT = os.environ["MOLECULE_PROJECT_DIRECTORY"]
EPHEMERAL = os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]
FIXTURE = os.path.join(PROJECT, ".cache", "qwen_model_fetch")
TOKEN = "hf_gpufleetFakeTokenForLeakTests0123456789"
# The same token as a grep pattern that does not contain it, so that the
# checks themselves put it on no command line and in no log.
TOKEN_PATTERN = TOKEN[:3] + "[" + TOKEN[3] + "]" + TOKEN[4:]
# What side_effect.yml damaged on node2 (then repaired from the mirror).
REPAIRED = ["model-00001-of-00005.safetensors", "model-00002-of-00005.safetensors"]
REPO = "Qwen/Qwen3.5-0.8B"
BASE = "/opt/llm-stack/models/" + REPO
MANIFEST = ".llm_stack_manifest.json"


def fixture():
    with open(os.path.join(FIXTURE, "revisions.json"), encoding="utf-8") as handle:
        return json.load(handle)


def repo_git(*args):
    return subprocess.run(["git", "-C", fixture()["repo_path"], *args], check=True,
                          capture_output=True, text=True).stdout.split()


def cache_host():
    runner = testinfra.utils.ansible_runner.AnsibleRunner(INVENTORY)
    return runner.get_host(runner.get_hosts("hf_mirror")[0])


def test_current_points_at_main_and_previous_revision_is_kept(host):
    commits = fixture()["commits"]
    current = host.file(BASE + "/current")
    assert current.is_symlink
    assert current.linked_to == BASE + "/" + commits["main"]
    # keep_revisions 2: the revision before (v1) stays for a roll-back.
    assert host.file(BASE + "/" + commits["v1"] + "/" + MANIFEST).exists
    entries = host.check_output("ls -A %s", BASE).split()
    assert sorted(entries) == sorted(["current", commits["v1"], commits["main"]])


def test_files_are_the_hub_files_at_main(host):
    data = fixture()
    for name, sha256 in data["files"]["v2"].items():
        f = host.file(BASE + "/current/" + name)
        assert f.exists, name
        assert f.sha256sum == sha256, name
        assert f.user == "root" and f.group == "root"
        assert f.mode == 0o644, name


def test_unchanged_files_are_shared_with_the_previous_revision(host):
    """Hard links: a revision change transfers only the changed files (node1; node2 had shards repaired)."""
    if not host.backend.get_hostname().endswith("node1"):
        pytest.skip("node2's repaired shards are new files")
    data = fixture()
    unchanged = [name for name, sha in data["files"]["v2"].items() if data["files"]["v1"].get(name) == sha]
    assert unchanged, "the fixture must have files that did not change between v1 and v2"
    for name in unchanged:
        old = host.file("%s/%s/%s" % (BASE, data["commits"]["v1"], name))
        new = host.file("%s/%s/%s" % (BASE, data["commits"]["main"], name))
        assert host.check_output("stat -c %%i %s", old.path) == host.check_output("stat -c %%i %s", new.path), name


def test_manifest_records_repo_revision_commit_files(host):
    data = fixture()
    manifest = json.loads(host.file(BASE + "/current/" + MANIFEST).content_string)
    assert manifest["repo_id"] == REPO
    assert manifest["revision"] == "main"
    assert manifest["commit"] == data["commits"]["main"]
    assert manifest["model_type"] == "qwen3_5"
    listed = set(repo_git("ls-tree", "--name-only", "-r", data["commits"]["main"]))
    assert set(item["path"] for item in manifest["files"]) == listed
    for item in manifest["files"]:
        if item["path"].endswith(".safetensors"):
            assert item["sha256"] == data["files"]["v2"][item["path"]]
    assert manifest["total_size"] == sum(item["size"] for item in manifest["files"])


def test_no_partial_download_is_left(host):
    out = host.check_output("find %s -name '*.incomplete'", BASE)
    assert out == ""


def test_download_log_is_on_the_host(host):
    log = host.file("/var/log/llm-stack/qwen_model_fetch-Qwen--Qwen3.5-0.8B.log")
    assert log.exists and log.mode == 0o640
    assert "hf download " + REPO in log.content_string
    assert "exit status 0" in log.content_string


def test_token_is_in_no_file_on_the_host(host):
    found = host.run("grep -rlsE %s /var/log /opt/llm-stack /root /tmp /etc", TOKEN_PATTERN)
    assert found.rc == 1, found.stdout


def test_hostile_mirror_settings_reached_neither_the_unit_nor_the_configuration(host):
    del host
    cache = cache_host()
    unit = cache.file("/etc/systemd/system/hf-mirror.service").content_string
    config = cache.file("/etc/hf-mirror/olah.toml").content_string
    assert "ExecStartPre" not in unit and "attacker.example" not in config and "mirror-upstream-pw" not in config
    assert not cache.file("/tmp/hf-mirror-injected").exists
    assert 'hf-netloc = "127.0.0.1:28917"' in config
    with open(os.path.join(EPHEMERAL, "side_effect-hostile_mirror.log"), encoding="utf-8") as handle:
        assert "mirror-upstream-pw" not in handle.read()


def test_mirror_fetched_each_file_from_upstream_once_for_the_fleet(host):
    """One GET per file and commit on the upstream hub, however many hosts and runs."""
    del host  # the hub log is on the controller; runs once per host, same answer
    data = fixture()
    v1, v2 = data["commits"]["v1"], data["commits"]["main"]
    with open(os.path.join(FIXTURE, "hub-access.log"), encoding="utf-8", errors="replace") as handle:
        gets = Counter(re.findall(r'"GET /%s/resolve/([0-9a-f]{40})/(\S+) HTTP' % re.escape(REPO), handle.read()))
    expected = set((v1, name) for name in repo_git("ls-tree", "--name-only", "-r", v1))
    # v2 shares all but these with v1; the hosts reuse the rest from v1.
    expected |= set((v2, name) for name in repo_git("diff", "--name-only", v1, v2))
    # node2's repair asked the mirror for these at v2, which it had not been
    # asked for before (it caches by commit and path).
    expected |= set((v2, name) for name in REPAIRED)
    assert set(gets) == expected
    assert set(gets.values()) == {1}, gets


def test_mirror_served_every_host_and_resumed_the_partial_download(host):
    del host
    cache = cache_host()
    journal = cache.check_output("journalctl -u hf-mirror --no-pager -o cat")
    data = fixture()
    v1 = data["commits"]["v1"]
    served = re.findall(r'"GET /%s/resolve/%s/(\S+) HTTP/1.1" 200' % (re.escape(REPO), v1), journal)
    # Both hosts got every v1 file from the mirror.
    assert min(Counter(served).values()) >= 2
    # node2's partial shard was resumed with a Range request, not fetched again.
    partial = "model-00002-of-00005.safetensors"
    assert re.search(r'"GET /%s/resolve/%s/%s HTTP/1.1" 206' % (re.escape(REPO), data["commits"]["main"], partial),
                     journal), "no 206 answer for the resumed partial download"


def test_token_is_in_no_log_of_any_run_nor_on_any_command_line(host):
    del host
    paths = [os.path.join(EPHEMERAL, name) for name in os.listdir(EPHEMERAL)
             if name == "ansible.log" or name.startswith("side_effect-")]
    paths += [os.path.join(FIXTURE, "hub-access.log")]
    assert any(p.endswith("ansible.log") for p in paths)
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as handle:
            assert TOKEN not in handle.read(), path
    cache = cache_host()
    assert cache.run("grep -rlsE %s /var/log /var/lib/hf-mirror /etc", TOKEN_PATTERN).rc == 1
    assert TOKEN not in cache.check_output("journalctl --no-pager -o cat")
    with open(os.path.join(FIXTURE, "watch-report.json"), encoding="utf-8") as handle:
        report = json.load(handle)
    # The watcher saw the downloads run, and no command line held the token.
    assert any(" download " + REPO in line for line in report["hf_downloads"]), report
    assert report["leaks"] == [], report["leaks"]


@pytest.mark.parametrize("name", REPAIRED)
def test_interrupted_download_on_node2_was_repaired(host, name):
    if not host.backend.get_hostname().endswith("node2"):
        pytest.skip("the interruption was made on node2")
    assert host.file(BASE + "/current/" + name).sha256sum == fixture()["files"]["v2"][name]


def test_fetched_model_loads_with_transformers(host):
    """TEST-ONLY: load the files node1 holds with transformers on the controller (CPU)."""
    if not host.backend.get_hostname().endswith("node1"):
        pytest.skip("loaded once, from node1")
    with tempfile.TemporaryDirectory() as copy:
        for name in fixture()["files"]["v2"]:
            with open(os.path.join(copy, name), "wb") as handle:
                handle.write(host.file(BASE + "/current/" + name).content)
        script = (
            "import sys, torch\n"
            "from transformers import AutoConfig, Qwen3_5ForConditionalGeneration\n"
            "config = AutoConfig.from_pretrained(sys.argv[1])\n"
            "assert config.model_type == 'qwen3_5', config.model_type\n"
            "model = Qwen3_5ForConditionalGeneration.from_pretrained(sys.argv[1])\n"
            "out = model.generate(torch.tensor([[1, 2, 3]]), max_new_tokens=4, do_sample=False)\n"
            "assert out.shape == (1, 7), out.shape\n"
            "print('loaded', type(model).__name__, sum(p.numel() for p in model.parameters()))\n"
        )
        result = subprocess.run([os.path.join(FIXTURE, "venv", "bin", "python"), "-c", script, copy],
                                capture_output=True, text=True, timeout=300, check=False)
        assert result.returncode == 0, result.stderr[-3000:]
        assert "loaded Qwen3_5ForConditionalGeneration" in result.stdout


TLS_PROBE = r"""
import ssl, sys, urllib.request, urllib.error
url, ca = sys.argv[1], sys.argv[2]
context = ssl.create_default_context(cafile=ca) if ca else None
try:
    print(urllib.request.urlopen(url, timeout=10, context=context).status)
except urllib.error.HTTPError as exc:
    print(exc.code)
except (urllib.error.URLError, OSError):
    print("error")
"""


def test_the_mirror_serves_https_only_with_the_given_certificate(host):
    del host
    cache = cache_host()
    config = cache.file("/etc/hf-mirror/olah.toml").content_string
    assert 'ssl-cert = "/etc/hf-mirror/tls/mirror.crt"' in config and 'mirror-scheme = "https"' in config
    key = cache.file("/etc/hf-mirror/tls/mirror.key")
    assert key.user == "root" and key.group == "hf-mirror" and key.mode == 0o640
    url = "https://127.0.0.1:28918/api/models/%s" % REPO
    assert cache.check_output("python3 -c %s %s %s", TLS_PROBE, url, "/etc/hf-mirror/tls/mirror.crt") == "200"
    assert cache.check_output("python3 -c %s %s %s", TLS_PROBE, url.replace("https", "http"), "") == "error"


def test_the_mirror_listens_where_the_inventory_says(host):
    del host
    listening = cache_host().check_output("ss -ltnH 'sport = :28918'")
    assert [line.split()[3] for line in listening.splitlines()] == ["127.0.0.1:28918"]


def test_the_mirror_has_a_cache_size_limit_olah_reads(host):
    """auto: 80% of the filesystem of the cache directory, in whole GiB, and olah reports it when it starts."""
    del host
    cache = cache_host()
    limit = re.search(r'^cache-size-limit = "([0-9]+)G"$', cache.file("/etc/hf-mirror/olah.toml").content_string, re.M)
    assert limit and int(limit.group(1)) > 0
    size = int(cache.check_output("df --output=size -B1 /var/lib/hf-mirror | tail -n1"))
    assert int(limit.group(1)) == int(size * 0.8) // 1024 ** 3
    assert "Cache cleanup: Limit=" in cache.check_output("journalctl -u hf-mirror --no-pager -o cat")


def test_the_running_mirror_unit_scores_3_or_lower(host):
    del host
    out = cache_host().check_output("systemd-analyze security --no-pager hf-mirror.service")
    score = float(re.search(r"Overall exposure level for hf-mirror.service: ([0-9.]+)", out).group(1))
    assert score <= 3.0, out


def test_the_tampering_mirror_was_refused(host):
    del host
    with open(os.path.join(EPHEMERAL, "side_effect-tampered.log"), encoding="utf-8", errors="replace") as handle:
        out = handle.read()
    assert "model-00001-of-00005.safetensors does not match the hub's checksum" in out
    assert "was not switched to it" in out
