# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""serve_procs: whose processes hold the service's port and the GPUs.

The socket tables, the process records and the nvidia-smi output are real
captures (tests/fixtures/vllm_serve/README.md says where from):
python -m http.server listening on 127.0.0.1:28101 (started by sh -c: its
holder is the shell's child), on 0.0.0.0:28102 as nobody, on [::1]:28103
and [::]:28104; two torch processes on an H200 (pid 480 as root, 481 as
nobody, both children of pid 473). The reading part runs against a /proc
tree laid out from those captures in a temporary directory.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import nvidia
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import serve_procs as S
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.proc import ProcResult

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "..", "fixtures", "vllm_serve")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def captured_processes():
    """{pid: {cmdline, stat, uid, links}} of proc-holders.txt."""
    procs, pid = {}, 0
    for line in fixture("proc-holders.txt").splitlines():
        match = re.match(r"^== pid (\d+): (.*)$", line)
        if match:
            pid = int(match.group(1))
            procs[pid] = {"cmdline": match.group(2).strip(), "links": []}
        elif line.startswith("%d (" % pid):
            procs[pid]["stat"] = line
        elif line.startswith("Uid:"):
            procs[pid]["status"] = line
        elif "socket:[" in line:
            procs[pid]["links"].append(line.rsplit(" -> ", 1)[1])
    return procs


SOCKETS = S.parse_tcp_table(fixture("proc-net-tcp.txt")) + S.parse_tcp_table(fixture("proc-net-tcp6.txt"))
CAPTURED = captured_processes()
SHELL, SERVER, NOBODY, LOOP6, ANY6 = 25683, 25687, 25684, 25685, 25686


def procs_of_capture():
    """The records listener_verdict reads, from the capture (user names as on the capturing host)."""
    found = {}
    for pid, info in CAPTURED.items():
        stat = S.parse_stat(info["stat"])
        uid = S.parse_status_uid(info["status"])
        found[pid] = {"ppid": stat["ppid"], "uid": uid, "user": {0: "root", 65534: "nobody"}[uid],
                      "cmdline": info["cmdline"]}
    return found


def holders_of_capture(listening):
    return S.holders_of(dict((pid, info["links"]) for pid, info in CAPTURED.items()),
                        [sock["inode"] for sock in listening])


# --- the socket tables -------------------------------------------------------------

def test_the_captured_tables():
    listen = sorted((s["address"], s["port"], s["uid"], s["inode"]) for s in SOCKETS if s["state"] == S.LISTEN)
    assert ("127.0.0.1", 28101, 0, 2634237) in listen
    assert ("0.0.0.0", 28102, 65534, 2633625) in listen
    assert ("::1", 28103, 0, 2633621) in listen
    assert ("::", 28104, 0, 2633618) in listen
    # the open client connection to 28101: not listening, the same local port on one side
    assert {(s["port"], s["state"]) for s in SOCKETS if s["state"] != S.LISTEN} >= {(28101, "05"), (57316, "08")}


@pytest.mark.parametrize("targets,port,inodes", [
    (["127.0.0.1"], 28101, [2634237]),         # the address itself; the FIN_WAIT2 line on 28101 is not a listener
    (["127.0.0.1"], 28102, [2633625]),         # 0.0.0.0 takes it
    (["127.0.0.1"], 28104, [2633618]),         # :: takes IPv4 too unless IPv6-only, which /proc does not show
    (["127.0.0.1"], 28103, []),                # ::1 does not take 127.0.0.1
    (["::1"], 28103, [2633621]),
    (["::1"], 28104, [2633618]),
    (["::1"], 28102, []),                      # 0.0.0.0 does not take IPv6
    (["127.0.0.2"], 28101, []),                # another loopback address
    (["::ffff:127.0.0.1"], 28101, [2634237]),  # an IPv4-mapped address is the IPv4 one
    (["127.0.0.1"], 57316, []),                # a client's port, no listener
])
def test_accepting_on_the_capture(targets, port, inodes):
    assert [sock["inode"] for sock in S.accepting(SOCKETS, targets, port)] == inodes


def test_a_mapped_listener_takes_ipv4():
    sockets = [{"address": "::ffff:127.0.0.1", "port": 8000, "state": S.LISTEN, "uid": 0, "inode": 1},
               {"address": "::ffff:0.0.0.0", "port": 8001, "state": S.LISTEN, "uid": 0, "inode": 2}]
    assert [s["inode"] for s in S.accepting(sockets, ["127.0.0.1"], 8000)] == [1]
    assert [s["inode"] for s in S.accepting(sockets, ["10.0.0.5"], 8001)] == [2]


def kernel_hex(address, byteorder):
    """An address as the kernel prints it in /proc/net/tcp{,6}: each 32-bit word, as it lies in memory, %08X."""
    raw = ipaddress.ip_address(address).packed
    return "".join("%08X" % int.from_bytes(raw[i:i + 4], byteorder) for i in range(0, len(raw), 4))


def test_kernel_hex_reproduces_the_capture():
    assert kernel_hex("127.0.0.1", "little") == "0100007F"
    assert kernel_hex("::1", "little") == "00000000000000000000000001000000"


addresses = st.one_of(st.integers(0, 2 ** 32 - 1).map(lambda n: str(ipaddress.IPv4Address(n))),
                      st.integers(0, 2 ** 128 - 1).map(lambda n: str(ipaddress.IPv6Address(n))))


@settings(max_examples=300, deadline=None)
@given(addresses, st.integers(0, 65535), st.sampled_from(["little", "big"]), st.booleans())
def test_decode_inverts_the_kernel_s_encoding(address, port, byteorder, lower):
    text = "%s:%04X" % (kernel_hex(address, byteorder), port)
    assert S.decode_endpoint(text.lower() if lower else text, byteorder) == (address, port)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(addresses, st.integers(0, 65535), st.sampled_from(["0A", "01", "06"]),
                          st.integers(0, 2 ** 32 - 2), st.integers(0, 2 ** 40)), max_size=6))
def test_parse_tcp_table_reads_back_what_the_kernel_prints(rows):
    lines = ["  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode"]
    for number, (address, port, state, uid, inode) in enumerate(rows):
        zero = "0" * len(kernel_hex(address, "little"))
        lines.append("%4d: %s:%04X %s:0000 %s 00000000:00000000 00:00000000 00000000 %5d        0 %d 1 0000000000000000"
                     " 100 0 0 10 0" % (number, kernel_hex(address, "little"), port, zero, state, uid, inode))
    parsed = S.parse_tcp_table("\n".join(lines) + "\n")
    assert [(s["address"], s["port"], s["state"], s["uid"], s["inode"]) for s in parsed] == list(rows)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=120))
def test_parse_tcp_table_reads_or_refuses_anything(text):
    try:
        parsed = S.parse_tcp_table(text)
    except ValueError:
        return
    assert all(set(sock) == {"address", "port", "state", "uid", "inode"} for sock in parsed)


@pytest.mark.parametrize("bad", ["0100007F", "0100007G:1F40", "0100007F:1F4", "00000000000000000000000001000000:1",
                                 "7F:1F40", "", None])
def test_decode_endpoint_refuses(bad):
    with pytest.raises(ValueError):
        S.decode_endpoint(bad)


def test_parse_tcp_table_refuses_a_line_that_is_not_the_kernel_s():
    with pytest.raises(ValueError, match="line 2"):
        S.parse_tcp_table(fixture("proc-net-tcp.txt").splitlines()[0] + "\n   0: 0100007F:6DC5 garbage\n")
    with pytest.raises(ValueError):
        S.decode_address("0100007F", "middle")


# --- processes ----------------------------------------------------------------------

def test_the_captured_processes():
    stat = S.parse_stat(CAPTURED[SERVER]["stat"])
    assert (stat["pid"], stat["comm"], stat["state"], stat["ppid"], stat["pgid"]) == (SERVER, "python3", "S", SHELL, 25677)
    assert S.parse_stat(CAPTURED[SHELL]["stat"])["comm"] == "sh"
    assert S.parse_status_uid(CAPTURED[NOBODY]["status"]) == 65534
    assert S.socket_inode(CAPTURED[SERVER]["links"][0]) == 2634237


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 4194304), st.text(alphabet=st.characters(blacklist_characters="\0\n"), max_size=15),
       st.sampled_from("RSDZT"), st.integers(0, 4194304), st.integers(0, 4194304))
def test_parse_stat_reads_any_command_name(pid, comm, state, ppid, pgid):
    """The command name may hold spaces and parentheses: the fields are after the last ')'."""
    line = "%d (%s) %s %d %d 15277 0 -1 4194304 2592 0 4 0" % (pid, comm, state, ppid, pgid)
    assert S.parse_stat(line) == {"pid": pid, "comm": comm, "state": state, "ppid": ppid, "pgid": pgid}


@pytest.mark.parametrize("bad", ["", "25687 python3 S 1 1", "x (a) S 1 1", "1 (a) S one 1", "1 (a)"])
def test_parse_stat_refuses(bad):
    with pytest.raises(ValueError):
        S.parse_stat(bad)


def test_status_without_uid():
    with pytest.raises(ValueError):
        S.parse_status_uid("Name:\tpython3\nPPid:\t1\n")


def test_cmdline_text():
    assert S.cmdline_text(b"/usr/bin/python3\0-m\0http.server\0") == "/usr/bin/python3 -m http.server"
    assert S.cmdline_text(b"") == ""
    assert S.cmdline_text(b"a" * 500, limit=10) == "aaaaaaa..."


@pytest.mark.parametrize("text,unit", [
    ("0::/system.slice/vllm-qwen3-tiny.service\n", "vllm-qwen3-tiny.service"),
    ("12:pids:/system.slice/x.service\n1:name=systemd:/system.slice/vllm-a.service\n0::/\n", "vllm-a.service"),
    ("0::/user.slice/user-0.slice/session-3.scope\n", None),
    ("0::/\n", None),
    ("", None),
])
def test_cgroup_unit(text, unit):
    """The cgroup file's documented layout (hierarchy-ID:controllers:path; v2 is 0::path; v1's systemd one
    name=systemd): the unit is the last path component ending in .service."""
    assert S.cgroup_unit(text) == unit


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.integers(0, 30), st.integers(0, 30)), st.integers(0, 30))
def test_ancestry_ends_on_any_parent_map(parents, pid):
    chain = S.ancestry(pid, parents)
    assert len(chain) == len(set(chain)) <= len(parents) + 1
    assert all(parents.get(a) == b for a, b in zip(chain, chain[1:]))


# --- the listener's verdict -------------------------------------------------------------

def verdict(port, main_pid, service_uid, targets=("127.0.0.1",)):
    listening = S.accepting(SOCKETS, list(targets), port)
    return S.listener_verdict(listening, holders_of_capture(listening), procs_of_capture(), main_pid, service_uid)


def test_the_listener_of_the_service_s_tree_passes():
    """The shell is the main process (a supervisord wrapper): its child holds the socket."""
    found = verdict(28101, SHELL, 998)
    assert found["ok"] and not found["final"] and found["check"] == S.CHECK_TREE
    assert [who["pid"] for who in found["holders"]] == [SERVER] and found["impostors"] == []
    assert verdict(28101, SERVER, None)["ok"]  # the main process itself (systemd's MainPID)
    message = S.listener_message(found, "127.0.0.1:28101", "vllm-tiny", "vllm")
    assert "held by pid 25687, user root (uid 0): /usr/bin/python3 -m http.server --bind 127.0.0.1 28101" in message
    assert "main pid 25683 or a descendant of it (check: process tree)" in message


def test_a_listener_outside_the_tree_is_an_impostor():
    found = verdict(28101, NOBODY, 0)
    assert not found["ok"] and found["final"] and found["check"] == S.CHECK_TREE
    assert found["impostors"] == [{"pid": SERVER, "uid": 0, "user": "root",
                                   "cmdline": "/usr/bin/python3 -m http.server --bind 127.0.0.1 28101"}]
    message = S.listener_message(found, "127.0.0.1:28101", "vllm-tiny", "vllm")
    assert message.startswith("the socket listening on 127.0.0.1:28101 is not vllm-tiny's: it is held by pid 25687,"
                              " user root (uid 0): /usr/bin/python3 -m http.server --bind 127.0.0.1 28101")
    assert "The requests with the API key were not sent" in message
    assert "Fix: stop that process (kill 25687), or set vllm_serve_port to a free port" in message


def test_without_a_main_process_the_user_decides():
    """The service does not run (RestartSec, backoff): the listener must run as its user."""
    found = verdict(28102, None, 65534)
    assert found["ok"] and found["check"] == S.CHECK_USER
    found = verdict(28102, None, 998)
    assert not found["ok"] and found["final"] and found["impostors"][0]["user"] == "nobody"
    message = S.listener_message(found, "127.0.0.1:28102", "vllm-tiny", "vllm")
    assert "pid 25684, user nobody (uid 65534): /usr/bin/python3 -m http.server --bind 0.0.0.0 28102" in message
    assert "check: user; vllm-tiny runs no main process" in message
    assert not verdict(28102, None, None)["ok"]  # no such user: nothing is the service's


def test_a_socket_no_process_of_this_proc_holds_is_not_the_service_s():
    listening = S.accepting(SOCKETS, ["127.0.0.1"], 28102)
    found = S.listener_verdict(listening, {}, {}, 4242, 65534)
    assert not found["ok"] and found["final"] and found["impostors"] == [
        {"pid": None, "uid": 65534, "user": None, "cmdline": None}]
    assert "another PID namespace" in S.listener_message(found, "127.0.0.1:28102", "vllm-tiny", "vllm")


def test_nothing_listening_is_not_final():
    found = verdict(8000, SHELL, 0)
    assert not found["ok"] and not found["final"] and found["sockets"] == []
    assert S.listener_message(found, "127.0.0.1:8000", "vllm-tiny", "vllm") == "nothing listens on 127.0.0.1:8000"


def test_every_holder_counts():
    """A socket inherited by a process outside the tree (a leftover of an earlier server) makes it an impostor."""
    listening = S.accepting(SOCKETS, ["127.0.0.1"], 28101)
    procs = procs_of_capture()
    procs[31000] = {"ppid": 1, "uid": 0, "user": "root", "cmdline": "VLLM::EngineCore"}
    found = S.listener_verdict(listening, {2634237: [SERVER, 31000]}, procs, SHELL, 0)
    assert not found["ok"] and [who["pid"] for who in found["impostors"]] == [31000]
    assert [who["pid"] for who in found["holders"]] == [SERVER]


# --- the GPUs ---------------------------------------------------------------------------------

def gpu_procs():
    """From nvidia-smi-h200-two-procs.txt (ps -eo pid,ppid,pgid,user,args of the two processes)."""
    found = {}
    for line in fixture("nvidia-smi-h200-two-procs.txt").splitlines():
        match = re.match(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(.*)$", line)
        if match:
            user = match.group(4)
            found[int(match.group(1))] = {"ppid": int(match.group(2)), "uid": {"root": 0, "nobody": 65534}[user],
                                          "user": user, "cmdline": match.group(5)}
    return found


APPS = nvidia.parse_compute_apps(fixture("compute-apps-h200-two.csv"))


def whose(holders):
    return dict((entry["pid"], entry["whose"]) for entry in holders)


def test_gpu_holders_of_the_capture():
    procs = gpu_procs()
    assert set(procs) == {480, 481}
    # nobody's process outside any service: a leftover; root's: another user's
    holders = S.gpu_holders(APPS, procs, None, 65534)
    assert whose(holders) == {480: "other user", 481: "leftover"}
    assert [(e["used_mib"], e["gpus"]) for e in holders] == [(1542, 1), (2566, 1)]
    # both children of the main process 473: the service's
    procs[473] = {"ppid": 1, "uid": 0, "user": "root", "cmdline": "bash"}
    assert whose(S.gpu_holders(APPS, procs, 473, 65534)) == {480: "service", 481: "service"}
    # under supervisord (pid 473 here) but not in the service's tree: another program's
    assert whose(S.gpu_holders(APPS, procs, 9999, 65534, manager_pid=473)) == {480: "other user", 481: "other service"}


def test_gpu_holders_of_other_units_and_other_namespaces():
    procs = gpu_procs()
    procs[481]["unit"] = "vllm-other.service"
    assert whose(S.gpu_holders(APPS, procs, None, 65534, service_unit="vllm-tiny.service"))[481] == "other service"
    procs[481]["unit"] = "vllm-tiny.service"
    assert whose(S.gpu_holders(APPS, procs, None, 65534, service_unit="vllm-tiny.service"))[481] == "leftover"
    assert whose(S.gpu_holders(APPS, {}, None, 65534)) == {480: "unknown", 481: "unknown"}


def test_gpu_holders_add_up_a_process_on_several_gpus():
    apps = [{"pid": 481, "used_mib": 100}, {"pid": 481, "used_mib": 50}, {"pid": 480, "used_mib": None},
            {"pid": 480, "used_mib": 7}]
    holders = S.gpu_holders(apps, gpu_procs(), None, 65534)
    assert [(e["pid"], e["used_mib"], e["gpus"]) for e in holders] == [(480, None, 2), (481, 150, 2)]


def test_gpu_wait_verdict_names_the_leftovers_and_the_fix():
    holders = S.gpu_holders(APPS, gpu_procs(), None, 65534)
    found = S.gpu_wait_verdict(holders, "vllm-tiny", "nobody", 60.2)
    assert not found["ok"] and [e["pid"] for e in found["leftovers"]] == [481]
    assert found["message"].startswith("1 compute process(es) of nobody that are not vllm-tiny's still hold GPU memory"
                                       " after 60.2s: pid 481 (user nobody, 2566 MiB on 1 GPU(s), leftover):"
                                       " python3 /tmp/hold.py 2048 /tmp/r2.")
    assert "Fix: stop them (kill 481" in found["message"] and "vllm_serve_gpu_wait_timeout" in found["message"]
    assert S.gpu_wait_verdict(S.gpu_holders(APPS, gpu_procs(), None, 998), "vllm-tiny", "vllm", 0)["ok"]
    assert S.gpu_wait_verdict([], "vllm-tiny", "vllm", 0)["ok"]


# The H200's memory at the capture of compute-apps-h200-two.csv (nvidia-smi's table in
# nvidia-smi-h200-two-procs.txt: 4123MiB / 143771MiB), in the --query-gpu format.
H200_MEMORY = nvidia.parse_gpu_memory("0, 143771, 4123\n")


def test_the_memory_query_is_read_and_bad_lines_refused():
    assert H200_MEMORY == [{"index": 0, "total_mib": 143771, "used_mib": 4123}]
    assert nvidia.gpu_memory_args() == ["--query-gpu=index,memory.total,memory.used", "--format=csv,noheader,nounits"]
    assert nvidia.parse_gpu_memory("0, 143771 MiB, [N/A]\n1, 81559, 0\n") == [
        {"index": 0, "total_mib": 143771, "used_mib": None}, {"index": 1, "total_mib": 81559, "used_mib": 0}]
    assert nvidia.parse_gpu_memory("") == []
    for bad in ("GPU 0, 143771, 4123", "0, 143771", "0, lots, 4123", "0, 143771, 4123, 1"):
        with pytest.raises(ValueError, match="query-gpu"):
            nvidia.parse_gpu_memory(bad)


def test_gpu_memory_verdict_waits_for_the_memory_the_service_asks_for():
    holders = S.gpu_holders(APPS, gpu_procs(), None, 998)  # both processes are another user's
    # 4123 MiB used of 143771: 0.9 asks for 129394, and 139648 are free
    assert S.gpu_memory_verdict(H200_MEMORY, [0], 0.9, holders, "vllm-tiny", 0)["ok"]
    # 0.98 asks for 140896: short by 1248 MiB; the holders are named, and the largest share that fits
    found = S.gpu_memory_verdict(H200_MEMORY, [0], 0.98, holders, "vllm-tiny", 60.0)
    assert not found["ok"] and found["short"][0]["wanted_mib"] == 140896 and found["short"][0]["free_mib"] == 139648
    assert found["message"].startswith("vllm-tiny asks for 0.98 of each GPU's memory (vllm_serve_gpu_memory_utilization)"
                                       " and after 60.0s GPU 0 has 139648 MiB free of 143771, 140896 wanted")
    assert "pid 480 (user root, 1542 MiB on 1 GPU(s), other user)" in found["message"]
    assert "set vllm_serve_gpu_memory_utilization to 0.97 or less" in found["message"]
    # the service itself holds memory: its restart frees it, so nothing is judged
    procs = gpu_procs()
    procs[473] = {"ppid": 1, "uid": 0, "user": "root", "cmdline": "bash"}
    mine = S.gpu_holders(APPS, procs, 473, 65534)
    assert S.gpu_memory_verdict(H200_MEMORY, [0], 0.98, mine, "vllm-tiny", 0)["ok"]
    # GPUs the reading lacks or cannot size are not judged; no GPU or no share asks for nothing
    assert S.gpu_memory_verdict(H200_MEMORY, [1], 0.98, holders, "vllm-tiny", 0)["ok"]
    assert S.gpu_memory_verdict([{"index": 0, "total_mib": 143771, "used_mib": None}], [0], 0.98, holders, "t", 0)["ok"]
    assert S.gpu_memory_verdict(H200_MEMORY, [], 0.98, holders, "vllm-tiny", 0)["ok"]
    assert S.gpu_memory_verdict(H200_MEMORY, [0], None, holders, "vllm-tiny", 0)["ok"]


@given(total=st.integers(1000, 200000), used=st.integers(0, 200000), share=st.floats(0.05, 0.99))
def test_gpu_memory_verdict_is_vllms_free_memory_rule(total, used, share):
    used = min(used, total)
    found = S.gpu_memory_verdict([{"index": 0, "total_mib": total, "used_mib": used}], [0], share, [], "t", 0)
    assert found["ok"] == (total - used >= math.ceil(share * total))


def test_gpu_warning_lists_what_is_not_the_service_s():
    procs = gpu_procs()
    procs[473] = {"ppid": 1, "uid": 0, "user": "root", "cmdline": "bash"}
    assert S.gpu_warning(S.gpu_holders(APPS, procs, 473, 65534), "vllm-tiny") is None
    warning = S.gpu_warning(S.gpu_holders(APPS, gpu_procs(), None, 998), "vllm-tiny")
    assert warning.startswith("GPU memory is held by 2 process(es) that are not vllm-tiny's: pid 480 (user root,"
                              " 1542 MiB on 1 GPU(s), other user): python3 /tmp/hold.py 1024 /tmp/r1; pid 481")


# --- reading the host, on a /proc laid out from the captures ------------------------------------------

@pytest.fixture
def fake_proc(tmp_path):
    """A /proc tree: the socket tables and the processes of the capture (fd links as real symlinks)."""
    root = tmp_path / "proc"
    (root / "net").mkdir(parents=True)
    (root / "net" / "tcp").write_text(fixture("proc-net-tcp.txt"))
    (root / "net" / "tcp6").write_text(fixture("proc-net-tcp6.txt"))
    for pid, info in CAPTURED.items():
        base = root / str(pid)
        (base / "fd").mkdir(parents=True)
        (base / "stat").write_text(info["stat"] + "\n")
        (base / "status").write_text("Name:\tx\n%s\n" % info["status"])
        (base / "cmdline").write_bytes(info["cmdline"].replace(" ", "\0").encode() + b"\0")
        for number, link in enumerate(info["links"], 3):
            os.symlink(link, str(base / "fd" / str(number)))
        os.symlink("/dev/null", str(base / "fd" / "0"))
    return str(root)


def test_read_listener_on_a_captured_proc(fake_proc):
    found = S.read_listener("http://127.0.0.1:28101", SHELL, "root", proc_root=fake_proc)
    assert found["ok"] and found["where"] == "127.0.0.1:28101" and found["error"] is None
    assert [who["pid"] for who in found["holders"]] == [SERVER]
    found = S.read_listener("http://127.0.0.1:28102", None, "root", proc_root=fake_proc)
    assert not found["ok"] and found["impostors"][0]["pid"] == NOBODY
    assert found["impostors"][0]["cmdline"] == "/usr/bin/python3 -m http.server --bind 0.0.0.0 28102"
    assert S.read_listener("http://[::1]:28103", LOOP6, "root", proc_root=fake_proc)["ok"]
    found = S.read_listener("http://127.0.0.1:9", None, "root", proc_root=fake_proc)
    assert not found["ok"] and not found["final"]


def test_read_listener_fails_closed_on_an_unreadable_table(fake_proc):
    with open(os.path.join(fake_proc, "net", "tcp"), "a") as handle:
        handle.write("   9: not the kernel's\n")
    found = S.read_listener("http://127.0.0.1:28101", SHELL, "root", proc_root=fake_proc)
    assert not found["ok"] and found["final"] and "cannot read the socket tables" in found["error"]


def test_read_listener_without_tcp6(fake_proc):
    os.remove(os.path.join(fake_proc, "net", "tcp6"))
    assert S.read_listener("http://127.0.0.1:28101", SHELL, "root", proc_root=fake_proc)["ok"]


def test_read_processes_walks_up_to_what_this_proc_shows(fake_proc):
    procs = S.read_processes([SERVER], proc_root=fake_proc)
    assert sorted(procs) == [SHELL, SERVER]  # 25682, the shell's parent, is not in the capture
    assert procs[SERVER]["pgid"] == 25677 and procs[SERVER]["uid"] == 0


def run_stub(outputs):
    """A proc.run stand-in: the first output whose key is in the argv."""
    calls = []

    def run(argv, timeout=30):
        calls.append(argv)
        for key, (rc, out) in outputs.items():
            if key in argv:
                return ProcResult(rc=rc, stdout=out, argv=argv)
        return ProcResult(rc=127, argv=argv, error="not found")
    run.calls = calls
    return run


def test_read_main_pid(tmp_path):
    run = run_stub({"show": (0, "MainPID=4242\n")})
    assert S.read_main_pid("systemd", "vllm-tiny", [], run=run) == 4242
    assert run.calls == [["systemctl", "show", "-p", "MainPID", "vllm-tiny.service"]]
    assert S.read_main_pid("systemd", "vllm-tiny", [], run=run_stub({"show": (0, "MainPID=0\n")})) is None
    ctl = tmp_path / "supervisorctl"
    ctl.write_text("")
    run = run_stub({"pid": (0, "777\n")})
    assert S.read_main_pid("supervisord", "vllm-tiny", [str(ctl), "-c", "x"], run=run) == 777
    assert run.calls == [[str(ctl), "-c", "x", "pid", "vllm-tiny"]]
    assert S.read_main_pid("supervisord", "vllm-tiny", [str(ctl)], run=run_stub({"pid": (0, "0\n")})) is None
    assert S.read_main_pid("supervisord", "vllm-tiny", [str(ctl)],
                           run=run_stub({"pid": (1, "vllm-tiny: ERROR (no such process)\n")})) is None
    assert S.read_main_pid("supervisord", "vllm-tiny", [str(tmp_path / "none")], run=run) is None


def test_check_listener_reads_twice_before_it_names_an_impostor(fake_proc):
    run = run_stub({"show": (0, "MainPID=%d\n" % NOBODY)})
    found = S.check_listener("http://127.0.0.1:28101", "systemd", "vllm-tiny", [], "vllm", proc_root=fake_proc, run=run)
    assert not found["ok"] and len(run.calls) == 2
    assert found["message"].startswith("the socket listening on 127.0.0.1:28101 is not vllm-tiny's")
    run = run_stub({"show": (0, "MainPID=%d\n" % SHELL)})
    found = S.check_listener("http://127.0.0.1:28101", "systemd", "vllm-tiny", [], "vllm", proc_root=fake_proc, run=run)
    assert found["ok"] and len(run.calls) == 1


def test_read_gpu_holders_runs_the_documented_query(fake_proc):
    run = run_stub({"--query-compute-apps=pid,used_memory": (0, fixture("compute-apps-h200-two.csv"))})
    holders, error = S.read_gpu_holders("/usr/bin/nvidia-smi", "systemd", "vllm-tiny", None, "root", proc_root=fake_proc,
                                        run=run)
    assert error is None and run.calls == [["/usr/bin/nvidia-smi", "--query-compute-apps=pid,used_memory",
                                            "--format=csv,noheader,nounits"]]
    assert whose(holders) == {480: "unknown", 481: "unknown"}  # pids of another host: not in this /proc
    holders, error = S.read_gpu_holders("/usr/bin/nvidia-smi", "systemd", "vllm-tiny", None, "root",
                                        proc_root=fake_proc, run=run_stub({}))
    assert holders == [] and error == "not found"


def test_target_addresses():
    assert S.target_addresses("127.0.0.1") == ["127.0.0.1"]
    assert S.target_addresses("::1") == ["::1"]
    assert "127.0.0.1" in S.target_addresses("localhost")
    assert S.url_endpoint("http://[::1]:28103") == ("::1", 28103)
    assert S.url_endpoint("http://127.0.0.1") == ("127.0.0.1", 80)


# --- the real /proc, as a container's root reads it (no CAP_SYS_PTRACE) ---------------------------

READ_AS_CONTAINER_ROOT = r"""
import json, sys
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import serve_procs as S
url, main_pid, user = sys.argv[1], int(sys.argv[2]) or None, sys.argv[3]
print(json.dumps({"verdict": S.read_listener(url, main_pid, user), "links": S.read_fd_links()[0]}))
"""


def python_for_nobody():
    """A Python that nobody can run: the test's own may live under root's home (pyenv), which nobody cannot read."""
    for python in (sys.executable, "/usr/bin/python3"):
        if python and os.path.exists(python) and subprocess.run(
                ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-c", "pass"], cwd="/",
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False).returncode == 0:
            return python
    return None


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and util-linux's setpriv")
def test_a_container_s_root_reads_other_users_sockets(tmp_path):
    """Root without CAP_SYS_PTRACE (Docker's default) cannot read the fd links of another user's process: the
    reading does it in a child process of that user's uid and gid. A listener of nobody, found so."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    python = python_for_nobody()
    if python is None:
        pytest.skip("no Python that the user nobody can run")
    listener = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-c",
                                 "import socket, time; s = socket.socket(); s.bind(('127.0.0.1', %d)); s.listen();"
                                 " time.sleep(60)" % port], cwd="/")
    try:
        deadline = time.time() + 20
        while not any(sock["port"] == port and sock["state"] == S.LISTEN for sock in S.read_sockets()):
            assert time.time() < deadline and listener.poll() is None
            time.sleep(0.05)

        def read(main_pid, user):
            out = subprocess.check_output(
                ["setpriv", "--bounding-set=-sys_ptrace", "--", sys.executable, "-c", READ_AS_CONTAINER_ROOT,
                 "http://127.0.0.1:%d" % port, str(main_pid), user],
                env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
            return json.loads(out)

        found = read(0, "nobody")
        assert str(listener.pid) in found["links"]
        verdict = found["verdict"]
        assert verdict["ok"] and verdict["check"] == S.CHECK_USER and [who["pid"] for who in verdict["holders"]] == [
            listener.pid]
        # the main pid of a service that is not the listener's ancestor
        other = subprocess.Popen(["sleep", "60"])
        try:
            verdict = read(other.pid, "nobody")["verdict"]
        finally:
            other.kill()
            other.wait()
        assert not verdict["ok"] and [who["pid"] for who in verdict["impostors"]] == [listener.pid]
        assert verdict["impostors"][0]["user"] == "nobody" and "socket.socket()" in verdict["impostors"][0]["cmdline"]
    finally:
        listener.kill()
        listener.wait()
