#!/usr/bin/env bash
# The scenario's dependency step (TEST-ONLY): build the controller fixtures
# that the platforms mount read-only, before `create`. tests/vllm/build and
# tests/wheelhouse/build replace their directory as a whole when their
# inputs change, so a build after `create` would leave the containers with
# the old one. tests/ci/fixtures.sh builds them side by side (each under its
# directory's lock), and each returns at once when its cache is up to date.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
exec "$root/tests/ci/fixtures.sh" wheelhouse qwen_model_fetch vllm
