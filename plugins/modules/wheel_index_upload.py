#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: wheel_index_upload
short_description: Upload a wheel to the fleet's package index
description:
  - Uploads a wheel of this host to a package index that takes uploads as PyPI's legacy upload API (pypiserver,
    devpi), a multipart C(POST) of C(:action=file_upload) to the index's base URL, with HTTP basic auth.
  - The password comes from I(password) (no_log) or from I(password_file) (a file of mode 0600 on the host),
    never from a command line.
  - When the index already has a file of that name, it is fine if it is the same file (same sha256 on the index's
    simple page), an error otherwise.
version_added: "0.2.0"
author:
  - gpufleet maintainers (@gpufleet)
options:
  path:
    description: The wheel on this host; its file name is the name on the index.
    type: path
    required: true
  index_url:
    description: Base URL of the index (C(llm_stack_wheel_index_url)).
    type: str
    required: true
  username:
    description: Upload account.
    type: str
    required: true
  password:
    description: Its password. One of I(password) and I(password_file).
    type: str
  password_file:
    description: File on this host that holds the password (first line).
    type: path
  validate_certs:
    description: Check the index's TLS certificate.
    type: bool
    default: true
  timeout:
    description: Seconds the upload may take.
    type: int
    default: 600
attributes:
  check_mode:
    support: full
    description: Reports C(changed) when the index lacks the file and uploads nothing.
  diff_mode:
    support: none
    description: No diff.
"""

EXAMPLES = r"""
- name: Upload the key's wheel
  gpufleet.llm_stack.wheel_index_upload:
    path: /opt/llm-stack/wheels/flash-attn-2.8.3-abc/flash_attn-2.8.3-0abcdef012345-cp312-cp312-linux_x86_64.whl
    index_url: http://cache-1:8080
    username: "{{ llm_stack_wheel_index_username }}"
    password: "{{ llm_stack_wheel_index_password }}"
  no_log: true
"""

RETURN = r"""
filename:
  description: The file name on the index.
  returned: always
  type: str
sha256:
  description: sha256 of the wheel.
  returned: always
  type: str
msg:
  description: What happened.
  returned: always
  type: str
"""

import hashlib
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import fetch_url
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_index as W


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1024 * 1024), b""):
            digest.update(block)
    return digest.hexdigest()


def present_sha(module, index_url, name, filename):
    page = W.simple_url(index_url, name)
    response, info = fetch_url(module, page, method="GET", timeout=30, use_proxy=False)
    if response is None or info.get("status") != 200:
        return None
    for item in W.parse_links(response.read().decode("utf-8", "replace"), page):
        if item["filename"] == filename:
            return item["sha256"]
    return None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            index_url=dict(type="str", required=True),
            username=dict(type="str", required=True),
            password=dict(type="str", no_log=True),
            password_file=dict(type="path"),
            validate_certs=dict(type="bool", default=True),
            timeout=dict(type="int", default=600),
        ),
        required_one_of=[("password", "password_file")],
        mutually_exclusive=[("password", "password_file")],
        supports_check_mode=True,
    )
    p = module.params
    problem = W.check_index_url(p["index_url"])
    if problem:
        module.fail_json(msg=problem)
    filename = os.path.basename(p["path"])
    parts = W.parse_wheel(filename)
    if not parts or not os.path.isfile(p["path"]):
        module.fail_json(msg="%s is not a wheel file on this host" % p["path"])
    local = sha256_of(p["path"])
    present = present_sha(module, p["index_url"], parts["name"], filename)
    if present == local:
        module.exit_json(changed=False, filename=filename, sha256=local, msg="the index already has %s" % filename)
    if module.check_mode:
        module.exit_json(changed=True, filename=filename, sha256=local, msg="check mode: %s would be uploaded" % filename)
    password = p["password"]
    if p["password_file"]:
        try:
            with open(p["password_file"]) as handle:
                password = handle.readline().rstrip("\r\n")
        except (IOError, OSError) as exc:
            module.fail_json(msg="cannot read the index password from %s: %s" % (p["password_file"], exc))
        module.no_log_values.add(password)
    with open(p["path"], "rb") as handle:
        content = handle.read()
    content_type, body = W.multipart({":action": "file_upload", "protocol_version": "1", "name": parts["name"],
                                      "version": parts["version"], "filetype": "bdist_wheel", "sha256_digest": local},
                                     filename, content)
    module.params["url_username"] = p["username"]
    module.params["url_password"] = password
    module.params["force_basic_auth"] = True
    response, info = fetch_url(module, p["index_url"].rstrip("/") + "/", data=body, method="POST",
                               headers={"Content-Type": content_type}, timeout=p["timeout"], use_proxy=False)
    del response
    status = info.get("status", -1)
    verdict = W.upload_verdict(status, filename, present_sha(module, p["index_url"], parts["name"], filename)
                               if status == 409 else None, local)
    if not verdict["ok"]:
        module.fail_json(msg=verdict["msg"] if status > 0 else "%s (%s)" % (verdict["msg"], info.get("msg", "")),
                         filename=filename, sha256=local)
    module.exit_json(changed=verdict["changed"], filename=filename, sha256=local, msg=verdict["msg"])


if __name__ == "__main__":
    main()
