#!/usr/bin/env bash
# The scenario's dependency step (TEST-ONLY): the controller fixtures the
# platforms mount read-only (the wheelhouses) or the roles read (the
# stand-in runfile, the hub's model repository, the tiny Qwen3), built once
# per machine before `create`; each returns at once when up to date.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
exec "$root/tests/ci/fixtures.sh" cuda-runfile wheelhouse vllm testfleet-model
