# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The systemd units of the fleet cache host, the package index (role fleet_cache) and the hub mirror (role
hf_mirror), as their roles render them with their defaults, scored by `systemd-analyze security --offline=true`:
3.0 or lower each ("OK"); the vLLM unit (role vllm_serve, rendered from the plan of its defaults) 5.0 or lower.
tests/ci/unit.sh installs Debian's systemd where systemd-analyze is missing.

The score is the one systemd prints for the unit file alone; the scenarios fleet_cache and qwen_model_fetch run the
same units under systemd with the real pypiserver and olah, and molecule/default serves the CPU vLLM under the vLLM
unit.
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

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm_serve as V

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LIMITS = {"fleet_cache": 3.0, "hf_mirror": 3.0, "vllm_serve": 5.0}
UNITS = {
    "fleet_cache": ("fleet-index.service.j2", "fleet-index.service"),
    "hf_mirror": ("hf-mirror.service.j2", "hf-mirror.service"),
    "vllm_serve": ("vllm.service.j2", "vllm.service"),
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


def vllm_serve_plan(values):
    """vllm_serve's plan from its defaults, on a systemd host with one GPU, as the role's validate step makes it."""
    inputs = {key: values["vllm_serve_" + key] for key in V.INPUTS if "vllm_serve_" + key in values}
    inputs.update(model="Qwen/Qwen3.5-9B", prefix_venv=values["llm_stack_prefix"] + "/venv", hostname="gpu-01",
                  cpu_only_test_host=False, vllm_version="0.20.2")
    config = {"architectures": ["Qwen3_5ForConditionalGeneration"],
              "text_config": {"num_attention_heads": 16, "num_key_value_heads": 4}}
    info = {"pid1": "systemd",
            "model": {"config": config, "resolved": inputs["models_dir"] + "/Qwen/Qwen3.5-9B/" + "a" * 40,
                      "manifest": {"commit": "a" * 40, "total_size": None}},
            "vllm": {"distribution": "vllm", "version": "0.20.2", "files_sha256": "f" * 64}}
    facts = {"llm_stack_host": {"gpu": {"count": 1}, "venv": inputs["prefix_venv"]}}
    found = V.plan(inputs, facts=facts, info=info, api_key="sk-unit-0123456789abcdef", hf_token="")
    assert not found["errors"], found["errors"]
    assert found["mode"] == "systemd"
    return found


def render(role):
    template, name = UNITS[role]
    with open(os.path.join(REPO, "roles", role, "templates", template), encoding="utf-8") as handle:
        text = handle.read()
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    values = role_vars(role)
    if role == "vllm_serve":
        values["vllm_serve_plan"] = vllm_serve_plan(values)
    return name, env.from_string(text).render(values)


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
def test_the_unit_scores_within_its_limit(role, tmp_path):
    name, text = render(role)
    path = tmp_path / name
    path.write_text(text)
    score, report = exposure(str(path))
    assert score <= LIMITS[role], "%s scores %.1f (limit %.1f):\n%s" % (name, score, LIMITS[role], report)


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
    if role == "vllm_serve":
        assert writable[0].split() == [values["vllm_serve_cache_dir"]]
    elif role == "fleet_cache":
        # the packages are read-only for the index: the cache host publishes them itself; the log directory is
        # root's (run_logged's job files), the index writes its own subdirectory only
        assert writable[0].split() == [values["fleet_cache_log_dir"] + "/index"]
        exec_start = re.findall(r"^ExecStart=(.*)$", text, re.M)[0].split()
        assert "--authenticate" in exec_start and "--passwords" not in exec_start and "-P" not in exec_start
    else:
        assert writable[0].split() == [values["hf_mirror_cache_dir"], values["hf_mirror_log_dir"]]


def test_the_vllm_unit_keeps_what_vllm_needs():
    """What vLLM's issue tracker records as breaking it stays out; the GPUs' devices stay in."""
    _name, text = render("vllm_serve")
    directives = dict(line.split("=", 1) for line in text.splitlines() if re.match(r"^[A-Z][A-Za-z]+=", line))
    families = re.findall(r"^RestrictAddressFamilies=(.*)$", text, re.M)
    assert families and "AF_UNIX" in families[0].split() and "AF_INET" in families[0].split()
    for breaking in ("ProtectClock", "IPAddressDeny", "MemoryDenyWriteExecute", "PrivateDevices", "ProcSubset",
                     "PrivateNetwork", "SystemCallFilter"):
        assert breaking not in directives, breaking
    assert directives["DevicePolicy"] == "closed"
    assert "char-nvidia* rw" in re.findall(r"^DeviceAllow=(.*)$", text, re.M)
    assert directives["KillMode"] == "control-group"
    assert directives["CapabilityBoundingSet"] == ""
