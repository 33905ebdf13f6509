# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The example inventory (inventories/gpu) as a new user runs it, from the repository root.

- Ansible reads every file under an inventory directory as inventory: nothing but the inventory lives there, and
  the files the example points at (the CUDA runfile, the fleet report) are outside it.
- The commands the README gives work as written: `ansible-playbook site.yml -i inventories/gpu --syntax-check`,
  and preflight without the vault password (it reads no secret). Preflight runs for real here, on this machine
  standing in for one GPU host (local connection; it changes nothing), and must get to its report.
- Without -i, nothing reaches a fleet by surprise: ansible.cfg names no inventory and the playbooks stop, naming -i.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
INVENTORY = os.path.join(ROOT, "inventories", "gpu")
BIN = os.path.dirname(sys.executable)


def ansible(*argv, **kwargs):
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collections"))
    env.pop("ANSIBLE_VAULT_PASSWORD_FILE", None)
    env.pop("ANSIBLE_INVENTORY", None)
    env.pop("ANSIBLE_CONFIG", None)
    return subprocess.run([os.path.join(BIN, argv[0])] + list(argv[1:]), cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=kwargs.get("timeout", 300), check=False)


def inventory_files():
    for top, dummy, names in os.walk(INVENTORY):
        for name in names:
            yield os.path.relpath(os.path.join(top, name), INVENTORY)


def test_the_inventory_directory_holds_inventory_only():
    # README.md is ignored by Ansible's inventory plugins (no valid extension for yaml/ini content it would
    # parse); everything else must be YAML inventory.
    others = [path for path in inventory_files() if not path.endswith((".yml", ".md"))]
    assert others == []


def test_the_example_hosts_are_the_inventorys_own():
    run = ansible("ansible-inventory", "-i", "inventories/gpu", "--list")
    assert run.returncode == 0, run.stderr
    hosts = set(json.loads(run.stdout)["_meta"]["hostvars"])
    assert hosts and all(host.endswith(".example.internal") for host in hosts), sorted(hosts)


def test_runfile_and_report_live_outside_every_inventory():
    run = ansible("ansible-inventory", "-i", "inventories/gpu", "--host", "gpu-h200-01.example.internal")
    assert run.returncode == 0, run.stderr
    host = json.loads(run.stdout)
    # The values are templates of inventory_dir: resolved as Ansible resolves them, they must point outside it.
    for name in ("cuda_toolkit_runfile_src", "llm_stack_report_dir"):
        assert "inventory_dir | dirname | dirname" in host[name], (name, host[name])


def test_site_syntax_check_from_the_root():
    run = ansible("ansible-playbook", "site.yml", "-i", "inventories/gpu", "--syntax-check")
    assert run.returncode == 0, run.stdout + run.stderr


def test_no_inventory_is_no_fleet():
    run = ansible("ansible-playbook", "site.yml")
    assert run.returncode != 0
    assert "The inventory has no host: run with -i and your inventory" in run.stdout + run.stderr


@pytest.mark.parametrize("playbook", ["playbooks/preflight.yml"])
def test_preflight_runs_without_the_vault_password(playbook):
    run = ansible("ansible-playbook", playbook, "-i", "inventories/gpu", "--limit", "gpu-h200-01.example.internal",
                  "-e", "ansible_connection=local", "-e", "ansible_python_interpreter=%s" % sys.executable)
    out = run.stdout + run.stderr
    assert "vault" not in out.lower(), out[-3000:]
    # No GPU here: the report is a FAIL of this host, listing its problems; what matters is that it got there.
    assert "preflight gpu-h200-01.example.internal: FAIL" in out, out[-3000:]
    assert "no NVIDIA GPU found" in out


def test_the_build_host_builds_for_the_gpu_hosts_and_comes_first():
    """The build host (group llm_build) compiles flash-attn for the GPU hosts' keys (flash_attn_build_for_fleet), and
    is first in the plays' order, so in the first batch of llm_stack_serial, before any GPU host installs."""
    run = ansible("ansible", "all:!llm_cache:!hf_mirror", "-i", "inventories/gpu", "--list-hosts")
    assert run.returncode == 0, run.stderr
    hosts = [line.strip() for line in run.stdout.splitlines()[1:] if line.strip()]
    assert hosts[0] == "build-01.example.internal" and len(hosts) > 1, hosts
    run = ansible("ansible-inventory", "-i", "inventories/gpu", "--host", "build-01.example.internal")
    assert run.returncode == 0, run.stderr
    build = json.loads(run.stdout)
    assert build["flash_attn_build_for_fleet"] is True and build["preflight_require_gpu"] is False
    run = ansible("ansible-inventory", "-i", "inventories/gpu", "--host", "gpu-a100-01.example.internal")
    assert "flash_attn_build_for_fleet" not in json.loads(run.stdout)
