# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An action plugin of the collection as a task would run it: its arguments and the task's flags, no connection."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from unittest import mock


def new_action(module, args, check_mode=False, no_log=False, delegate_to=None):
    """module.ActionModule for a task with these args (check mode, no_log and delegate_to as given)."""
    task = mock.MagicMock()
    task.args = dict(args)
    task.check_mode = check_mode
    task.no_log = no_log
    task.delegate_to = delegate_to
    task.async_val = 0
    task.diff = False
    return module.ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=None)
