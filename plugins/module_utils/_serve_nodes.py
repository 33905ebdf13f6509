# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: one vLLM server across hosts (an item of ``vllm_serve_services`` with ``nodes``), with vLLM's own
multi-node launch, as pure functions.

vLLM's rules (vllm/engine/arg_utils.py and vllm/config/parallel.py of 0.32; docs/serving/parallelism_scaling.md):

- every node runs ``vllm serve`` with ``--nnodes N --node-rank i --master-addr HEAD --master-port PORT``; node 0
  (the head) runs the API server, every other node adds ``--headless`` (no API server, workers only);
- the multiprocessing backend (vLLM's default) is the one ``--nnodes`` takes; no Ray;
- ``--nnodes`` divides the world size (data x pipeline x tensor parallel size) and each node runs
  ``world / nnodes`` ranks, one GPU each;
- the model at the same path on every node, ``VLLM_HOST_IP`` unique per node (the address the node's ranks bind
  and announce), and, since that traffic is unencrypted and can be used to run code, a private network only.

- ``settings``: the ``nodes`` mapping of a service, checked;
- ``resolve``: this host's node of the deployment (its rank, the head, the addresses), from the inventory group;
- ``launch``: the flags and environment of this node;
- ``world_problems``: the parallel sizes against the GPUs of the nodes;
- ``across``: the checks over every node's gate before any start (the same model commit at the same path, the
  same vLLM, the same GPU count, every node in the run).

Bad input never raises: each problem is a message that names the variable and the fix.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import re

from ansible_collections.gpufleet.llm_stack.plugins.module_utils._readers import as_dict as _dict, text as _text

KEYS = ("group", "head", "master_port")
DEFAULT_MASTER_PORT = 29500
ADDRESS_VARIABLE = "vllm_serve_node_address"
# The flags and variables the role sets for a node; in extra_args or env they would contradict the plan.
FLAGS = ("--nnodes", "-n", "--node-rank", "-r", "--master-addr", "--master-port", "--headless")
ENV = ("VLLM_HOST_IP", "GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")
SOURCE = ("vLLM 0.32 vllm/engine/arg_utils.py (--nnodes, --node-rank, --master-addr, --master-port, --headless;"
          " nnodes divides the world size) and docs/serving/parallelism_scaling.md")
SECURITY = ("vLLM's traffic between nodes is unencrypted and can be used to run code on them (vLLM docs,"
            " usage/security.md)")
# The private networks a deployment's traffic may use: RFC 1918, RFC 6598 (shared address space) and RFC 4193
# (IPv6 unique local addresses).
PRIVATE = tuple(ipaddress.ip_network(one)
                for one in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7"))
_GROUP_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def settings(value, path, errors):
    """The ``nodes`` mapping of a service (path: its variable path), normalised to {group, head, master_port}, or
    None when the service runs on this host alone. Problems go to errors."""
    if value is None or value == "" or value == {}:
        return None
    if not isinstance(value, dict):
        errors.append("%s must be a mapping such as {group: qwen_big}, got %s. Fix: name the inventory group of the"
                      " deployment's hosts in %s.group" % (path, type(value).__name__, path))
        return None
    unknown = sorted(set(str(key) for key in value) - set(KEYS))
    if unknown:
        errors.append("%s has %s, not a nodes setting. Fix: use some of %s"
                      % (path, ", ".join(unknown), ", ".join(KEYS)))
    group = _text(value.get("group"))
    if not _GROUP_RE.fullmatch(group):
        errors.append("%s.group=%s is not an inventory group name. Fix: set it to the group whose hosts serve this"
                      " model together, such as qwen_big" % (path, group or '""'))
        return None
    head = value.get("head")
    head = _text(head) if head not in (None, "") else None
    port = value.get("master_port", DEFAULT_MASTER_PORT)
    if port in (None, ""):
        port = DEFAULT_MASTER_PORT
    if isinstance(port, str) and port.isdigit():
        port = int(port)
    if not _is_int(port) or not 1024 <= port <= 65535:
        errors.append("%s.master_port=%r is not a TCP port of 1024 to 65535. Fix: set it to a port free on the head,"
                      " such as %d" % (path, port, DEFAULT_MASTER_PORT))
        return None
    return {"group": group, "head": head, "master_port": port}


def address_problem(host, address, test_host=False):
    """Why address (host's vllm_serve_node_address) cannot carry the deployment's traffic, or None.

    An address of PRIVATE only; loopback only on CPU-only test hosts, which share one network namespace (test
    path)."""
    text = _text(address)
    fix = ("Fix: set %s for %s to its address on a private network (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16,"
           " 100.64.0.0/10 or fc00::/7)" % (ADDRESS_VARIABLE, host))
    if not text:
        return ("%s has no %s and no default IPv4 address in its facts (ansible_facts.default_ipv4). %s"
                % (host, ADDRESS_VARIABLE, fix))
    try:
        found = ipaddress.ip_address(text)
    except ValueError:
        return "%s=%s on %s is not an IP address. %s" % (ADDRESS_VARIABLE, text, host, fix)
    if found.is_loopback:
        if test_host:
            return None
        return ("%s=%s on %s is a loopback address, which other hosts cannot reach. %s"
                % (ADDRESS_VARIABLE, text, host, fix))
    if not any(found.version == network.version and found in network for network in PRIVATE):
        return ("%s=%s on %s is not a private address: %s. %s" % (ADDRESS_VARIABLE, text, host, SECURITY, fix))
    return None


def default_address(facts):
    """The default IPv4 address of a host's facts (ansible_facts.default_ipv4.address), or ""."""
    return _text(_dict(_dict(facts).get("default_ipv4")).get("address"))


def interface_of(facts, address):
    """The name of the host's interface (ansible_facts) whose IPv4 network holds address, or None."""
    facts = _dict(facts)
    try:
        wanted = ipaddress.ip_address(_text(address))
    except ValueError:
        return None
    for name in sorted(_text(one) for one in facts.get("interfaces") or []):
        entry = _dict(facts.get(name.replace("-", "_"))) or _dict(facts.get(name))
        ipv4 = _dict(entry.get("ipv4"))
        addresses = [ipv4] + [_dict(one) for one in entry.get("ipv4_secondaries") or []]
        for one in addresses:
            try:
                network = ipaddress.ip_network("%s/%s" % (_text(one.get("address")), _text(one.get("netmask"))),
                                               strict=False)
            except ValueError:
                continue
            if wanted in network:
                return name
    return None


def resolve(nodes, hostname, groups, addresses, facts=None, test_host=False, path="nodes"):
    """This host's node of the deployment: {group, hosts (head first, then the group's order), nnodes, rank, head,
    master_addr, master_port, address, interface}, and the problems ({node, errors}).

    nodes: settings()' result; groups: {group: [hosts]} (the inventory's); addresses: {host: address} (each node's
    vllm_serve_node_address, else its default IPv4 fact); facts: this host's ansible_facts (its interfaces)."""
    errors = []
    nodes = _dict(nodes)
    group = nodes.get("group")
    hosts = [_text(one) for one in _dict(groups).get(group) or []]
    if not hosts:
        errors.append("%s.group=%s is no inventory group with hosts. Fix: put the deployment's hosts in group %s,"
                      " or name their group" % (path, group, group))
        return {"node": None, "errors": errors}
    if hostname not in hosts:
        errors.append("%s.group=%s does not hold this host (%s): a deployment is served by the hosts of its group."
                      " Fix: set the service with nodes in group_vars/%s only, or add %s to the group"
                      % (path, group, hostname, group, hostname))
    if len(hosts) < 2:
        errors.append("%s.group=%s has one host (%s): a deployment across hosts needs two or more. Fix: remove"
                      " nodes to serve on one host, or add the other hosts to the group" % (path, group, hosts[0]))
    head = nodes.get("head") or hosts[0]
    if head not in hosts:
        errors.append("%s.head=%s is not a host of group %s (%s). Fix: name one of them, or leave head out (the"
                      " group's first host)" % (path, head, group, ", ".join(hosts)))
        head = hosts[0]
    ordered = [head] + [one for one in hosts if one != head]
    addresses = _dict(addresses)
    seen = {}
    for host in ordered:
        address = _text(addresses.get(host))
        problem = address_problem(host, address, test_host)
        if problem:
            errors.append(problem)
        elif address in seen:
            errors.append("%s and %s both have the address %s: VLLM_HOST_IP must be unique per node %s. Fix: set"
                          " %s to each host's own address" % (seen[address], host, address, SOURCE,
                                                              ADDRESS_VARIABLE))
        else:
            seen[address] = host
    if errors or hostname not in ordered:
        return {"node": None, "errors": errors}
    address = _text(addresses.get(hostname))
    return {"node": {"group": group, "hosts": ordered, "addresses": [_text(addresses.get(one)) for one in ordered],
                     "nnodes": len(ordered), "rank": ordered.index(hostname),
                     "head": head, "master_addr": _text(addresses.get(head)), "master_port": nodes["master_port"],
                     "address": address, "interface": interface_of(facts, address)},
            "errors": errors}


def launch(node):
    """The flags and environment of this node: {args, env, headless}. The head (rank 0) runs the API server, the
    other nodes run --headless; VLLM_HOST_IP is the node's address, and the interface that holds it is the one
    gloo and NCCL open their sockets on."""
    node = _dict(node)
    args = ["--nnodes", str(node["nnodes"]), "--node-rank", str(node["rank"]), "--master-addr",
            node["master_addr"], "--master-port", str(node["master_port"])]
    headless = node["rank"] > 0
    if headless:
        args.append("--headless")
    env = {"VLLM_HOST_IP": node["address"]}
    if node.get("interface"):
        env.update(GLOO_SOCKET_IFNAME=node["interface"], NCCL_SOCKET_IFNAME=node["interface"])
    return {"args": args, "env": env, "headless": headless}


def world_problems(label, path, tp, pp, dp, gpus, nnodes, test_host=False):
    """The parallel sizes of a deployment against its nodes' GPUs: each node runs world / nnodes ranks, one GPU
    each, so the world size (tp x pp x dp) is the node's GPU set times the node count. On a CPU-only test host
    (no GPU set, test path) only the division is checked."""
    if not all(_is_int(one) for one in (tp, pp, dp, nnodes)) or nnodes < 1:
        return []
    world = tp * pp * dp
    if world % nnodes:
        return ["%s: tensor_parallel_size=%d x pipeline_parallel_size=%d x data_parallel_size=%d is %d ranks, which"
                " the %d nodes of the deployment do not divide (%s). Fix: change the sizes so that the world size"
                " is a multiple of %d" % (label, tp, pp, dp, world, nnodes, SOURCE, nnodes)]
    if gpus is None:
        return [] if test_host else ["%s.gpus is not set: each node of a deployment runs %d rank(s), one GPU each."
                                     " Fix: list %d GPU(s) of each node in %s.gpus" % (path, world // nnodes,
                                                                                       world // nnodes, path)]
    if world != len(gpus) * nnodes:
        return ["%s: tensor_parallel_size=%d x pipeline_parallel_size=%d x data_parallel_size=%d is %d GPU(s), but"
                " %d node(s) with %d GPU(s) each (gpus) have %d (%s; each node runs world / nnodes ranks). Fix: list"
                " %s GPU(s) in %s.gpus or change the sizes so that their product is %d"
                % (label, tp, pp, dp, world, nnodes, len(gpus), len(gpus) * nnodes, SOURCE,
                   "%d" % (world // nnodes) if world % nnodes == 0 else "more", path, len(gpus) * nnodes)]
    return []


def across(unit, node, members, batch=None, play_hosts=None):
    """The checks over every node's gate before any start, from this host's view: node (resolve()'s), members
    ({host: [checked] or None}: each node's vllm_serve_checked of this run, None where the host has none), batch
    (the play's batch, ansible_play_batch, or None: the nodes start together, so every one is in it), play_hosts
    (every host of the play, ansible_play_hosts_all, or None).

    Each checked entry is {plan, seen} as the role keeps them: plan.service, plan.model_dir, plan.gpu_count;
    seen.model.manifest.commit, seen.vllm.version. Returns the problems, each naming the node and the fix."""
    node = _dict(node)
    found = []
    rows = []
    for host in node.get("hosts") or []:
        checked = _dict(members).get(host)
        rank = node["hosts"].index(host)
        if play_hosts is not None and host not in play_hosts:
            found.append("%s is node %d of the deployment %s (group %s) but not a host of this run (left out by"
                         " --limit, or by the play's hosts): vLLM starts only with every node. Fix: run the play on"
                         " every host of group %s" % (host, rank, unit, node.get("group"), node.get("group")))
            continue
        if batch is not None and host not in batch:
            found.append("%s is node %d of the deployment %s (group %s) but not in this batch of the play (%s): the"
                         " nodes start together. Fix: set llm_stack_serial to %d or more (or a percentage that"
                         " keeps group %s in one batch), or serve group %s in a play of its own" % (
                             host, rank, unit, node.get("group"), ", ".join(batch) or "none",
                             len(node["hosts"]), node.get("group"), node.get("group")))
            continue
        if checked is None:
            found.append("%s is node %d of the deployment %s (group %s) but stopped before its gate in this run (it"
                         " failed earlier, or serves nothing): vLLM starts only with every node. Fix: fix that host"
                         " (its error above), then run the play on every host of group %s"
                         % (host, rank, unit, node.get("group"), node.get("group")))
            continue
        entry = None
        for one in checked or []:
            if _text(_dict(_dict(one).get("plan")).get("service")) == unit:
                entry = _dict(one)
        if entry is None:
            found.append("%s is in group %s but does not list the service %s. Fix: set the service with nodes in"
                         " group_vars/%s, so that every node lists it"
                         % (host, node.get("group"), unit, node.get("group")))
            continue
        plan, seen = _dict(entry.get("plan")), _dict(entry.get("seen"))
        visible = _text(_dict(plan.get("env")).get("CUDA_VISIBLE_DEVICES"))
        rows.append({"host": host, "commit": _text(_dict(_dict(seen.get("model")).get("manifest")).get("commit")),
                     "model_dir": _text(plan.get("model_dir")), "vllm": _text(_dict(seen.get("vllm")).get("version")),
                     "gpus": len(visible.split(",")) if visible else None})
    for row in rows:
        if not row["commit"]:
            found.append("the model of %s is not fetched on %s (no manifest in %s). Fix: fetch it there first"
                         " (qwen_model_fetch, playbooks/model.yml on group %s)"
                         % (unit, row["host"], row["model_dir"], node.get("group")))
    for key, what, fix in (("commit", "the model's commit", "fetch the same revision on every node"),
                           ("model_dir", "the model's path", "vLLM reads the model at the same path on every node:"
                            " set the same vllm_serve_models_dir on every host of the group"),
                           ("vllm", "vLLM's version", "install the same vLLM on every node"),
                           ("gpus", "the GPU count", "each node runs world / nnodes ranks: list as many GPUs in"
                            " gpus on every node")):
        values = sorted(set(_text(row[key]) for row in rows if row[key] not in (None, "")))
        if len(values) > 1:
            found.append("the nodes of %s differ in %s: %s. Fix: %s" % (
                unit, what, "; ".join("%s %s" % (row["host"], row[key]) for row in rows), fix))
    return found
