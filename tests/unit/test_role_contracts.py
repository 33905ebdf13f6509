# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The role contracts of docs/architecture.md hold: a role reads of another role only what the contract names.

The contract is the YAML block under "Role contracts" in docs/architecture.md (one source for the reader and for
this test). For every role it names its action, its inputs (the role's argument spec), the plan fields its YAML
acts on, its results, and `reads`: the variables of other roles it may read. This test scans each role's YAML
(tasks, handlers, vars, defaults, templates; comments left out) for names of other roles' variables and fails on
any the contract does not name. A name in `reads` must be a result or an input of the role it belongs to, and a
result must be set by its role, so the contract cannot name what does not exist.

Each check runs first on a small sample that breaks it, so a scanner that finds nothing fails here.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import pytest
import yaml

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
ARCHITECTURE = os.path.join(REPO, "docs", "architecture.md")
BLOCK = re.compile(r"<!-- role-contracts -->\s*```yaml\n(.*?)```", re.S)
SCANNED = ("tasks", "handlers", "vars", "defaults", "templates")
# The role whose defaults are the globals every role reads (llm_stack_*, and preflight's fact llm_stack_host).
GLOBALS = "llm_stack"


def contracts():
    with open(ARCHITECTURE) as handle:
        match = BLOCK.search(handle.read())
    assert match, "docs/architecture.md has no role-contracts YAML block"
    return yaml.safe_load(match.group(1))


def roles():
    return sorted(name for name in os.listdir(os.path.join(REPO, "roles"))
                  if os.path.isdir(os.path.join(REPO, "roles", name)))


def uncommented(line):
    """The line without its comment: a whole-line comment, or ` #` and what follows (Jinja's {# #} too)."""
    if line.lstrip().startswith("#"):
        return ""
    line = re.sub(r"\{#.*?#\}", "", line)
    return line.split(" #")[0]


def foreign_reads(role, lines_by_file, prefixes):
    """{(name, file)} for every name of another role's variable that the role's YAML reads.

    A name right after `gpufleet.llm_stack.` is a module or role, not a variable; a name that starts a line
    followed by `:` is a key being set (include_role vars, a set_fact, a module option), not a read.
    """
    found = set()
    for path, lines in lines_by_file:
        for line in lines:
            text = uncommented(line)
            for prefix in prefixes:
                if prefix == role:
                    continue
                for match in re.finditer(r"(?<![\w.])%s_[a-z0-9_]+" % re.escape(prefix), text):
                    if text[:match.start()].strip() in ("", "-") and re.match(r"\s*:", text[match.end():]):
                        continue
                    found.add((match.group(0), path))
    return found


def role_files(role):
    base = os.path.join(REPO, "roles", role)
    for part in SCANNED:
        for folder, dirs, files in os.walk(os.path.join(base, part)):
            dirs.sort()
            for name in sorted(files):
                path = os.path.join(folder, name)
                with open(path) as handle:
                    yield os.path.relpath(path, REPO), handle.read().splitlines()


def role_inputs(role):
    path = os.path.join(REPO, "roles", role, "meta", "argument_specs.yml")
    if not os.path.exists(path):
        return set()
    with open(path) as handle:
        specs = yaml.safe_load(handle)["argument_specs"]
    return set(name for spec in specs.values() for name in (spec.get("options") or {}))


def role_sets(role):
    """Names the role's tasks register or set as facts."""
    names = set()
    for _path, lines in role_files(role):
        for line in lines:
            match = re.match(r"\s*register:\s*([a-z0-9_]+)", line)
            if match:
                names.add(match.group(1))
            match = re.match(r"\s{4,}([a-z][a-z0-9_]*):", line)
            if match:
                names.add(match.group(1))
    return names


def test_the_scanner_finds_a_foreign_read_and_skips_keys_modules_and_comments():
    lines = [
        "- name: Read it",
        "  ansible.builtin.debug:",
        "    msg: \"{{ wheel_build_installed }}\"",
        "  when: other_role_plan.work",
        "- gpufleet.llm_stack.other_role_state:",
        "    other_role_name: x",
        "# other_role_secret is read elsewhere",
        "    msg: \"{{ x }}\"  # other_role_hidden",
    ]
    found = foreign_reads("mine", [("roles/mine/tasks/main.yml", lines)], ["wheel_build", "other_role", "mine"])
    assert found == {("wheel_build_installed", "roles/mine/tasks/main.yml"),
                     ("other_role_plan", "roles/mine/tasks/main.yml")}


def test_every_role_has_a_contract():
    contract = contracts()
    assert sorted(contract) == roles()
    for role, entry in contract.items():
        assert set(entry) <= {"action", "plan", "results", "reads"}, role


@pytest.mark.parametrize("role", roles())
def test_a_role_reads_of_other_roles_only_what_its_contract_names(role):
    contract = contracts()
    allowed = set((contract.get(role) or {}).get("reads") or [])
    reads = foreign_reads(role, list(role_files(role)), [name for name in roles() if name != GLOBALS])
    unnamed = sorted("%s (%s)" % (name, path) for name, path in reads if name not in allowed)
    assert not unnamed, ("roles/%s reads variables of other roles that its contract in docs/architecture.md does not"
                         " name: %s" % (role, ", ".join(unnamed)))


@pytest.mark.parametrize("role", roles())
def test_a_contract_names_only_what_exists(role):
    contract = contracts()
    entry = contract.get(role) or {}
    for name in entry.get("reads") or []:
        owner = next((other for other in sorted(contract, key=len, reverse=True) if name.startswith(other + "_")), None)
        assert owner and owner != role, "%s: %s is no other role's variable" % (role, name)
        known = set(contract[owner].get("results") or []) | role_inputs(owner)
        assert name in known, "%s reads %s, which is neither a result nor an input of %s" % (role, name, owner)
    sets = role_sets(role)
    for name in entry.get("results") or []:
        assert name in sets, "%s's contract names the result %s, which its tasks never set" % (role, name)


@pytest.mark.parametrize("role", roles())
def test_the_plan_fields_a_contract_names_are_read_by_its_role(role):
    entry = contracts().get(role) or {}
    text = "\n".join(uncommented(line) for _path, lines in role_files(role) for line in lines)
    for field in entry.get("plan") or []:
        path = "." + field.split(".")[-1]
        assert re.search(r"%s(?![\w])" % re.escape(path), text), "%s's YAML never reads %s of its action" % (role, field)
