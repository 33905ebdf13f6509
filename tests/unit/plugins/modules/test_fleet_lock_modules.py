# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fleet_lock (and its action plugin) and wheel_index_download driven through AnsibleModule.

The cache host's side runs on temporary directories (locks, ledger, the
index's packages directory). The index is a STAND-IN HTTP server
(http.server on 127.0.0.1, a free port) serving that packages directory
under /packages/, as pypiserver does; the poisoned-wheel sequence replaces
the file there, as remove_pkg and an upload under the same name did.
pypiserver itself is run by the molecule scenario fleet_cache.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import threading
from unittest import mock

import pytest

from ansible.module_utils.six.moves.BaseHTTPServer import BaseHTTPRequestHandler, HTTPServer

from ansible_collections.gpufleet.llm_stack.plugins.action import fleet_lock as action_mod
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import fleet_lock as L
from ansible_collections.gpufleet.llm_stack.plugins.modules import fleet_lock, wheel_index_download

ENTRY = "flash-attn-2.8.3-sm80-ef7beb2c6e35"
TAGGED = "flash_attn-2.8.3-0ef7beb2c6e35-py3-none-any.whl"
BUILT = b"PK\x03\x04 the builder's wheel"


class Index(BaseHTTPRequestHandler):
    packages = ""

    def log_message(self, *args):
        pass

    def do_GET(self):
        name = self.path[len("/packages/"):] if self.path.startswith("/packages/") else ""
        path = os.path.join(self.packages, name)
        if not name or "/" in name or not os.path.isfile(path):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with open(path, "rb") as handle:
            data = handle.read()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def cache(tmp_path):
    """The cache host's directories, and the index serving its packages directory over HTTP."""
    packages = tmp_path / "packages"
    packages.mkdir()
    Index.packages = str(packages)
    server = HTTPServer(("127.0.0.1", 0), Index)
    thread = threading.Thread(target=server.serve_forever)
    thread.daemon = True
    thread.start()
    yield {"packages": str(packages), "url": "http://127.0.0.1:%d" % server.server_address[1], "tmp": tmp_path}
    server.shutdown()
    server.server_close()


def lock_args(cache, **over):
    tmp = cache["tmp"]
    args = {"entry": ENTRY, "name": "flash-attn", "lock_dir": str(tmp / "locks"), "ledger": str(tmp / "ledger.jsonl"),
            "packages_dir": cache["packages"], "index_url": cache["url"]}
    args.update(over)
    return args


def arrive(cache, content=BUILT, name=TAGGED):
    """The builder's wheel as it reaches the cache host (through the controller), and the builder's sha256."""
    path = cache["tmp"] / "incoming" / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(content)
    return str(path), hashlib.sha256(content).hexdigest()


def build_and_publish(run_module, cache, host="a", job="1", content=BUILT):
    kind, first, _w = run_module(fleet_lock.main, lock_args(cache, state="acquire", may_build=True,
                                                            owner={"host": host, "job": job}))
    assert (kind, first["verdict"], first["acquired"]) == ("exit", "build", True)
    path, sha = arrive(cache, content)
    kind, done, warnings = run_module(fleet_lock.main, lock_args(cache, state="publish", incoming=path,
                                                                 owner={"host": host, "job": job},
                                                                 record={"sha256": sha, "started": "s", "log": "/l"}))
    assert kind == "exit", done
    return done, sha, warnings


def download(run_module, cache, wheel, dest=None, **over):
    dest = dest or cache["tmp"] / "host" / ENTRY
    dest.mkdir(parents=True, exist_ok=True)
    args = {"wheel": wheel, "entry": ENTRY, "dest": str(dest), "cache_host": "cache-1"}
    args.update(over)
    return run_module(wheel_index_download.main, args)


def test_build_publish_then_every_host_installs_the_ledgers_wheel(run_module, cache):
    kind, result, _w = run_module(fleet_lock.main, lock_args(cache))
    assert kind == "exit" and result["verdict"] == "wait" and result["wheel"] is None and result["now"]
    _k, first, _w = run_module(fleet_lock.main, lock_args(cache, state="acquire", may_build=True,
                                                          owner={"host": "a", "job": "1"}))
    _k, other, _w = run_module(fleet_lock.main, lock_args(cache, state="acquire", may_build=True,
                                                          owner={"host": "b", "job": "2"}))
    assert (other["verdict"], other["acquired"], other["holder"]["host"]) == ("wait", False, "a")
    assert "a holds the lock" in other["msg"]
    path, sha = arrive(cache)
    # b (job 2) cannot publish or release a's lock, and records nothing
    kind, wrong, _w = run_module(fleet_lock.main, lock_args(cache, state="publish", incoming=path, owner={"host": "b"},
                                                            record={"sha256": sha}))
    assert kind == "fail" and "does not hold the lock" in wrong["msg"]
    _k, wrong, _w = run_module(fleet_lock.main, lock_args(cache, state="release", owner={"host": "b"},
                                                          record={"result": "failed"}))
    assert wrong["released"] is False and not os.path.exists(str(cache["tmp"] / "ledger.jsonl"))
    kind, done, _w = run_module(fleet_lock.main, lock_args(cache, state="publish", incoming=path,
                                                           owner={"host": "a", "job": "1"},
                                                           record={"sha256": sha, "started": "s", "log": "/l"}))
    assert kind == "exit" and done["published"] and done["released"] and done["changed"]
    assert done["ledger_outcome"] == "built"
    assert done["wheel"]["sha256"] == sha and not os.path.exists(path)
    line = json.loads((cache["tmp"] / "ledger.jsonl").read_text())
    assert (line["build_key"], line["host"], line["job"], line["result"], line["sha256"]) == (ENTRY, "a", "1", "built", sha)
    _k, now, _w = run_module(fleet_lock.main, lock_args(cache, state="acquire", may_build=False, owner={"host": "b"}))
    assert now["verdict"] == "install" and now["wheel"]["filename"] == TAGGED and now["wheel"]["sha256"] == sha
    assert now["wheel"]["url"] == cache["url"] + "/packages/" + TAGGED and now["wheel"]["built_on"] == "a"
    kind, got, _w = download(run_module, cache, now["wheel"])
    assert kind == "exit" and got["downloaded"] and got["changed"] and got["sha256"] == sha
    assert open(got["path"], "rb").read() == BUILT
    # a second run finds the file there with the ledger's sha256: no download
    kind, again, _w = download(run_module, cache, now["wheel"])
    assert kind == "exit" and not again["changed"] and not again["downloaded"]


def test_the_poisoned_wheel_is_refused_with_the_key_named(run_module, cache):
    """remove_pkg and an upload under the same name replaced the builder's wheel on the index: no host installs it."""
    done, sha, _w = build_and_publish(run_module, cache)
    with open(os.path.join(cache["packages"], TAGGED), "wb") as handle:
        handle.write(b"PK\x03\x04 evil build")
    _k, query, _w = run_module(fleet_lock.main, lock_args(cache))
    # the expected sha256 is the ledger's, not what the index holds now
    assert query["verdict"] == "install" and query["wheel"]["sha256"] == sha == done["wheel"]["sha256"]
    kind, refused, _w = download(run_module, cache, query["wheel"])
    assert kind == "fail" and ENTRY in refused["msg"] and sha in refused["msg"]
    assert hashlib.sha256(b"PK\x03\x04 evil build").hexdigest() in refused["msg"]
    assert "cache-1" in refused["msg"] and os.path.join(cache["packages"], TAGGED) in refused["msg"]
    dest = cache["tmp"] / "host" / ENTRY
    assert os.listdir(str(dest)) == []


def test_a_poisoned_file_already_on_the_host_is_replaced(run_module, cache):
    _done, sha, _w = build_and_publish(run_module, cache)
    _k, query, _w = run_module(fleet_lock.main, lock_args(cache))
    dest = cache["tmp"] / "host" / ENTRY
    dest.mkdir(parents=True)
    (dest / TAGGED).write_bytes(b"left by an older run")
    kind, got, _w = download(run_module, cache, query["wheel"])
    assert kind == "exit" and got["downloaded"] and open(got["path"], "rb").read() == BUILT


def test_a_second_wheel_with_the_build_tag_is_refused_and_does_not_block_the_key(run_module, cache):
    _done, sha, _w = build_and_publish(run_module, cache)
    # another wheel with the key's build tag next to it on the index: ignored, the key installs its own
    with open(os.path.join(cache["packages"], "flash_attn-2.8.3-0ef7beb2c6e35-cp311-cp311-linux_x86_64.whl"), "wb") as out:
        out.write(b"another")
    _k, query, _w = run_module(fleet_lock.main, lock_args(cache))
    assert query["verdict"] == "install" and query["wheel"]["filename"] == TAGGED and query["wheel"]["sha256"] == sha
    # a second build of the key (its lock taken again after the first was published) is not published
    lock = L.acquire(str(cache["tmp"] / "locks"), ENTRY, {"host": "b", "job": "2"}, 0)
    assert lock["acquired"]
    path, other = arrive(cache, b"PK another build")
    kind, done, warnings = run_module(fleet_lock.main, lock_args(cache, state="publish", incoming=path,
                                                                 owner={"host": "b", "job": "2"},
                                                                 record={"sha256": other}))
    assert kind == "exit" and done["published"] is False and done["released"] is True
    assert done["ledger_outcome"] == "refused"
    assert done["wheel"]["sha256"] == sha and "one key has one wheel" in warnings[0]
    assert open(os.path.join(cache["packages"], TAGGED), "rb").read() == BUILT
    _k, query, _w = run_module(fleet_lock.main, lock_args(cache, state="acquire", may_build=True, owner={"host": "c"}))
    assert query["verdict"] == "install" and query["wheel"]["sha256"] == sha


def test_a_wheel_that_changed_on_its_way_is_not_published(run_module, cache):
    run_module(fleet_lock.main, lock_args(cache, state="acquire", may_build=True, owner={"host": "a"}))
    path, _sha = arrive(cache)
    kind, result, _w = run_module(fleet_lock.main, lock_args(cache, state="publish", incoming=path, owner={"host": "a"},
                                                             record={"sha256": "0" * 64}))
    assert kind == "fail" and "changed on its way" in result["msg"] and os.listdir(cache["packages"]) == []
    # the lock stays for the builder's rescue, which records the failure and releases it
    kind, done, _w = run_module(fleet_lock.main, lock_args(cache, state="release", owner={"host": "a"},
                                                           record={"result": "failed", "error": result["msg"]}))
    assert done["released"] and json.loads((cache["tmp"] / "ledger.jsonl").read_text())["result"] == "failed"


def test_release_records_no_built_wheel(run_module, cache):
    run_module(fleet_lock.main, lock_args(cache, state="acquire", may_build=True, owner={"host": "a"}))
    kind, result, _w = run_module(fleet_lock.main, lock_args(cache, state="release", owner={"host": "a"},
                                                             record={"result": "built", "wheel": TAGGED,
                                                                     "sha256": "1" * 64}))
    assert kind == "fail" and "state=publish" in result["msg"]
    assert not os.path.exists(str(cache["tmp"] / "ledger.jsonl"))


def test_failure_stops_the_waiters_and_not_a_later_run(run_module, cache):
    run_module(fleet_lock.main, lock_args(cache, state="acquire", may_build=True, owner={"host": "a"}))
    _k, waiting, _w = run_module(fleet_lock.main, lock_args(cache))
    since = "2000-01-01T00:00:00Z"
    run_module(fleet_lock.main, lock_args(cache, state="release", owner={"host": "a"},
                                          record={"result": "failed", "tail": ["error: boom"], "log": "/l"}))
    _k, waiter, _w = run_module(fleet_lock.main, lock_args(cache, state="acquire", may_build=True,
                                                           owner={"host": "b"}, since=since))
    assert waiter["verdict"] == "fail" and "error: boom" in waiter["msg"] and "failed on a" in waiter["msg"]
    assert waiting["verdict"] == "wait"
    # a later run (since after the failure) builds the key again
    _k, later, _w = run_module(fleet_lock.main, lock_args(cache, state="acquire", may_build=True,
                                                          owner={"host": "b"}, since="2999-01-01T00:00:00Z"))
    assert later["verdict"] == "build"


def test_non_builder_without_a_holder_fails(run_module, cache):
    _k, result, _w = run_module(fleet_lock.main, lock_args(cache, state="acquire", owner={"host": "c"}))
    assert result["verdict"] == "fail" and "failed before the build" in result["msg"]


def test_check_mode_takes_no_lock_and_publishes_nothing(run_module, cache):
    _k, result, _w = run_module(fleet_lock.main, lock_args(cache, state="acquire", may_build=True, owner={"host": "a"},
                                                           _ansible_check_mode=True))
    assert result["acquired"] is False and not os.path.exists(str(cache["tmp"] / "locks" / ENTRY))
    run_module(fleet_lock.main, lock_args(cache, state="acquire", may_build=True, owner={"host": "a"}))
    path, sha = arrive(cache)
    _k, result, _w = run_module(fleet_lock.main, lock_args(cache, state="publish", incoming=path, owner={"host": "a"},
                                                           record={"sha256": sha}, _ansible_check_mode=True))
    assert result["changed"] and not result["published"] and os.listdir(cache["packages"]) == []
    assert result["ledger_outcome"] == "refused"


def test_bad_requests(run_module, cache):
    kind, result, _w = run_module(fleet_lock.main, lock_args(cache, entry="nohash"))
    assert kind == "fail" and "cache entry" in result["msg"]
    kind, result, _w = run_module(fleet_lock.main, lock_args(cache, state="acquire"))
    assert kind == "fail" and "owner.host" in result["msg"]
    kind, result, _w = run_module(fleet_lock.main, lock_args(cache, index_url="http://u:p@x:1"))
    assert kind == "fail" and "llm_stack_wheel_index_url" in result["msg"]
    kind, result, _w = run_module(fleet_lock.main, lock_args(cache, packages_dir=None))
    assert kind == "fail" and "needs packages_dir" in result["msg"]


def test_download_check_mode_and_an_index_that_does_not_answer(run_module, cache):
    _done, sha, _w = build_and_publish(run_module, cache)
    _k, query, _w = run_module(fleet_lock.main, lock_args(cache))
    kind, result, _w = download(run_module, cache, query["wheel"], _ansible_check_mode=True)
    assert kind == "exit" and result["changed"] and not result["downloaded"]
    os.unlink(os.path.join(cache["packages"], TAGGED))
    kind, result, _w = download(run_module, cache, query["wheel"])
    assert kind == "fail" and "Cannot download" in result["msg"] and "404" in result["msg"]
    kind, result, _w = download(run_module, cache, dict(query["wheel"], sha256="nope"))
    assert kind == "fail" and "the ledger's sha256" in result["msg"]


# --- The action plugin takes over the lock of a provably dead holder ---

def run_action(args, run_module, proc):
    """The action with the module run in this process (its _execute_module), on a fake /proc of the controller."""
    task = mock.MagicMock()
    task.args = dict(args)
    task.check_mode = False
    task.async_val = 0
    action = action_mod.ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=None)
    action.PROC = proc
    calls = []

    def execute(module_name, module_args, task_vars):
        calls.append(module_args)
        kind, result, _w = run_module(fleet_lock.main, module_args)
        return dict(result, failed=kind == "fail")

    action._execute_module = execute
    with mock.patch.object(action_mod.socket, "gethostname", return_value="ctl-1"), \
            mock.patch.object(action_mod.os, "getppid", return_value=4242):
        return action.run(task_vars={}), calls


def fake_proc(root, processes):
    (root / "sys" / "kernel" / "random").mkdir(parents=True)
    (root / "sys" / "kernel" / "random" / "boot_id").write_text("boot-1\n")
    (root / "self" / "ns").mkdir(parents=True)
    os.symlink("pid:[4026531836]", str(root / "self" / "ns" / "pid"))
    for pid, start in processes.items():
        (root / str(pid)).mkdir()
        (root / str(pid) / "stat").write_text("%d (ansible-playbook) S %s %d 0 0\n" % (pid, " ".join(["0"] * 18), start))
    return str(root)


def test_a_killed_builds_lock_is_taken_over_at_once(run_module, cache):
    proc = fake_proc(cache["tmp"] / "proc", {4242: 100})
    args = lock_args(cache, state="acquire", may_build=True, owner={"host": "a", "job": "1"})
    first, _calls = run_action(args, run_module, proc)
    holder = first["holder"]
    assert first["verdict"] == "build" and (holder["controller"], holder["pid"], holder["pid_start"]) == ("ctl-1", 4242, 100)
    # the same controller, its ansible-playbook still running: b waits
    args_b = lock_args(cache, state="acquire", may_build=True, owner={"host": "b", "job": "2"})
    waiting, calls = run_action(args_b, run_module, proc)
    assert waiting["verdict"] == "wait" and len(calls) == 1
    # the first job's ansible-playbook was killed: pid 4242 is another process now
    os.unlink(os.path.join(proc, "4242", "stat"))
    with open(os.path.join(proc, "4242", "stat"), "w") as handle:
        handle.write("4242 (bash) S %s 999 0 0\n" % " ".join(["0"] * 18))
    taken, calls = run_action(args_b, run_module, proc)
    assert taken["verdict"] == "build" and taken["acquired"] and len(calls) == 2
    assert calls[1]["dead_holder"] == holder and taken["broken"]["host"] == "a"
    assert "another process now" in taken["broken"]["why"] and "took over the lock" in taken["msg"]
    assert L.holder(str(cache["tmp"] / "locks"), ENTRY)["host"] == "b"


def test_a_holder_of_another_controller_is_waited_for(run_module, cache):
    proc = fake_proc(cache["tmp"] / "proc", {})
    L.acquire(str(cache["tmp"] / "locks"), ENTRY, {"host": "a", "controller": "ctl-2", "pid": 4242, "pid_start": 1,
                                                   "boot_id": "boot-1", "pid_ns": "pid:[4026531836]"}, 15300)
    args = lock_args(cache, state="acquire", may_build=True, owner={"host": "b"})
    waiting, calls = run_action(args, run_module, proc)
    assert waiting["verdict"] == "wait" and len(calls) == 1
    # a task cannot name a holder to take over itself
    waiting, calls = run_action(dict(args, dead_holder=waiting["holder"]), run_module, proc)
    assert waiting["verdict"] == "wait" and "dead_holder" not in calls[0]


def test_the_action_returns_the_ledger_word_of_publish(run_module, cache):
    """wheel_build's publish.yml records fleet_lock's ledger_outcome in the builder's ledger: the cache host's word."""
    proc = fake_proc(cache["tmp"] / "proc", {4242: 100})
    result, _calls = run_action(lock_args(cache, state="acquire", may_build=True, owner={"host": "a", "job": "1"}),
                                run_module, proc)
    assert result["verdict"] == "build"
    path, sha = arrive(cache)
    result, _calls = run_action(lock_args(cache, state="publish", incoming=path, owner={"host": "a", "job": "1"},
                                          record={"sha256": sha}), run_module, proc)
    assert not result["failed"] and result["published"] and result["ledger_outcome"] == "built"
    assert json.loads((cache["tmp"] / "ledger.jsonl").read_text())["result"] == result["ledger_outcome"]
    # a second build of the key is refused, and says so in the same word as the cache host's ledger line
    assert L.acquire(str(cache["tmp"] / "locks"), ENTRY, {"host": "b", "job": "2"}, 0)["acquired"]
    path, other = arrive(cache, b"PK another build")
    result, _calls = run_action(lock_args(cache, state="publish", incoming=path, owner={"host": "b", "job": "2"},
                                          record={"sha256": other}), run_module, proc)
    assert not result["failed"] and not result["published"] and result["ledger_outcome"] == "refused"
    last = (cache["tmp"] / "ledger.jsonl").read_text().splitlines()[-1]
    assert json.loads(last)["result"] == "refused"
