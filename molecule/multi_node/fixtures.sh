#!/usr/bin/env bash
# The controller fixtures of the multi_node scenario (test path): the torch
# wheelhouse, the vLLM wheelhouse and tiny model, the stand-in CUDA runfile
# (preflight's toolkit check).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
exec "$root/tests/ci/fixtures.sh" wheelhouse qwen_model_fetch vllm cuda-runfile
