# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The qwen_model_fetch_state action: the role's defaults as its vars/main.yml hands them over, checked before any
change; the seed host of the batch; the hf download command. The same results and messages as
module_utils/hf_download.py gives them, the token never in a message."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
from unittest import mock

import pytest
import yaml

from ansible_collections.gpufleet.llm_stack.plugins.plugin_utils import _role_action as role_action
from ansible_collections.gpufleet.llm_stack.plugins.action import qwen_model_fetch_state as action_module
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import hf_download as H
from action_task import new_action

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
TOKEN = "hf_" + "t" * 34
HOSTS = ["gpu-1", "gpu-2", "gpu-3"]
COMMIT = "0123456789abcdef0123456789abcdef01234567"
DOWNLOAD = {"revision": COMMIT, "local_dir": "/opt/llm-stack/models/Qwen/Qwen3.5-9B/" + COMMIT,
            "log_path": "/var/log/llm-stack/qwen_model_fetch-Qwen--Qwen3.5-9B.log"}


def role_inputs(**changes):
    """qwen_model_fetch_inputs of the role's vars/main.yml with its defaults (the llm_stack globals by hand)."""
    with open(os.path.join(REPO, "roles", "qwen_model_fetch", "defaults", "main.yml")) as handle:
        defaults = yaml.safe_load(handle)
    with open(os.path.join(REPO, "roles", "qwen_model_fetch", "vars", "main.yml")) as handle:
        names = yaml.safe_load(handle)["qwen_model_fetch_inputs"]
    rendered = dict(defaults, qwen_model_fetch_model="Qwen/Qwen3.5-9B", qwen_model_fetch_revision="main",
                    qwen_model_fetch_models_dir="/opt/llm-stack/models", qwen_model_fetch_venv="/opt/llm-stack/hf-client")
    inputs = dict((key, rendered[template.strip("{} ").split(" ")[0]]) for key, template in names.items())
    inputs.update(changes)
    return inputs


def make_action(args, check_mode=False, no_log=False):
    return new_action(action_module, args, check_mode=check_mode, no_log=no_log)


def run(args, hostname="gpu-1", batch=None, **kwargs):
    task_vars = {"ansible_facts": {}, "inventory_hostname": hostname, "ansible_play_hosts_all": list(HOSTS),
                 "ansible_play_batch": list(batch if batch is not None else HOSTS)}
    return make_action(args, **kwargs).run(task_vars=task_vars)


def test_the_role_defaults_pass_in_check_mode_too():
    inputs = role_inputs()
    assert set(inputs) == set(action_module.CHECKED) | {"venv", "include", "exclude"}
    for check_mode in (False, True):
        result = run({"inputs": inputs, "token": TOKEN}, check_mode=check_mode)
        assert not result.get("failed") and result["changed"] is False
        assert "seed_host" not in result and "download_command" not in result


def test_every_problem_in_one_message_naming_the_host_token_masked():
    inputs = role_inputs(max_workers=0, seed_host="gpu-9", hf_endpoint="https://user:mirror-pw@cache-01:8090x")
    result = run({"inputs": inputs, "token": TOKEN + " "}, hostname="gpu-2")
    settings = dict((key, inputs[key]) for key in action_module.CHECKED)
    expected = H.fetch_problems(dict(settings, token=TOKEN + " "), HOSTS)
    assert len(expected) == 4
    assert result["failed"] is True
    assert result["msg"] == "qwen_model_fetch on gpu-2, nothing was changed: " + " ".join(expected)
    assert TOKEN not in result["msg"] and "mirror-pw" not in result["msg"]
    assert "qwen_model_fetch_seed_host is 'gpu-9', which is not a host of this play" in result["msg"]


def test_a_null_token_is_no_token():
    assert not run({"inputs": role_inputs(), "token": None}).get("failed")


@pytest.mark.parametrize("complete, chosen, seed", [
    ([True, False, False], "", "gpu-2"),
    ([False, False, False], "", "gpu-1"),
    ([True, True, True], "", ""),
    ([True, True, True], "gpu-3", "gpu-3"),
])
def test_the_seed_host_is_the_chosen_one_else_the_first_that_needs_files(complete, chosen, seed):
    result = run({"inputs": role_inputs(seed_host=chosen), "complete": complete})
    assert not result.get("failed") and result["seed_host"] == seed
    assert seed == H.seed_host(HOSTS, complete, chosen)


def test_a_flag_per_host_of_the_batch():
    result = run({"inputs": role_inputs(), "complete": [True, False]})
    assert result["failed"] is True and result["msg"] == "hf_seed_host: seed_host: 3 hosts and 2 completeness flags"


def test_the_download_command_is_hf_downloads_with_the_token_only_in_the_environment():
    inputs = role_inputs(include=["*.json", "*.safetensors"], max_workers="4")
    result = run({"inputs": inputs, "token": TOKEN, "download": DOWNLOAD}, no_log=True)
    command = result["download_command"]
    expected = H.command({
        "hf": "/opt/llm-stack/hf-client/bin/hf", "repo_id": "Qwen/Qwen3.5-9B", "revision": COMMIT,
        "local_dir": DOWNLOAD["local_dir"], "log_path": DOWNLOAD["log_path"], "max_workers": "4",
        "include": ["*.json", "*.safetensors"], "exclude": [], "endpoint": "https://huggingface.co", "token": TOKEN,
        "environment": {}}, progress_bars=True)
    expected.pop("secrets")
    assert command == expected
    assert command["argv"][:8] == ["/opt/llm-stack/hf-client/bin/hf", "download", "Qwen/Qwen3.5-9B", "--revision",
                                   COMMIT, "--local-dir", DOWNLOAD["local_dir"], "--max-workers"]
    assert not any(TOKEN in arg for arg in command["argv"])
    assert command["environment"]["HF_TOKEN"] == TOKEN and command["no_log"] is True
    assert "HF_HUB_DISABLE_PROGRESS_BARS" not in command["environment"] and "secrets" not in command


def test_without_a_token_the_stored_login_is_not_used_and_a_ca_is_trusted(tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text("pem")
    result = run({"inputs": role_inputs(hf_ca_cert=str(ca)), "token": "", "download": DOWNLOAD}, check_mode=True)
    environment = result["download_command"]["environment"]
    assert environment["HF_TOKEN"] == "" and environment["HF_HUB_DISABLE_IMPLICIT_TOKEN"] == "1"
    assert environment["SSL_CERT_FILE"] == "/opt/llm-stack/hf-client/endpoint-ca.pem"
    assert result["download_command"]["no_log"] is False


def test_a_bad_download_input_fails_naming_the_option_shown_masked_when_hidden():
    download = dict(DOWNLOAD, local_dir="models/relative")
    with mock.patch.object(role_action.display, "error") as shown:
        result = run({"inputs": role_inputs(), "token": TOKEN, "download": download}, no_log=True)
    assert result["failed"] is True
    assert result["msg"] == "hf_download_command: local_dir: 'models/relative' must be an absolute path (without " \
                            "control characters)"
    assert "download_command" not in result
    assert shown.call_count == 1 and "hidden" in shown.call_args[0][0]


SHARDS = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
CHECKED = {"ok": False, "missing": SHARDS + ["config.json"], "damaged": [], "seedable": ["config.json"],
           "bytes_to_fetch": 9 * 1024 ** 3, "problems": ["..."]}


def test_what_this_run_downloaded_nothing_in_check_mode():
    args = {"inputs": role_inputs(), "token": TOKEN, "checked": CHECKED}
    result = run(args)
    assert not result.get("failed") and result["changed"] is False
    assert result["downloaded"] == {"files_downloaded": 2, "bytes_downloaded": 9 * 1024 ** 3}
    assert result["downloaded"] == H.downloaded(CHECKED)
    assert "seed_host" not in result and "download_command" not in result
    assert run(args, check_mode=True)["downloaded"] == {"files_downloaded": 0, "bytes_downloaded": 0}
    assert run(dict(args, checked=dict(CHECKED, ok=True)))["downloaded"] == {"files_downloaded": 0,
                                                                             "bytes_downloaded": 0}
    assert "downloaded" not in run({"inputs": role_inputs(), "token": TOKEN})


def test_what_this_run_downloaded_needs_the_check_of_the_files():
    result = run({"inputs": role_inputs(), "checked": {"ok": False}})
    assert result["failed"] is True and result["msg"].startswith("hf_downloaded: downloaded: the check of the files")
    assert "downloaded" not in result


def test_the_token_and_the_inputs_are_no_log():
    assert action_module.OPTIONS["token"]["no_log"] is True and action_module.OPTIONS["inputs"]["no_log"] is True


def test_where_the_model_lives_is_the_layout_vllm_serve_serves_by():
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm_serve
    result = run({"inputs": role_inputs(models_dir="/opt/llm-stack/models/"), "commit": COMMIT})
    assert result["paths"] == {"base": "/opt/llm-stack/models/Qwen/Qwen3.5-9B",
                               "dir": "/opt/llm-stack/models/Qwen/Qwen3.5-9B/" + COMMIT,
                               "path": "/opt/llm-stack/models/Qwen/Qwen3.5-9B/current"}
    assert result["paths"]["dir"] == DOWNLOAD["local_dir"]
    # vllm_serve's model directory for the same variables is the link the role switches.
    assert vllm_serve.model_dir_of("/opt/llm-stack/models/", "Qwen/Qwen3.5-9B") == \
        result["paths"]["path"]
    assert "paths" not in run({"inputs": role_inputs()})
