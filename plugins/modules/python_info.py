#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: python_info
short_description: Read the Python interpreter a venv is made from, an existing venv, and the free space for it
version_added: "0.1.0"
description:
  - With I(python), runs that interpreter (a name on C(PATH) or a path) in isolated mode and reports its version and
    whether it has the C(venv) and C(ensurepip) modules that C(python -m venv) needs. A name that is not found, a file
    that is not an executable Python interpreter, an interpreter that prints no usable answer or does not answer within
    I(timeout) are reported in C(interpreter.error), never as a module failure.
  - With I(venv), reports whether that venv exists (its C(bin/python) runs) and the Python version it was made with,
    read from its C(pyvenv.cfg) without running anything.
  - With I(space_path), reports the free space of the filesystem that path is on, or would be on once created (that of
    its deepest existing ancestor).
  - Changes nothing. The torch role and preflight feed its results to M(gpufleet.llm_stack.stack_compat) (part
    C(torch)).
author:
  - gpufleet maintainers (@gpufleet)
options:
  python:
    description: Interpreter a venv is to be made from, a name on C(PATH) (C(python3.12)) or a path.
    type: str
  venv:
    description: Path of a venv, which need not exist.
    type: path
  space_path:
    description: A path whose filesystem's free space is reported (for example the stack's prefix).
    type: path
  timeout:
    description: Seconds the interpreter may take to answer; then its process group is killed and C(interpreter.error) says so.
    type: int
    default: 30
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.read_only
seealso:
  - module: gpufleet.llm_stack.stack_compat
  - module: gpufleet.llm_stack.torch_info
"""

EXAMPLES = r"""
- name: Read python3.12, the venv and the free space under the prefix
  gpufleet.llm_stack.python_info:
    python: python3.12
    venv: /opt/llm-stack/venv
    space_path: /opt/llm-stack
  register: torch_python_info

- name: Fail when python3.12 cannot make the venv
  ansible.builtin.fail:
    msg: "{{ torch_python_info.interpreter.error | default('no venv module', true) }}"
  when: not (torch_python_info.interpreter.found and torch_python_info.interpreter.venv)
"""

RETURN = r"""
interpreter:
  description: The interpreter named by I(python); null without I(python).
  returned: always
  type: dict
  contains:
    found:
      description: Whether it ran and answered as a Python interpreter.
      type: bool
    name:
      description: I(python) as given.
      type: str
    executable:
      description: Its path (C(sys.executable) once it answered).
      type: str
    version:
      description: Its version, C(X.Y.Z).
      type: str
    venv:
      description: Whether it has the C(venv) module.
      type: bool
    ensurepip:
      description: Whether it has the C(ensurepip) module (Debian ships it in C(pythonX.Y-venv)).
      type: bool
    error:
      description: Why it was not found or did not answer, null otherwise.
      type: str
  sample: {found: true, name: python3.11, executable: /usr/bin/python3.11, version: 3.11.2, venv: true, ensurepip: true,
           error: null}
venv:
  description: The venv I(venv); null without I(venv).
  returned: always
  type: dict
  contains:
    path:
      description: I(venv).
      type: str
    exists:
      description: Whether it exists with a C(bin/python) that can run.
      type: bool
    python_version:
      description: The Python version the venv was made with (C(X.Y.Z)); null when it does not exist.
      type: str
    abi_tag:
      description: C(cpXY) of that version.
      type: str
    error:
      description: Why a venv directory that is there does not count as a venv (no C(bin/python)); null otherwise.
      type: str
  sample: {path: /opt/llm-stack/venv, exists: true, python_version: 3.11.2, abi_tag: cp311, error: null}
space:
  description: The free space for I(space_path); null without it.
  returned: always
  type: dict
  contains:
    path:
      description: I(space_path).
      type: str
    checked:
      description: The deepest existing ancestor of I(space_path) (itself when it exists), whose filesystem was read.
      type: str
    mount:
      description: Mount point of that filesystem.
      type: str
    free_gb:
      description: Space available to unprivileged users there, in GiB (one decimal).
      type: float
    error:
      description: Why the space could not be read; null otherwise.
      type: str
  sample: {path: /opt/llm-stack, checked: /opt, mount: /, free_gb: 812.4, error: null}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import python_probe


def main():
    module = AnsibleModule(
        argument_spec=dict(
            python=dict(type="str"),
            venv=dict(type="path"),
            space_path=dict(type="path"),
            timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p["timeout"] < 1:
        module.fail_json(msg="timeout must be 1 or more seconds, got %d" % p["timeout"])
    result = dict(changed=False, interpreter=None, venv=None, space=None)
    if p["python"] is not None:
        result["interpreter"] = python_probe.probe_interpreter(p["python"], timeout=p["timeout"])
    if p["venv"]:
        result["venv"] = python_probe.read_venv(p["venv"], timeout=p["timeout"])
    if p["space_path"]:
        result["space"] = python_probe.disk_space(p["space_path"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
