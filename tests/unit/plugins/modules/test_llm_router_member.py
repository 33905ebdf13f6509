# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""llm_router_member driven through AnsibleModule against a STAND-IN for HAProxy's runtime API.

The stand-in is an AF_UNIX socket server in a thread of this test: one command per connection, answered the way
HAProxy 2.6 answers it (`show servers state` in format version 1, an empty line for a `set server` it did,
"No such server." otherwise), keeping the servers' administrative states. The real HAProxy is exercised by hand
and by the router's molecule scenario.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import socket
import threading

import pytest

from ansible_collections.gpufleet.llm_stack.plugins.modules import llm_router_member as M

HEADER = ("1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight"
          " srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state"
          " srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port"
          " srv_check_addr srv_agent_addr srv_agent_port\n")
ADMIN = {"ready": 0, "drain": 8, "maint": 1}


class StandIn(object):
    """HAProxy's runtime API, as far as the module uses it."""

    def __init__(self, path):
        self.path = path
        # [backend id, backend, server, op state, admin state, port]
        self.servers = [[3, "be_qwen3_chat", "h1_chat", 2, 0, 28201], [3, "be_qwen3_chat", "h2_chat", 2, 0, 28202],
                        [4, "be_any", "h1_chat", 2, 0, 28201], [4, "be_any", "h2_chat", 2, 0, 28202]]
        self.commands = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(8)
        self.thread = threading.Thread(target=self.serve)
        self.thread.daemon = True
        self.thread.start()

    def answer(self, command):
        words = command.split()
        if command == "show servers state":
            lines = ["%d %s %d %s 127.0.0.1 %d %d 1 1 5 15 3 4 6 0 0 0 - %d - 0 0 - - 0"
                     % (bid, be, i + 1, srv, op, admin, port)
                     for i, (bid, be, srv, op, admin, port) in enumerate(self.servers)]
            return HEADER + "".join(line + "\n" for line in lines) + "\n"
        if len(words) == 5 and words[:2] == ["set", "server"] and words[3] == "state":
            backend, server = words[2].split("/")
            if not any(row[1] == backend for row in self.servers):
                return "No such backend.\n\n"
            for row in self.servers:
                if row[1] == backend and row[2] == server:
                    row[4] = ADMIN[words[4]]
                    return "\n"
            return "No such server.\n\n"
        return "Unknown command\n\n"

    def serve(self):
        while True:
            try:
                conn, dummy = self.sock.accept()
            except OSError:
                return
            with conn:
                data = b""
                while not data.endswith(b"\n"):
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                command = data.decode().strip()
                self.commands.append(command)
                conn.sendall(self.answer(command).encode())

    def close(self):
        self.sock.close()


@pytest.fixture
def haproxy(tmp_path):
    # AF_UNIX paths are short (108 bytes): a directory of its own under /tmp.
    import tempfile
    folder = tempfile.mkdtemp(prefix="hap-")
    server = StandIn(os.path.join(folder, "admin.sock"))
    yield server
    server.close()
    os.unlink(server.path)
    os.rmdir(folder)


def args(haproxy, tmp_path, **more):
    found = {"socket": haproxy.path, "servers": ["h1_chat"], "state": "drain",
             "state_file": str(tmp_path / "server-state"), "timeout": 5}
    found.update(more)
    return found


def test_drain_sets_every_backend_and_saves_the_state(run_module, haproxy, tmp_path):
    kind, result, dummy = run_module(M.main, args(haproxy, tmp_path))
    assert kind == "exit", result
    assert result["changed"] is True
    assert result["commands"] == ["set server be_qwen3_chat/h1_chat state drain", "set server be_any/h1_chat state drain"]
    assert result["servers"]["h1_chat"]["before"] == "ready"
    assert result["servers"]["h1_chat"]["after"] == "drain"
    assert result["missing"] == []
    saved = (tmp_path / "server-state").read_text()
    assert saved.startswith("1\n# be_id") and " h1_chat 127.0.0.1 2 8 " in saved
    assert oct(os.stat(str(tmp_path / "server-state")).st_mode & 0o777) == "0o600"
    # each command on a connection of its own
    assert haproxy.commands == ["show servers state", "set server be_qwen3_chat/h1_chat state drain",
                                "set server be_any/h1_chat state drain", "show servers state"]

    kind, again, dummy = run_module(M.main, args(haproxy, tmp_path))
    assert kind == "exit" and again["changed"] is False and again["commands"] == []


def test_check_mode_sends_nothing(run_module, haproxy, tmp_path):
    kind, result, dummy = run_module(M.main, args(haproxy, tmp_path, _ansible_check_mode=True))
    assert kind == "exit" and result["changed"] is True
    assert haproxy.commands == ["show servers state"]
    assert not (tmp_path / "server-state").exists()


def test_a_server_in_no_backend_is_missing(run_module, haproxy, tmp_path):
    kind, result, dummy = run_module(M.main, args(haproxy, tmp_path, servers=["h1_chat", "h9_chat"], state="maint"))
    assert kind == "exit" and result["missing"] == ["h9_chat"] and result["changed"] is True
    kind, result, dummy = run_module(M.main, args(haproxy, tmp_path, servers=["h9_chat"], missing_ok=False))
    assert kind == "fail" and "h9_chat" in result["msg"] and "missing_ok" in result["msg"]


def test_a_router_that_does_not_run(run_module, tmp_path):
    sock = str(tmp_path / "absent.sock")
    kind, result, dummy = run_module(M.main, {"socket": sock, "servers": ["h1_chat"], "state": "drain"})
    assert kind == "exit" and result["changed"] is False and result["missing"] == ["h1_chat"]
    assert result["router"].startswith("not running")
    kind, result, dummy = run_module(M.main, {"socket": sock, "servers": ["h1_chat"], "missing_ok": False})
    assert kind == "fail" and "does not run" in result["msg"]


def test_a_socket_nobody_listens_on(run_module, tmp_path):
    import tempfile
    folder = tempfile.mkdtemp(prefix="hap-")
    path = os.path.join(folder, "admin.sock")
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(path)
    dead.close()
    try:
        kind, result, dummy = run_module(M.main, {"socket": path, "servers": ["h1_chat"], "state": "drain"})
        assert kind == "exit" and result["missing"] == ["h1_chat"] and "nothing listens" in result["router"]
    finally:
        os.unlink(path)
        os.rmdir(folder)


def test_empty_servers_only_saves_the_state(run_module, haproxy, tmp_path):
    kind, result, dummy = run_module(M.main, args(haproxy, tmp_path, servers=[]))
    assert kind == "exit" and result["changed"] is True and result["commands"] == []
    assert (tmp_path / "server-state").read_text().startswith("1\n")
    kind, result, dummy = run_module(M.main, args(haproxy, tmp_path, servers=[]))
    assert kind == "exit"


def test_a_refused_command_fails(run_module, haproxy, tmp_path, monkeypatch):
    real = haproxy.answer

    def refuse(command):
        return "Permission denied\n\n" if command.startswith("set ") else real(command)

    monkeypatch.setattr(haproxy, "answer", refuse)
    kind, result, dummy = run_module(M.main, args(haproxy, tmp_path))
    assert kind == "fail" and "Permission denied" in result["msg"]


def test_ready_waits_until_the_checks_take_the_server_back(run_module, haproxy, tmp_path):
    # h1_chat drained and down (its service restarted): op state 0 in both backends.
    for row in haproxy.servers:
        if row[2] == "h1_chat":
            row[3], row[4] = 0, ADMIN["drain"]
    shows = []
    original = haproxy.answer

    def answer(command):
        if command == "show servers state":
            shows.append(command)
            if len(shows) == 4:
                # The third reading after the command: the health checks have it up again.
                for row in haproxy.servers:
                    if row[2] == "h1_chat":
                        row[3] = 2
        return original(command)

    haproxy.answer = answer
    kind, result, dummy = run_module(M.main, args(haproxy, tmp_path, state="ready", wait_up=30))
    assert kind == "exit", result
    assert result["changed"] is True
    assert result["servers"]["h1_chat"]["after"] == "ready"
    assert len(shows) == 4 and result["waited_up"] >= 1


def test_ready_fails_when_the_checks_never_take_the_server(run_module, haproxy, tmp_path):
    for row in haproxy.servers:
        if row[2] == "h1_chat":
            row[3] = 0
    kind, result, dummy = run_module(M.main, args(haproxy, tmp_path, state="ready", wait_up=1.5))
    assert kind == "fail"
    assert "did not take h1_chat back within 1.5 s" in result["msg"]
    kind, result, dummy = run_module(M.main, args(haproxy, tmp_path, state="ready"))
    assert kind == "exit" and "waited_up" not in result
