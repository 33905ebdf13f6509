# -*- coding: utf-8 -*-
"""Several vLLM services per host (_serve_services): normalisation with the single-service variables as the one-item
case, the host's problems (GPU sets, parallel sizes, ports, memory fit), units and removals, the /metrics drain
reading and the router's backends and HAProxy config.

The GPU memory is the real H200 capture (tests/fixtures/gpu/h200/query.csv: 143771 MiB); a host of several H200s
repeats that one GPU. The /metrics text below is HAND-WRITTEN, not a capture: it follows vLLM V1's documented format
(vllm/v1/metrics/loggers.py: gauges vllm:num_requests_running and vllm:num_requests_waiting with labels model_name
and engine, one sample per engine); a capture from a real server must replace it.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import _serve_services as S

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "..", "fixtures", "vllm_serve")
H200_QUERY = os.path.join(HERE, "..", "..", "..", "fixtures", "gpu", "h200", "query.csv")
SETTINGS = settings(max_examples=150, deadline=None)


def h200_mib():
    with open(H200_QUERY, encoding="utf-8") as handle:
        return int(handle.read().split(",")[5])


def host(count):
    """Preflight's contract for a host of count H200s (each the captured one)."""
    return {"llm_stack_host": {"gpu": {"count": count, "memory_mib": [h200_mib()] * count}}}


SINGLE = {"model": "Qwen/Qwen3-8B", "served_model_name": "", "service_name": "", "port": 8000, "host": "0.0.0.0",
          "tensor_parallel_size": "auto", "pipeline_parallel_size": 1, "extra_args": [], "env": {}, "benchmark": False}


def svc(name, gpus, port, **over):
    item = {"name": name, "model": "Qwen/Qwen3-8B", "gpus": gpus, "port": port}
    item.update(over)
    return item


def normal(items, single=None):
    found = S.services(items, SINGLE if single is None else single)
    assert found["errors"] == [], found["errors"]
    return found["services"]


# --- services() -----------------------------------------------------------------------

def test_empty_list_is_the_single_service_with_its_unit():
    one = S.services([], SINGLE)
    assert one["errors"] == []
    [service] = one["services"]
    assert service["single"] and service["gpus"] is None
    assert service["served_model_name"] == "Qwen/Qwen3-8B" and service["port"] == 8000
    assert S.unit_name(service) == "vllm-qwen-qwen3-8b"
    named = S.services(None, dict(SINGLE, service_name="vllm-chat"))["services"][0]
    assert S.unit_name(named) == "vllm-chat"


def test_one_item_takes_the_single_defaults():
    [service] = normal([{"gpus": [0, 1]}])
    assert service["name"] == "qwen-qwen3-8b" and service["port"] == 8000 and service["model"] == "Qwen/Qwen3-8B"
    assert service["tensor_parallel_size"] == 2 and service["pipeline_parallel_size"] == 1
    assert service["data_parallel_size"] == 1 and service["unit"] == "vllm-qwen-qwen3-8b"


def test_tp_defaults_to_the_gpus_per_replica_and_stage():
    [service] = normal([svc("chat", [0, 1, 2, 3], 8000, data_parallel_size=2)])
    assert service["tensor_parallel_size"] == 2


def test_name_required_with_several_and_unique():
    errors = S.services([{"gpus": [0], "port": 8000}, {"gpus": [1], "port": 8001}], SINGLE)["errors"]
    assert any("vllm_serve_services[0].name is not set" in e and "Fix:" in e for e in errors)
    errors = S.services([svc("chat", [0], 8000), svc("chat", [1], 8001)], SINGLE)["errors"]
    assert any(e.startswith("vllm_serve_services[1].name=chat is also vllm_serve_services[0]'s") for e in errors)
    errors = S.services([svc("Chat_1", [0], 8000)], SINGLE)["errors"]
    assert any("vllm_serve_services[0].name=Chat_1" in e and "a-z, 0-9 and -" in e for e in errors)


def test_bad_values_name_the_path_and_the_fix():
    items = [svc("a", [0, 0], 80), svc("b", [-1], 8001, tensor_parallel_size=0),
             svc("c", "0,1", 8002, env={"CUDA_VISIBLE_DEVICES": "0"}, extra_args="--x", oops=1)]
    errors = S.services(items, SINGLE)["errors"]
    text = "\n".join(errors)
    assert "vllm_serve_services[0].gpus lists GPU 0 twice" in text
    assert "vllm_serve_services[0].port=80 is not a whole number from 1024 to 65535" in text
    assert "vllm_serve_services[1].gpus has -1" in text
    assert "vllm_serve_services[1].tensor_parallel_size=0" in text
    assert "vllm_serve_services[2].gpus must be a non-empty list" in text
    assert "vllm_serve_services[2].env.CUDA_VISIBLE_DEVICES is set by the role itself from the service's gpus" in text
    assert "vllm_serve_services[2].extra_args must be a list" in text
    assert "vllm_serve_services[2] has oops, not a service setting" in text
    assert all("Fix:" in e for e in errors)


def test_port_required_when_several():
    errors = S.services([svc("a", [0], None), svc("b", [1], 8001)], SINGLE)["errors"]
    assert errors == ["vllm_serve_services[0].port is not set. Fix: give each service its own TCP port, such as 8000"]


def test_not_a_list():
    assert "vllm_serve_services must be a list" in S.services({"a": 1}, SINGLE)["errors"][0]


def test_benchmark_settings():
    [service] = normal([svc("a", [0], 8000, benchmark={"num_prompts": 10})])
    assert service["benchmark"] == {"enabled": True, "num_prompts": 10}
    errors = S.services([svc("a", [0], 8000, benchmark={"rounds": 1})], SINGLE)["errors"]
    assert "vllm_serve_services[0].benchmark has rounds" in errors[0]


# --- problems() -------------------------------------------------------------------------

def test_overlap_names_both_and_the_shared_gpus():
    found = S.problems(normal([svc("chat", [0, 1], 8000), svc("embed", [1, 2], 8001, tensor_parallel_size=2)]),
                       host(4))
    assert found == ["vllm_serve_services[0] (chat) and vllm_serve_services[1] (embed) both use GPU(s) 1. Fix: give"
                     " each service GPUs of its own (set vllm_serve_services[0].gpus or vllm_serve_services[1].gpus"
                     " to other indexes)"]


def test_gpus_beyond_the_host():
    found = S.problems(normal([svc("chat", [2, 3], 8000)]), host(3))
    assert found == ["vllm_serve_services[0].gpus has GPU(s) 3, but the host has 3 GPU(s) (indexes 0 to 2, preflight's"
                     " llm_stack_host.gpu.count). Fix: list indexes below 3"]
    assert "the host has no GPU" in S.problems(normal([svc("chat", [0], 8000)]), {"gpu_count": 0})[0]


def test_sizes_must_match_the_gpu_set():
    found = S.problems(normal([svc("chat", [0, 1, 2, 3], 8000, tensor_parallel_size=2)]), host(4))
    assert len(found) == 1
    assert found[0].startswith("vllm_serve_services[0] (chat): tensor_parallel_size=2 x pipeline_parallel_size=1 x"
                               " data_parallel_size=1 is 2 GPU(s), but gpus lists 4")
    assert "data_parallel_deployment.md" in found[0] and "Fix: list 2 GPU(s)" in found[0]
    assert S.problems(normal([svc("chat", [0, 1, 2, 3], 8000, tensor_parallel_size=2, data_parallel_size=2)]),
                      host(4)) == []


def test_ports_clash_between_services_and_with_known_ports():
    found = S.problems(normal([svc("a", [0], 8000), svc("b", [1], 8000)]), host(2), other_ports={8080: "the router"})
    assert found == ["vllm_serve_services[1].port=8000 is also vllm_serve_services[0] (a)'s. Fix: give"
                     " vllm_serve_services[1] (b) a free port of its own"]
    found = S.problems(normal([svc("a", [0], 8080)]), host(1), other_ports={8080: "the router"})
    assert found == ["vllm_serve_services[0].port=8080 is also the router's. Fix: give vllm_serve_services[0] (a) a"
                     " free port of its own"]


FIT = {"inputs": {"max_model_len": 8192, "gpu_memory_utilization": 0.9, "preset": "none",
                  "cpu_only_test_host": False}}


def test_model_fits_its_gpu_set_on_h200():
    services = normal([svc("chat", [0], 8000, model="Qwen/Qwen3-8B"),
                       svc("big", [1, 2], 8001, model="Qwen/Qwen3-32B")])
    assert S.problems(services, host(3), FIT) == []


def test_model_that_does_not_fit_names_the_service():
    # Qwen3.5-122B-A10B in bfloat16 (244 GB of weights) on one H200 of 143771 MiB.
    services = normal([svc("chat", [0], 8000, model="Qwen/Qwen3-8B"),
                       svc("huge", [1], 8001, model="Qwen/Qwen3.5-122B-A10B")])
    found = S.problems(services, host(2), FIT)
    assert len(found) == 1
    assert found[0].startswith("vllm_serve_services[1] (huge) on GPU(s) 1: vllm_serve_services[1].model="
                               "Qwen/Qwen3.5-122B-A10B does not fit")
    assert "vllm_serve_model" not in found[0] and "vllm_serve_gpu_memory_utilization=0.9" in found[0]
    assert "Fix:" in found[0]
    # Its own GPU set counts, not the host's: the same model over 4 of the host's 8 GPUs fits.
    assert S.problems(normal([svc("huge", [4, 5, 6, 7], 8001, model="Qwen/Qwen3.5-122B-A10B")]), host(8), FIT) == []


def test_tp_the_model_heads_refuse():
    # Qwen3-8B: 32 attention heads, 8 KV heads; tensor parallel 3 divides neither.
    found = S.problems(normal([svc("chat", [0, 1, 2], 8000, model="Qwen/Qwen3-8B")]), host(3), FIT)
    assert len(found) == 1 and "vllm_serve_services[0] (chat) on GPU(s) 0, 1, 2:" \
        " vllm_serve_services[0].tensor_parallel_size=3" in found[0]
    assert found[0].endswith("Fix: set vllm_serve_services[0].tensor_parallel_size to one vLLM accepts, such as 2, and"
                             " list tensor x pipeline x data parallel size GPUs in vllm_serve_services[0].gpus")


# --- units -----------------------------------------------------------------------------

def test_removals_only_the_unlisted_of_the_scheme():
    listed = normal([svc("chat", [0], 8000), svc("embed", [1], 8001)])
    assert [S.unit_name(s) for s in listed] == ["vllm-chat", "vllm-embed"]
    recorded = ["vllm-chat", "vllm-old", "vllm-embed", "sshd", "vllm-../x", ""]
    assert S.removals(listed, recorded) == ["vllm-old"]
    assert S.removals(listed, {"vllm-b": {}, "vllm-a": {}}) == ["vllm-a", "vllm-b"]
    assert S.removals(listed, None) == []


# --- metrics_idle() ----------------------------------------------------------------------

# HAND-WRITTEN, not a capture (see the module docstring): two engines of a data parallel server, plus metrics of
# similar names that must not count.
METRICS = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="qwen3-8b"} 1.0
vllm:num_requests_running{engine="1",model_name="qwen3-8b"} 2.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="qwen3-8b"} 0.0
vllm:num_requests_waiting{engine="1",model_name="qwen3-8b"} 3.0
# HELP vllm:num_requests_waiting_by_reason Number of requests waiting, by reason.
# TYPE vllm:num_requests_waiting_by_reason gauge
vllm:num_requests_waiting_by_reason{engine="0",model_name="qwen3-8b",reason="capacity"} 7.0
# HELP vllm:request_success_total Count of successfully processed requests.
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0",finished_reason="stop",model_name="qwen3-8b"} 12.0
vllm:request_success_created{engine="0",finished_reason="stop",model_name="qwen3-8b"} 1.7648e+09
"""


def test_metrics_sum_every_engine_exact_names():
    assert S.metrics_idle(METRICS) == {"running": 3.0, "waiting": 3.0, "idle": False, "problem": ""}


def test_metrics_idle_at_zero_and_old_format_and_odd_labels():
    text = ('vllm:num_requests_running{model_name="a}\\"b"} 0.0\n'
            'vllm:num_requests_waiting 0 1700000000000\n')
    assert S.metrics_idle(text) == {"running": 0.0, "waiting": 0.0, "idle": True, "problem": ""}


def test_metrics_nan_or_missing_is_not_idle():
    nan = METRICS.replace('engine="1",model_name="qwen3-8b"} 2.0', 'engine="1",model_name="qwen3-8b"} NaN')
    found = S.metrics_idle(nan)
    assert not found["idle"] and found["running"] is None and found["waiting"] == 3.0
    assert "vllm:num_requests_running=NaN" in found["problem"]
    found = S.metrics_idle("# HELP up\nup 1\nvllm:num_requests_running 0\n")
    assert found == {"running": 0.0, "waiting": None, "idle": False,
                     "problem": "no sample of vllm:num_requests_waiting in /metrics: not a vLLM server, or its"
                                " metrics are off"}
    assert not S.metrics_idle(None)["idle"]
    assert not S.metrics_idle("vllm:num_requests_running -1\nvllm:num_requests_waiting 0\n")["idle"]


# --- the router ---------------------------------------------------------------------------

def fleet():
    one = normal([svc("chat", [0], 8000, served_model_name="qwen3-8b")])
    two = normal([svc("chat", [0], 8000, served_model_name="qwen3-8b"),
                  svc("embed", [1], 8001, model="Qwen/Qwen3-0.6B", served_model_name="qwen3.5-0.6b")])
    return S.router_backends({"gpu2": {"address": "10.0.0.2", "services": two},
                              "gpu1": {"address": "10.0.0.1", "services": one}})


def test_router_backends_per_model():
    backends = fleet()
    assert sorted(backends) == ["qwen3-8b", "qwen3.5-0.6b"]
    assert [(b["host"], b["address"], b["port"], b["server"]) for b in backends["qwen3-8b"]] == [
        ("gpu1", "10.0.0.1", 8000, "gpu1_chat"), ("gpu2", "10.0.0.2", 8000, "gpu2_chat")]
    assert S.models_map(backends) == "qwen3-8b be_qwen3_8b\nqwen3.5-0.6b be_qwen3_5_0_6b\n"


def test_drain_plan_and_the_capacity_guard():
    assert S.drain_plan("gpu1", fleet()) == {"servers": [("be_qwen3_8b", "gpu1_chat")], "alone": []}
    assert S.drain_plan("gpu2", fleet()) == {"servers": [("be_qwen3_8b", "gpu2_chat"), ("be_qwen3_5_0_6b", "gpu2_embed")],
                                             "alone": ["qwen3.5-0.6b"]}


def test_backend_names_stay_unique():
    assert S.backend_names({"a.b": [], "a-b": []}) == {"a-b": "be_a_b", "a.b": "be_a_b_2"}


GOLDEN_ONE_MODEL = """\
# Managed by gpufleet.llm_stack (llm_router). No secrets here: the keys are in the ACL file and the environment.
global
    stats socket /run/llm-router/admin.sock mode 600 level admin expose-fd listeners
    server-state-file /var/lib/llm-router/server-state
    tune.bufsize 65536

defaults
    mode http
    load-server-state-from-file global
    timeout connect 3s
    timeout http-request 30s
    timeout client 600s
    timeout server 600s
    timeout http-keep-alive 10s
    timeout queue 120s
    retries 3
    option redispatch 1
    retry-on conn-failure empty-response 503

frontend llm
    bind 0.0.0.0:8080
    acl key_ok req.hdr(authorization) -m str -f /etc/llm-router/api_keys.lst
    http-request return status 401 content-type application/json string '{"error":"Unauthorized"}' unless key_ok
    http-request set-header Authorization "Bearer ${LLM_ROUTER_BACKEND_KEY}"
    option http-buffer-request
    http-request set-var(txn.model) req.body,json_query('$.model') if METH_POST
    http-request set-var(txn.be) var(txn.model),map_str(/etc/llm-router/models.map) if { var(txn.model) -m found }
    http-request return status 404 content-type application/json string '{"error":{"message":"model not served here","type":"NotFoundError","code":404}}'\
 if { var(txn.model) -m found } !{ var(txn.be) -m found }
    use_backend %[var(txn.be)] if { var(txn.be) -m found }
    default_backend be_any

backend be_qwen3_8b
    balance leastconn
    option httpchk
    http-check send meth GET uri /v1/models hdr Authorization "Bearer ${LLM_ROUTER_BACKEND_KEY}"
    http-check expect rstring "\\"id\\": ?\\"qwen3\\\\-8b\\""
    default-server inter 2s fall 2 rise 2
    server gpu1_chat 10.0.0.1:8000 check
    server gpu2_chat 10.0.0.2:8000 check

backend be_any
    balance leastconn
    option httpchk GET /health
    default-server inter 2s fall 2 rise 2
    server gpu1_chat 10.0.0.1:8000 check
    server gpu2_chat 10.0.0.2:8000 check
"""


def test_haproxy_config_golden_one_model():
    backends = fleet()
    del backends["qwen3.5-0.6b"]
    assert S.haproxy_config(backends) == GOLDEN_ONE_MODEL


def test_haproxy_config_two_models_refuses_unreadable_bodies():
    text = S.haproxy_config(fleet(), {"bind": "127.0.0.1:9000", "bufsize": 131072})
    assert "    bind 127.0.0.1:9000\n" in text and "    tune.bufsize 131072\n" in text
    assert ("    http-request return status 400 content-type application/json string '{\"error\":{\"message\":\"no model"
            " field in the first 131072 bytes of the body\",\"type\":\"BadRequestError\",\"code\":400}}' if METH_POST"
            " !{ var(txn.model) -m found }\n") in text
    assert '    http-check expect rstring "\\"id\\": ?\\"qwen3\\\\.5\\\\-0\\\\.6b\\""\n' in text
    assert "backend be_qwen3_5_0_6b\n" in text and "    server gpu2_embed 10.0.0.2:8001 check\n" in text
    assert text == S.haproxy_config(fleet(), {"bind": "127.0.0.1:9000", "bufsize": 131072})


# --- properties ---------------------------------------------------------------------------

@st.composite
def fleets(draw):
    """Services with disjoint GPU sets of tp x pp x dp GPUs each and distinct ports, on a host with enough GPUs."""
    count = draw(st.integers(min_value=1, max_value=5))
    order = draw(st.permutations(list(range(16))))
    ports = draw(st.lists(st.integers(min_value=1024, max_value=65535), min_size=count, max_size=count, unique=True))
    items, used = [], 0
    for index in range(count):
        tp, pp, dp = (draw(st.sampled_from([1, 2])) for dummy in range(3))
        size = tp * pp * dp
        if used + size > 16:
            break
        items.append({"name": "s%d" % index, "model": "Qwen/Qwen3-8B", "gpus": order[used:used + size],
                      "tensor_parallel_size": tp, "pipeline_parallel_size": pp, "data_parallel_size": dp,
                      "port": ports[index]})
        used += size
    return items, max(order[:used] or [0]) + 1 + draw(st.integers(min_value=0, max_value=2))


@SETTINGS
@given(fleets())
def test_disjoint_matching_distinct_has_no_problems(drawn):
    items, count = drawn
    assert S.problems(normal(items), host(count)) == []


@SETTINGS
@given(fleets(), st.data())
def test_an_overlap_names_both_services(drawn, data):
    items, count = drawn
    if len(items) < 2:
        return
    first, second = sorted(data.draw(st.lists(st.integers(min_value=0, max_value=len(items) - 1), min_size=2,
                                              max_size=2, unique=True)))
    shared = data.draw(st.sampled_from(items[first]["gpus"]))
    items[second]["gpus"] = [shared] + [g for g in items[second]["gpus"] if g != shared][1:]
    found = S.problems(normal(items), host(count))
    label = "vllm_serve_services[%d] (s%d) and vllm_serve_services[%d] (s%d) both use GPU(s)" % (
        first, first, second, second)
    assert any(message.startswith(label) and str(shared) in message for message in found), found


IDLE = list(S.IDLE_GAUGES)


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(IDLE),
                          st.integers(min_value=0, max_value=3), st.integers(min_value=0, max_value=50)), max_size=8))
def test_metrics_sum_is_the_samples_sum(samples):
    text = "".join('%s{engine="%d",model_name="m"} %d.0\n' % sample for sample in samples)
    found = S.metrics_idle(text)
    sums = dict((name, sum(value for n, dummy, value in samples if n == name)) for name in IDLE)
    if all(any(n == name for n, dummy, dummy2 in samples) for name in IDLE):
        assert (found["running"], found["waiting"]) == (sums[IDLE[0]], sums[IDLE[1]])
        assert found["idle"] == (sums[IDLE[0]] == 0 and sums[IDLE[1]] == 0)
    else:
        assert not found["idle"] and found["problem"]


@SETTINGS
@given(st.text(alphabet="abcXYZ019._:/-", min_size=1, max_size=12), st.text(alphabet="abcXYZ019._:/-", max_size=12))
def test_health_check_regex_matches_only_the_model(model, other):
    # HAProxy's rstring is PCRE; these escapes read the same in Python's re.
    pattern = re.compile(S._model_regex(model))  # pylint: disable=protected-access
    assert pattern.search('{"data": [{"id": "%s", "object": "model"}]}' % model)
    assert pattern.search('{"data":[{"id":"%s","object":"model"}]}' % model)
    if other != model:
        assert not pattern.search('{"data": [{"id": "%s", "object": "model"}]}' % other)


# --- metrics_idle() on real captures (tests/fixtures/vllm_serve/README.md) -------------------------------------

def _capture(name):
    with open(os.path.join(FIXTURES, "metrics-0.20.2-h200", name)) as handle:
        return handle.read()


def test_metrics_of_a_real_server_under_load_is_not_idle():
    """vLLM 0.20.2 on an H200 under load: one engine, 8 running and 4 waiting (waiting_by_reason not added)."""
    assert S.metrics_idle(_capture("load.txt")) == {"running": 8.0, "waiting": 4.0, "idle": False, "problem": ""}


def test_metrics_of_a_real_server_before_and_after_load_is_idle():
    for name in ("idle.txt", "after-load.txt"):
        assert S.metrics_idle(_capture(name)) == {"running": 0.0, "waiting": 0.0, "idle": True, "problem": ""}, name


# --- the role's variables of a listed service, its contract, the host's gate and the manifest ---------------------

TWO = [{"name": "chat", "model": "Qwen/Qwen3-8B", "gpus": [0, 1], "port": 8001},
       {"name": "small", "model": "Qwen/Qwen3-0.6B", "served_model_name": "qwen3-small", "gpus": [2],
        "port": 8002, "env": {"A": "1"}, "extra_args": ["--max-num-seqs", "8"], "router": False,
        "benchmark": {"num_prompts": 5}}]


def test_role_vars_give_each_service_its_variables_over_the_single_ones():
    single = dict(SINGLE, env={"NCCL_NVLS_ENABLE": "0"}, extra_args=["--enforce-eager"], benchmark_num_prompts=50,
                  benchmark_when="changed")
    listed = S.services(TWO, single)
    assert listed["errors"] == []
    chat, small = [S.role_vars(service, single) for service in listed["services"]]
    assert chat["vllm_serve_service_name"] == "vllm-chat"
    assert chat["vllm_serve_model_dir"] == ""
    assert chat["vllm_serve_tensor_parallel_size"] == 2
    assert chat["vllm_serve_env"] == {"NCCL_NVLS_ENABLE": "0", "CUDA_VISIBLE_DEVICES": "0,1"}
    assert chat["vllm_serve_extra_args"] == ["--enforce-eager"]
    assert chat["vllm_serve_benchmark"] is False and chat["vllm_serve_benchmark_num_prompts"] == 50
    assert small["vllm_serve_env"] == {"NCCL_NVLS_ENABLE": "0", "A": "1", "CUDA_VISIBLE_DEVICES": "2"}
    assert small["vllm_serve_extra_args"] == ["--max-num-seqs", "8"]
    assert small["vllm_serve_served_model_name"] == "qwen3-small"
    assert small["vllm_serve_benchmark"] is True and small["vllm_serve_benchmark_num_prompts"] == 5
    assert sorted(chat) == sorted("vllm_serve_" + key for key in S.SERVICE_VARS)


def test_a_data_parallel_service_asks_vllm_for_its_replicas():
    listed = S.services([{"name": "dp", "model": "Qwen/Qwen3-8B", "gpus": [0, 1, 2, 3], "data_parallel_size": 2,
                          "port": 8000}], SINGLE)
    found = S.role_vars(listed["services"][0], SINGLE)
    assert found["vllm_serve_tensor_parallel_size"] == 2
    assert found["vllm_serve_extra_args"][-2:] == ["--data-parallel-size", "2"]
    assert found["vllm_serve_env"]["CUDA_VISIBLE_DEVICES"] == "0,1,2,3"


def test_a_cpu_only_test_host_lists_services_without_gpus_and_others_must_list_them():
    item = [{"name": "a", "model": "Qwen/Qwen3-8B", "port": 8000},
            {"name": "b", "model": "Qwen/Qwen3-8B", "port": 8001}]
    test_host = S.services(item, dict(SINGLE, cpu_only_test_host=True))
    assert test_host["errors"] == []
    assert [s["gpus"] for s in test_host["services"]] == [None, None]
    assert S.role_vars(test_host["services"][0], SINGLE)["vllm_serve_tensor_parallel_size"] == "auto"
    real = S.services(item, dict(SINGLE, cpu_only_test_host=False))
    assert any("vllm_serve_services[0].gpus must be a non-empty list" in e for e in real["errors"])


def test_router_must_be_a_bool():
    listed = S.services([{"name": "a", "model": "Qwen/Qwen3-8B", "gpus": [0], "port": 8000, "router": "no"}],
                        SINGLE)
    assert any("vllm_serve_services[0].router must be true or false" in e for e in listed["errors"])


def test_contract_names_the_router_server_and_the_address_the_router_reaches():
    listed = S.services(TWO, SINGLE)["services"]
    chat = S.contract(listed[0], "gpu-a1", ansible_host="10.0.0.5")
    assert chat["server"] == "gpu-a1_chat" and chat["unit"] == "vllm-chat"
    assert chat["bind"] == "0.0.0.0" and chat["address"] == "10.0.0.5"
    assert chat["router"] is True and chat["gpus"] == [0, 1] and chat["port"] == 8001
    assert S.contract(listed[1], "gpu-a1")["router"] is False
    assert S.contract(dict(listed[0], host="192.168.1.7"), "gpu-a1", ansible_host="10.0.0.5")["address"] == \
        "192.168.1.7"
    assert S.contract(listed[0], "gpu-a1", address="172.16.0.9", ansible_host="10.0.0.5")["address"] == \
        "172.16.0.9"
    assert S.contract(listed[0], "gpu_a1")["address"] == "gpu_a1"


def test_host_services_checks_the_list_on_the_hosts_gpus():
    found = S.host_services(TWO, SINGLE, host(2), "gpu-a1")
    assert found["single"] is False
    assert [one["unit"] for one in found["services"]] == ["vllm-chat", "vllm-small"]
    assert any("vllm_serve_services[1].gpus has GPU(s) 2, but the host has 2 GPU(s)" in e for e in found["errors"])
    assert S.host_services(TWO, SINGLE, host(4), "gpu-a1")["errors"] == []
    # Before the GPUs are read: only the normalisation.
    assert S.host_services(TWO, SINGLE, {}, "gpu-a1", check_gpus=False)["errors"] == []
    one = S.host_services([], SINGLE, host(1), "gpu-a1")
    assert one["single"] is True and one["services"][0]["vars"] is None
    assert one["contract"][0]["unit"] == "vllm-qwen-qwen3-8b"
    assert one["contract"][0]["server"] == "gpu-a1_qwen-qwen3-8b"


def test_host_gate_merges_every_services_problems_and_keeps_the_last_inputs():
    listed = {"errors": [], "contract": [{"unit": "vllm-a"}]}
    gates = [{"inputs": {"parts": ["serve"], "serve_model": "A"}, "errors": ["e1"], "compat_warnings": ["w"]},
             {"inputs": {"parts": ["serve"], "serve_model": "B"}, "errors": ["e2", "e1"], "compat_warnings": ["w"]}]
    gate = S.host_gate(listed, gates)
    assert gate["errors"] == ["e1", "e2"] and gate["compat_warnings"] == ["w"]
    assert gate["inputs"]["serve_model"] == "B" and gate["ok"] is False and gate["services"] == []
    clean = S.host_gate(listed, [dict(gates[0], errors=[])])
    assert clean["ok"] is True and clean["services"] == [{"unit": "vllm-a"}]
    broken = S.host_gate({"errors": ["list"], "contract": []}, [])
    assert broken["errors"] == ["list"] and broken["skipped"] is True and "inputs" not in broken


def _plan(unit, mode="systemd"):
    return {"service": unit, "mode": mode, "health": {"url": "http://127.0.0.1:8001"},
            "supervisorctl": ["/v/bin/supervisorctl", "-c", "/etc/s.conf"],
            "files": {"unit": "/etc/systemd/system/%s.service" % unit, "env_file": "/etc/llm/%s.env" % unit,
                      "wrapper": "/etc/llm/%s.sh" % unit, "fingerprint": "/etc/llm/%s.fingerprint" % unit,
                      "supervisor_program": "/etc/llm/supervisor.d/%s.conf" % unit, "log": "/var/log/%s.log" % unit}}


def test_the_manifest_records_what_a_later_run_needs_to_remove_a_service():
    text = S.manifest([_plan("vllm-chat"), _plan("vllm-old")],
                      [{"unit": "vllm-chat", "server": "h_chat", "router": True},
                       {"unit": "vllm-old", "server": "h_old", "router": False}])
    assert sorted(text["units"]) == ["vllm-chat", "vllm-old"]
    assert text["units"]["vllm-chat"]["server"] == "h_chat"
    assert "log" not in text["units"]["vllm-chat"]["files"]
    import base64
    import json
    content = base64.b64encode(json.dumps(text).encode()).decode()
    recorded = S.read_manifest(content)
    assert recorded == json.loads(json.dumps(text))
    gone = S.removal_records(["vllm-chat"], recorded)
    assert [one["unit"] for one in gone] == ["vllm-old"]
    assert gone[0]["router"] is False and gone[0]["url"] == "http://127.0.0.1:8001"
    assert sorted(gone[0]["files"]) == ["env_file", "fingerprint", "supervisor_program", "unit", "wrapper"]
    assert S.removal_records(["vllm-chat", "vllm-old"], recorded) == []


def test_a_manifest_that_is_not_the_roles_removes_nothing():
    assert S.read_manifest("") is None
    assert S.read_manifest("not base64 json") is None
    import base64
    assert S.read_manifest(base64.b64encode(b'{"units": {"vllm-x": {}}}').decode()) is None
    hostile = {"version": 1, "units": {
        "vllm-x": {"mode": "rm -rf", "files": {"unit": "/etc/passwd", "env_file": "/etc/llm/../../etc/vllm-x.env",
                                               "wrapper": "relative/vllm-x.sh", "fingerprint": "/etc/llm/vllm-x.fp"}},
        "sshd": {"files": {"unit": "/etc/systemd/system/sshd.service"}}}}
    gone = S.removal_records([], hostile)
    assert [one["unit"] for one in gone] == ["vllm-x"]
    assert gone[0]["files"] == {"fingerprint": "/etc/llm/vllm-x.fp"}
    assert gone[0]["mode"] == "systemd"


@given(st.lists(st.sampled_from(["vllm-a", "vllm-b", "vllm-c", "other", "vllm-d"]), unique=True),
       st.lists(st.sampled_from(["vllm-a", "vllm-b", "vllm-c", "other", "vllm-d"]), unique=True))
@SETTINGS
def test_removals_never_touch_a_listed_unit_nor_a_foreign_one(listed, recorded):
    manifest = {"version": 1, "units": dict((unit, {"files": {}}) for unit in recorded)}
    gone = [one["unit"] for one in S.removal_records(listed, manifest)]
    assert not set(gone) & set(listed)
    assert "other" not in gone
    assert set(gone) == set(u for u in recorded if u.startswith("vllm-")) - set(listed)
