#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: fleet_cache_state
short_description: Check the settings of the fleet cache host's package index before any change
version_added: "0.1.0"
description:
  - The check of role C(gpufleet.llm_stack.fleet_cache) before any change, as an action plugin that runs in the
    controller's worker. It reads and changes nothing on the host.
  - Checks the index's settings (O(inputs)) - the port, the listen address, the directories on the cache host and
    the ones its systemd unit names, the service user, the controller's wheelhouse, the TLS files on the controller,
    gunicorn's workers and threads, and the host's service manager (the fact C(service_mgr), when gathered). Any
    problem fails the task, every problem listed, each naming the variable and the fix.
  - Returns what the settings allow that the fleet does not need (RV(setting_warnings)), the index listening on every
    address while the fleet reaches it at one, and what the role's tasks run (RV(pip_argv), RV(pip_index_variables),
    RV(probe_url)).
  - The decisions are in C(plugins/module_utils/wheel_index.py) (C(server_problems), C(server_warnings),
    C(server_plan)).
author:
  - gpufleet maintainers (@gpufleet)
options:
  inputs:
    description:
      - The role's variables (the role's C(fleet_cache_inputs)) - C(port), C(listen_host), C(data_dir), C(venv),
        C(config_dir), C(log_dir), C(wheelhouse), C(tls_cert), C(tls_key), C(workers), C(threads), C(prefix),
        C(wheelhouse_dest), C(user), C(pypiserver_version), C(gunicorn_version), C(pip_index_url) (the index pip
        installs pypiserver from; only whether it is set is read) - and C(index_url), the URL the fleet reaches the
        index at (C(llm_stack_wheel_index_url); empty, no warning).
      - C(proxy), the package proxy's settings - C(enabled) (C(fleet_cache_proxy); the rest is checked only where it
        is true), C(port), C(devpi_port), C(devpi_version), C(pypi_url), C(torch_url), C(builds), C(offline),
        C(user), C(venv), C(serverdir) and C(outside_url) (C(llm_stack_package_index_url)) - checked with
        C(package_proxy.host_problems).
      - A directory left out is not checked, but C(data_dir) always is; C(user) left out is not checked.
      - Declared C(no_log) (C(index_url) and C(pip_index_url) may hold credentials).
    type: dict
    required: true
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.read_only
notes:
  - The task fails with the message C(fleet_cache on HOST:) followed by every problem.
seealso:
  - module: gpufleet.llm_stack.fleet_lock
"""

EXAMPLES = r"""
- name: Check the fleet_cache variables before any change
  gpufleet.llm_stack.fleet_cache_state:
    inputs:
      port: 8080
      listen_host: 0.0.0.0
      data_dir: /var/lib/fleet-cache
      venv: /opt/fleet-cache/venv
      config_dir: /etc/fleet-cache
      log_dir: /var/log/fleet-cache
      wheelhouse: ""
      tls_cert: ""
      tls_key: ""
      workers: 2
      threads: 16
      prefix: /opt/fleet-cache
      wheelhouse_dest: /opt/fleet-cache/wheelhouse
      user: fleet-index
      pypiserver_version: "2.4.2"
      gunicorn_version: "27.0.1"
      pip_index_url: ""
      index_url: http://10.0.0.5:8080/simple/
  register: fleet_cache_plan

- name: Show the warnings
  ansible.builtin.debug:
    msg: "WARNING: {{ item }}"
  loop: "{{ fleet_cache_plan.setting_warnings }}"
"""

RETURN = r"""
setting_warnings:
  description: What the settings allow that the fleet does not need (the index listening on every address while the
    fleet reaches it at one IP address).
  returned: success
  type: list
  elements: str
  sample:
    - >-
      fleet_cache_index_listen_host is '0.0.0.0': the index listens on every interface of this host, but the fleet
      reaches it at 10.0.0.5 only (llm_stack_wheel_index_url). Set fleet_cache_index_listen_host: "10.0.0.5" so that
      it listens on that address alone.
pip_argv:
  description: pip's command that installs pypiserver and gunicorn into the venv; with a wheelhouse, from the pushed
    wheelhouse alone (C(--no-index --find-links WHEELHOUSE_DEST)).
  returned: success
  type: list
  elements: str
  sample: [/opt/fleet-cache/venv/bin/python, -m, pip, install, --no-input, --disable-pip-version-check,
           pypiserver==2.4.2, gunicorn==27.0.1]
pip_index_variables:
  description: The environment variables of pip that carry C(pip_index_url) - C(PIP_INDEX_URL), none where it is
    empty. The URL itself is not returned (it may hold credentials).
  returned: success
  type: list
  elements: str
  sample: [PIP_INDEX_URL]
probe_url:
  description: The URL the cache host checks that its index answers C(/simple/) at - https with the TLS files, at
    C(127.0.0.1) where the index listens on every address (C(0.0.0.0) or C(::)), else at C(listen_host).
  returned: success
  type: str
  sample: https://127.0.0.1:8080/simple/
proxy:
  description:
    - Where C(proxy.enabled), what the role's proxy tasks run (C(package_proxy.server_plan)) - C(indexes) (the devpi
      indexes, C(path) and C(config)), C(argv) (devpi-server's command line), C(pip_argv) (pip's command that
      installs devpi-server), C(devpi_url) (devpi on the loopback) and C(probe_url) (the front, where the cache
      host asks it); else null.
  returned: success
  type: dict
msg:
  description: On failure, C(fleet_cache on HOST:) and every problem.
  returned: on failure
  type: str
"""
