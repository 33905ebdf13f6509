# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: /proc's socket tables and process files as text in, their fields out (pure functions).

serve_procs's, which re-exports them and reads /proc with them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import re

LISTEN = "0A"
_ENDPOINT_RE = re.compile(r"^([0-9A-Fa-f]{8}|[0-9A-Fa-f]{32}):([0-9A-Fa-f]{4})$", re.ASCII)
_SOCKET_LINK_RE = re.compile(r"^socket:\[([0-9]{1,20})\]$", re.ASCII)
_NUMBER_RE = re.compile(r"^[0-9]{1,10}$", re.ASCII)


# --- the socket tables ----------------------------------------------------------

def decode_address(hexaddr, byteorder="little"):
    """An address of /proc/net/tcp (8 hex digits) or /proc/net/tcp6 (32) as text.

    The kernel prints each 32-bit word of the address, as it lies in memory,
    with %08X: on a little-endian host 127.0.0.1 is ``0100007F`` and ::1 is
    ``00000000000000000000000001000000``. byteorder: the host's
    (``sys.byteorder``).
    """
    if byteorder not in ("little", "big"):
        raise ValueError("byteorder %r is not little or big" % (byteorder,))
    text = hexaddr if isinstance(hexaddr, str) else ""
    if len(text) not in (8, 32) or not re.match(r"^[0-9A-Fa-f]+$", text, re.ASCII):
        raise ValueError("%r is not an address of /proc/net/tcp or tcp6" % (hexaddr,))
    raw = b"".join(int(text[i:i + 8], 16).to_bytes(4, byteorder) for i in range(0, len(text), 8))
    return str(ipaddress.ip_address(raw))


def decode_endpoint(text, byteorder="little"):
    """(address, port) of a local_address or rem_address field (``0100007F:6DC5`` is 127.0.0.1, 28101)."""
    match = _ENDPOINT_RE.match(text if isinstance(text, str) else "")
    if not match:
        raise ValueError("%r is not an address:port of /proc/net/tcp or tcp6" % (text,))
    return decode_address(match.group(1), byteorder), int(match.group(2), 16)


def parse_tcp_table(text, byteorder="little"):
    """The sockets of /proc/net/tcp or /proc/net/tcp6: [{address, port, state, uid, inode}].

    state is the kernel's hex code (``0A`` LISTEN). A line that is not the
    kernel's layout raises ValueError: a table that cannot be read must
    not pass for one without the listener.
    """
    sockets = []
    for number, line in enumerate((text or "").splitlines(), 1):
        fields = line.split()
        if not fields or fields[0] == "sl":
            continue
        if len(fields) < 10 or not fields[0].endswith(":") or not re.match(r"^[0-9A-Fa-f]{2}$", fields[3], re.ASCII) \
                or not fields[7].isdigit() or not fields[9].isdigit():
            raise ValueError("line %d of the socket table is not the kernel's layout: %r" % (number, line[:160]))
        address, port = decode_endpoint(fields[1], byteorder)
        sockets.append({"address": address, "port": port, "state": fields[3].upper(), "uid": int(fields[7]),
                        "inode": int(fields[9])})
    return sockets


def _ip(text):
    """An ipaddress object; an IPv4-mapped IPv6 address as its IPv4 address."""
    address = ipaddress.ip_address(text)
    return getattr(address, "ipv4_mapped", None) or address


def accepting(sockets, targets, port):
    """The LISTEN sockets on port that take a connection to one of targets (addresses as text)."""
    wanted = set()
    for target in targets:
        address = _ip(target)
        wanted.add(address)
        if address.version == 4:
            wanted.add(ipaddress.ip_address("0.0.0.0"))
        wanted.add(ipaddress.ip_address("::"))
    return [sock for sock in sockets
            if sock["state"] == LISTEN and sock["port"] == port and _ip(sock["address"]) in wanted]


def socket_inode(link):
    """The inode of an fd link ``socket:[2634237]``, else None."""
    match = _SOCKET_LINK_RE.match(link if isinstance(link, str) else "")
    return int(match.group(1)) if match else None


def holders_of(fd_links, inodes):
    """{inode: [pids]} of the processes holding each inode; fd_links: {pid: [the fd links of pid]}."""
    found = dict((inode, []) for inode in inodes)
    for pid in sorted(fd_links):
        for link in fd_links[pid]:
            inode = socket_inode(link)
            if inode in found and pid not in found[inode]:
                found[inode].append(pid)
    return found


# --- processes ------------------------------------------------------------------

def parse_stat(text):
    """{pid, comm, state, ppid, pgid} of /proc/<pid>/stat; the command name may hold spaces and parentheses."""
    head, close, tail = (text or "").rpartition(")")
    pid_text, open_, comm = head.partition(" (")
    fields = tail.split()
    if not close or not open_ or len(fields) < 3 or not pid_text.strip().isdigit() \
            or not all(re.match(r"^-?[0-9]+$", field, re.ASCII) for field in fields[1:3]):
        raise ValueError("not a /proc/<pid>/stat line: %r" % (text or "")[:160])
    return {"pid": int(pid_text), "comm": comm, "state": fields[0], "ppid": int(fields[1]), "pgid": int(fields[2])}


def parse_status_uid(text):
    """The effective uid of /proc/<pid>/status (``Uid:`` real, effective, saved, filesystem), as ps shows it."""
    for line in (text or "").splitlines():
        if line.startswith("Uid:"):
            parts = line.split()[1:]
            if len(parts) >= 2 and parts[1].isdigit():
                return int(parts[1])
    raise ValueError("no Uid: line in /proc/<pid>/status")


def parse_status_ids(text):
    """(uid, gid) of /proc/<pid>/status when its real, effective and saved ids are one uid and one gid, else None.

    Only such a process lets another process of the same uid and gid read
    its open files (the kernel's ptrace access check, which /proc/<pid>/fd
    links are behind).
    """
    found = {}
    for line in (text or "").splitlines():
        name, dummy, rest = line.partition(":")
        if name in ("Uid", "Gid"):
            parts = rest.split()[:3]
            if len(parts) == 3 and all(part.isdigit() for part in parts) and len(set(parts)) == 1:
                found[name] = int(parts[0])
    return (found["Uid"], found["Gid"]) if len(found) == 2 else None


def cmdline_text(raw, limit=400):
    """/proc/<pid>/cmdline (arguments ending in NUL) as one line, cut at limit characters."""
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    text = " ".join(part for part in (raw or "").split("\0") if part)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def cgroup_unit(text):
    """The systemd unit (``name.service``) a process's /proc/<pid>/cgroup puts it in, else None."""
    for line in (text or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and (parts[0] == "0" and parts[1] == "" or parts[1] == "name=systemd"):
            for name in reversed(parts[2].split("/")):
                if name.endswith(".service"):
                    return name
    return None


def ancestry(pid, parents, limit=4096):
    """pid and its ancestors, nearest first, from parents ({pid: ppid}); stops at 0, an unknown pid or a loop."""
    chain = []
    while pid and pid not in chain and len(chain) < limit:
        chain.append(pid)
        pid = parents.get(pid)
    return chain


def in_tree(pid, root, parents):
    """Whether pid is root or a descendant of it."""
    return bool(root) and root in ancestry(pid, parents)


def _parents(procs):
    return dict((pid, info.get("ppid")) for pid, info in procs.items())


def _who(pid, procs, uid=None):
    """{pid, uid, user, cmdline} of a process (pid None: one this /proc does not show)."""
    info = procs.get(pid) or {}
    return {"pid": pid, "uid": info.get("uid", uid), "user": info.get("user"), "cmdline": info.get("cmdline")}
