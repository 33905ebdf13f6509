# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet_cache_state action: the role's defaults as its vars/main.yml hands them over, checked before any change;
the same problems, warnings and messages as module_utils/wheel_index.py gives them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

from ansible_collections.gpufleet.llm_stack.plugins.action import fleet_cache_state as action_module
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_index as W
from action_task import new_action

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))


def role_inputs(**changes):
    """fleet_cache_inputs of roles/fleet_cache/vars/main.yml with the role's defaults (the templated ones by hand)."""
    with open(os.path.join(REPO, "roles", "fleet_cache", "defaults", "main.yml")) as handle:
        defaults = yaml.safe_load(handle)
    with open(os.path.join(REPO, "roles", "fleet_cache", "vars", "main.yml")) as handle:
        names = yaml.safe_load(handle)["fleet_cache_inputs"]
    prefix = defaults["fleet_cache_prefix"]
    rendered = dict(defaults, fleet_cache_venv=prefix + "/venv", fleet_cache_wheelhouse_dest=prefix + "/wheelhouse",
                    fleet_cache_data_dir="/var/lib/fleet-cache", llm_stack_wheel_index_url="")
    rendered.update(fleet_cache_proxy_torch_builds=["cu128"], fleet_cache_proxy_venv=prefix + "/devpi",
                    fleet_cache_proxy_dir="/var/lib/fleet-cache/devpi", llm_stack_package_index_url="")
    inputs = {}
    for key, template in names.items():
        if isinstance(template, dict):
            inputs[key] = {k: rendered[t.strip("{} ").split(" ")[0]] for k, t in template.items()}
            continue
        name = template.strip("{} ").split(" ")[0]
        inputs[key] = rendered[name]
    inputs.update(changes)
    return inputs


def run(inputs, facts=None, check_mode=False, hostname="cache-1"):
    action = new_action(action_module, {"inputs": inputs}, check_mode=check_mode)
    return action.run(task_vars={"ansible_facts": dict(facts or {}), "inventory_hostname": hostname})


def test_the_role_defaults_pass_with_no_warning_in_check_mode_too():
    inputs = role_inputs()
    assert set(inputs) == {"port", "listen_host", "data_dir", "venv", "config_dir", "log_dir", "wheelhouse", "tls_cert",
                           "tls_key", "workers", "threads", "prefix", "wheelhouse_dest", "user", "pypiserver_version",
                           "gunicorn_version", "pip_index_url", "index_url", "proxy"}
    for check_mode in (False, True):
        result = run(inputs, facts={"service_mgr": "systemd"}, check_mode=check_mode)
        assert not result.get("failed") and result["changed"] is False and result["setting_warnings"] == []
        assert result["proxy"] is None


def test_the_proxy_planned_where_it_is_on():
    proxy = dict(role_inputs()["proxy"], enabled=True, outside_url="https://cache-1:8081")
    result = run(role_inputs(proxy=proxy), facts={"service_mgr": "systemd"})
    assert not result.get("failed"), result.get("msg")
    assert [i["path"] for i in result["proxy"]["indexes"]] == ["root/pypi", "root/pytorch-cu128", "root/cu128"]
    assert result["proxy"]["probe_url"] == "http://127.0.0.1:8081/+api"
    assert "--outside-url" in result["proxy"]["argv"]


def test_the_proxys_problems_join_the_indexs():
    proxy = dict(role_inputs()["proxy"], enabled=True, port=8080, user="root")
    result = run(role_inputs(proxy=proxy, workers=0), facts={"service_mgr": "systemd"})
    assert result["failed"] and result["msg"].startswith("fleet_cache on cache-1: ")
    for variable in ("fleet_cache_index_workers", "fleet_cache_proxy_port", "fleet_cache_proxy_user"):
        assert variable in result["msg"]


def test_every_problem_in_one_message_naming_the_host():
    inputs = role_inputs(port="70000", workers=0, user="root")
    result = run(inputs, facts={"service_mgr": "sysvinit"})
    settings = dict(inputs, service_mgr="sysvinit")
    del settings["index_url"]
    expected = W.server_problems(settings)
    assert len(expected) == 4
    assert result["failed"] is True and result["msg"] == "fleet_cache on cache-1: " + " ".join(expected)
    assert "setting_warnings" not in result
    assert "fleet_cache_index_port is '70000'" in result["msg"] and "PID 1 of this host is sysvinit" in result["msg"]


def test_facts_not_gathered_count_as_systemd():
    assert not run(role_inputs()).get("failed")


@pytest.mark.parametrize("listen, url, warned", [
    ("0.0.0.0", "http://10.0.0.5:8080/simple/", True),
    ("10.0.0.5", "http://10.0.0.5:8080/simple/", False),
    ("0.0.0.0", "https://cache-01.example:8080/simple/", False),
    ("0.0.0.0", "", False),
])
def test_listening_on_every_address_for_one_is_a_warning(listen, url, warned):
    result = run(role_inputs(listen_host=listen, index_url=url))
    expected = W.server_warnings({"listen_host": listen, "index_url": url})
    assert result["setting_warnings"] == expected and bool(expected) is warned
    if warned:
        assert expected[0].startswith("fleet_cache_index_listen_host is '0.0.0.0'") and "10.0.0.5" in expected[0]


def test_the_inputs_are_no_log():
    assert action_module.OPTIONS["inputs"]["no_log"] is True


def test_the_plan_of_the_defaults_pip_from_pip_s_own_index_probed_at_127_0_0_1_over_http():
    result = run(role_inputs())
    assert result["pip_argv"] == ["/opt/fleet-cache/venv/bin/python", "-m", "pip", "install", "--no-input",
                                  "--disable-pip-version-check", "pypiserver==2.4.2", "gunicorn==27.0.1"]
    assert result["pip_index_variables"] == []
    assert result["probe_url"] == "http://127.0.0.1:8080/simple/"


def test_a_wheelhouse_is_pip_s_only_source():
    result = run(role_inputs(wheelhouse="/srv/wheelhouse", wheelhouse_dest="/opt/fc/wheelhouse",
                             pypiserver_version="2.3.2", gunicorn_version="23.0.0"))
    assert result["pip_argv"] == ["/opt/fleet-cache/venv/bin/python", "-m", "pip", "install", "--no-input",
                                  "--disable-pip-version-check", "--no-index", "--find-links", "/opt/fc/wheelhouse",
                                  "pypiserver==2.3.2", "gunicorn==23.0.0"]


def test_the_pip_index_url_is_named_never_returned():
    url = "https://builder:pa55w0rd@pypi.example/simple/"
    result = run(role_inputs(pip_index_url=url))
    assert result["pip_index_variables"] == ["PIP_INDEX_URL"]
    assert "pa55w0rd" not in repr(result) and "--index-url" not in result["pip_argv"]


@pytest.mark.parametrize("listen, cert, key, url", [
    ("0.0.0.0", "", "", "http://127.0.0.1:8080/simple/"),
    ("::", "", "", "http://127.0.0.1:8080/simple/"),
    ("10.0.0.5", "", "", "http://10.0.0.5:8080/simple/"),
    ("0.0.0.0", "/etc/hosts", "/etc/hosts", "https://127.0.0.1:8080/simple/"),
    ("cache-01.example", "/etc/hosts", "/etc/hosts", "https://cache-01.example:8080/simple/"),
])
def test_the_probe_url_https_with_the_certificate_at_127_0_0_1_for_every_address(listen, cert, key, url):
    result = run(role_inputs(listen_host=listen, tls_cert=cert, tls_key=key), facts={"service_mgr": "systemd"})
    assert not result.get("failed") and result["probe_url"] == url


def test_no_plan_when_the_settings_fail():
    result = run(role_inputs(port="70000"))
    assert result["failed"] is True and "pip_argv" not in result and "probe_url" not in result


@pytest.mark.parametrize("listen, host", [("0.0.0.0", "127.0.0.1"), ("::", "127.0.0.1"), ("10.0.0.5", "10.0.0.5"),
                                          ("127.0.0.1", "127.0.0.1"), ("cache-01", "cache-01"), ("::1", "::1")])
def test_local_host_is_127_0_0_1_for_every_address(listen, host):
    assert W.local_host(listen) == host
