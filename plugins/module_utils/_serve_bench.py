# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: the benchmark's result and thresholds (``bench_result``): part of vllm_serve, which re-exports these names."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math

from ansible_collections.gpufleet.llm_stack.plugins.module_utils._readers import as_dict as _dict
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._serve_plan import THRESHOLDS, VllmServeError

# vllm bench serve --save-result JSON keys (vllm/benchmarks/serve.py) -> our names.
BENCH_KEYS = {
    "ttft_p50_ms": "median_ttft_ms",
    "ttft_p99_ms": "p99_ttft_ms",
    "tpot_mean_ms": "mean_tpot_ms",
    "tpot_p50_ms": "median_tpot_ms",
    "tpot_p99_ms": "p99_tpot_ms",
    "request_throughput": "request_throughput",
    "output_throughput": "output_throughput",
    "total_token_throughput": "total_token_throughput",
    "completed": "completed",
    "failed": "failed",
    "duration_s": "duration",
}


def bench_result(data, thresholds=None):
    """vllm bench serve's --save-result JSON (a dict or its text) and the thresholds in; numbers and misses out.

    Returns {ok, error, numbers, misses, checked}: numbers holds the keys of
    BENCH_KEYS (None when the result lacks one); misses lists what broke a
    threshold, each a readable line; a threshold whose number is missing is
    a miss too (the benchmark did not measure it).
    """
    if isinstance(data, (str, bytes)):
        try:
            data = json.loads(data)
        except ValueError as exc:
            return {"ok": False, "error": "the benchmark result is not JSON: %s" % exc, "numbers": {}, "misses": [],
                    "checked": []}
    if not isinstance(data, dict):
        return {"ok": False, "error": "the benchmark result is not a JSON object", "numbers": {}, "misses": [],
                "checked": []}
    numbers = {}
    for ours, theirs in BENCH_KEYS.items():
        value = data.get(theirs)
        number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        numbers[ours] = number if number is not None and math.isfinite(number) else None
    for key in ("completed", "failed"):
        if numbers[key] is not None:
            numbers[key] = int(numbers[key])
    error = None
    if not numbers["completed"]:
        error = "the benchmark completed no request (failed: %s)" % numbers["failed"]
    misses, checked = [], []
    for name in sorted(_dict(thresholds)):
        if name not in THRESHOLDS:
            raise VllmServeError("unknown threshold %s" % name)
        key, kind = THRESHOLDS[name]
        limit = float(thresholds[name])
        value = numbers.get(key)
        checked.append(name)
        if value is None:
            misses.append("%s: not measured (vllm_serve_benchmark_thresholds.%s=%g)" % (key, name, limit))
        elif (kind == "max" and value > limit) or (kind == "min" and value < limit):
            misses.append("%s=%.2f, %s %g (vllm_serve_benchmark_thresholds.%s)"
                          % (key, value, "above the most allowed" if kind == "max" else "below the least wanted",
                             limit, name))
    return {"ok": error is None and not misses, "error": error, "numbers": numbers, "misses": misses,
            "checked": checked}
