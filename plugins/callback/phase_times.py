# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: phase_times
type: aggregate
short_description: A per-phase timing table at the end of a playbook run
version_added: "0.1.0"
description:
  - Times each play of the run, grouped by phase (the play variable C(llm_stack_phase) that the plays of
    C(playbooks/site.yml) set, else the play's name; the batches of a C(serial) play add up), and prints a table
    of seconds and shares with the total at the end of the run.
  - With O(output), also writes the timings as JSON there (the fleet report itself holds no timings, so that
    two runs' reports can be diffed), with the batches each phase ran in (the hosts of each batch of a C(serial)
    play, in order), which shows what C(llm_stack_serial) made of the fleet.
  - Enable it with C(ANSIBLE_CALLBACKS_ENABLED=gpufleet.llm_stack.phase_times) or C(callbacks_enabled) in
    C(ansible.cfg).
options:
  output:
    description: A file on the controller for the timings as JSON (C(phases), a list of C(phase), C(seconds) and
      C(batches), the host names that reported a task result in each batch of the phase's plays, where a play that
      matched no host adds no batch; C(total) and C(playbook)); not written when empty. A name that ends in
      C(.jsonl) keeps a history instead, one run per line appended (each with C(playbook), the file name of the
      run's playbook), so that the runs of one job can be told apart.
    type: path
    default: ""
    env:
      - name: LLM_STACK_PHASE_TIMES_FILE
    ini:
      - section: gpufleet_llm_stack
        key: phase_times_file
"""

import json
import time

from ansible.plugins.callback import CallbackBase
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.fleet_report import phase_table


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "gpufleet.llm_stack.phase_times"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, display=None):
        super(CallbackModule, self).__init__(display=display)
        self._order = []
        self._seconds = {}
        self._current = None
        self._started = None
        self._batches = {}
        self._playbook = None

    def v2_playbook_on_start(self, playbook):
        self._playbook = getattr(playbook, "_file_name", None)

    def _close(self):
        if self._current is not None:
            self._seconds[self._current] += time.time() - self._started
            self._current = None

    def v2_playbook_on_play_start(self, play):
        self._close()
        name = None
        try:
            name = play.get_vars().get("llm_stack_phase")
        except AttributeError:
            name = None
        if not isinstance(name, str) or not name or "{" in name:
            name = play.get_name().strip() or "play"
        if name not in self._seconds:
            self._order.append(name)
            self._seconds[name] = 0.0
        self._current = name
        self._started = time.time()
        self._batches.setdefault(name, []).append([])

    def _host(self, result):
        if self._current is None:
            return
        batch = self._batches[self._current][-1]
        host = result._host.get_name()
        if host not in batch:
            batch.append(host)

    def v2_runner_on_ok(self, result):
        self._host(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._host(result)

    def v2_runner_on_skipped(self, result):
        self._host(result)

    def v2_runner_on_unreachable(self, result):
        self._host(result)

    def v2_playbook_on_stats(self, stats):
        self._close()
        rows = [(name, self._seconds[name]) for name in self._order]
        if not rows:
            return
        self._display.banner("PHASE TIMES")
        self._display.display(phase_table(rows))
        output = self.get_option("output")
        if output:
            data = {"phases": [{"phase": n, "seconds": round(s, 1), "batches": [b for b in self._batches.get(n, []) if b]}
                               for n, s in rows],
                    "total": round(sum(row[1] for row in rows), 1), "playbook": self._playbook}
            if output.endswith(".jsonl"):
                with open(output, "a") as f:
                    f.write(json.dumps(data, sort_keys=True) + "\n")
            else:
                with open(output, "w") as f:
                    f.write(json.dumps(data, indent=2, sort_keys=True) + "\n")
