# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""python_info driven through AnsibleModule."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import sys

from ansible_collections.gpufleet.llm_stack.plugins.modules import python_info


def test_everything(run_module, tmp_path):
    kind, result, warnings = run_module(python_info.main, {
        "python": sys.executable, "venv": str(tmp_path / "venv"), "space_path": str(tmp_path / "prefix")})
    assert kind == "exit" and result["changed"] is False and warnings == []
    assert result["interpreter"]["found"] is True and result["interpreter"]["name"] == sys.executable
    assert result["venv"] == {"path": str(tmp_path / "venv"), "exists": False, "python_version": None, "abi_tag": None,
                              "error": None}
    assert result["space"]["checked"] == str(tmp_path)


def test_nothing_asked(run_module):
    kind, result, dummy = run_module(python_info.main, {})
    assert kind == "exit" and (result["interpreter"], result["venv"], result["space"]) == (None, None, None)


def test_not_an_interpreter_is_a_result_not_a_failure(run_module):
    kind, result, dummy = run_module(python_info.main, {"python": "/etc/passwd"})
    assert kind == "exit" and result["interpreter"]["found"] is False
    assert "not an executable Python interpreter" in result["interpreter"]["error"]
    assert "Error executing command" not in result["interpreter"]["error"]


def test_bad_timeout(run_module):
    kind, result, dummy = run_module(python_info.main, {"python": "python3", "timeout": 0})
    assert kind == "fail" and result["msg"] == "timeout must be 1 or more seconds, got 0"
