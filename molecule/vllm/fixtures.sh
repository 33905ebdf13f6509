#!/usr/bin/env bash
# The scenario's dependency step (TEST-ONLY): build the controller fixtures
# that the platforms mount read-only, before `create`. tests/vllm/build and
# tests/wheelhouse/build replace their directory as a whole when their
# inputs change, so a build after `create` would leave the containers with
# the old one. Both return at once when their cache is up to date.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
"$root/tests/wheelhouse/build"
"$root/tests/vllm/build"
# The torch wheelhouse is mounted where the torch role pushes it, and the
# role makes that directory 0755: make it so here (mktemp left it 0700).
chmod 0755 "$root/.cache/wheelhouse"
