# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prints the size of the gate's grid in pytest's terminal summary."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gate_grid  # noqa: E402  pylint: disable=wrong-import-position


def pytest_terminal_summary(terminalreporter):
    counts = gate_grid.COUNTS
    if not counts.get("cases"):
        return
    terminalreporter.write_sep("-", "gate grid")
    terminalreporter.write_line(
        "gate grid: %(cases)d cases (stacks x host profiles), %(pass)d pass the gate, %(fail)d refused: "
        "%(suggested)d with a suggested stack that passes, %(none)d where no stack passes on that host"
        % counts)
