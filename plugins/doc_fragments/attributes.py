# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """The attributes the collection's modules share."""

    DOCUMENTATION = r"""
options: {}
"""

    # Modules that only read the host or only compute: nothing changes.
    READ_ONLY = r"""
options: {}
attributes:
  check_mode:
    support: full
    description: Only reads; the same in check mode.
  diff_mode:
    support: none
    description: Nothing changes, so there is nothing to diff.
"""

    # Modules that return ansible_facts.
    FACTS = r"""
options: {}
attributes:
  facts:
    support: full
    description: Returns ansible_facts.
"""

    # Modules that change files and report the change in check mode.
    CHANGES = r"""
options: {}
attributes:
  check_mode:
    support: full
    description: Reports what it would do and changes nothing.
  diff_mode:
    support: none
    description: No diff is produced.
"""
