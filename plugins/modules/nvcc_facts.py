#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nvcc_facts
short_description: Find CUDA toolkits and read the nvcc in use
version_added: "0.1.0"
description:
  - Returns the nvcc that builds would use, its version, every CUDA toolkit installed under
    O(toolkit_root) (C(cuda-*) directories) and in O(prefixes), and where O(toolkit_root)/cuda points.
  - Never changes anything on the host. A host without any toolkit is not an error.
  - A toolkit's version comes from its C(version.json) (C(cuda.version); a build date in the third
    part, as in C(12.6.20241114), is dropped), else C(version.txt), else C(bin/nvcc --version).
  - Every C(nvcc --version) runs with a deadline (O(timeout)); one that does not answer in time is
    stopped with its whole process group and RV(ansible_facts.nvcc_error) (or, for a toolkit's own nvcc,
    a warning) says so. The module does not fail for it.
  - A dangling O(toolkit_root)/cuda link gives RV(ansible_facts.cuda_home_link) null, its target in
    RV(ansible_facts.cuda_home_link_dangling), and a warning.
author:
  - gpufleet maintainers (@gpufleet)
options:
  nvcc_path:
    description:
      - nvcc to report on. When set, the file must exist, otherwise the module fails.
      - Default is C(nvcc) on C(PATH), else O(toolkit_root)/cuda/bin/nvcc when it exists.
    type: path
  prefixes:
    description:
      - Extra toolkit directories to report, besides O(toolkit_root)/cuda-*.
      - A prefix that is not a toolkit is skipped with a warning.
    type: list
    elements: path
    default: []
  toolkit_root:
    description:
      - Directory that holds C(cuda-X.Y) toolkits and the C(cuda) link.
    type: path
    default: /usr/local
  timeout:
    description:
      - Seconds each C(nvcc --version) may take. One still running then is stopped (SIGTERM to its
        process group, SIGKILL 2 seconds later).
    type: int
    default: 20
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.read_only
  - gpufleet.llm_stack.attributes.facts
seealso:
  - module: gpufleet.llm_stack.gpu_facts
  - module: gpufleet.llm_stack.stack_compat
"""

EXAMPLES = r"""
- name: Read nvcc and the installed toolkits
  gpufleet.llm_stack.nvcc_facts:

- name: Also report a toolkit installed elsewhere
  gpufleet.llm_stack.nvcc_facts:
    prefixes:
      - /opt/cuda-12.8

- name: Fail when the wanted toolkit is missing
  ansible.builtin.assert:
    that: "'12.8.1' in (cuda_toolkits | map(attribute='version'))"
    fail_msg: "CUDA 12.8.1 is not installed; found {{ cuda_toolkits | map(attribute='version') | list }}"
"""

RETURN = r"""
ansible_facts:
  description: nvcc and toolkit facts.
  returned: always
  type: dict
  contains:
    nvcc_path:
      description: The nvcc that was read, null when none was found.
      type: str
      sample: /usr/local/cuda/bin/nvcc
    nvcc_version:
      description: Release of that nvcc (C(release X.Y) in C(nvcc --version)).
      type: str
      sample: "13.0"
    nvcc_build:
      description: Full nvcc version (C(VX.Y.Z) in C(nvcc --version)).
      type: str
      sample: "13.0.88"
    nvcc_error:
      description:
        - Null, or why C(nvcc --version) failed.
        - When it did not answer within O(timeout), C(<nvcc> did not answer within N seconds ...).
      type: str
      sample: null
    cuda_toolkits:
      description: Toolkits found, sorted by version.
      type: list
      elements: dict
      contains:
        path:
          description: Toolkit directory.
          type: str
        version:
          description: Toolkit version (C(12.8.1)), or C(major.minor) when the toolkit records only a build date.
          type: str
        release:
          description: C(major.minor) of the version.
          type: str
        nvcc_build:
          description: Version of the toolkit's nvcc, when known.
          type: str
        nvcc:
          description: The toolkit's C(bin/nvcc), null if it has none.
          type: str
        source:
          description: Where the version came from, C(version.json), C(version.txt) or C(nvcc).
          type: str
      sample:
        - path: /usr/local/cuda-13.0
          version: "13.0.2"
          release: "13.0"
          nvcc_build: "13.0.88"
          nvcc: /usr/local/cuda-13.0/bin/nvcc
          source: version.json
    cuda_home_link:
      description: Real path behind O(toolkit_root)/cuda, null when it does not exist or is a dangling link.
      type: str
      sample: /usr/local/cuda-13.0
    cuda_home_link_dangling:
      description:
        - Where O(toolkit_root)/cuda points when that target does not exist (a dangling link), else null.
      type: str
      sample: /usr/local/cuda-12.9
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.llm_stack.plugins.module_utils.nvcc import DEFAULT_ROOT, DEFAULT_TIMEOUT, read_nvcc
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.proc import run


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nvcc_path=dict(type="path"),
            prefixes=dict(type="list", elements="path", default=[]),
            toolkit_root=dict(type="path", default=DEFAULT_ROOT),
            timeout=dict(type="int", default=DEFAULT_TIMEOUT),
        ),
        supports_check_mode=True,
    )
    timeout = module.params["timeout"]
    if timeout < 1:
        module.fail_json(msg="timeout=%s: give the seconds each nvcc --version may take, 1 or more"
                             " (the default is 20)" % timeout)
    explicit = module.params["nvcc_path"]
    if explicit and not (os.path.isfile(explicit) and os.access(explicit, os.X_OK)):
        module.fail_json(msg="nvcc_path=%s is not an executable file. Fix: point nvcc_path at a toolkit's bin/nvcc,"
                             " or leave it unset to use PATH or %s/cuda/bin/nvcc"
                             % (explicit, module.params["toolkit_root"]))
    on_path = None if explicit else module.get_bin_path("nvcc")

    env = dict(os.environ, LC_ALL="C")

    def run_nvcc(argv):
        return run(argv, timeout=timeout, env=env)

    facts, warnings = read_nvcc(run_nvcc, explicit, on_path, module.params["toolkit_root"], module.params["prefixes"])
    for warning in warnings:
        module.warn(warning)
    module.exit_json(changed=False, ansible_facts=facts)


if __name__ == "__main__":
    main()
