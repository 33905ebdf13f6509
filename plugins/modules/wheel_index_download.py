#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: wheel_index_download
short_description: Download a build key's wheel from the fleet's index, refused unless it is the one the ledger recorded
description:
  - Runs on the host that installs the wheel. Downloads I(wheel.url) into I(dest) under I(wheel.filename) and checks
    its sha256 against I(wheel.sha256), the value the fleet cache host's ledger recorded when the cache host published
    the builder's wheel (M(gpufleet.llm_stack.fleet_lock) returns it, read over the inventory's own connection to the
    cache host), never the index's listing.
  - A file with another sha256 is refused with a message naming the build key, both sha256 values and the fix; it is
    removed and nothing is left under the wheel's name.
  - The file is written under a temporary name in I(dest) and renamed into place once checked. A file already there
    with the recorded sha256 is kept (no download).
  - The decision is C(check_download) in C(plugins/module_utils/wheel_index.py).
version_added: "0.2.0"
author:
  - gpufleet maintainers (@gpufleet)
options:
  wheel:
    description:
      - The key's wheel as M(gpufleet.llm_stack.fleet_lock) returns it; read are C(filename), C(url), C(sha256) (from
        the ledger), C(path) (on the cache host) and C(built_on).
    type: dict
    required: true
  entry:
    description: The build key's cache entry, named in the refusal.
    type: str
    required: true
  dest:
    description: Directory on this host the wheel is written to (it must exist).
    type: path
    required: true
  cache_host:
    description: The cache host's inventory name, for the message.
    type: str
    default: ""
  validate_certs:
    description: Check the index's TLS certificate.
    type: bool
    default: true
  ca_path:
    description:
      - PEM file on this host with the CA certificate(s) that signed the index's certificate
        (C(llm_stack_wheel_index_ca_cert), pushed by wheel_build). Without it, the host's trust store.
    type: path
  timeout:
    description: Seconds to wait for the index's answer (and between two blocks of the body).
    type: int
    default: 120
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.changes
"""

EXAMPLES = r"""
- name: Download the key's wheel, checked against the cache host's ledger
  gpufleet.llm_stack.wheel_index_download:
    wheel: "{{ lock.wheel }}"
    entry: "{{ wheel_build_state.entry }}"
    dest: "{{ wheel_build_state.host_entry }}"
    cache_host: cache-1
"""

RETURN = r"""
path:
  description: The wheel on this host.
  returned: always
  type: str
sha256:
  description: sha256 of the file downloaded (or found); equal to I(wheel.sha256) unless the module failed.
  returned: always
  type: str
downloaded:
  description: The file was downloaded in this run.
  returned: always
  type: bool
"""

import hashlib
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.urls import open_url
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_index as W
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.hf_local import sha256_file


def download(module, url, part):
    """Write the body of url to part; its sha256."""
    p = module.params
    digest = hashlib.sha256()
    try:
        response = open_url(url, method="GET", timeout=p["timeout"], validate_certs=p["validate_certs"],
                            ca_path=p["ca_path"], use_netrc=False)
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o644)
        with os.fdopen(fd, "wb") as handle:
            for block in iter(lambda: response.read(1024 * 1024), b""):
                digest.update(block)
                handle.write(block)
    except (HTTPError, URLError, OSError, ValueError) as exc:
        if os.path.lexists(part):
            os.unlink(part)
        module.fail_json(msg="Cannot download %s from the fleet's index: %s. Fix: check that the index on the cache host "
                             "runs (role fleet_cache) and that llm_stack_wheel_index_url (and, for https, "
                             "llm_stack_wheel_index_ca_cert) are right." % (url, exc), path="", sha256="", downloaded=False)
    return digest.hexdigest()


def main():
    module = AnsibleModule(
        argument_spec=dict(
            wheel=dict(type="dict", required=True),
            entry=dict(type="str", required=True),
            dest=dict(type="path", required=True),
            cache_host=dict(type="str", default=""),
            validate_certs=dict(type="bool", default=True),
            ca_path=dict(type="path"),
            timeout=dict(type="int", default=120),
        ),
        supports_check_mode=True,
    )
    p = module.params
    wheel = p["wheel"]
    filename = wheel.get("filename")
    if not W.parse_wheel(filename) or "/" in filename or not isinstance(wheel.get("url"), str):
        module.fail_json(msg="wheel must be fleet_lock's wheel (filename, url, sha256); got %r" % (wheel,))
    try:
        W.check_download(p["entry"], wheel, wheel.get("sha256"))
    except W.WheelIndexError as exc:
        module.fail_json(msg=str(exc))
    if not os.path.isdir(p["dest"]):
        module.fail_json(msg="dest %s is not a directory on this host" % p["dest"])
    path = os.path.join(p["dest"], filename)
    if os.path.isfile(path) and not os.path.islink(path):
        present = sha256_file(path)
        if not W.check_download(p["entry"], wheel, present):
            module.exit_json(changed=False, path=path, sha256=present, downloaded=False)
    if module.check_mode:
        module.exit_json(changed=True, path=path, sha256="", downloaded=False, msg="check mode: nothing downloaded")
    part = os.path.join(p["dest"], ".%s.part" % filename)
    got = download(module, wheel["url"], part)
    problem = W.check_download(p["entry"], wheel, got, p["cache_host"])
    if problem:
        os.unlink(part)
        if os.path.lexists(path):
            os.unlink(path)
        module.fail_json(msg=problem, path=path, sha256=got, downloaded=False)
    os.rename(part, path)
    module.exit_json(changed=True, path=path, sha256=got, downloaded=True)


if __name__ == "__main__":
    main()
