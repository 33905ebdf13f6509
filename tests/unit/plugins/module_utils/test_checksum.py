# -*- coding: utf-8 -*-
"""cuda_toolkit_runfile_checksum has one rule (module_utils/_checksum.py): the gate's part cuda_toolkit (preflight
and the role's own gate, on the controller) refuses exactly the checksums that cuda_toolkit_state (on the host)
refuses."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import cuda_toolkit as ct
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import gate
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._checksum import parse_checksum

GOOD = dict(cuda_version="12.8.1", torch_version="2.10.0", torch_cuda="cu128", python_version="3.12",
            flash_attn_version="2.8.3", vllm_version="0.19.1", transformers_version="5.5.4",
            model="Qwen/Qwen3.5-9B", gpus=["9.0"], driver_version="580.159.04")

CASES = [
    ("md5:" + "a" * 32, True),
    ("md5:" + "0123456789ABCDEFabcdef0123456789", True),
    ("sha256:" + "F" * 64, True),
    ("  md5:" + "a" * 32 + "\n", True),
    ("md5:" + "a" * 31, False),
    ("md5:" + "a" * 33, False),
    ("md5:" + "a" * 64, False),
    ("sha256:" + "a" * 32, False),
    ("sha256:" + "a" * 63, False),
    ("MD5:" + "a" * 32, False),
    ("sha1:" + "a" * 40, False),
    ("md5:" + "g" * 32, False),
    ("md5:" + u"\u0661" * 32, False),
    ("md5 :" + "a" * 32, False),
    ("md5:" + "a" * 16 + " " + "a" * 16, False),
    ("md5:" + "a" * 32 + "md5:" + "a" * 32, False),
    ("a" * 32, False),
    ("abc", False),
]


def gate_refuses(checksum):
    dummy, problems = gate.evaluate(dict(GOOD, parts=["cuda_toolkit"], runfile_checksum=checksum))
    return any(problem["rule"] == "cuda-runfile-checksum-format" for problem in problems)


def role_refuses(checksum, directory):
    runfile = directory.join("cuda_12.8.1_570.124.06_linux.run")
    runfile.write("")
    out = ct.check_install({"runfile": str(runfile), "runfile_checksum": checksum, "tmpdir": str(directory),
                            "prefix": str(directory)})
    return any(error.startswith("cuda_toolkit_runfile_checksum is ") for error in out["errors"])


@pytest.mark.parametrize("checksum, accepted", CASES)
def test_gate_and_role_agree(checksum, accepted, tmpdir):
    assert (parse_checksum(checksum.strip()) is not None) is accepted
    assert gate_refuses(checksum) is not accepted
    assert role_refuses(checksum, tmpdir) is not accepted


@settings(max_examples=150, deadline=None)
@given(st.one_of(
    st.text(alphabet="md5sha256:0123456789abcdefABCDEFg \n", max_size=80),
    st.builds(lambda algorithm, digest: algorithm + ":" + digest, st.sampled_from(["md5", "sha256", "MD5", "sha1"]),
              st.text(alphabet="0123456789abcdefABCDEFx", min_size=28, max_size=68)),
))
def test_gate_and_role_agree_on_any_text(tmpdir_factory, checksum):
    if not checksum.strip():
        return
    assert gate_refuses(checksum) is role_refuses(checksum, tmpdir_factory.mktemp("runfile"))
