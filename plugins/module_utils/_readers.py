# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: the small readers every plan uses on role variables and module results, written once.

Role variables reach Python as whatever the inventory gave (a string, a number, None, a YAML boolean), and
module results may lack a key. These read them the one way the collection means; not part of the public API.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.parsing.convert_bool import boolean


def text(value):
    """Stripped text; '' for None."""
    return "" if value is None else str(value).strip()


def raw_text(value):
    """Text as given (not stripped); '' for None."""
    return "" if value is None else str(value)


def str_text(value):
    """Stripped text of a string; '' for None and for anything that is not a string."""
    return value.strip() if isinstance(value, str) else ""


def as_dict(value):
    """The value when it is a dict, else an empty dict."""
    return value if isinstance(value, dict) else {}


def as_bool(value, default=False):
    """A boolean as Ansible reads one (yes/no, true/false, 1/0, on/off); ``default`` for None, '' and anything
    that is not one."""
    if value is None or value == "":
        return default
    try:
        return boolean(value, strict=True)
    except TypeError:
        return default
