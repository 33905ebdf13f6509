# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hf_mirror_state action: the role's defaults as its vars/main.yml hands them over, checked before any change,
the warnings, and olah's cache size limit from the reading of the cache directory's filesystem; the same results and
messages as module_utils/hf_mirror.py gives them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

from ansible_collections.gpufleet.llm_stack.plugins.action import hf_mirror_state as action_module
from action_task import new_action
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import hf_mirror as M
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_index as W

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
PASSWORD = "s3cr3t-upstream-pw"
# The filesystem of /var/lib on the test host: 4096-byte blocks, 2 TiB.
STATFS = "4096 %d" % (2 * 1024 ** 4 // 4096)
MOUNTS = [{"mount": "/", "size_total": 100 * 1024 ** 3}, {"mount": "/var/lib", "size_total": 500 * 1024 ** 3}]


def role_inputs(**changes):
    """hf_mirror_inputs of roles/hf_mirror/vars/main.yml with the role's defaults, for a host named cache-1."""
    with open(os.path.join(REPO, "roles", "hf_mirror", "defaults", "main.yml")) as handle:
        defaults = yaml.safe_load(handle)
    with open(os.path.join(REPO, "roles", "hf_mirror", "vars", "main.yml")) as handle:
        names = yaml.safe_load(handle)["hf_mirror_inputs"]
    rendered = dict(defaults, hf_mirror_venv=defaults["hf_mirror_prefix"] + "/venv",
                    hf_mirror_url="http://cache-1:%s" % defaults["hf_mirror_port"])
    inputs = dict((key, rendered[template.strip("{} ").split(" ")[0]]) for key, template in names.items())
    inputs.update(changes)
    return inputs


def run(inputs, statfs=None, facts=None, check_mode=False):
    args = {"inputs": inputs}
    if statfs is not None:
        args["statfs"] = statfs
    action = new_action(action_module, args, check_mode=check_mode)
    return action.run(task_vars={"ansible_facts": dict(facts or {}), "inventory_hostname": "cache-1"})


def test_the_role_defaults_pass_and_the_role_reads_the_filesystem_for_auto():
    inputs = role_inputs()
    assert set(inputs) == set(M.OPTIONS) and inputs["cache_size_limit"] == "auto"
    for check_mode in (False, True):
        plan = run(inputs, check_mode=check_mode)
        assert not plan.get("failed") and plan["changed"] is False
        assert plan["setting_warnings"] == [] and plan["read_fs"] is True and "cache_size_limit" not in plan


def test_auto_is_80_percent_of_the_filesystem_read_else_of_the_mounts_fact():
    plan = run(role_inputs(), statfs=STATFS, facts={"mounts": MOUNTS})
    expected = M.cache_size_limit("auto", MOUNTS, "/var/lib/hf-mirror", STATFS)
    assert plan["cache_size_limit"] == expected == "1638G"
    # No reading (a stat that printed nothing): the mounts fact.
    assert run(role_inputs(), statfs="", facts={"mounts": MOUNTS})["cache_size_limit"] == "400G"


@pytest.mark.parametrize("setting, limit", [("2TB", "2TB"), (" 500GB ", "500GB"), ("", "")])
def test_a_size_as_set_needs_no_reading(setting, limit):
    plan = run(role_inputs(cache_size_limit=setting))
    assert plan["read_fs"] is False
    # The role's task after the stat that was skipped: statfs "".
    assert run(role_inputs(cache_size_limit=setting), statfs="")["cache_size_limit"] == limit


def test_auto_without_any_size_fails():
    plan = run(role_inputs(), statfs="", facts={})
    assert plan["failed"] is True
    assert plan["msg"] == ("hf_mirror_cache_size_limit: hf_mirror_cache_size_limit is auto, but the facts give no size "
                           "of the filesystem that holds /var/lib/hf-mirror; set hf_mirror_cache_size_limit to a size "
                           "such as 500GB")


def test_every_problem_in_one_message_credentials_masked():
    hostile = role_inputs(cache_dir="/var/lib/hf-mirror\nExecStartPre=/bin/touch /tmp/x",
                          listen_host='127.0.0.1"\nhf-netloc = "attacker.example',
                          upstream_url="http://admin:%s@127.0.0.1:28917" % PASSWORD)
    plan = run(hostile)
    expected = M.problems(hostile)
    assert len(expected) == 3 and plan["failed"] is True and plan["msg"] == " ".join(expected)
    assert "hf_mirror_cache_dir is" in plan["msg"] and "hf_mirror_listen_host is" in plan["msg"]
    assert "hf_mirror_upstream_url" in plan["msg"] and PASSWORD not in str(plan)
    assert "setting_warnings" not in plan


def test_inputs_that_lack_a_variable_fail_naming_it():
    inputs = role_inputs()
    del inputs["port"]
    assert run(inputs)["msg"] == "hf_mirror_problems: the settings lack port"


def test_listening_everywhere_while_the_fleet_uses_one_address_is_a_warning():
    inputs = role_inputs(url="http://10.0.0.7:8090")
    plan = run(inputs)
    assert plan["setting_warnings"] == M.warnings({"listen_host": "0.0.0.0", "url": inputs["url"]})
    assert len(plan["setting_warnings"]) == 1 and "10.0.0.7" in plan["setting_warnings"][0]


def test_the_inputs_are_no_log():
    assert action_module.OPTIONS["inputs"]["no_log"] is True


@pytest.mark.parametrize("listen, host", [("0.0.0.0", "127.0.0.1"), ("::", "127.0.0.1"), ("10.0.0.7", "10.0.0.7")])
def test_the_role_waits_for_olah_at_127_0_0_1_where_it_listens_on_every_address(listen, host):
    for statfs in (None, STATFS):
        plan = run(role_inputs(listen_host=listen), statfs=statfs, facts={"mounts": MOUNTS})
        assert not plan.get("failed") and plan["probe_host"] == host == W.local_host(listen)
