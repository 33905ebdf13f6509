# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of gpufleet.llm_stack.qwen_model_fetch_state (documented in plugins/modules/qwen_model_fetch_state.py).

The qwen_model_fetch role's plan, in the controller's worker: its variables
checked before any change (every problem listed, the task fails naming the
host), then, given what the role observed later, the host that downloads
first (complete: whether each host of the batch holds the revision already),
the hf download command (download: the commit, the revision directory
and the log) and what this run downloaded (checked: the check of the files
before the download). The decisions are in module_utils/hf_download.py; this file
only runs them. Nothing on the host is read or changed.

The command carries the token and the endpoint's password in its
environment: the task that asks for it hides its result (no_log), and a
failure's message is shown all the same, with the credentials masked.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import hf_download, hf_local
from ansible_collections.gpufleet.llm_stack.plugins.plugin_utils._role_action import RoleAction


# The settings hf_download.fetch_problems checks, each a key of the role's inputs (the token aside).
CHECKED = ("model", "revision", "models_dir", "hf_endpoint", "upstream_endpoint", "hf_ca_cert", "max_workers",
           "keep_revisions", "disk_margin_gb", "checksum", "seed_host")

OPTIONS = dict(
    # The endpoints may hold credentials.
    inputs=dict(type="dict", required=True, no_log=True),
    token=dict(type="raw", default="", no_log=True),
    complete=dict(type="list", elements="bool"),
    download=dict(type="dict"),
    checked=dict(type="dict"),
    commit=dict(type="str"),
)


class ActionModule(RoleAction):
    OPTIONS = OPTIONS

    def decide(self, result, args, task_vars):
        task_vars = task_vars or {}
        inputs = args["inputs"]
        result["changed"] = False
        settings = dict((key, inputs[key]) for key in CHECKED if key in inputs)
        settings["token"] = args["token"]
        play_hosts = task_vars.get("ansible_play_hosts_all")
        if play_hosts is not None and not isinstance(play_hosts, (list, tuple)):
            return self.stop(result, "hf_fetch_problems: play_hosts must be a list (ansible_play_hosts_all)")
        try:
            problems = hf_download.fetch_problems(settings, play_hosts)
        except hf_download.InputError as exc:
            return self.stop(result, "hf_fetch_problems: %s" % exc)
        if problems:
            return self.stop(result, "qwen_model_fetch on %s, nothing was changed: %s"
                             % (task_vars.get("inventory_hostname", ""), " ".join(problems)))
        if args["complete"] is not None:
            failure = self._seed_host(result, task_vars.get("ansible_play_batch"), args["complete"],
                                      inputs.get("seed_host"))
            if failure:
                return self.stop(result, failure)
        if args["download"] is not None:
            options = hf_download.role_download_options(inputs, args["download"], args["token"])
            try:
                command = hf_download.command(options, progress_bars=True)
            except hf_download.InputError as exc:
                return self.stop(result, "hf_download_command: %s" % exc)
            command.pop("secrets")
            result["download_command"] = command
        if args["commit"] is not None:
            # Where the model lives: hf_local.model_path, the layout's one rule (vllm_serve serves by it too).
            result["paths"] = dict(base=hf_local.model_path(inputs.get("models_dir"), inputs.get("model"), None),
                                   dir=hf_local.model_path(inputs.get("models_dir"), inputs.get("model"), args["commit"]),
                                   path=hf_local.model_path(inputs.get("models_dir"), inputs.get("model")))
        if args["checked"] is not None:
            try:
                result["downloaded"] = hf_download.downloaded(args["checked"], bool(self._task.check_mode))
            except hf_download.InputError as exc:
                return self.stop(result, "hf_downloaded: %s" % exc)
        return result

    @staticmethod
    def _seed_host(result, batch, complete, chosen):
        """'' with RV(seed_host) set, else the failure (each message starts with hf_seed_host:, as before)."""
        if not isinstance(batch, (list, tuple)) or not all(isinstance(host, str) for host in batch):
            return "hf_seed_host: the input must be the list of host names (ansible_play_batch)"
        if chosen is not None and not isinstance(chosen, str):
            return ("hf_seed_host: the chosen host (qwen_model_fetch_seed_host) must be a host name, got %s"
                    % type(chosen).__name__)
        try:
            result["seed_host"] = hf_download.seed_host(list(batch), complete, chosen or "")
        except hf_download.InputError as exc:
            return "hf_seed_host: %s" % exc
        return ""
