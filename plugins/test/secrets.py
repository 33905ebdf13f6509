# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""has_credentials test; documentation in has_credentials.yml next to this file.

The test imports its module_utils when it runs: to find one test of the collection, Ansible loads every test
file of it, in every worker."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def has_credentials(value, loose=False):
    """A URL (or any URL of a list) that carries credentials."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import has_credentials as _has
    values = value if isinstance(value, (list, tuple)) else [value]
    return any(_has(item, loose=bool(loose)) for item in values)


class TestModule(object):
    def tests(self):
        return {"has_credentials": has_credentials}
