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
  - Only directories named by exactly a 40-hex commit SHA are considered; nothing else under O(base) is
    touched, and a symbolic link is never followed or removed.
  - The revision O(current) names and the revision the O(link_name) link points to (read from the link itself)
    are never removed, so a link still naming an older revision keeps it.
author:
  - gpufleet maintainers (@gpufleet)
options:
  base:
    description: Directory that holds the revision directories of one model.
    type: path
    required: true
  current:
    description:
      - Commit SHA of the revision in use or being installed; never removed.
      - Exactly 40 lower-case hex digits once surrounding whitespace (such as the final newline of a YAML
        block scalar) is stripped; anything else is refused before any change.
    type: str
    required: true
  keep:
    description: Complete revisions to keep, the current one included (1 keeps only the current one).
    type: int
    default: 2
  link_name:
    description: Name of the link to the current revision under O(base) (a plain name, no C(/)).
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
protected:
  description: Revisions never removed, sorted, the O(current) one and the one the link points to.
  returned: success
  type: list
  elements: str
  sample: ["c202236235762e1c871ad0ccb60c8ee5ba337b9a"]
"""

import os
import shutil

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import hf_local
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import mask_credentials


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
    base = params["base"]
    if "\x00" in base:
        module.fail_json(msg="base: %s is not a usable path (it holds a NUL byte)" % mask_credentials(repr(base)),
                         removed=[])
    if params["keep"] < 1:
        module.fail_json(msg="keep: must be 1 or more (the current revision always stays), got %d" % params["keep"],
                         removed=[])
    current = params["current"].strip()
    if not hf_local.is_commit(current):
        module.fail_json(
            msg="current: %s is not a commit SHA (exactly 40 lower-case hex digits); pass the commit that "
                "hf_model_info returned. Nothing was removed." % mask_credentials(repr(params["current"])),
            removed=[])
    link_name = params["link_name"]
    if not link_name or "/" in link_name or "\x00" in link_name or link_name in (".", ".."):
        module.fail_json(msg="link_name: %r is not a plain file name under base; use the default 'current'." % (
            mask_credentials(link_name),), removed=[])
    try:
        protected = hf_local.protected_revisions(base, current, link_name)
        names = hf_local.revisions_to_prune(base, params["keep"], current, link_name)
    except (IOError, OSError) as exc:
        module.fail_json(msg="base: cannot read %s: %s" % (base, exc.strerror or exc), removed=[])
    removed = [os.path.join(base, name) for name in names]
    done = []
    if not module.check_mode:
        for path in removed:
            try:
                shutil.rmtree(path)
            except (IOError, OSError) as exc:
                module.fail_json(msg="Could not remove %s: %s" % (path, exc.strerror or exc),
                                 changed=bool(done), removed=done, protected=protected)
            done.append(path)
    module.exit_json(changed=bool(removed), removed=removed, protected=protected)


if __name__ == "__main__":
    main()
