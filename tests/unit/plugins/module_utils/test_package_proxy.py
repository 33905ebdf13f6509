# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""package_proxy: the URL a host's pip uses, the proxy's settings, the devpi indexes and what to send to get them, on
devpi-server 6.20.3's own answers (tests/fixtures/package_proxy)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import package_proxy as P

FIXTURES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "package_proxy"))


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return handle.read()


def settings(**changes):
    base = {"port": 8081, "devpi_port": 3141, "index_port": 8080, "pypi_url": "https://pypi.org/simple/",
            "torch_url": "https://download.pytorch.org/whl", "builds": ["cu128", "cu130"], "devpi_version": "6.20.3",
            "offline": False, "venv": "/opt/fleet-cache/devpi", "serverdir": "/var/lib/fleet-cache/devpi",
            "user": "fleet-pypi", "index_user": "fleet-index", "config_dir": "/etc/fleet-cache",
            "outside_url": "https://cache-01:8081", "listen_host": "0.0.0.0", "tls": True, "wheelhouse": "",
            "wheelhouse_dest": "/opt/fleet-cache/wheelhouse"}
    base.update(changes)
    return base


def test_index_url_per_build():
    assert P.index_url("https://cache-01:8081/", "cu128") == "https://cache-01:8081/root/cu128/+simple/"
    assert P.index_url("", "cu128") == "" and P.index_url(None, "cpu") == ""
    assert P.config_url("https://cache-01:8081", "cpu") == "https://cache-01:8081/root/cpu?no_projects="
    with pytest.raises(P.PackageProxyError):
        P.index_url("https://cache-01:8081", "../admin")


def test_pip_environment_points_a_pip_at_the_proxy():
    base = "https://cache-01:8081/"
    assert P.pip_environment(base) == {"PIP_INDEX_URL": "https://cache-01:8081/root/pypi/+simple/"}
    assert P.pip_environment(base, "cu130", "/ctl/ca.pem", "/opt/llm-stack/package-index-ca.pem") == {
        "PIP_INDEX_URL": "https://cache-01:8081/root/cu130/+simple/",
        "PIP_CERT": "/opt/llm-stack/package-index-ca.pem"}
    # No CA on the controller: the hosts' trust store, no PIP_CERT.
    assert "PIP_CERT" not in P.pip_environment(base, None, "", "/opt/llm-stack/package-index-ca.pem")
    with pytest.raises(P.PackageProxyError):
        P.pip_environment(base, "../admin")


@pytest.mark.parametrize("base,own", [
    ("", ""), (None, ""), ("  ", ""),
    ("https://cache-01:8081", "https://pypi.internal/simple"),
    ("https://cache-01:8081", "--no-index --find-links /srv/wheels"),
    ("https://cache-01:8081", ["", "/ctl/wheelhouse"]),
])
def test_pip_environment_is_empty_without_proxy_or_with_a_source_of_the_role(base, own):
    assert P.pip_environment(base, None, "/ctl/ca.pem", "/opt/ca.pem", own) == {}


@given(st.lists(st.sampled_from(["", "https://pypi.internal/simple", "/ctl/wheelhouse"]), max_size=3))
def test_any_own_source_wins_over_the_proxy(own):
    env = P.pip_environment("https://cache-01:8081", None, "", "", own)
    assert (env == {}) == any(own)


@pytest.mark.parametrize("base", ["", "https://cache-01:8081", "http://10.0.0.5:8081/"])
def test_fleet_problem_accepts_a_base_url(base):
    assert P.fleet_problem(base) == ""


@pytest.mark.parametrize("base", ["cache-01:8081", "https://user:pw@cache-01:8081",
                                  "https://cache-01:8081/root/cu128/+simple/", "ftp://cache-01", 8081])
def test_fleet_problem_names_the_variable_and_the_fix(base):
    problem = P.fleet_problem(base)
    assert problem.startswith("llm_stack_package_index_url=") and "Fix:" in problem


def test_default_settings_pass():
    assert P.host_problems(settings()) == []


def test_every_problem_at_once():
    found = P.host_problems(settings(port=0, devpi_port="x", pypi_url="pypi.org", torch_url="", builds=["cu128", "gpu"],
                                     devpi_version="latest", offline="yes", venv="relative/devpi",
                                     serverdir="/var/lib/../devpi", user="root"))
    text = " ".join(found)
    for variable in ("fleet_cache_proxy_port", "fleet_cache_proxy_devpi_port", "fleet_cache_proxy_pypi_url",
                     "fleet_cache_proxy_torch_url", "fleet_cache_proxy_torch_builds", "fleet_cache_proxy_devpi_version",
                     "fleet_cache_proxy_offline", "fleet_cache_proxy_venv", "fleet_cache_proxy_dir",
                     "fleet_cache_proxy_user"):
        assert variable in text, variable


def test_ports_differ_and_users_differ():
    assert "must differ" in " ".join(P.host_problems(settings(port=8080)))
    assert "must differ" in " ".join(P.host_problems(settings(devpi_port=8081)))
    assert "the index's user" in " ".join(P.host_problems(settings(user="fleet-index")))
    assert "twice" in " ".join(P.host_problems(settings(builds=["cu128", "cu128"])))
    assert P.host_problems(settings(builds=[]))


def test_indexes_mirror_each_upstream_and_one_index_per_build():
    planned = P.indexes(settings())
    assert [i["path"] for i in planned] == ["root/pypi", "root/pytorch-cu128", "root/pytorch-cu130", "root/cu128",
                                            "root/cu130"]
    by_path = {i["path"]: i["config"] for i in planned}
    assert by_path["root/pytorch-cu128"]["mirror_url"] == "https://download.pytorch.org/whl/cu128/"
    assert by_path["root/cu130"]["bases"] == ["root/pytorch-cu130", "root/pypi"]
    assert all(c["volatile"] is False for c in by_path.values())
    assert by_path["root/cu128"]["acl_upload"] == ["root"] and by_path["root/cu128"]["acl_toxresult_upload"] == ["root"]


def devpi_answer(name):
    return json.loads(fixture(name))


def test_changes_on_devpis_answers():
    """devpi-server 6.20.3's answers for a mirror and a stage made as planned (with another title and the anonymous
    upload of test results devpi gives a new stage), and for an index it does not have."""
    mirror = devpi_answer("devpi-6.20.3-get-mirror.json")["result"]
    stage = devpi_answer("devpi-6.20.3-get-stage.json")["result"]
    assert devpi_answer("devpi-6.20.3-get-missing.json")["message"].startswith("The stage root/cu130")
    local = settings(pypi_url=mirror["mirror_url"], builds=["cpu"])
    planned = P.indexes(local)
    sent = P.changes({"root/pypi": mirror, "root/pytorch-cpu": None, "root/cpu": stage}, planned)
    assert [(s["path"], s["method"]) for s in sent] == [
        ("root/pypi", "PATCH"), ("root/pytorch-cpu", "PUT"), ("root/cpu", "PATCH")]
    patch = sent[2]["config"]
    assert "projects" not in patch and patch["mirror_whitelist_inheritance"] == "intersection"
    assert patch["acl_toxresult_upload"] == ["root"] and patch["title"].startswith("The fleet's packages")


def test_changes_refuse_a_mirror_where_a_stage_is_planned():
    mirror = devpi_answer("devpi-6.20.3-get-mirror.json")["result"]
    with pytest.raises(P.PackageProxyError, match="root/cpu"):
        P.changes({"root/cpu": mirror}, [i for i in P.indexes(settings(builds=["cpu"])) if i["path"] == "root/cpu"])


def apply(store, sent):
    for item in sent:
        config = copy.deepcopy(item["config"])
        if item["method"] == "PUT":
            assert store.get(item["path"]) is None
        store[item["path"]] = config


@given(builds=st.lists(st.sampled_from(["cu118", "cu126", "cu128", "cu130", "cpu", "rocm6.4", "xpu"]), min_size=1,
                       max_size=4, unique=True),
       known=st.lists(st.sampled_from(["root/pypi", "root/cu128", "root/pytorch-cu128", "root/cpu"]), unique=True),
       title=st.text(max_size=8))
def test_changes_converge(builds, known, title):
    """Whatever devpi holds of the planned indexes (of the right type, other titles), one round of changes brings it
    to the plan, and a second round sends nothing."""
    planned = P.indexes(settings(builds=builds))
    kinds = {i["path"]: i["config"]["type"] for i in planned}
    store = {}
    for path in known:
        if path in kinds:
            store[path] = {"type": kinds[path], "title": title, "volatile": True, "projects": []}
    apply(store, P.changes(store, planned))
    assert P.changes(store, planned) == []
    assert set(store) >= set(kinds)


@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d", "e"]), st.sampled_from(["", "k1", "k2", "k3"])),
                unique_by=lambda pair: pair[0]))
def test_first_fetchers_one_host_per_key(pairs):
    first = P.first_fetchers([list(pair) for pair in pairs])
    keys = {key for _host, key in pairs if key}
    assert len(first) == len(keys) and first == sorted(first)
    for key in keys:
        assert [host for host, k in pairs if k == key][0] in first


def test_answer():
    url = "https://cache-01:8081/root/cpu/+simple/"
    ok = P.answer(url, 200, fixture("devpi-6.20.3-get-stage.json").encode())
    assert ok == {"url": url, "answered": True, "error": ""}
    assert not P.answer(url, 200, fixture("devpi-6.20.3-get-mirror.json"))["answered"]
    assert P.answer(url, 404, b"")["error"].endswith("(404)")
    assert "refused" in P.answer(url, None, b"[Errno 111] Connection refused")["error"]
    assert not P.answer(url, 200, b"<html>")["answered"] and P.answer(url, 502, b"")["error"] == "HTTP 502"


def test_server_plan():
    plan = P.server_plan(settings(offline=True, wheelhouse="/ctl/wheels"))
    assert plan["argv"][:2] == ["/opt/fleet-cache/devpi/bin/devpi-server", "--serverdir"]
    assert plan["argv"][-1] == "--offline-mode" and "--restrict-modify" in plan["argv"]
    assert plan["argv"][plan["argv"].index("--host") + 1] == "127.0.0.1"
    assert plan["pip_argv"][-3:] == ["--find-links", "/opt/fleet-cache/wheelhouse", "devpi-server==6.20.3"]
    assert plan["probe_url"] == "https://127.0.0.1:8081/+api" and plan["devpi_url"] == "http://127.0.0.1:3141"
    assert "--offline-mode" not in P.server_plan(settings())["argv"]
