# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/llm_router/templates rendered with Jinja: the keys only in the 0600 files, quoted so that systemd's
EnvironmentFile= and sh's '.' read the same value, and the drop-in's runtime directory."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import subprocess

import jinja2

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
TEMPLATES = os.path.join(REPO, "roles", "llm_router", "templates")
VARS = {"ansible_managed": "Ansible managed", "llm_router_config_dir": "/etc/llm-router",
        "llm_router_socket": "/run/llm-router/admin.sock", "llm_router_request_timeout": 600,
        "llm_router_api_keys": ["sk-router-1", "sk-router-2"],
        "llm_router_backend_api_key": "sk-vllm;$(false)&|<>`#"}


def render(name, **more):
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), keep_trailing_newline=True,
                             trim_blocks=True)
    env.filters.update(dirname=os.path.dirname, basename=os.path.basename)
    return env.get_template(name).render(dict(VARS, **more))


def test_the_environment_file_reads_the_same_in_sh(tmp_path):
    path = tmp_path / "env"
    path.write_text(render("env.j2"))
    out = subprocess.check_output(["sh", "-c", 'set -a; . "$1"; printf "%s\\n%s" "$CONFIG" "$LLM_ROUTER_BACKEND_KEY"',
                                   "sh", str(path)], env={"PATH": "/usr/bin:/bin"}).decode()
    assert out == "/etc/llm-router/haproxy.cfg\n" + VARS["llm_router_backend_api_key"]


def test_the_acl_file_has_one_bearer_line_per_key():
    lines = [line for line in render("api_keys.lst.j2").splitlines() if line and not line.startswith("#")]
    assert lines == ["Bearer sk-router-1", "Bearer sk-router-2"]


def test_the_drop_in_and_the_wrapper_hold_no_key():
    drop_in = render("haproxy.service.conf.j2")
    assert "EnvironmentFile=/etc/llm-router/env" in drop_in and "RuntimeDirectory=llm-router\n" in drop_in
    assert "RuntimeDirectory" not in render("haproxy.service.conf.j2", llm_router_socket="/var/run/x/y/admin.sock")
    for name in ("haproxy.service.conf.j2", "run-haproxy.sh.j2", "program.conf.j2"):
        assert "sk-" not in render(name)
    assert "stopwaitsecs=610" in render("program.conf.j2")
