#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: wheel_build_state
short_description: The decisions of role wheel_build, one step of the role per call
version_added: "0.1.0"
description:
  - The plan of role C(gpufleet.llm_stack.wheel_build) (one compile per build key), as an action plugin that runs
    in the controller's worker. Internal to the collection's roles.
  - With O(inputs), the plan. The settings of the fleet's package index are checked (every problem in one
    message), the venv is read with M(gpufleet.llm_stack.torch_info) where the caller did not read it (the input
    C(installed_url) null), and the host's plan is returned. The key's cache entry, its paths, whether the key's
    wheel is installed or needs a build, the backend (C(controller_cache), or C(index) where the input
    C(index_url) is set), and the role's first result.
  - With O(plan), a later step of the role, with what the play observed since. O(elect) elects the builder of the
    key among the hosts of the batch (C(ansible_play_batch)) from each host's C(wheel_build_state).
    O(look_in_cache) reads the key's entry in the controller cache after the build step, and fails where it does
    not hold one wheel (not in check mode). O(jobs) turns the caller's jobs request into the build's environment
    and log header with the builder's facts. O(built_wheel) gives the name the fleet's index keeps a wheel under.
    O(index_wheels) picks the key's wheel on the index.
  - With O(local_files) and O(remote_files), the controller files a host directory lacks (role wheel_build's
    C(push_dir) entry point).
  - The decisions are in C(plugins/module_utils/wheel_build.py), C(_wheel_build_role.py) and C(wheel_index.py).
author:
  - gpufleet maintainers (@gpufleet)
options:
  inputs:
    description:
      - The role's inputs (the role's C(wheel_build_inputs)), C(name), C(key), C(label), C(requirement),
        C(cache_dir), C(venv), C(work_dir), C(wheel_dir), C(log_dir), C(installed_url), C(prefer_builder),
        C(install), C(jobs), C(index_url), C(cache_host), C(cache_host_vars) and C(index_ca_cert).
      - Given, the action makes the plan; the other options are then not read.
    type: dict
  plan:
    description:
      - The host's plan (RV(plan), as the role keeps it in C(wheel_build_state)), for a later step.
    type: dict
  elect:
    description:
      - With O(plan), elect the host that builds the plan's key among the hosts of the batch whose plan needs that
        build (a host that prefers to build first, then play order).
    type: bool
    default: false
  look_in_cache:
    description:
      - With O(plan), read the key's entry of the controller cache after the build step. Fails with what went
        wrong and the fix where it does not hold exactly one wheel and the plan installs, unless in check mode.
    type: bool
    default: false
  builder:
    description:
      - With O(look_in_cache), the elected builder of the key (RV(builder)); empty where there was no election.
    type: str
    default: ""
  jobs:
    description:
      - With O(plan), on the builder once its CPU and memory facts are gathered, the caller's jobs request (the
        role's C(wheel_build_jobs)); empty, the build has no environment and no header of the caller's.
    type: dict
  built_wheel:
    description:
      - With O(plan), the path of the wheel the build made; returns the name the fleet's index keeps it under.
    type: str
  index_wheels:
    description:
      - With O(plan), the key's wheel as this build published it, as the lock, the wait and the query of
        M(gpufleet.llm_stack.fleet_lock) returned it (null where none); the first one given is installed.
    type: list
    elements: raw
  compiled:
    description:
      - With O(index_wheels), this host compiled and published the key's wheel in this run.
    type: bool
    default: false
  local_files:
    description:
      - The controller files (the C(files) of M(ansible.builtin.find)) to push to a host directory.
    type: list
    elements: dict
  remote_files:
    description:
      - The files of the host directory (the C(files) of M(ansible.builtin.find)).
    type: list
    elements: dict
attributes:
  check_mode:
    support: full
    description: Changes nothing; reads the venv (O(inputs)) and the controller cache (O(look_in_cache)) only.
  diff_mode:
    support: none
    description: No diff is produced.
notes:
  - C(changed) is always false.
  - A problem of the inputs fails the task with the message that names the variable and the fix.
seealso:
  - module: gpufleet.llm_stack.fleet_lock
  - module: gpufleet.llm_stack.torch_info
"""

EXAMPLES = r"""
- name: Work out this host's key and whether it needs a build or an install
  gpufleet.llm_stack.wheel_build_state:
    inputs: "{{ wheel_build_inputs }}"
  register: wheel_build_planned

- name: Keep this host's plan
  ansible.builtin.set_fact:
    wheel_build_state: "{{ wheel_build_planned.plan }}"

- name: Elect one builder per missing key in this batch
  gpufleet.llm_stack.wheel_build_state:
    plan: "{{ wheel_build_state }}"
    elect: true
  register: wheel_build_election
  when: wheel_build_state.needs_build

- name: Work out the build's jobs on this builder
  gpufleet.llm_stack.wheel_build_state:
    plan: "{{ wheel_build_state }}"
    jobs: "{{ wheel_build_jobs }}"
  register: wheel_build_job
  no_log: "{{ wheel_build_state.no_log }}"
"""

RETURN = r"""
plan:
  description:
    - The host's plan. C(entry), C(cache_entry), C(cached_wheels), C(host_entry), C(tree), C(log), C(ledger),
      C(marker), C(installed), C(installed_wheel), C(needs_build), C(summary), C(preferred), and C(name), C(label),
      C(key), C(install), C(backend) (C(controller_cache) or C(index)), C(tasks) (the backend's task files of the
      steps that differ, C(build), C(keep) and C(install)), C(add_cache_host) (the cache host is to be added to
      the job's inventory), C(no_log) (the jobs request's environment holds credentials) and C(index_ca_path) (the
      host's copy of the index's CA certificate, C(WHEEL_DIR/index-ca.pem), that the download from the index
      checks the index's certificate with; null where C(index_ca_cert) is empty, the host's trust store).
  returned: with O(inputs)
  type: dict
result:
  description:
    - The role's result for this host, C(source) (C(present), C(built), C(index), C(controller_cache) or C(none)),
      C(compiled), C(wheel) (a file name, or null) and C(was_installed). With O(inputs), the result before the
      build step. With O(look_in_cache) and O(index_wheels), the result once the key's wheel is installed (null
      where none is).
  returned: with O(inputs), O(look_in_cache) and O(index_wheels)
  type: dict
problems:
  description: The problems of the index settings, where there are some (the task fails).
  returned: with O(inputs), on that failure
  type: list
  elements: str
builder:
  description: The host that builds the plan's key; empty where the plan needs no build.
  returned: with O(elect)
  type: str
builds_here:
  description: This host builds the key.
  returned: with O(elect)
  type: bool
locks:
  description: This host builds the key and, with the fleet's index, takes the key's lock on the cache host first.
  returned: with O(elect)
  type: bool
waits:
  description: With the fleet's index, another host builds the key and this one waits for its wheel.
  returned: with O(elect)
  type: bool
msg:
  description: With O(elect), the play's line of who builds the key; on a failure, the failure.
  returned: with O(elect), and on failure
  type: str
cached:
  description: The wheels of the key's controller cache entry, sorted.
  returned: with O(look_in_cache)
  type: list
  elements: str
problem:
  description: What is wrong with the key's cache entry and the fix; empty where it holds one wheel.
  returned: with O(look_in_cache)
  type: str
install:
  description: The one cached wheel is to be installed (the plan installs and the entry holds one wheel).
  returned: with O(look_in_cache)
  type: bool
environment:
  description: The build's environment, the request's with C(MAX_JOBS), C(NVCC_THREADS) and C(TMPDIR).
  returned: with O(jobs)
  type: dict
log_header:
  description: The lines at the top of the build log, the jobs line among the request's, the key's line last.
  returned: with O(jobs)
  type: list
  elements: str
index_filename:
  description: The name the fleet's index keeps the wheel under (the key's build tag).
  returned: with O(built_wheel)
  type: str
wheel:
  description: The key's wheel to install (fleet_lock's C(wheel)), null where none was given.
  returned: with O(index_wheels)
  type: dict
missing:
  description: The controller files the host directory lacks (same name and size), sorted by path.
  returned: with O(local_files)
  type: list
  elements: dict
"""
