#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: qwen_model_fetch_state
short_description: Check the model request and plan the fetch of pinned Hugging Face weights
version_added: "0.1.0"
description:
  - The plan of role C(gpufleet.llm_stack.qwen_model_fetch), as an action plugin that runs in the controller's worker.
    It reads and changes nothing on the host.
  - First the role's variables (O(inputs), O(token)) are checked, before any change - the repository id, the
    revision, the endpoints, the models directory, the CA file, the numbers, the checksum mode, the seed host (one of
    the play's hosts, C(ansible_play_hosts_all)) and the token. Any problem fails the task, every problem listed, each
    naming the variable and the fix; the token and URL passwords never appear in a message.
  - With O(complete), the host that downloads first (RV(seed_host)), so that a mirror pulls each file from upstream
    once - C(seed_host) of O(inputs) when set, else the first host of the batch (C(ansible_play_batch)) whose copy is
    not complete.
  - With O(download), the C(hf download) command for M(gpufleet.llm_stack.run_logged) (RV(download_command)) - the
    hf_download module's own command, the token and the endpoint's password only in its environment.
  - With O(checked), what this run downloads (RV(downloaded)) for the fleet report - nothing in check mode.
  - Where the task hides its result (no_log, as it must with O(download)), a failure's message is shown all the same,
    with the credentials masked.
  - The decisions are in C(plugins/module_utils/hf_download.py).
author:
  - gpufleet maintainers (@gpufleet)
options:
  inputs:
    description:
      - The role's variables (the role's C(qwen_model_fetch_inputs)) - C(model), C(revision), C(models_dir),
        C(hf_endpoint), C(upstream_endpoint), C(hf_ca_cert), C(max_workers), C(keep_revisions), C(disk_margin_gb),
        C(checksum), C(seed_host), C(venv), C(include) and C(exclude), each the C(qwen_model_fetch_<key>) variable.
      - Declared C(no_log) (the endpoints may hold credentials).
    type: dict
    required: true
  token:
    description:
      - The Hugging Face token (C(qwen_model_fetch_token)); empty for none. Only ever in the command's environment.
      - Declared C(no_log).
    type: raw
    default: ""
  complete:
    description:
      - For each host of C(ansible_play_batch), in that order, whether its copy of the revision is complete already
        (C(ok) of M(gpufleet.llm_stack.hf_model_verify)). Given, RV(seed_host) is returned.
    type: list
    elements: bool
  download:
    description:
      - What the role set once the hub resolved the revision - C(revision) (the commit), C(local_dir) (the revision
        directory) and C(log_path) (the download's log on the host). Given, RV(download_command) is returned.
    type: dict
  checked:
    description:
      - The check of the files on the host before the download (the role's C(qwen_model_fetch_state), the result of
        M(gpufleet.llm_stack.hf_model_verify) with C(seed_from)) - C(ok), C(missing), C(damaged), C(seedable) and
        C(bytes_to_fetch) are read. Given, RV(downloaded) is returned.
    type: dict
  commit:
    description:
      - The commit the revision resolves to. Given, RV(paths) is returned.
    type: str
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.read_only
seealso:
  - module: gpufleet.llm_stack.hf_download
  - module: gpufleet.llm_stack.hf_model_verify
  - module: gpufleet.llm_stack.run_logged
"""

EXAMPLES = r"""
- name: Check the qwen_model_fetch variables
  gpufleet.llm_stack.qwen_model_fetch_state:
    inputs: "{{ qwen_model_fetch_inputs }}"
    token: "{{ qwen_model_fetch_token }}"

- name: Pick the host that fetches first
  gpufleet.llm_stack.qwen_model_fetch_state:
    inputs: "{{ qwen_model_fetch_inputs }}"
    token: "{{ qwen_model_fetch_token }}"
    complete: "{{ ansible_play_batch | map('extract', hostvars, ['qwen_model_fetch_state', 'ok']) | list }}"
  register: qwen_model_fetch_seed
  run_once: true

- name: Plan the download
  gpufleet.llm_stack.qwen_model_fetch_state:
    inputs: "{{ qwen_model_fetch_inputs }}"
    token: "{{ qwen_model_fetch_token }}"
    download:
      revision: 0123456789abcdef0123456789abcdef01234567
      local_dir: /opt/llm-stack/models/Qwen/Qwen3.5-9B/0123456789abcdef0123456789abcdef01234567
      log_path: /var/log/llm-stack/qwen_model_fetch-Qwen--Qwen3.5-9B.log
  register: qwen_model_fetch_download
  no_log: true

- name: Count what this run downloaded
  gpufleet.llm_stack.qwen_model_fetch_state:
    inputs: "{{ qwen_model_fetch_inputs }}"
    token: "{{ qwen_model_fetch_token }}"
    checked: "{{ qwen_model_fetch_state }}"
  register: qwen_model_fetch_downloaded
"""

RETURN = r"""
seed_host:
  description: With O(complete), the host that downloads first; empty when every host of the batch is complete.
  returned: with O(complete)
  type: str
  sample: gpu-01
download_command:
  description: With O(download), the command of the download for M(gpufleet.llm_stack.run_logged).
  returned: with O(download)
  type: dict
  contains:
    argv:
      description: C(hf download) and its arguments; no secret in it.
      type: list
      elements: str
    environment:
      description: The client's environment (C(HF_ENDPOINT), C(HF_TOKEN), ...).
      type: dict
    no_log:
      description: Whether the environment holds a secret (the token, an endpoint's password).
      type: bool
    endpoint:
      description: The endpoint as shown, credentials masked.
      type: str
paths:
  description:
    - With O(commit), where the model lives on the host, by the collection's one rule of the layout
      (C(<models_dir>/<org>/<name>/<revision>)), which vllm_serve serves by too.
  returned: with O(commit)
  type: dict
  contains:
    base:
      description: The model's directory, C(<models_dir>/<org>/<name>), which holds its revisions and the link.
      type: str
    dir:
      description: The commit's directory.
      type: str
    path:
      description: The link C(current), which the role switches to the commit once its files are complete.
      type: str
downloaded:
  description:
    - With O(checked), what this run downloads, as the check before the download found it - the files missing or
      damaged that the revision in use cannot give, and their bytes.
    - Both 0 when the copy was complete already, and in check mode.
  returned: with O(checked)
  type: dict
  contains:
    files_downloaded:
      description: How many files.
      type: int
    bytes_downloaded:
      description: Their size in bytes.
      type: int
  sample: {files_downloaded: 4, bytes_downloaded: 19318456320}
msg:
  description: On failure, C(qwen_model_fetch on HOST, nothing was changed:) and every problem, or the error.
  returned: on failure
  type: str
"""
