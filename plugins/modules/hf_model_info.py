#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: hf_model_info
short_description: Resolve a Hugging Face model revision to a commit and list its files
version_added: "0.1.0"
description:
  - Asks a Hugging Face hub, or a mirror of it such as the fleet's hf_mirror, which commit a revision
    (commit SHA, branch or tag) of a model repository points to, and lists the files at that commit
    with their sizes, git blob ids and, for Git LFS files, the sha256 of their content.
  - Applies include and exclude globs the way the C(hf) client does, so the list is exactly what
    C(hf download --include/--exclude) fetches.
  - For a gated repository, checks that the token can download its files.
  - Reads only; it changes nothing, on the host or on the hub.
  - Error messages name the repository, the revision and the endpoint, never the token.
author:
  - gpufleet maintainers (@gpufleet)
options:
  repo_id:
    description: Model repository id, C(ORG/NAME).
    type: str
    required: true
  revision:
    description: Commit SHA, branch or tag.
    type: str
    default: main
  endpoint:
    description: Base URL of the hub or mirror (what C(HF_ENDPOINT) would be).
    type: str
    default: https://huggingface.co
  token:
    description:
      - Hugging Face access token, for private or gated repositories. Sent only in the
        C(Authorization) header; never logged or returned.
    type: str
  include:
    description: Glob patterns of files to select (C(dir/) means everything under C(dir)). Empty selects all.
    type: list
    elements: str
    default: []
  exclude:
    description: Glob patterns of files to leave out.
    type: list
    elements: str
    default: []
  check_access:
    description: For gated repositories, check with a HEAD request that the token can download files.
    type: bool
    default: true
  timeout:
    description: Seconds to wait for each answer.
    type: int
    default: 60
  validate_certs:
    description: Verify the endpoint's TLS certificate.
    type: bool
    default: true
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.read_only
notes:
  - Some mirrors answer a missing revision with the same C(RepoNotFound) as a missing repository;
    the module then asks for the repository itself and says which one is missing when it can.
"""

EXAMPLES = r"""
- name: Resolve Qwen/Qwen3.5-9B at main through the fleet mirror
  gpufleet.llm_stack.hf_model_info:
    repo_id: Qwen/Qwen3.5-9B
    revision: main
    endpoint: http://cache-01.example.internal:8090
    exclude:
      - "*.gguf"
  register: model

- name: Show the commit
  ansible.builtin.debug:
    msg: "{{ model.repo_id }} main is {{ model.commit }} ({{ model.total_size | human_readable }})"
"""

RETURN = r"""
repo_id:
  description: The repository id.
  returned: success
  type: str
  sample: Qwen/Qwen3.5-9B
revision:
  description: The revision asked for.
  returned: success
  type: str
  sample: main
commit:
  description: The commit SHA the revision points to.
  returned: success
  type: str
  sample: c202236235762e1c871ad0ccb60c8ee5ba337b9a
gated:
  description: Whether the repository is gated.
  returned: success
  type: bool
endpoint:
  description: The endpoint asked, without credentials.
  returned: always
  type: str
files:
  description: The selected files, sorted by path.
  returned: success
  type: list
  elements: dict
  contains:
    path:
      description: Path in the repository.
      type: str
    size:
      description: Size of the content in bytes.
      type: int
    blob_id:
      description: Git blob id of the file (of the LFS pointer for LFS files).
      type: str
    sha256:
      description: sha256 of the content for Git LFS files, null for others.
      type: str
file_count:
  description: Number of selected files.
  returned: success
  type: int
total_size:
  description: Bytes of the selected files.
  returned: success
  type: int
repo_file_count:
  description: Number of files in the repository at the commit.
  returned: success
  type: int
repo_total_size:
  description: Bytes of all files in the repository at the commit.
  returned: success
  type: int
error:
  description: >-
    On failure, what went wrong: C(repo_not_found), C(revision_not_found), C(gated), C(forbidden),
    C(rate_limited), C(unavailable), C(bad_answer) or C(bad_input).
  returned: failure
  type: str
status:
  description: On failure, the HTTP status of the answer, if there was one.
  returned: failure
  type: int
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.six.moves.urllib.error import HTTPError
from ansible.module_utils.urls import open_url

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import hf_hub


def make_fetch(timeout, validate_certs):
    def fetch(url, headers, method="GET"):
        try:
            response = open_url(
                url,
                method=method,
                headers=headers,
                timeout=timeout,
                validate_certs=validate_certs,
                # API answers redirect within the endpoint (e.g. to a trailing
                # slash); the access probe must not follow the file redirect
                # to a CDN with the token.
                follow_redirects="safe" if method == "GET" else "none",
            )
            return response.getcode(), response.headers, response.read()
        except HTTPError as exc:
            try:
                body = exc.read()
            except Exception:  # pylint: disable=broad-except
                body = b""
            return exc.code, exc.headers, body

    return fetch


def main():
    module = AnsibleModule(
        argument_spec=dict(
            repo_id=dict(type="str", required=True),
            revision=dict(type="str", default="main"),
            endpoint=dict(type="str", default=hf_hub.DEFAULT_ENDPOINT),
            token=dict(type="str", no_log=True),
            include=dict(type="list", elements="str", default=[]),
            exclude=dict(type="list", elements="str", default=[]),
            check_access=dict(type="bool", default=True),
            timeout=dict(type="int", default=60),
            validate_certs=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    params = module.params
    endpoint_shown = hf_hub.display_endpoint(params["endpoint"])
    try:
        info = hf_hub.model_info(
            make_fetch(params["timeout"], params["validate_certs"]),
            params["endpoint"],
            params["repo_id"],
            params["revision"],
            token=params["token"] or None,
            include=params["include"],
            exclude=params["exclude"],
            check_access=params["check_access"],
        )
    except hf_hub.HubError as exc:
        result = dict(changed=False, error=exc.kind, endpoint=endpoint_shown)
        if exc.status is not None:
            result["status"] = exc.status
        module.fail_json(msg=exc.message, **result)
    module.exit_json(changed=False, **info)


if __name__ == "__main__":
    main()
