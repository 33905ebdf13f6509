#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: llm_router_debs
short_description: Which .deb files of an air-gapped install to install
version_added: "0.2.0"
description:
  - Reads each .deb file's package and version (C(dpkg-deb --field)) and the installed version of each of
    O(packages) (C(dpkg-query)), and returns every .deb file to install when any of O(packages) is not installed at
    its .deb file's version; nothing when all are. Changes nothing (check mode included).
  - A package of O(packages) without a .deb file fails the task, naming O(variable) - except in check mode on a host
    the files have not been copied to yet (no file at all), which returns nothing to install.
  - Used by the roles that install Debian packages from a controller directory of .deb files (C(llm_router_debs),
    C(llm_monitoring_debs)).
  - The decision is C(_router_runtime.debs_to_install).
author:
  - gpufleet maintainers (@gpufleet)
options:
  debs:
    description: The .deb files on the host.
    type: list
    elements: path
    required: true
  packages:
    description: The packages that must be installed at their .deb file's version.
    type: list
    elements: str
    required: true
  variable:
    description: The role variable that names the .deb directory, for the failure's message.
    type: str
    default: llm_router_debs
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.read_only
"""

EXAMPLES = r"""
- name: Read what to install
  gpufleet.llm_stack.llm_router_debs:
    debs: [/var/cache/llm-router/debs/haproxy_2.6.12-1+deb12u4_amd64.deb]
    packages: [haproxy]
  register: llm_router_debs_state
"""

RETURN = r"""
install:
  description: The .deb files to hand to C(apt-get install); empty when every package is installed at its version.
  returned: always
  type: list
  elements: str
versions:
  description: The version of each package the .deb files hold.
  returned: always
  type: dict
stale:
  description: The packages of O(packages) not installed at their .deb file's version.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _router_runtime as R


def main():
    module = AnsibleModule(
        argument_spec=dict(debs=dict(type="list", elements="path", required=True),
                           packages=dict(type="list", elements="str", required=True),
                           variable=dict(type="str", default="llm_router_debs")),
        supports_check_mode=True,
    )
    debs = {}
    for path in module.params["debs"]:
        rc, out, err = module.run_command(["dpkg-deb", "--field", path, "Package", "Version"])
        if rc != 0:
            module.fail_json(msg="dpkg-deb cannot read %s: %s" % (path, err.strip()))
        fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
        debs[path] = (fields.get("Package", "").strip(), fields.get("Version", "").strip())
    installed = {}
    for name in module.params["packages"]:
        rc, out, dummy = module.run_command(["dpkg-query", "--showformat=${Status}|${Version}", "--show", name])
        status, dummy2, version = out.partition("|")
        installed[name] = version.strip() if rc == 0 and status.endswith(" installed") else ""
    decided = R.debs_to_install(debs, installed, module.params["packages"], module.params["variable"])
    result = dict(changed=False, install=decided["install"], versions=decided["versions"], stale=decided["stale"])
    if decided["problems"] and not (module.check_mode and not debs):
        module.fail_json(msg=" ".join(decided["problems"]), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
