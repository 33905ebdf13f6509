#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: hf_model_prune
short_description: Remove old revision directories of a model, keeping the current one and the newest others
version_added: "0.1.0"
description:
  - A model fetched by the gpufleet.llm_stack.qwen_model_fetch role lives in C(BASE/<commit>/) per revision,
    with a C(current) link to the revision in use. This module removes revision directories beyond the
    O(keep) newest complete ones (those with a manifest; the current one always counts and stays) and
    any incomplete revision directory other than the current one.
  - Only directories named by a 40-hex commit SHA are considered; nothing else under O(base) is touched.
author:
  - gpufleet maintainers (@gpufleet)
options:
  base:
    description: Directory that holds the revision directories of one model.
    type: path
    required: true
  current:
    description: Commit SHA of the revision in use; never removed.
    type: str
    required: true
  keep:
    description: Complete revisions to keep, the current one included (1 keeps only the current one).
    type: int
    default: 2
  link_name:
    description: Name of the link to the current revision under O(base).
    type: str
    default: current
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.changes
"""

EXAMPLES = r"""
- name: Keep the current revision and the one before it
  gpufleet.llm_stack.hf_model_prune:
    base: /opt/llm-stack/models/Qwen/Qwen3.5-9B
    current: c202236235762e1c871ad0ccb60c8ee5ba337b9a
    keep: 2
"""

RETURN = r"""
removed:
  description: Revision directories removed (or that would be, in check mode).
  returned: always
  type: list
  elements: str
"""

import os
import shutil

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import hf_local


def main():
    module = AnsibleModule(
        argument_spec=dict(
            base=dict(type="path", required=True),
            current=dict(type="str", required=True),
            keep=dict(type="int", default=2),
            link_name=dict(type="str", default="current"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if params["keep"] < 1:
        module.fail_json(msg="keep must be 1 or more (the current revision always stays), got %d" % params["keep"])
    if not hf_local.COMMIT_RE.match(params["current"]):
        module.fail_json(msg="current must be a 40-hex commit SHA, got %r" % params["current"])
    names = hf_local.revisions_to_prune(params["base"], params["keep"], params["current"], params["link_name"])
    removed = [os.path.join(params["base"], name) for name in names]
    if not module.check_mode:
        for path in removed:
            shutil.rmtree(path)
    module.exit_json(changed=bool(removed), removed=removed)


if __name__ == "__main__":
    main()
