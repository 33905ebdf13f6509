# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shape docs/architecture.md promises for the YAML: decisions live in module_utils, YAML sequences actions.

- no Jinja expression in a role, playbook or scenario spans more than three lines (a longer one is a decision,
  or a record that reads better as a YAML mapping of plain references);
- a role's vars/ holds data: its values are literals or one whole reference to a variable, never a filter,
  a test or a conditional;
- a task file stays short (the target is about 120 lines; MAX_TASK_FILE_LINES is the hard limit), and
  cuda_toolkit flows through five task files or fewer.

Each check is run on a small sample that breaks it first, so a scanner that finds nothing fails here.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import pytest
import yaml

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
YAML_TREES = ("roles", "playbooks", "molecule", "inventories", "awx")
MAX_EXPRESSION_LINES = 3
MAX_TASK_FILE_LINES = 130
EXPRESSION = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.S)
PLAIN_REFERENCE = re.compile(r"^\{\{ *[A-Za-z_][A-Za-z0-9_]* *\}\}$")


def yaml_files(*trees):
    for tree in trees:
        for folder, dirs, files in os.walk(os.path.join(REPO, tree)):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(files):
                if name.endswith((".yml", ".yaml")):
                    yield os.path.join(folder, name)


def strings(node, path=()):
    """(path, string) for every string value of a loaded YAML document."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from strings(value, path + (str(key),))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from strings(value, path + (str(index),))
    elif isinstance(node, str):
        yield path, node


def long_expressions(document, limit=MAX_EXPRESSION_LINES):
    """(where, lines) of each Jinja expression or statement that spans more than limit lines."""
    found = []
    for path, text in strings(document):
        for match in EXPRESSION.finditer(text):
            lines = match.group(0).count("\n") + 1
            if lines > limit:
                found.append(("/".join(path), lines))
    return found


def vars_logic(document):
    """Paths of vars/ values that hold Jinja other than one whole reference to a variable."""
    return ["/".join(path) for path, text in strings(document)
            if ("{{" in text or "{%" in text) and not PLAIN_REFERENCE.match(text.strip())]


class Loader(yaml.SafeLoader):
    """SafeLoader that reads Ansible's tags (!vault, !unsafe) as the plain scalars they tag."""


Loader.add_multi_constructor("!", lambda loader, suffix, node: loader.construct_scalar(node)
                             if isinstance(node, yaml.ScalarNode) else None)


def load(path):
    with open(path) as handle:
        return yaml.load(handle, Loader=Loader)


def relative(path):
    return os.path.relpath(path, REPO)


def test_the_scanners_find_what_they_look_for():
    sample = yaml.safe_load("""
short: "{{ a | b }}"
long: >-
  {{ a if b
     else c
     if d
     else e }}
""")
    assert long_expressions(sample) == [("long", 4)]
    assert vars_logic({"x": "{{ a }}", "y": "{{ a | default(1) }}", "z": ["{{ 'a' if b else 'c' }}"], "w": 3}) == ["y", "z/0"]


def test_every_yaml_file_is_scanned():
    files = [relative(p) for p in yaml_files(*YAML_TREES)]
    assert "roles/cuda_toolkit/tasks/install.yml" in files and "playbooks/site.yml" in files
    assert len(files) > 100


@pytest.mark.parametrize("path", [relative(p) for p in yaml_files(*YAML_TREES)])
def test_no_jinja_expression_runs_past_three_lines(path):
    assert long_expressions(load(os.path.join(REPO, path))) == []


@pytest.mark.parametrize("path", [relative(p) for p in yaml_files("roles") if os.sep + "vars" + os.sep in p])
def test_role_vars_hold_data_only(path):
    assert vars_logic(load(os.path.join(REPO, path))) == []


@pytest.mark.parametrize("path", [relative(p) for p in yaml_files("roles") if os.sep + "tasks" + os.sep in p])
def test_task_files_stay_short(path):
    with open(os.path.join(REPO, path)) as handle:
        assert len(handle.read().splitlines()) <= MAX_TASK_FILE_LINES


def test_cuda_toolkit_flows_through_five_task_files_or_fewer():
    assert len(os.listdir(os.path.join(REPO, "roles", "cuda_toolkit", "tasks"))) <= 5
