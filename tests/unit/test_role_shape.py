# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shape docs/architecture.md promises for the YAML: decisions live in module_utils, YAML sequences actions.

- no Jinja expression in a role, playbook or scenario spans more than three lines (a longer one is a decision,
  or a record that reads better as a YAML mapping of plain references);
- a role's vars/ holds data: its values are literals or one whole reference to a variable, never a filter,
  a test or a conditional;
- a task file stays short (the target is about 120 lines; MAX_TASK_FILE_LINES is the hard limit), and
  cuda_toolkit flows through five task files or fewer;
- a conditional (when, that, until, changed_when, failed_when) in a role's tasks or handlers or a playbook holds
  two clauses at most and no inline if/else: a longer one is a decision, a boolean of the plan or result the role
  computes in Python, or a block with its own when. The few that stay are in CONDITIONALS_ALLOWED, with the reason
  (the YAML says it too, on the line above);
- a task's value (a module option, a vars entry, a loop) does not choose with an inline if/else: the role's plan
  gives the value. Messages and task names may word themselves so. The few left are in INLINE_ALLOWED, with the
  reason, and with CONDITIONALS_ALLOWED they stay under MAX_DECISIONS_LEFT.

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
CONDITIONAL_KEYS = ("when", "that", "until", "changed_when", "failed_when")
MAX_CLAUSES = 2
# A quoted string, a word, or any other character: and/or inside quotes are text, not clauses.
JINJA_TOKEN = re.compile(r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[A-Za-z_][A-Za-z0-9_]*|\S""", re.S)
# (file, task name): why the conditional stays decision-shaped.
CONDITIONALS_ALLOWED = {
    ("roles/cuda_toolkit/tasks/install.yml", "Put /usr/local/cuda back as it was, unless it is to point at the new toolkit"):
        "the always section of the installer's rescue block: whether the installer failed and what the new state"
        " read are known only there, and a set_fact in always would run on the failure path too",
}

# (file, task name, value): why the value still chooses with an inline if/else.
SECRET_KEPT_UNTEMPLATED = "omit is the only way to leave a secret untemplated: preflight (collect) needs no vault password"
SERVE_TASK = ("roles/vllm_serve/tasks/validate_service.yml", "Work out the service, its flags and its tensor parallel size")
INLINE_ALLOWED = {
    SERVE_TASK + ("block/gpufleet.llm_stack.vllm_serve_state/api_key",): SECRET_KEPT_UNTEMPLATED,
    SERVE_TASK + ("block/gpufleet.llm_stack.vllm_serve_state/hf_token",): SECRET_KEPT_UNTEMPLATED,
}
# The most decision-shaped expressions the roles and playbooks may keep (conditionals and inline choices).
MAX_DECISIONS_LEFT = 4


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


def clauses(expression):
    """(clauses, inline_if) of one conditional: operands joined by and/or (parentheses count their inner ones)."""
    if not isinstance(expression, str):
        return 1, False
    words = [token for token in JINJA_TOKEN.findall(expression) if token[0] not in "'\""]
    return 1 + sum(1 for word in words if word in ("and", "or")), "if" in words


def decisions(document, limit=MAX_CLAUSES):
    """(task name, key, clauses) of each conditional with more than limit clauses or an inline if/else.

    A when (until, changed_when, failed_when) list counts each item as a clause; each item of that is judged alone.
    """
    found = []

    def walk(node, task):
        if isinstance(node, list):
            for item in node:
                walk(item, task)
        elif isinstance(node, dict):
            task = node.get("name", task) if isinstance(node.get("name"), str) else task
            for key, value in node.items():
                if key in CONDITIONAL_KEYS:
                    items = value if isinstance(value, list) else [value]
                    for group in ([[item] for item in items] if key == "that" else [items]):
                        counted = [clauses(item) for item in group]
                        total = sum(count for count, dummy in counted)
                        if total > limit or any(inline for dummy, inline in counted):
                            found.append((task, key, total))
                else:
                    walk(value, task)

    walk(document, None)
    return found


# Keys whose text is shown, not acted on: an inline if/else there words a message.
SHOWN_KEYS = ("name", "msg", "fail_msg", "success_msg", "quiet")


def inline_choices(document):
    """(task name, key path) of each value outside SHOWN_KEYS whose Jinja chooses with an inline if/else."""
    found = []

    def walk(node, task, path):
        if isinstance(node, list):
            for item in node:
                walk(item, task, path)
        elif isinstance(node, dict):
            task = node.get("name", task) if isinstance(node.get("name"), str) else task
            for key, value in node.items():
                if key in SHOWN_KEYS or key in CONDITIONAL_KEYS:
                    continue
                walk(value, task, path + (str(key),))
        elif isinstance(node, str):
            for match in EXPRESSION.finditer(node):
                words = [token for token in JINJA_TOKEN.findall(match.group(0)) if token[0] not in "'\""]
                if "if" in words and "else" in words:
                    found.append((task, "/".join(path)))
                    break

    walk(document, None, ())
    return found


def conditional_files():
    return [p for p in yaml_files("roles", "playbooks")
            if relative(p).startswith("playbooks") or relative(p).split(os.sep)[2:3] in (["tasks"], ["handlers"])]


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


def test_the_conditional_scanner_finds_decisions():
    bad = yaml.safe_load("""
- name: Three clauses
  ansible.builtin.debug:
  when: a and (b or c)
- name: A list of three
  block:
    - name: Inner
      ansible.builtin.debug:
      when: [a, b, not c]
- name: Inline choice
  ansible.builtin.assert:
    that:
      - "(x if y else z) | bool"
      - a or b
  changed_when: "'and or and' in out or c and d"
""")
    assert decisions(bad) == [("Three clauses", "when", 3), ("Inner", "when", 3), ("Inline choice", "that", 1),
                              ("Inline choice", "changed_when", 3)]
    good = yaml.safe_load("""
- name: Two clauses, words in quotes
  ansible.builtin.assert:
    that: ["a or b", "c and d", "'x or y and z' in e"]
  when: ["'a and b or c' in x", y]
  failed_when: false
  until: r.verdict | default('fail') != 'wait'
""")
    assert decisions(good) == []
    assert clauses("a and b or (c and 'd or e')") == (4, False)


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


def test_the_conditionals_are_scanned():
    files = [relative(p) for p in conditional_files()]
    assert {"roles/vllm_source/tasks/main.yml", "roles/vllm_serve/handlers/main.yml", "playbooks/site.yml"} <= set(files)
    assert not [f for f in files if "/defaults/" in f or "/vars/" in f or "/meta/" in f]


@pytest.mark.parametrize("path", [relative(p) for p in conditional_files()])
def test_conditionals_hold_two_clauses_at_most(path):
    found = [(path, task) for task, dummy, dummy2 in decisions(load(os.path.join(REPO, path)))]
    assert [where for where in found if where not in CONDITIONALS_ALLOWED] == []
    with open(os.path.join(REPO, path)) as handle:
        text = handle.read()
    for where in found:
        # The YAML says why on the line above the conditional's task.
        assert re.search(r"#[^\n]*\n *- name: %s\n" % re.escape(where[1]), text), where


def test_the_allowed_conditionals_are_still_there():
    for (path, task), reason in CONDITIONALS_ALLOWED.items():
        assert reason and task in [t for t, dummy, dummy2 in decisions(load(os.path.join(REPO, path)))]


def test_cuda_toolkit_flows_through_five_task_files_or_fewer():
    assert len(os.listdir(os.path.join(REPO, "roles", "cuda_toolkit", "tasks"))) <= 5


def test_the_inline_choice_scanner_finds_choices_and_skips_messages():
    sample = yaml.safe_load("""
- name: "Say {{ 'a' if x else 'b' }}"
  ansible.builtin.debug:
    msg: "{{ 'on' if y else 'off' }}"
- name: Choose
  ansible.builtin.file:
    mode: "{{ '0700' if tmp else '0755' }}"
    path: "{{ p }}"
  vars:
    where: "{{ a if a is abs else '/x' }}"
  when: "(a if b else c) | bool"
""")
    assert inline_choices(sample) == [("Choose", "ansible.builtin.file/mode"), ("Choose", "vars/where")]


@pytest.mark.parametrize("path", [relative(p) for p in conditional_files()])
def test_task_values_do_not_choose_inline(path):
    found = [(path,) + where for where in inline_choices(load(os.path.join(REPO, path)))]
    assert [where for where in found if where not in INLINE_ALLOWED] == []
    with open(os.path.join(REPO, path)) as handle:
        text = handle.read()
    for where in found:
        assert re.search(r"#[^\n]*\n *- name: %s\n" % re.escape(where[1]), text), where


def test_few_decision_shaped_expressions_are_left():
    for path, task, value in INLINE_ALLOWED:
        assert value in [v for t, v in inline_choices(load(os.path.join(REPO, path))) if t == task]
    assert len(CONDITIONALS_ALLOWED) + len(INLINE_ALLOWED) <= MAX_DECISIONS_LEFT
