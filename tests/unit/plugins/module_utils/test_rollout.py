# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rollout settings of a play, read from the inventory (module_utils/rollout.py, filters rollout_setting and
rollout_problems), and a real ansible-playbook run whose batches follow group_vars, extra vars and host_vars."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

import pytest
from ansible.errors import AnsibleFilterError
from ansible.utils.helpers import pct_to_int
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.filter.rollout import FilterModule
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import rollout

FILTERS = FilterModule().filters()
HOSTS = ["gpu-1", "gpu-2", "gpu-3", "gpu-4"]
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))


def fleet(**per_host):
    """hostvars of four hosts; per_host: host -> its variables."""
    return dict((host, dict(per_host.get(host, {}))) for host in HOSTS)


@pytest.mark.parametrize("value, expected", [
    ("25%", "25%"), (" 25% ", "25%"), ("100%", "100%"), ("12.5%", "12.5%"), (2, 2), ("2", 2),
    ([1, "10%", "100%"], [1, "10%", "100%"]), (["1", 3], [1, 3]),
])
def test_serial_values_ansible_takes(value, expected):
    assert rollout.normalize("llm_stack_serial", value) == expected


@pytest.mark.parametrize("value", [0, "0", -1, "0%", "101%", "abc", "", [], [1, 0], None, True, 2.5, {"a": 1}, "25 %"])
def test_serial_values_refused_with_the_variable_and_fix(value):
    with pytest.raises(rollout.RolloutError) as exc:
        rollout.normalize("llm_stack_serial", value)
    assert "llm_stack_serial=" in str(exc.value) and "Fix: set it to a number of hosts" in str(exc.value)


@pytest.mark.parametrize("value, expected", [(0, 0), ("0", 0), (25, 25), ("25%", 25), ("12.5", 12.5), (100, 100)])
def test_max_fail_percentage(value, expected):
    assert rollout.normalize("llm_stack_max_fail_percentage", value) == expected


@pytest.mark.parametrize("value", [-1, 101, "x", True, None, "", [10]])
def test_max_fail_percentage_refused(value):
    with pytest.raises(rollout.RolloutError, match="llm_stack_max_fail_percentage=.*Fix: set it to a percentage"):
        rollout.normalize("llm_stack_max_fail_percentage", value)


@given(st.one_of(st.integers(min_value=1, max_value=10 ** 6),
                 st.integers(min_value=1, max_value=100).map(lambda n: "%d%%" % n),
                 st.integers(min_value=1, max_value=10 ** 6).map(str)),
       st.integers(min_value=1, max_value=5000))
def test_every_accepted_serial_makes_batches_of_at_least_one_host(value, hosts):
    # pct_to_int is what ansible-playbook turns serial into (PlaybookExecutor._get_serialized_batches).
    assert pct_to_int(rollout.normalize("llm_stack_serial", value), hosts) >= 1


@given(st.text(max_size=12))
def test_any_text_is_a_batch_size_or_refused(text):
    try:
        value = rollout.normalize("llm_stack_serial", text)
    except rollout.RolloutError as exc:
        assert "llm_stack_serial=" in str(exc)
    else:
        assert pct_to_int(value, 7) >= 1


def test_setting_reads_the_first_host_and_the_playbook_default():
    assert rollout.setting(fleet(), HOSTS, "llm_stack_serial") == "100%"
    assert rollout.setting(fleet(), HOSTS, "llm_stack_serial", 1) == 1
    assert rollout.setting(fleet(), HOSTS, "llm_stack_max_fail_percentage") == 0
    every = dict((host, {"llm_stack_serial": "25%"}) for host in HOSTS)
    assert rollout.setting(fleet(**every), HOSTS, "llm_stack_serial", 1) == "25%"
    # "" and None are "not set", as in the inventory's comments
    assert rollout.setting(fleet(**{"gpu-1": {"llm_stack_serial": ""}}), HOSTS, "llm_stack_serial", 2) == 2
    assert rollout.setting({}, [], "llm_stack_serial") == "100%"


def test_problems_lists_bad_values_and_hosts_that_disagree():
    assert rollout.problems(fleet(), HOSTS) == []
    every = dict((host, {"llm_stack_serial": 2, "llm_stack_max_fail_percentage": "10"}) for host in HOSTS)
    assert rollout.problems(fleet(**every), HOSTS) == []
    # one group's hosts set it, the others do not: a play setting needs one value
    split = {"gpu-1": {"llm_stack_serial": 1}, "gpu-2": {"llm_stack_serial": 1}}
    found = rollout.problems(fleet(**split), HOSTS)
    assert len(found) == 1
    assert "llm_stack_serial differs between the hosts of the play (1 on gpu-1, gpu-2; not set on gpu-3, gpu-4)" in found[0]
    assert "Fix: set llm_stack_serial once, in group_vars/all" in found[0]
    bad = {"gpu-3": {"llm_stack_max_fail_percentage": 150}}
    found = rollout.problems(fleet(**bad), HOSTS)
    assert found == ["llm_stack_max_fail_percentage=150 is not a percentage. Fix: set it to a percentage from 0 to 100"
                     " (0: any failed host stops the rollout) (on gpu-3)"]


def test_the_filters():
    every = dict((host, {"llm_stack_serial": "50%"}) for host in HOSTS)
    assert FILTERS["rollout_setting"](fleet(**every), HOSTS, "llm_stack_serial") == "50%"
    assert FILTERS["rollout_problems"](fleet(**every), HOSTS) == []
    with pytest.raises(AnsibleFilterError, match="llm_stack_serial='none' is not a batch size"):
        FILTERS["rollout_setting"](fleet(**{"gpu-1": {"llm_stack_serial": "none"}}), HOSTS, "llm_stack_serial")
    with pytest.raises(AnsibleFilterError, match="list of host names"):
        FILTERS["rollout_setting"](fleet(), "gpu-1", "llm_stack_serial")
    # a real run without hostvars (no play before this one): an error that says what to import
    with pytest.raises(AnsibleFilterError, match="import_playbook: gpufleet.llm_stack.rollout"):
        FILTERS["rollout_setting"](None, HOSTS, "llm_stack_serial")


PLAYBOOK = """
- ansible.builtin.import_playbook: gpufleet.llm_stack.rollout
- name: A changing play, in batches
  hosts: "all:!llm_cache:!hf_mirror"
  gather_facts: false
  serial: "{{ hostvars | default(none) | gpufleet.llm_stack.rollout_setting(ansible_play_hosts_all, 'llm_stack_serial') }}"
  tasks:
    - name: Record the batch
      ansible.builtin.debug:
        msg: "{{ ansible_play_batch }}"
      run_once: true
"""


def run_batches(tmp_path, group_vars=None, host_vars=None, extra=()):
    """Runs the playbook above on four local hosts; returns (rc, the batches, the output)."""
    inventory = tmp_path / "inventory"
    (inventory / "group_vars" / "all").mkdir(parents=True)
    (inventory / "host_vars").mkdir()
    (inventory / "hosts.yml").write_text(json.dumps({"all": {"hosts": dict(
        (host, {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}) for host in HOSTS)}}))
    if group_vars:
        (inventory / "group_vars" / "all" / "rollout.yml").write_text(json.dumps(group_vars))
    for host, variables in (host_vars or {}).items():
        (inventory / "host_vars" / ("%s.yml" % host)).write_text(json.dumps(variables))
    playbook = tmp_path / "play.yml"
    playbook.write_text(PLAYBOOK)
    config = tmp_path / "ansible.cfg"
    config.write_text("[defaults]\ninterpreter_python = auto_silent\n")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collections"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", ANSIBLE_CONFIG=str(config))
    run = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(inventory),
                          str(playbook)] + list(extra), capture_output=True, text=True, env=env, timeout=120,
                         check=False)
    batches = []
    try:
        output = json.loads(run.stdout)
    except ValueError:
        return run.returncode, batches, run.stdout + run.stderr
    for play in output["plays"]:
        if play["play"]["name"] != "A changing play, in batches":
            continue
        for task in play["tasks"]:
            for result in task["hosts"].values():
                batches.append(result["msg"])
    return run.returncode, batches, run.stdout + run.stderr


def test_group_vars_extra_vars_and_disagreement_in_a_real_run(tmp_path):
    rc, batches, out = run_batches(tmp_path / "a", group_vars={"llm_stack_serial": "25%"})
    assert rc == 0, out
    assert batches == [[host] for host in HOSTS]
    # extra vars (an AWX survey answer) win over group_vars
    rc, batches, out = run_batches(tmp_path / "b", group_vars={"llm_stack_serial": "25%"},
                                   extra=["-e", "llm_stack_serial=2"])
    assert rc == 0, out
    assert batches == [HOSTS[:2], HOSTS[2:]]
    # nothing set: the playbook's default, all at once
    rc, batches, out = run_batches(tmp_path / "c")
    assert rc == 0, out
    assert batches == [HOSTS]
    # one host of another opinion: stopped before any batch, the variable and the fix named
    rc, batches, out = run_batches(tmp_path / "d", group_vars={"llm_stack_serial": 1},
                                   host_vars={"gpu-3": {"llm_stack_serial": 3}})
    assert rc != 0 and batches == []
    assert "llm_stack_serial differs between the hosts of the play" in out
