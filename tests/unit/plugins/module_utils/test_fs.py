# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _fs, hf_local, python_probe


def test_existing_ancestor(tmp_path):
    assert _fs.existing_ancestor(str(tmp_path / "a" / "b")) == str(tmp_path)
    assert _fs.existing_ancestor(str(tmp_path)) == str(tmp_path)


def test_free_bytes_nearest_existing_or_the_path_itself(tmp_path):
    assert _fs.free_bytes(str(tmp_path / "a" / "b")) > 0
    with pytest.raises(OSError):
        _fs.free_bytes(str(tmp_path / "a" / "b"), nearest_existing=False)


def test_one_rule():
    assert hf_local.free_bytes is _fs.free_bytes and python_probe.free_bytes is _fs.free_bytes


def test_write_atomic_modes_and_only_if_changed(tmp_path):
    write_atomic = _fs.write_atomic
    path = str(tmp_path / "state")
    assert write_atomic(path, "a\n", mode=0o600, only_if_changed=True) is True
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    assert write_atomic(path, "a\n", mode=0o600, only_if_changed=True) is False
    assert write_atomic(path, "b\n", mode=0o600, only_if_changed=True) is True and open(path).read() == "b\n"
    assert write_atomic(path, "b\n") is True and oct(os.stat(path).st_mode & 0o777) == "0o644"
    assert os.listdir(str(tmp_path)) == ["state"]
