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
  - Error messages name the repository, the revision and the endpoint, never the token; every message and
    result goes through the collection's credential masking (URL passwords show as C(***)).
  - >-
    The token, and the user:password of O(endpoint), are sent only to the endpoint's own origin (scheme, host
    and port). A redirect to another origin is followed without them; a C(Link: rel="next") page of the file
    list on another origin is refused with an error (the list is read from the endpoint only). C(~/.netrc) is
    not read.
  - >-
    A repository file named C(.llm_stack_manifest.json) (or C(.llm_stack_manifest.json.tmp)) at the top of the
    repository is left out of RV(files) and reported in RV(skipped) with a warning: the name is that
    of the manifest M(gpufleet.llm_stack.hf_model_verify) writes.
author:
  - gpufleet maintainers (@gpufleet)
options:
  repo_id:
    description:
      - Model repository id, C(ORG/NAME), checked against the hub's rule (ASCII letters, digits, C(.), C(_), C(-))
        after surrounding whitespace is stripped.
    type: str
    required: true
  revision:
    description: Commit SHA, branch or tag (ASCII letters, digits and C(_.+/-), not starting with C(-)).
    type: str
    default: main
  endpoint:
    description: Base URL of the hub or mirror (what C(HF_ENDPOINT) would be), C(http://) or C(https://).
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
    description: Seconds to wait for each answer (1 or more).
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
  description: The endpoint asked, with any user:password shown as C(***).
  returned: always
  type: str
skipped:
  description: >-
    Repository files left out because their name is reserved for the collection's manifest
    (C(.llm_stack_manifest.json) and C(.llm_stack_manifest.json.tmp) at the top of the repository).
  returned: success
  type: list
  elements: str
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
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import mask_credentials


def make_fetch(timeout, validate_certs):
    def fetch(url, headers, method="GET"):
        """One request, no redirect followed: hf_hub.request decides where the token may go."""
        try:
            response = open_url(
                url,
                method=method,
                headers=headers,
                timeout=timeout,
                validate_certs=validate_certs,
                follow_redirects="none",
                use_netrc=False,
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
    secrets = [params["token"]] if params["token"] else []
    endpoint_shown = mask_credentials(hf_hub.display_endpoint(params["endpoint"]), secrets)
    if params["timeout"] < 1:
        module.fail_json(msg="timeout: must be 1 or more seconds, got %d" % params["timeout"],
                         changed=False, error=hf_hub.BAD_INPUT, endpoint=endpoint_shown)
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
        module.fail_json(msg=mask_credentials(exc.message, secrets), **result)
    except Exception as exc:  # pylint: disable=broad-except
        # Last resort, so that no input ends in a traceback; hf_hub raises HubError for what it knows.
        module.fail_json(
            msg=mask_credentials("hf_model_info could not ask %s about %s: %s: %s" % (
                endpoint_shown, params["repo_id"], type(exc).__name__, exc), secrets),
            changed=False, error=hf_hub.UNAVAILABLE, endpoint=endpoint_shown)
    for path in info["skipped"]:
        module.warn(
            "The repository %s lists a file named %s, the name of the manifest this collection writes into the "
            "model directory; that file is left out (neither fetched nor checked)." % (info["repo_id"], path))
    info["endpoint"] = mask_credentials(info["endpoint"], secrets)
    module.exit_json(changed=False, **info)


if __name__ == "__main__":
    main()
