# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The phase_times callback: batches of a play add up under its phase, each batch's hosts are recorded, the table and
the JSON file at the end."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
from unittest import mock

from ansible_collections.gpufleet.llm_stack.plugins.callback import phase_times


def play(name, phase=None):
    p = mock.MagicMock()
    p.get_name.return_value = name
    p.get_vars.return_value = {"llm_stack_phase": phase} if phase else {}
    return p


def result(host):
    r = mock.MagicMock()
    r._host.get_name.return_value = host
    return r


def test_phases_add_up_and_the_table_is_printed(tmp_path, monkeypatch):
    now = [0.0]
    monkeypatch.setattr(phase_times.time, "time", lambda: now[0])
    display = mock.MagicMock()
    display.verbosity = 0
    cb = phase_times.CallbackModule(display=display)
    out = tmp_path / "times.json"
    cb.get_option = lambda name: str(out) if name == "output" else None
    plays = ((0.0, "Check the chain", "preflight", ["h1", "h2"]), (9.0, "The mirror (no host)", "serve", []), (10.0, "Serve, batch 1", "serve", ["h1"]),
             (12.0, "Serve, batch 2", "serve", ["h2"]), (20.0, "Write the report", None, []))
    for at, name, phase, hosts in plays:
        now[0] = at
        cb.v2_playbook_on_play_start(play(name, phase))
        for host in hosts:
            for report in (cb.v2_runner_on_ok, cb.v2_runner_on_skipped):
                report(result(host))
    cb.v2_runner_on_failed(result("h3"))
    now[0] = 25.0
    cb.v2_playbook_on_stats(mock.MagicMock())
    data = json.loads(out.read_text())
    assert data == {"phases": [{"phase": "preflight", "seconds": 9.0, "batches": [["h1", "h2"]]},
                               {"phase": "serve", "seconds": 11.0, "batches": [["h1"], ["h2"]]},
                               {"phase": "Write the report", "seconds": 5.0, "batches": [["h3"]]}], "total": 25.0,
                    "playbook": None}
    table = display.display.call_args[0][0]
    assert "preflight" in table and table.splitlines()[-1].split() == ["total", "25.0"]


def test_a_jsonl_output_keeps_one_line_per_run(tmp_path):
    """Each run appends its own line, named by its playbook; a .json file holds the last run only."""
    display = mock.MagicMock()
    display.verbosity = 0
    history = tmp_path / "times.jsonl"
    for name in ("prepare.yml", "converge.yml", "converge.yml"):
        cb = phase_times.CallbackModule(display=display)
        cb.get_option = lambda option: str(history) if option == "output" else None
        book = mock.MagicMock()
        book._file_name = "/scenario/" + name
        cb.v2_playbook_on_start(book)
        cb.v2_playbook_on_play_start(play("Serve", "serve"))
        cb.v2_runner_on_ok(result("h1"))
        cb.v2_playbook_on_stats(mock.MagicMock())
    runs = [json.loads(line) for line in history.read_text().splitlines()]
    assert [run["playbook"] for run in runs] == ["/scenario/prepare.yml", "/scenario/converge.yml",
                                                 "/scenario/converge.yml"]
    assert all(run["phases"][0]["batches"] == [["h1"]] for run in runs)
