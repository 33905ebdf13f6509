"""State after converge (two job slices at once), idempotence (both again) and check.

The cache host runs the index; each GPU stand-in has the wheel of its key
from the index, installed from the file named with the key's build tag;
the ledger has one build per key; the second sliced run built nothing.
"""

import base64
import json
import os
import re

import pytest
import testinfra.utils.ansible_runner

EPHEMERAL = os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]
RUNNER = testinfra.utils.ansible_runner.AnsibleRunner(os.environ["MOLECULE_INVENTORY_FILE"])
INDEX = "http://127.0.0.1:28967"
KEY_OF = {"fleet_cache-a": "sm80", "fleet_cache-b": "sm80", "fleet_cache-c": "sm90"}
RESULT = re.compile(r"RESULT (fleet_cache-[abc]) ([A-Za-z0-9+/=]+)")


def results(which):
    found = {}
    for name in ("slice-1", "slice-2"):
        with open(os.path.join(EPHEMERAL, "slices-%s-%s.out" % (which, name))) as handle:
            for match in RESULT.finditer(handle.read()):
                found[match.group(1)] = json.loads(base64.b64decode(match.group(2)).decode())
    return found


@pytest.fixture(scope="module")
def cache():
    return RUNNER.get_host("fleet_cache-cache")


def ledger(cache):
    text = cache.file("/var/lib/fleet-cache/ledger.jsonl").content_string
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_one_compile_per_key(cache):
    builds = [b for b in ledger(cache) if b["result"] == "built"]
    assert len(builds) == 2 and len({b["build_key"] for b in builds}) == 2
    assert {b["job"] for b in builds} <= {"slice-1", "slice-2"}
    for build in builds:
        assert build["started"] <= build["finished"] and build["wheel"].startswith("flash_attn-2.8.3-0")


def test_one_failed_attempt_per_broken_key(cache):
    # side_effect.yml checks one attempt per key in each of its runs; here: only the broken keys failed
    failed = [b for b in ledger(cache) if b["result"] != "built"]
    assert failed and all(b["result"] == "failed" and "post900" in b["build_key"] for b in failed)
    assert len({b["build_key"] for b in failed}) == 2 and {b["job"] for b in failed} <= {"broken-1", "broken-2"}
    assert all(b["tail"] and "csrc/cutlass" in b["error"] for b in failed)


def test_first_run_results():
    first = results("first")
    assert set(first) == set(KEY_OF)
    compiled = [host for host, r in first.items() if r["compiled"]]
    assert len(compiled) == 2 and {KEY_OF[h] for h in compiled} == {"sm80", "sm90"}
    for host, result in first.items():
        assert result["source"] == ("built" if host in compiled else "index")
        assert result["version"] == "2.8.3" and result["wheel"].startswith("flash_attn-2.8.3-0")
    assert first["fleet_cache-a"]["build_key"] == first["fleet_cache-b"]["build_key"] != first["fleet_cache-c"]["build_key"]


def test_second_run_built_nothing():
    last = results("last")
    assert set(last) == set(KEY_OF)
    assert all(r["source"] == "present" and not r["compiled"] for r in last.values())


@pytest.mark.parametrize("name", sorted(KEY_OF))
def test_host_has_its_keys_wheel(name, cache):
    host = RUNNER.get_host(name)
    direct = host.check_output("cat /opt/llm-stack/venv/lib/python3.11/site-packages/flash_attn-2.8.3.dist-info/direct_url.json")
    url = json.loads(direct)["url"]
    wheel = url.rsplit("/", 1)[-1]
    assert url.startswith("file:///opt/llm-stack/wheels/") and re.match(r"flash_attn-2\.8\.3-0[0-9a-f]{12}-py3-none-any\.whl$", wheel)
    assert cache.file("/var/lib/fleet-cache/packages/" + wheel).exists


STATUS = r"""
import sys, urllib.request, urllib.error
req = urllib.request.Request(sys.argv[1], data=sys.argv[2].encode() if len(sys.argv) > 2 else None,
                             headers={"Content-Type": "multipart/form-data; boundary=b"})
try:
    print(urllib.request.urlopen(req, timeout=10).status)
except urllib.error.HTTPError as exc:
    print(exc.code)
"""


def test_index_reads_are_anonymous_and_uploads_need_the_account(cache):
    assert cache.check_output("python3 -c %s %s/simple/flash-attn/", STATUS, INDEX) == "200"
    body = ('--b\r\nContent-Disposition: form-data; name=":action"\r\n\r\nfile_upload\r\n'
            '--b\r\nContent-Disposition: form-data; name="content"; filename="x-1.0-py3-none-any.whl"\r\n\r\nx\r\n--b--\r\n')
    assert cache.check_output("python3 -c %s %s/ %s", STATUS, INDEX, body) == "401"


def test_password_file(cache):
    htpasswd = cache.file("/etc/fleet-cache/htpasswd")
    assert htpasswd.mode == 0o600 and htpasswd.user == "fleet-index"
    assert "test-only-upload-password" not in htpasswd.content_string
    unit = cache.file("/etc/systemd/system/fleet-index.service").content_string
    assert "test-only-upload-password" not in unit and "User=fleet-index" in unit
    assert cache.service("fleet-index").is_running


def test_no_secret_in_the_logs():
    # the plays' logs and outputs (the verifier's own log holds the test inventory it read)
    for name in os.listdir(EPHEMERAL):
        if name.endswith((".log", ".out")) and name != "verifier-ansible.log":
            with open(os.path.join(EPHEMERAL, name), errors="replace") as handle:
                assert "test-only-upload-password" not in handle.read(), name
