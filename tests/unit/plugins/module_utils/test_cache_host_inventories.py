# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cache host's settings as the example inventories and the molecule scenarios give them pass the input checks
of fleet_cache (wheel_index.server_problems) and hf_mirror (hf_mirror.problems), with no warning.

The values are rendered from the role defaults and the inventories' group variables with Jinja (the few lookups and
filters they use stood in for); the TLS files, which must be controller files, are stood in for by empty files.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import jinja2
import pytest
import yaml

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import hf_mirror as M
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_index as W

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
# source: (inventory_dir or None, the cache host's inventory name, the roles the cache host runs there)
SOURCES = {
    "inventories/gpu": ("cache-01.example.internal", ("fleet_cache", "hf_mirror")),
    "inventories/testfleet": ("testfleet-cache", ("fleet_cache", "hf_mirror")),
    "molecule/fleet_cache": ("fleet_cache-cache", ("fleet_cache",)),  # fleet_cache_hf_mirror: false there
    "molecule/qwen_model_fetch": ("qwen_model_fetch-cache", ("hf_mirror",)),
}


class _Loader(yaml.SafeLoader):
    """YAML with ansible-vault values (group_vars/all/vault.yml), read as a placeholder."""


_Loader.add_constructor("!vault", lambda loader, node: "VAULTED")


def _load(path):
    with open(os.path.join(REPO, path)) as handle:
        return yaml.load(handle, Loader=_Loader) or {}  # nosec: a SafeLoader


def _group_vars(source):
    """The variables of the groups all, then llm_cache and hf_mirror (the cache host's), as the source sets them."""
    found = {}
    if source.startswith("molecule/"):
        groups = _load(os.path.join(source, "molecule.yml"))["provisioner"]["inventory"].get("group_vars", {})
        for group in ("all", "llm_cache", "hf_mirror"):
            found.update(groups.get(group) or {})
        return found
    for group in ("all", "llm_cache", "hf_mirror"):
        directory = os.path.join(REPO, source, "group_vars", group)
        for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
            found.update(_load(os.path.join(source, "group_vars", group, name)))
    return found


def _render(variables, source, host):
    """variables with every string rendered as far as the stand-ins allow (what cannot be rendered stays as it is)."""
    env = jinja2.Environment()
    env.filters["dirname"] = os.path.dirname
    env.filters["bool"] = lambda value: value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes")
    env.globals["lookup"] = lambda kind, name, *a, **k: "/tmp/molecule/" + name if kind.endswith("env") else ""
    done = dict(variables, inventory_hostname=host, inventory_dir=os.path.join(REPO, source))
    done = dict((key, re.sub(r"\$\{(\w+)\}", r"/tmp/molecule/\1", value) if isinstance(value, str) else value)
                for key, value in done.items())
    for _round in range(6):
        for key, value in done.items():
            if isinstance(value, str) and "{{" in value:
                try:
                    done[key] = env.from_string(value).render(done)
                except Exception:  # pylint: disable=broad-except
                    pass
    return done


def settings_of(source, tmp_path):
    host = SOURCES[source][0]
    variables = {}
    for role in ("llm_stack", "fleet_cache", "hf_mirror"):
        variables.update(_load(os.path.join("roles", role, "defaults", "main.yml")))
    variables.update(_group_vars(source))
    variables = _render(variables, source, host)
    for key in ("fleet_cache_index_tls_cert", "fleet_cache_index_tls_key", "hf_mirror_tls_cert", "hf_mirror_tls_key"):
        if variables.get(key):
            stand_in = tmp_path / key
            stand_in.write_text("PEM")
            variables[key] = str(stand_in)
    return variables


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_the_cache_host_settings_of_the_examples_pass_with_no_warning(source, tmp_path):
    v = settings_of(source, tmp_path)
    roles = SOURCES[source][1]
    if "fleet_cache" in roles:
        assert v["fleet_cache_hf_mirror"] is ("hf_mirror" in roles)
        server = {"port": v["fleet_cache_index_port"], "listen_host": v["fleet_cache_index_listen_host"],
                  "data_dir": v["fleet_cache_data_dir"], "venv": v["fleet_cache_venv"],
                  "config_dir": v["fleet_cache_config_dir"], "log_dir": v["fleet_cache_log_dir"],
                  "wheelhouse": v["fleet_cache_wheelhouse"], "tls_cert": v["fleet_cache_index_tls_cert"],
                  "tls_key": v["fleet_cache_index_tls_key"], "workers": v["fleet_cache_index_workers"],
                  "threads": v["fleet_cache_index_threads"], "prefix": v["fleet_cache_prefix"],
                  "wheelhouse_dest": v["fleet_cache_wheelhouse_dest"], "user": v["fleet_cache_user"],
                  "service_mgr": "systemd"}
        assert not any("{{" in str(value) for value in server.values()), server
        assert W.server_problems(server) == []
        assert W.server_warnings({"listen_host": server["listen_host"], "index_url": v["llm_stack_wheel_index_url"]}) == []
    if "hf_mirror" in roles:
        mirror = dict((key, v["hf_mirror_" + key]) for key in M.OPTIONS)
        assert not any("{{" in str(value) for value in mirror.values()), mirror
        assert M.problems(mirror) == []
        assert M.warnings(mirror) == []


def test_the_examples_are_read_as_written():
    """The stand-ins do not hide what the examples set: the listen addresses and URLs the checks judge."""
    gpu = _render(_group_vars("inventories/gpu"), "inventories/gpu", "cache-01.example.internal")
    assert (gpu["fleet_cache_index_listen_host"], gpu["hf_mirror_listen_host"]) == ("0.0.0.0", "0.0.0.0")
    assert gpu["llm_stack_wheel_index_url"] == "https://cache-01.example.internal:8080"
    testfleet = _group_vars("inventories/testfleet")
    assert testfleet["fleet_cache_index_listen_host"] == "127.0.0.1" and testfleet["hf_mirror_url"] == "http://127.0.0.1:28948"
    assert _group_vars("molecule/fleet_cache")["llm_stack_wheel_index_url"] == "https://127.0.0.1:28967"
    assert _group_vars("molecule/qwen_model_fetch")["hf_mirror_url"] == "https://127.0.0.1:28918"
