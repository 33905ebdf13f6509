#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: vllm_bench_result
short_description: Read a vllm bench serve result, compare it with thresholds and set it as a fact
description:
  - Reads the JSON file that C(vllm bench serve --save-result) wrote on the host and returns its numbers as the
    C(vllm_serve_benchmark_result) fact; time to first token (p50, p99), time per output token (mean, p50, p99), requests
    per second, output and total tokens per second, completed and failed requests.
  - Compares them with I(thresholds) and lists each miss in C(misses). Whether a miss fails the host is the
    role's choice (C(vllm_serve_benchmark_fail_on_miss)); the module itself fails only when the file cannot be read
    or holds no completed request.
  - The parsing and the comparison are in plugins/module_utils/vllm_serve.py (C(bench_result)).
version_added: "0.2.0"
author:
  - gpufleet maintainers (@gpufleet)
options:
  path:
    description: The result file.
    type: path
    required: true
  thresholds:
    description:
      - Limits to compare with; keys C(max_ttft_p50_ms), C(max_ttft_p99_ms), C(max_tpot_ms) (mean time per output
        token), C(min_request_throughput) (requests/s), C(min_output_throughput) and C(min_total_token_throughput)
        (tokens/s).
    type: dict
    default: {}
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.read_only
  - gpufleet.llm_stack.attributes.facts
"""

EXAMPLES = r"""
- name: Record the benchmark and compare it with the fleet's targets
  gpufleet.llm_stack.vllm_bench_result:
    path: /var/lib/llm-stack/bench/vllm-qwen-1f2e3d4c5b6a7980.json
    thresholds:
      max_tpot_ms: 200
      min_request_throughput: 50
"""

RETURN = r"""
ansible_facts:
  description: The benchmark's numbers.
  returned: success
  type: dict
  contains:
    vllm_serve_benchmark_result:
      description:
        - C(file), C(ok) (no miss), C(misses), C(checked) (the thresholds compared), C(thresholds), and the
          numbers, null when the result lacks one; C(ttft_p50_ms), C(ttft_p99_ms), C(tpot_mean_ms), C(tpot_p50_ms),
          C(tpot_p99_ms), C(request_throughput), C(output_throughput), C(total_token_throughput), C(completed),
          C(failed), C(duration_s).
      type: dict
      sample:
        file: /var/lib/llm-stack/bench/vllm-qwen-1f2e3d4c5b6a7980.json
        ok: false
        misses: ["tpot_mean_ms=231.40, above the most allowed 200 (vllm_serve_benchmark_thresholds.max_tpot_ms)"]
        ttft_p50_ms: 41.2
        request_throughput: 12.5
misses:
  description: Each threshold missed, in words.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm_serve as V


def main():
    module = AnsibleModule(
        argument_spec=dict(path=dict(type="path", required=True), thresholds=dict(type="dict", default={})),
        supports_check_mode=True,
    )
    p = module.params
    unknown = sorted(set(p["thresholds"]) - set(V.THRESHOLDS))
    if unknown:
        module.fail_json(msg="thresholds: %s not known; use some of %s" % (", ".join(unknown), ", ".join(sorted(V.THRESHOLDS))),
                         misses=[])
    try:
        thresholds = dict((key, float(value)) for key, value in p["thresholds"].items())
    except (TypeError, ValueError) as exc:
        module.fail_json(msg="thresholds: not a number: %s" % exc, misses=[])
    try:
        with open(p["path"], "rb") as handle:
            text = handle.read(16 * 1024 * 1024).decode("utf-8", "replace")
    except (IOError, OSError) as exc:
        module.fail_json(msg="Cannot read the benchmark result %s: %s" % (p["path"], exc), misses=[])
    verdict = V.bench_result(text, thresholds)
    if verdict["error"]:
        module.fail_json(msg="%s: %s" % (p["path"], verdict["error"]), misses=verdict["misses"])
    fact = dict(verdict["numbers"], file=p["path"], ok=verdict["ok"], misses=verdict["misses"],
                checked=verdict["checked"], thresholds=thresholds)
    module.exit_json(changed=False, misses=verdict["misses"], ansible_facts={"vllm_serve_benchmark_result": fact})


if __name__ == "__main__":
    main()
