# -*- coding: utf-8 -*-
"""docs/compat-matrix.md is the rendering of plugins/module_utils/compat_matrix.py."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import compat_doc  # noqa: E402  pylint: disable=wrong-import-position


def test_doc_matches_matrix():
    with open(compat_doc.DOC_PATH) as handle:
        committed = handle.read()
    assert committed == compat_doc.render(), (
        "docs/compat-matrix.md is stale: run python3 tests/unit/compat_doc.py > docs/compat-matrix.md")


def test_doc_mentions_every_rule_and_source():
    text = compat_doc.render()
    matrix = compat_doc.load_matrix()
    for rule in matrix.RULES:
        assert "`%s`" % rule["id"] in text
    for source in matrix.SOURCES.values():
        assert source["url"] in text
