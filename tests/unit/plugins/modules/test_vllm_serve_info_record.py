# -*- coding: utf-8 -*-
"""vllm_serve_info reads vllm_source's record, and vllm_serve's gate refuses a vLLM whose last checks failed.

The records are those module_utils/vllm.py writes (a failed one names each problem with its fix); the gate's
message is module_utils/vllm.py's record_refusal, which the gpufleet.llm_stack.vllm_serve_state action adds to the
gate's errors outside preflight (roles/vllm_serve/tasks/validate_service.yml; tests/unit/plugins/action).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible_collections.gpufleet.llm_stack.plugins.module_utils.vllm import record_refusal
from ansible_collections.gpufleet.llm_stack.plugins.modules import vllm_serve_info

HERE = os.path.dirname(os.path.abspath(__file__))
VALIDATE = os.path.join(HERE, "..", "..", "..", "..", "roles", "vllm_serve", "tasks", "validate_service.yml")


def seen(tmp_path, record):
    venv = tmp_path / "venv"
    info = venv / "lib" / "python3.12" / "site-packages" / "vllm-0.26.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.26.0\n")
    (info / "RECORD").write_text("vllm/__init__.py,sha256=x,1\n")
    if record is not None:
        (venv / ".llm_stack").mkdir()
        (venv / ".llm_stack" / "vllm.json").write_text(record if isinstance(record, str) else json.dumps(record))
    return vllm_serve_info.read_vllm(str(venv))


def test_no_record_and_a_passed_one_are_served(tmp_path):
    found = seen(tmp_path, None)
    assert found["record_ok"] is None and found["record_sha256"] is None
    assert record_refusal(found, "/opt/torch/.venv") == []


def test_a_record_of_the_first_format_passed(tmp_path):
    # Format 1 wrote only the records of checks that passed.
    found = seen(tmp_path, {"format": 1, "version": "0.26.0", "checks": {}})
    assert found["record_ok"] is True and record_refusal(found, "/v") == []


def test_a_failed_record_is_refused_with_its_fix(tmp_path):
    problem = ("vLLM 0.26.0 cannot start as vllm: the sampler ... failed on the module 'flashinfer'. vllm 0.26.0"
               " requires flashinfer-python==0.6.14; flashinfer-python is not installed. Fix: install"
               " flashinfer-python==0.6.14 into /opt/torch/.venv")
    found = seen(tmp_path, {"format": 2, "ok": False, "version": "0.26.0", "problems": [problem]})
    assert found["record_ok"] is False and found["record_problems"] == [problem]
    refusal = record_refusal(found, "/opt/torch/.venv")
    assert len(refusal) == 1 and "install flashinfer-python==0.6.14" in refusal[0]
    assert "vLLM 0.26.0 in /opt/torch/.venv failed its checks" in refusal[0]


def test_an_unreadable_record_is_not_taken_for_a_failed_one(tmp_path):
    found = seen(tmp_path, "{not json")
    assert found["record_ok"] is None and len(found["record_sha256"]) == 64


def test_the_gate_refuses_outside_preflight_only():
    with open(VALIDATE) as handle:
        text = handle.read()
    assert 'collect: "{{ vllm_serve_collect }}"' in text
    assert 'extra_errors: "{{ vllm_serve_state.errors }}"' in text


def test_a_program_still_starting_has_its_pid(tmp_path):
    """supervisorctl shows no pid for a program in STARTING (before startsecs): `pid NAME` gives it."""
    ctl = tmp_path / "supervisorctl"
    ctl.write_text("#!/bin/sh\ncase \"$1 $2\" in\n  'pid ') echo 41 ;;\n  'pid vllm-tiny') echo 4242 ;;\n"
                   "  'status vllm-tiny') echo 'vllm-tiny                        STARTING  ' ;;\nesac\n")
    ctl.chmod(0o755)
    state = vllm_serve_info.read_service("supervisord", "vllm-tiny", [str(ctl)], 10)
    assert (state["state"], state["up"], state["pid"]) == ("STARTING", True, 4242)
    ctl.write_text("#!/bin/sh\ncase \"$1 $2\" in\n  'pid ') echo 41 ;;\n  'pid vllm-tiny') echo 0 ;;\n"
                   "  'status vllm-tiny') echo 'vllm-tiny                        STARTING  ' ;;\nesac\n")
    assert vllm_serve_info.read_service("supervisord", "vllm-tiny", [str(ctl)], 10)["pid"] is None
