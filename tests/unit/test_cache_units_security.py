# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The systemd units of the fleet cache host, the package index (role fleet_cache) and the hub mirror (role
hf_mirror), as their roles render them with their defaults, scored by `systemd-analyze security --offline=true`:
3.0 or lower each ("OK"). tests/ci/unit.sh installs Debian's systemd where systemd-analyze is missing.

The score is the one systemd prints for the unit file alone; the scenarios fleet_cache and qwen_model_fetch run the
same units under systemd with the real pypiserver and olah.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import shutil
import subprocess

import jinja2
import pytest
import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LIMIT = 3.0
UNITS = {
    "fleet_cache": ("fleet-index.service.j2", "fleet-index.service"),
    "hf_mirror": ("hf-mirror.service.j2", "hf-mirror.service"),
}


def defaults(role):
    with open(os.path.join(REPO, "roles", role, "defaults", "main.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle) or {}


def role_vars(role):
    """The role's defaults over llm_stack's, each template rendered with the others until none changes.

    Defaults that need Ansible itself (lookups, groups) stay as written: the units do not use them.
    """
    values = dict(defaults("llm_stack"), **defaults(role))
    values.update(inventory_hostname="cache-01.example.internal", ansible_managed="Ansible managed")
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    for _round in range(10):
        changed = False
        for key, value in values.items():
            if isinstance(value, str) and "{{" in value:
                try:
                    rendered = env.from_string(value).render(values)
                except Exception:  # pylint: disable=broad-except
                    continue
                if rendered != value:
                    values[key], changed = rendered, True
        if not changed:
            return values
    raise AssertionError("the defaults of %s do not settle" % role)


def render(role):
    template, name = UNITS[role]
    with open(os.path.join(REPO, "roles", role, "templates", template), encoding="utf-8") as handle:
        text = handle.read()
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return name, env.from_string(text).render(role_vars(role))


def exposure(path):
    analyze = shutil.which("systemd-analyze")
    if not analyze:
        pytest.fail("systemd-analyze is missing (Debian's systemd package; tests/ci/unit.sh installs it)")
    run = subprocess.run([analyze, "security", "--offline=true", "--no-pager", path], capture_output=True, text=True,
                         timeout=120, check=False)
    match = re.search(r"Overall exposure level for \S+: ([0-9.]+)", run.stdout)
    assert match, "systemd-analyze security said:\n%s\n%s" % (run.stdout[-2000:], run.stderr[-2000:])
    return float(match.group(1)), run.stdout


@pytest.mark.parametrize("role", sorted(UNITS))
def test_the_unit_scores_3_or_lower(role, tmp_path):
    name, text = render(role)
    path = tmp_path / name
    path.write_text(text)
    score, report = exposure(str(path))
    assert score <= LIMIT, "%s scores %.1f (limit %.1f):\n%s" % (name, score, LIMIT, report)


@pytest.mark.parametrize("role", sorted(UNITS))
def test_the_measure_tells_a_bare_unit_apart(role, tmp_path):
    """The same unit without its hardening section scores EXPOSED: the measure reads the directives."""
    name, text = render(role)
    bare = "\n".join(line for line in text.splitlines()
                     if not re.match(r"(NoNewPrivileges|Capability|Ambient|Private|Protect|Restrict|Lock|Remove|"
                                     r"Keyring|SystemCall|DevicePolicy|ProcSubset|UMask|ReadWritePaths)", line))
    path = tmp_path / name
    path.write_text(bare + "\n")
    score, _report = exposure(str(path))
    assert score > 8.0


@pytest.mark.parametrize("role", sorted(UNITS))
def test_the_unit_writes_only_its_own_directories(role):
    _name, text = render(role)
    writable = re.findall(r"^ReadWritePaths=(.*)$", text, re.M)
    assert len(writable) == 1
    values = role_vars(role)
    if role == "fleet_cache":
        # the packages are read-only for the index: the cache host publishes them itself
        assert writable[0].split() == [values["fleet_cache_log_dir"]]
        exec_start = re.findall(r"^ExecStart=(.*)$", text, re.M)[0].split()
        assert "--authenticate" in exec_start and "--passwords" not in exec_start and "-P" not in exec_start
    else:
        assert writable[0].split() == [values["hf_mirror_cache_dir"], values["hf_mirror_log_dir"]]
