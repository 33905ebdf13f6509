#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: hf_mirror_state
short_description: Check the hub mirror's settings and work out olah's cache size limit
version_added: "0.1.0"
description:
  - The plan of role C(gpufleet.llm_stack.hf_mirror) (olah on the cache host), as an action plugin that runs in the
    controller's worker. It reads and changes nothing on the host.
  - First the role's variables (O(inputs)) are checked, before any change - values that olah, its TOML configuration
    or the systemd unit cannot take. Any problem fails the task, every problem listed, each naming the variable and
    the fix, credentials masked.
  - Then what the settings allow that the fleet does not need (RV(setting_warnings)), and whether the role reads the
    size of the cache directory's filesystem on the host (RV(read_fs)), and the address the role waits for olah at
    (RV(probe_host)).
  - Given that reading (O(statfs)), olah's cache size limit (RV(cache_size_limit)) - as set, or for C(auto) 80 % of
    the filesystem that holds the cache directory, from O(statfs), else from the fact C(mounts).
  - The decisions are in C(plugins/module_utils/hf_mirror.py).
author:
  - gpufleet maintainers (@gpufleet)
options:
  inputs:
    description:
      - The role's variables (the role's C(hf_mirror_inputs)), the keys of C(OPTIONS) in
        C(plugins/module_utils/hf_mirror.py) - C(upstream_url), C(upstream_lfs_netloc), C(url), C(listen_host),
        C(port), C(user), C(service_name), C(cache_size_limit), C(metadata_cache_ttl), C(offline), C(git_repos_dir),
        C(tls_cert), C(tls_key), C(prefix), C(venv), C(config_dir), C(cache_dir) and C(log_dir), each the
        C(hf_mirror_<key>) variable. C(offline) is read as the C(bool) filter reads it.
      - Declared C(no_log) (the upstream URL may hold credentials).
    type: dict
    required: true
  statfs:
    description:
      - The output of C(stat --file-system --format '%S %b') on the cache directory (or the nearest directory above
        it that exists) where RV(read_fs) asked for it, else empty.
      - Given, RV(cache_size_limit) is returned.
    type: str
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.read_only
attributes:
  facts:
    support: none
    description: Reads the fact C(mounts) (C(ansible_facts.mounts)) where gathered; sets none.
"""

EXAMPLES = r"""
- name: Check the hf_mirror variables
  gpufleet.llm_stack.hf_mirror_state:
    inputs: "{{ hf_mirror_inputs }}"
  register: hf_mirror_plan

- name: Read the size of the cache directory's filesystem
  ansible.builtin.command:
    argv: [stat, --file-system, --format, "%S %b", /var/lib/hf-mirror]
  register: hf_mirror_cache_fs
  changed_when: false
  when: hf_mirror_plan.read_fs

- name: Work out olah's cache size limit
  gpufleet.llm_stack.hf_mirror_state:
    inputs: "{{ hf_mirror_inputs }}"
    statfs: "{{ hf_mirror_cache_fs.stdout | default('') }}"
  register: hf_mirror_cache
"""

RETURN = r"""
setting_warnings:
  description: What the settings allow that the fleet does not need (the mirror listening on every address while the
    fleet reaches it at one IP address).
  returned: success
  type: list
  elements: str
  sample: []
read_fs:
  description: Whether the role reads the size of the cache directory's filesystem (C(cache_size_limit) is C(auto)).
  returned: success
  type: bool
  sample: true
probe_host:
  description: The address the role waits for olah at on this host - C(127.0.0.1) where it listens on every address
    (C(0.0.0.0) or C(::)), else C(listen_host).
  returned: success
  type: str
  sample: 127.0.0.1
cache_size_limit:
  description: olah's C(cache-size-limit) - empty for no limit, the size as set, or for C(auto) 80 % of the
    filesystem in whole GiB.
  returned: with O(statfs)
  type: str
  sample: 1638G
msg:
  description: On failure, every problem, or the error.
  returned: on failure
  type: str
"""
