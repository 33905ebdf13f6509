# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of gpufleet.llm_stack.hf_mirror_state (documented in plugins/modules/hf_mirror_state.py).

The hf_mirror role's plan: its variables (hf_mirror_offline through the
bool filter, as the role reads it everywhere) checked before any change (every
problem listed, the task fails), the warnings on what they allow that the
fleet does not need, whether the role reads the size of the cache
directory's filesystem, the address the role waits for olah at, and, given
that reading (statfs), olah's cache size limit. The decisions are in
module_utils/hf_mirror.py (the address: wheel_index.local_host, shared with
fleet_cache_state); this file only runs them, in the controller's worker. Nothing on the host is read or
changed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.filter.core import to_bool
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import hf_mirror, wheel_index
from ansible_collections.gpufleet.llm_stack.plugins.plugin_utils._role_action import RoleAction

OPTIONS = dict(
    # The upstream URL may hold credentials (the check refuses them, masked).
    inputs=dict(type="dict", required=True, no_log=True),
    statfs=dict(type="str"),
)


class ActionModule(RoleAction):
    OPTIONS = OPTIONS

    def decide(self, result, args, task_vars):
        inputs = dict(args["inputs"])
        if "offline" in inputs:
            # As the role's variable is read everywhere: through the bool filter.
            inputs["offline"] = to_bool(inputs["offline"])
        result["changed"] = False
        try:
            problems = hf_mirror.problems(inputs)
        except TypeError as exc:
            result.update(failed=True, msg="hf_mirror_problems: %s" % exc)
            return result
        if problems:
            result.update(failed=True, msg=" ".join(problems))
            return result
        try:
            warnings = hf_mirror.warnings(inputs)
        except TypeError as exc:
            result.update(failed=True, msg="hf_mirror_warnings: %s" % exc)
            return result
        result.update(setting_warnings=warnings, read_fs=hf_mirror.reads_filesystem(inputs["cache_size_limit"]),
                      probe_host=wheel_index.local_host(inputs["listen_host"]))
        if args["statfs"] is None:
            return result
        mounts = (task_vars.get("ansible_facts") or {}).get("mounts", [])
        cache_dir = inputs["cache_dir"]
        if not isinstance(mounts, (list, tuple)) or not isinstance(cache_dir, str):
            result.update(failed=True, msg="hf_mirror_cache_size_limit: expects ansible_facts.mounts (a list) and the "
                                           "cache directory (hf_mirror_cache_dir)")
            return result
        try:
            result["cache_size_limit"] = hf_mirror.cache_size_limit(inputs["cache_size_limit"], list(mounts), cache_dir,
                                                                    args["statfs"])
        except TypeError as exc:
            result.update(failed=True, msg="hf_mirror_cache_size_limit: %s" % exc)
        return result
