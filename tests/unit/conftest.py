# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pytest setup for the collection's unit tests.

Makes ``ansible_collections.gpufleet.llm_stack`` importable however the
tests are started: from ansible-test (the checkout already sits in an
``ansible_collections/gpufleet/llm_stack`` tree), with ``.collections`` on
PYTHONPATH (``make unit``), or plain ``pytest tests/unit`` from a checkout
(a temporary ``ansible_collections`` tree linking to the checkout).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import sys
import tempfile

import pytest

try:
    from hypothesis import settings as _hypothesis_settings
except ImportError:  # pragma: no cover - hypothesis is in requirements-dev.txt
    _hypothesis_settings = None

# Property-based tests: random examples on a developer's machine (and a
# local example database), the same examples on every CI run, so that a
# submission's CI result does not depend on the draw.
if _hypothesis_settings is not None:
    _hypothesis_settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
    if os.environ.get("CI"):
        _hypothesis_settings.load_profile("ci")

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = os.path.join(REPO, "tests", "fixtures")


def _importable():
    try:
        __import__("ansible_collections.gpufleet.llm_stack.plugins.module_utils.versions")
    except ImportError:
        return False
    return True


def _ensure_collection_path():
    if _importable():
        return
    parts = REPO.split(os.sep)
    if len(parts) >= 4 and parts[-3] == "ansible_collections":
        sys.path.insert(0, os.sep.join(parts[:-3]))
    elif os.path.isdir(os.path.join(REPO, ".collections", "ansible_collections", "gpufleet", "llm_stack")):
        sys.path.insert(0, os.path.join(REPO, ".collections"))
    else:
        tree = tempfile.mkdtemp(prefix="llm_stack_unit_")
        os.makedirs(os.path.join(tree, "ansible_collections", "gpufleet"))
        os.symlink(REPO, os.path.join(tree, "ansible_collections", "gpufleet", "llm_stack"))
        sys.path.insert(0, tree)
    for name in [n for n in sys.modules if n == "ansible_collections" or n.startswith("ansible_collections.")]:
        del sys.modules[name]
    if not _importable():
        raise RuntimeError("cannot import ansible_collections.gpufleet.llm_stack from %s" % REPO)


_ensure_collection_path()


class ModuleExit(Exception):
    """exit_json was called; .result holds its arguments."""

    def __init__(self, result):
        Exception.__init__(self, result)
        self.result = result


class ModuleFail(Exception):
    """fail_json was called; .result holds its arguments."""

    def __init__(self, result):
        Exception.__init__(self, result)
        self.result = result


def _patched_args(args):
    try:
        from ansible.module_utils.testing import patch_module_args
    except ImportError:  # ansible-core < 2.19
        from unittest import mock

        from ansible.module_utils import basic
        from ansible.module_utils.common.text.converters import to_bytes

        return mock.patch.object(basic, "_ANSIBLE_ARGS", to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": args})))
    return patch_module_args(args)


@pytest.fixture
def run_module(monkeypatch):
    """run_module(main, args) -> (kind, result, warnings); kind is 'exit' or 'fail'."""
    from ansible.module_utils.basic import AnsibleModule

    def runner(main, args):
        warnings = []

        def exit_json(self, **kwargs):
            raise ModuleExit(kwargs)

        def fail_json(self, **kwargs):
            raise ModuleFail(kwargs)

        monkeypatch.setattr(AnsibleModule, "exit_json", exit_json)
        monkeypatch.setattr(AnsibleModule, "fail_json", fail_json)
        monkeypatch.setattr(AnsibleModule, "warn", lambda self, msg: warnings.append(msg))
        # Ansible's own syslog record of the arguments is not what these
        # tests exercise (ansible-core 2.21 fails it on a NUL byte before the
        # module's code runs, with its own message).
        monkeypatch.setattr(AnsibleModule, "_log_invocation", lambda self: None)
        with _patched_args(args):
            try:
                main()
            except ModuleExit as exc:
                return "exit", exc.result, warnings
            except ModuleFail as exc:
                return "fail", exc.result, warnings
        raise AssertionError("module returned without exit_json or fail_json")

    return runner


@pytest.fixture
def fixtures_dir():
    return FIXTURES


@pytest.fixture
def repo_dir():
    return REPO
