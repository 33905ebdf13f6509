# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whose is it: the socket on the service's port, and the GPUs' compute processes.

The health gate (module vllm_health) and the role, before its benchmark
(module vllm_serve_guard), send the API key only to a listener of the
service's own process tree; before a start, the role waits until no
leftover of the service's user holds GPU memory. The decisions are the pure
functions of the first part (unit tests on captures of /proc/net/tcp,
/proc/net/tcp6 and nvidia-smi; the readings of /proc's text are in the
private _serve_proc_parse, re-exported here); the second part reads /proc
and runs systemctl, supervisorctl and nvidia-smi for both modules.

The listener (``listener_verdict``):

- ``/proc/net/tcp`` and ``/proc/net/tcp6`` give the LISTEN sockets (state
  ``0A``) on the port whose address takes a connection to the gate's
  address (``accepting``): that address (an IPv4 one also as
  ``::ffff:a.b.c.d``), and the wildcards ``0.0.0.0`` and ``::`` for an IPv4
  address (``::`` also takes IPv4 unless the socket is IPv6-only, which
  /proc does not show: it counts), ``::`` for an IPv6 one;
- the ``socket:[inode]`` links under ``/proc/<pid>/fd`` give the processes
  that hold those sockets (root without CAP_SYS_PTRACE, a container's root
  by default, reads another user's through a child process of that user's
  uid and gid: the links are behind the kernel's ptrace access check);
- with the service's main pid known (systemd's ``MainPID``, ``supervisorctl
  pid PROGRAM``), each holder must be that pid or a descendant of it (check
  ``process tree``); without one (the service does not run), each holder
  must run as the service's user (check ``user``);
- a socket that no process of this /proc holds (a process of another PID
  namespace, such as a container that shares the host's network) is not
  the service's.

The GPUs (``gpu_holders``): each compute process nvidia-smi lists is the
service's (its tree), a leftover (the service's user, outside the tree and
outside any other systemd unit or supervisord program of that user), another
service's, another user's, or unknown (not in this /proc).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import ipaddress
import json
import math
import os
import pwd
import socket
import sys

from ansible.module_utils.six.moves.urllib.parse import urlsplit
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import nvidia
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import proc as _proc
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._serve_state import parse_systemctl_show
# Re-exported: the pure readings of /proc's text are this module's too.
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._serve_proc_parse import (  # noqa: F401 pylint: disable=unused-import
    LISTEN, _NUMBER_RE, _parents, _who, accepting, ancestry, cgroup_unit, cmdline_text, decode_address, decode_endpoint,
    holders_of, in_tree, parse_stat, parse_status_ids, parse_status_uid, parse_tcp_table, socket_inode)

CHECK_TREE = "process tree"
CHECK_USER = "user"


# --- the listener's verdict ---------------------------------------------------------

def listener_verdict(listening, holders, procs, main_pid, service_uid):
    """Whether the sockets that take the gate's connection are the service's.

    listening: accepting()'s sockets; holders: {inode: [pids]}; procs:
    {pid: {ppid, uid, user, cmdline}} of the holders and their ancestors;
    main_pid: the service's main pid (None or 0: it does not run);
    service_uid: the uid of the service's user (None: no such user).
    Returns {ok, final, check, main_pid, holders, impostors}: ok, the key
    may be sent; final, waiting will not change it (a process that is not
    the service's holds the port: the gate stops there); holders and
    impostors, the processes as {pid, uid, user, cmdline} (pid None: a
    socket that no process of this /proc holds, uid its owner's).
    """
    check = CHECK_TREE if main_pid else CHECK_USER
    result = {"ok": False, "final": False, "check": check, "main_pid": main_pid or None, "holders": [],
              "impostors": [], "sockets": [dict(sock) for sock in listening]}
    if not listening:
        return result
    parents = _parents(procs)
    for sock in listening:
        pids = holders.get(sock["inode"]) or []
        if not pids:
            result["impostors"].append(_who(None, {}, uid=sock["uid"]))
        for pid in pids:
            who = _who(pid, procs)
            if main_pid:
                mine = in_tree(pid, main_pid, parents)
            else:
                mine = service_uid is not None and who["uid"] == service_uid
            result["holders" if mine else "impostors"].append(who)
    result["ok"] = not result["impostors"]
    result["final"] = bool(result["impostors"])
    return result


def describe(who):
    """'pid 1234, user nobody (uid 65534): python3 -m http.server' of a {pid, uid, user, cmdline}."""
    if who.get("pid") is None:
        return ("a process that this host's /proc does not show (another PID namespace, such as a container that"
                " shares the host's network, or one whose open files cannot be read); the socket's owner is %s (uid %s)"
                % (who.get("user") or "?", who.get("uid")))
    user = who.get("user") or "?"
    return "pid %s, user %s (uid %s): %s" % (who["pid"], user, who.get("uid"), who.get("cmdline") or "(no command line)")


def listener_message(verdict, where, service, user):
    """The gate's line on the listener at where (``127.0.0.1:8000``): whose it is and, if not the service's, the fix."""
    if verdict["check"] == CHECK_TREE:
        how = "the service's main pid %s or a descendant of it (check: process tree)" % verdict["main_pid"]
    else:
        how = "a process of %s, the service's user (check: user; %s runs no main process)" % (user, service)
    if not verdict["sockets"]:
        return "nothing listens on %s" % where
    if verdict["ok"]:
        return "the socket on %s is held by %s: %s" % (
            where, "; ".join(describe(who) for who in verdict["holders"]), how)
    kill = " ".join(str(who["pid"]) for who in verdict["impostors"] if who["pid"] is not None)
    return ("the socket listening on %s is not %s's: it is held by %s, not by %s. The requests with the API key were"
            " not sent. Fix: stop that process%s, or set vllm_serve_port to a free port"
            % (where, service, "; ".join(describe(who) for who in verdict["impostors"]), how,
               " (kill %s)" % kill if kill else ""))


# --- the GPUs -------------------------------------------------------------------

WHOSE_SERVICE = "service"
WHOSE_LEFTOVER = "leftover"


def gpu_holders(apps, procs, main_pid, service_uid, service_unit=None, manager_pid=None):
    """nvidia-smi's compute processes, one entry per pid: {pid, used_mib, gpus, uid, user, cmdline, whose, unit}.

    apps: nvidia.parse_compute_apps() ([{pid, used_mib}], a line per GPU);
    procs: {pid: {ppid, uid, user, cmdline, unit}} of their pids and
    ancestors (unit: the systemd unit of the process's cgroup); main_pid:
    the service's (None: it does not run); service_unit: its unit
    (``name.service``, systemd mode); manager_pid: supervisord's pid
    (supervisord mode). whose: ``service`` (the main pid or a descendant),
    ``leftover`` (the service's user, neither in the tree nor in another
    unit or under supervisord), ``other service`` (the service's user, in
    another unit or under supervisord), ``other user``, ``unknown`` (a pid
    this /proc does not show).
    """
    parents = _parents(procs)
    merged = {}
    for app in apps:
        entry = merged.setdefault(app["pid"], {"pid": app["pid"], "used_mib": 0, "gpus": 0})
        entry["gpus"] += 1
        entry["used_mib"] = None if app["used_mib"] is None or entry["used_mib"] is None \
            else entry["used_mib"] + app["used_mib"]
    found = []
    for pid in sorted(merged):
        entry = merged[pid]
        entry.update(_who(pid, procs))
        info = procs.get(pid)
        entry["unit"] = (info or {}).get("unit")
        if info is None:
            whose = "unknown"
        elif main_pid and in_tree(pid, main_pid, parents):
            whose = WHOSE_SERVICE
        elif service_uid is None or entry["uid"] != service_uid:
            whose = "other user"
        elif (entry["unit"] and service_unit and entry["unit"] != service_unit) or \
                (manager_pid and manager_pid in ancestry(pid, parents)):
            whose = "other service"
        else:
            whose = WHOSE_LEFTOVER
        entry["whose"] = whose
        found.append(entry)
    return found


def _memory(entry):
    return "%s MiB on %d GPU(s)" % ("?" if entry["used_mib"] is None else entry["used_mib"], entry["gpus"])


def gpu_line(entry):
    """'pid 481 (user nobody, 2566 MiB on 1 GPU(s), other user): python3 /tmp/hold.py'."""
    return "pid %s (user %s, %s, %s): %s" % (entry["pid"], entry.get("user") or "?", _memory(entry), entry["whose"],
                                             entry.get("cmdline") or "not in this host's /proc")


def gpu_wait_verdict(holders, service, user, waited, timeout_variable="vllm_serve_gpu_wait_timeout"):
    """{ok, leftovers, message} of the wait before a start: no leftover of the service's user may hold GPU memory."""
    leftovers = [entry for entry in holders if entry["whose"] == WHOSE_LEFTOVER]
    if not leftovers:
        return {"ok": True, "leftovers": [], "message": "no compute process of %s outside %s holds GPU memory"
                % (user, service)}
    kill = " ".join(str(entry["pid"]) for entry in leftovers)
    return {"ok": False, "leftovers": leftovers, "message": (
        "%d compute process(es) of %s that are not %s's still hold GPU memory after %ss: %s. A server started beside"
        " them would not get that memory. Fix: stop them (kill %s; leftovers of an earlier server, whose parent"
        " died), or raise %s if they are still exiting" % (
            len(leftovers), user, service, waited, "; ".join(gpu_line(entry) for entry in leftovers), kill,
            timeout_variable))}


def gpu_memory_verdict(gpus, indexes, utilization, holders, service, waited,
                       timeout_variable="vllm_serve_gpu_wait_timeout"):
    """{ok, short, message} of the wait before a start: each GPU the service will use (indexes) has the memory it asks
    for free (gpu_memory_utilization x memory.total, as vLLM checks when it starts). gpus: nvidia.parse_gpu_memory().

    While a process of the service itself holds GPU memory its restart frees that memory, and the reading cannot
    tell it apart per GPU: the check is then not made (ok, with a note). A GPU the reading does not list, or whose
    memory it does not have, is not judged.
    """
    if not indexes or not utilization:
        return {"ok": True, "short": [], "message": "no GPU memory asked for"}
    if any(entry["whose"] == WHOSE_SERVICE for entry in holders):
        return {"ok": True, "short": [], "message": "%s itself holds GPU memory: its restart frees it" % service}
    by_index = dict((gpu["index"], gpu) for gpu in gpus)
    short = []
    for index in indexes:
        gpu = by_index.get(index)
        if not gpu or gpu["total_mib"] is None or gpu["used_mib"] is None:
            continue
        wanted = int(math.ceil(float(utilization) * gpu["total_mib"]))
        free = gpu["total_mib"] - gpu["used_mib"]
        if free < wanted:
            short.append(dict(gpu, wanted_mib=wanted, free_mib=free))
    if not short:
        return {"ok": True, "short": [], "message": "GPU(s) %s have the %s of their memory %s asks for free" % (
            ", ".join(str(i) for i in indexes), utilization, service)}
    others = [entry for entry in holders if entry["whose"] != WHOSE_SERVICE]
    most = min(float(gpu["total_mib"] - gpu["used_mib"]) / gpu["total_mib"] for gpu in short)
    return {"ok": False, "short": short, "message": (
        "%s asks for %s of each GPU's memory (vllm_serve_gpu_memory_utilization) and after %ss %s; vLLM would refuse"
        " to start. Held by: %s. Fix: stop the processes that hold it, set vllm_serve_gpu_memory_utilization to %.2f"
        " or less, or raise %s if they are still exiting" % (
            service, utilization, waited,
            "; ".join("GPU %d has %d MiB free of %d, %d wanted"
                      % (gpu["index"], gpu["free_mib"], gpu["total_mib"], gpu["wanted_mib"]) for gpu in short),
            "; ".join(gpu_line(entry) for entry in others) or "no compute process nvidia-smi lists",
            math.floor(most * 100) / 100.0, timeout_variable))}


def gpu_warning(holders, service):
    """The health gate's warning on GPU memory held by processes that are not the service's, else None."""
    others = [entry for entry in holders if entry["whose"] != WHOSE_SERVICE]
    if not others:
        return None
    return "GPU memory is held by %d process(es) that are not %s's: %s" % (
        len(others), service, "; ".join(gpu_line(entry) for entry in others))


# --- reading the host (the modules' side) ----------------------------------------------

def _read(path, limit=1 << 20):
    with open(path, "rb") as handle:
        return handle.read(limit)


def user_uid(name):
    """The uid of a user name, else None."""
    try:
        return pwd.getpwnam(name).pw_uid if name else None
    except KeyError:
        return None


def user_name(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except (KeyError, TypeError):
        return None


def url_endpoint(url):
    """(host, port) of the gate's URL (``http://127.0.0.1:8000``); port 80 when it has none."""
    parts = urlsplit(url)
    return parts.hostname or "", parts.port or 80


def target_addresses(host):
    """The addresses a connection to host goes to: the address itself, or those its name resolves to."""
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, 0, socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        return []
    return sorted(set(info[4][0].split("%")[0] for info in infos))


def read_sockets(proc_root="/proc", byteorder=sys.byteorder):
    """The sockets of <proc_root>/net/tcp and tcp6 (tcp6 may be missing: IPv6 off). Raises IOError/ValueError."""
    sockets = parse_tcp_table(_read(os.path.join(proc_root, "net", "tcp"), 64 << 20).decode("ascii", "replace"),
                              byteorder)
    try:
        text6 = _read(os.path.join(proc_root, "net", "tcp6"), 64 << 20).decode("ascii", "replace")
    except (IOError, OSError) as exc:
        if exc.errno != errno.ENOENT:
            raise
        text6 = ""
    return sockets + parse_tcp_table(text6, byteorder)


def _pids(proc_root):
    return sorted(int(name) for name in os.listdir(proc_root) if _NUMBER_RE.match(name))


_DENIED = (errno.EACCES, errno.EPERM)


def _socket_links(proc_root, pid):
    """(socket links, denied) of one process's open files; denied when some could not be read."""
    fd_dir = os.path.join(proc_root, str(pid), "fd")
    try:
        names = os.listdir(fd_dir)
    except (IOError, OSError) as exc:
        return [], exc.errno in _DENIED
    found, denied = [], False
    for name in names:
        try:
            link = os.readlink(os.path.join(fd_dir, name))
        except (IOError, OSError) as exc:
            denied = denied or exc.errno in _DENIED
            continue
        if link.startswith("socket:["):
            found.append(link)
    return found, denied


def _socket_links_as(uid, gid, pids, proc_root):
    """{pid: (socket links, denied)} of pids, read by a child process that runs as uid:gid.

    The links under /proc/<pid>/fd are behind the kernel's ptrace access
    check: root without CAP_SYS_PTRACE (a container's root, by default)
    reads its own processes' only, a process of the same uid and gid reads
    them all. {} where the child cannot take those ids.
    """
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's part, checked through its answer
        code = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            found = dict((str(pid), _socket_links(proc_root, pid)) for pid in pids)
            data = json.dumps(found).encode("utf-8")
            while data:
                data = data[os.write(write_end, data):]
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    chunks = []
    with os.fdopen(read_end, "rb") as handle:
        chunks.append(handle.read())
    dummy, status = os.waitpid(child, 0)
    if status != 0:
        return {}
    try:
        return dict((int(pid), (links, denied))
                    for pid, (links, denied) in json.loads(b"".join(chunks).decode("utf-8")).items())
    except (TypeError, ValueError):
        return {}


def read_fd_links(proc_root="/proc"):
    """({pid: [socket links]}, unreadable): the sockets every process holds; unreadable counts the processes whose
    open files could not be read.

    Those of other users that root cannot read (no CAP_SYS_PTRACE) are read
    again by a child process per uid and gid (_socket_links_as).
    """
    links, denied = {}, []
    for pid in _pids(proc_root):
        found, no = _socket_links(proc_root, pid)
        if found:
            links[pid] = found
        if no:
            denied.append(pid)
    if denied and os.geteuid() == 0:
        owners = {}
        for pid in denied:
            try:
                ids = parse_status_ids(_read(os.path.join(proc_root, str(pid), "status")).decode("utf-8", "replace"))
            except (IOError, OSError):
                ids = None
            if ids and ids[0] != 0:
                owners.setdefault(ids, []).append(pid)
        for (uid, gid), pids in sorted(owners.items()):
            for pid, (found, no) in _socket_links_as(uid, gid, pids, proc_root).items():
                if found:
                    links[pid] = found
                if not no:
                    denied.remove(pid)
    return links, len(denied)


def read_process(pid, proc_root="/proc", unit=False):
    """{ppid, pgid, uid, user, cmdline[, unit]} of a process, else None (gone, or not in this /proc)."""
    base = os.path.join(proc_root, str(pid))
    try:
        stat = parse_stat(_read(os.path.join(base, "stat")).decode("utf-8", "replace"))
        uid = parse_status_uid(_read(os.path.join(base, "status")).decode("utf-8", "replace"))
        cmdline = cmdline_text(_read(os.path.join(base, "cmdline"), 64 * 1024)) or "[%s]" % stat["comm"]
    except (IOError, OSError, ValueError):
        return None
    info = {"ppid": stat["ppid"], "pgid": stat["pgid"], "uid": uid, "user": user_name(uid), "cmdline": cmdline}
    if unit:
        try:
            info["unit"] = cgroup_unit(_read(os.path.join(base, "cgroup")).decode("utf-8", "replace"))
        except (IOError, OSError):
            info["unit"] = None
    return info


def read_processes(pids, proc_root="/proc", unit=False):
    """{pid: read_process()} of pids and all their ancestors (those this /proc shows)."""
    procs = {}
    pending = list(pids)
    while pending:
        pid = pending.pop()
        if not pid or pid in procs:
            continue
        info = read_process(pid, proc_root, unit=unit)
        if info is None:
            continue
        procs[pid] = info
        pending.append(info["ppid"])
    return procs


def read_main_pid(mode, service, supervisorctl, timeout=30, run=_proc.run):
    """The service's main pid (systemd's MainPID, ``supervisorctl pid PROGRAM``), None when it runs none."""
    if mode == "systemd":
        result = run(["systemctl", "show", "-p", "MainPID", "%s.service" % service], timeout=timeout)
        value = parse_systemctl_show(result.stdout).get("MainPID", "") if result.ok else ""
    elif supervisorctl and os.path.exists(supervisorctl[0]):
        result = run(list(supervisorctl) + ["pid", service], timeout=timeout)
        value = result.stdout.strip()
    else:
        value = ""
    return int(value) if _NUMBER_RE.match(value) and int(value) > 0 else None


def read_manager_pid(mode, supervisorctl, timeout=30, run=_proc.run):
    """supervisord's pid (``supervisorctl pid``) in supervisord mode, else None."""
    if mode != "supervisord" or not supervisorctl or not os.path.exists(supervisorctl[0]):
        return None
    value = run(list(supervisorctl) + ["pid"], timeout=timeout).stdout.strip()
    return int(value) if _NUMBER_RE.match(value) and int(value) > 0 else None


def read_listener(url, main_pid, user, proc_root="/proc"):
    """listener_verdict() for the socket the gate's URL reaches, read from proc_root, with its message fields.

    A table or process list that cannot be read gives a verdict that is not ok and says why (``error``).
    """
    host, port = url_endpoint(url)
    where = "%s:%s" % (host, port)
    targets = target_addresses(host)
    if not targets:
        return {"ok": False, "final": True, "check": None, "error": "cannot resolve %s" % host, "where": where,
                "sockets": [], "holders": [], "impostors": [], "main_pid": main_pid}
    try:
        listening = accepting(read_sockets(proc_root), targets, port)
    except (IOError, OSError, ValueError) as exc:
        return {"ok": False, "final": True, "check": None, "error": "cannot read the socket tables: %s" % exc,
                "where": where, "sockets": [], "holders": [], "impostors": [], "main_pid": main_pid}
    links, unreadable = read_fd_links(proc_root) if listening else ({}, 0)
    holders = holders_of(links, [sock["inode"] for sock in listening])
    procs = read_processes([pid for pids in holders.values() for pid in pids], proc_root)
    verdict = listener_verdict(listening, holders, procs, main_pid, user_uid(user))
    verdict.update(where=where, error=None)
    for who in verdict["impostors"]:
        if who["pid"] is None:
            who["user"] = user_name(who["uid"])
    if unreadable and any(who["pid"] is None for who in verdict["impostors"]):
        verdict["error"] = "the open files of %d process(es) could not be read (run as root)" % unreadable
    return verdict


def check_listener(url, mode, service, supervisorctl, user, proc_root="/proc", run=_proc.run):
    """read_listener()'s verdict for the service, with its ``message``.

    Read twice when it names a process that is not the service's: the
    service may have restarted between the reading of its main pid and that
    of the socket.
    """
    verdict = None
    for dummy in range(2):
        verdict = read_listener(url, read_main_pid(mode, service, supervisorctl, run=run), user, proc_root)
        if verdict["ok"] or not verdict["final"]:
            break
    text = listener_message(verdict, verdict["where"], service, user)
    if verdict["error"]:
        text = "%s. %s" % (verdict["error"], text if verdict["sockets"] else
                           "The requests with the API key were not sent")
    verdict["message"] = text
    return verdict


def find_smi(module):
    """nvidia-smi's path (PATH, then nvidia.SMI_SEARCH_DIRS), else None."""
    return module.get_bin_path("nvidia-smi", opt_dirs=nvidia.SMI_SEARCH_DIRS)


def read_gpu_memory(smi, timeout=30, run=_proc.run):
    """(nvidia.parse_gpu_memory(), error): the memory of each GPU; error when nvidia-smi failed."""
    result = run([smi] + nvidia.gpu_memory_args(), timeout=timeout)
    if not result.ok:
        return [], result.error or "nvidia-smi exited with %s" % result.rc
    try:
        return nvidia.parse_gpu_memory(result.stdout), None
    except ValueError as exc:
        return [], str(exc)


def read_gpu_holders(smi, mode, service, main_pid, user, supervisorctl=(), proc_root="/proc", timeout=30,
                     run=_proc.run):
    """(gpu_holders(), error): nvidia-smi's compute processes and whose each is; error when nvidia-smi failed."""
    result = run([smi] + nvidia.compute_apps_args(), timeout=timeout)
    if not result.ok:
        return [], result.error or "nvidia-smi exited with %s" % result.rc
    try:
        apps = nvidia.parse_compute_apps(result.stdout)
    except ValueError as exc:
        return [], str(exc)
    procs = read_processes([app["pid"] for app in apps], proc_root, unit=mode == "systemd")
    return gpu_holders(apps, procs, main_pid, user_uid(user),
                       service_unit="%s.service" % service if mode == "systemd" else None,
                       manager_pid=read_manager_pid(mode, supervisorctl, timeout=timeout, run=run)), None
