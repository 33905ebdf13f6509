#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: fleet_cache_proxy_indexes
short_description: The indexes of the cache host's package proxy (devpi-server), created or brought in line
version_added: "0.3.0"
description:
  - On the cache host, asks its devpi-server over the loopback for each index of O(indexes) (its configuration,
    C(GET /<user>/<index>)) and creates the missing ones (C(PUT)) and changes those whose planned keys differ
    (C(PATCH) with the whole configuration). Indexes that O(indexes) does not name are left alone; none is deleted.
  - As devpi's C(root) user, with the password read from O(password_file) on the host (HTTP basic
    authentication over the loopback); the password never enters the module's arguments or its result.
  - In check mode, reads and reports what it would send, and sends nothing.
  - The decision is C(package_proxy.changes); the plan of indexes is C(package_proxy.indexes).
author:
  - gpufleet maintainers (@gpufleet)
options:
  url:
    description: devpi-server's URL on the loopback (C(http://127.0.0.1:3141)).
    type: str
    required: true
  password_file:
    description: The file on the host that holds devpi's root password (one line).
    type: path
    required: true
  indexes:
    description: The planned indexes, as C(package_proxy.indexes) gives them.
    type: list
    elements: dict
    required: true
  timeout:
    description: Seconds to wait for each answer.
    type: int
    default: 30
attributes:
  check_mode:
    support: full
    description: Reads devpi's indexes and reports what it would send; sends nothing.
  diff_mode:
    support: none
    description: No diff.
"""

EXAMPLES = r"""
- name: Create the proxy's indexes
  gpufleet.llm_stack.fleet_cache_proxy_indexes:
    url: http://127.0.0.1:3141
    password_file: /etc/fleet-cache/devpi-root-password
    indexes: "{{ fleet_cache_plan.proxy.indexes }}"
"""

RETURN = r"""
sent:
  description: What was sent (in check mode, what would be), one item per index, C(path) and C(method) (C(PUT) or
    C(PATCH)).
  returned: always
  type: list
  elements: dict
indexes:
  description: The path of every planned index.
  returned: always
  type: list
  elements: str
"""

import json

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native
from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.urls import open_url

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import package_proxy


def _request(module, method, url, password, body=None):
    data = json.dumps(body).encode("utf-8") if body is not None else None
    try:
        response = open_url(url, data=data, method=method, use_proxy=False, timeout=module.params["timeout"],
                            url_username="root", url_password=password, force_basic_auth=True,
                            headers={"Accept": "application/json", "Content-Type": "application/json"})
        return response.getcode(), json.loads(response.read().decode("utf-8") or "{}")
    except HTTPError as exc:
        try:
            answer = json.loads(exc.read().decode("utf-8") or "{}")
        except ValueError:
            answer = {}
        return exc.code, answer
    except (URLError, OSError, ValueError) as exc:
        module.fail_json(msg="The cache host's package proxy does not answer at %s: %s. Fix: check its unit "
                             "(systemctl status) and its log." % (url.split("?")[0], to_native(exc)))


def main():
    module = AnsibleModule(
        argument_spec=dict(url=dict(type="str", required=True),
                           password_file=dict(type="path", required=True, no_log=False),
                           indexes=dict(type="list", elements="dict", required=True),
                           timeout=dict(type="int", default=30)),
        supports_check_mode=True,
    )
    try:
        with open(module.params["password_file"], encoding="utf-8") as handle:
            password = handle.read().strip()
    except OSError as exc:
        module.fail_json(msg="Cannot read devpi's root password in %s: %s"
                         % (module.params["password_file"], to_native(exc)))
    base = module.params["url"].rstrip("/")
    planned = module.params["indexes"]
    current = {}
    for index in planned:
        status, answer = _request(module, "GET", "%s/%s?no_projects=" % (base, index["path"]), password)
        if status == 404:
            current[index["path"]] = None
        elif status == 200 and isinstance(answer.get("result"), dict):
            current[index["path"]] = answer["result"]
        else:
            module.fail_json(msg="The package proxy answered %s for %s: %s"
                             % (status, index["path"], answer.get("message", "")))
    try:
        sent = package_proxy.changes(current, planned)
    except package_proxy.PackageProxyError as exc:
        module.fail_json(msg=to_native(exc))
    result = dict(changed=bool(sent), sent=[{"path": s["path"], "method": s["method"]} for s in sent],
                  indexes=[index["path"] for index in planned])
    if module.check_mode:
        module.exit_json(**result)
    for item in sent:
        status, answer = _request(module, item["method"], "%s/%s" % (base, item["path"]), password, item["config"])
        if status != 200:
            module.fail_json(msg="The package proxy refused %s %s (%s): %s" % (
                item["method"], item["path"], status, answer.get("message", "")), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
