#!/usr/bin/env bash
# Build, where PyPI is reachable, what the GPU validation host needs for the
# vLLM steps of run.sh, as pieces small enough to carry one at a time:
#
#   tests/gpu/bundle.sh [DEST]          DEST defaults to .gpu
#
# DEST/parts/wheelhouse.tar.partNN  the pieces (60 MiB each) of one tar holding
#   wheelhouse/  vLLM and the packages it needs that the host lacks
#                (tests/gpu/vllm-requirements.txt, exact pins; installed with
#                --no-deps into the host's torch venv by vllm_source's wheel
#                method), the packages the host probably has already
#                (vllm-requirements-host.txt, installed only where missing),
#                and supervisor for vllm_serve's supervisord mode;
#   ansible/     ansible-core and its requirements for the host's Python.
# The collection itself is built on the host from the checkout (run.sh
# vllm-bundle), so the pieces need not be carried again after a change.
# DEST/parts/wheelhouse.tar.sha256  the tar's sha256; run.sh vllm-bundle
#   checks the reassembled tar against it before it unpacks anything.
#
# The wheels are CPython 3.12 manylinux builds (the H200 host's Python). The
# tar is built with fixed names, times and owners, so the same wheels give
# the same sha256 on any machine.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
dest=${1:-$root/.gpu}
python=${GPU_BUNDLE_PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

plat=(--only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 --platform manylinux2014_x86_64)
for n in $(seq 17 39); do plat+=(--platform "manylinux_2_${n}_x86_64"); done

mkdir -p "$work/b/wheelhouse" "$work/b/ansible"
"$python" -m pip download -q --no-deps -d "$work/b/wheelhouse" "${plat[@]}" \
    -r "$here/vllm-requirements.txt" -r "$here/vllm-requirements-host.txt"
"$python" -m pip download -q -d "$work/b/ansible" "${plat[@]}" ansible-core==2.19.14

tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$work/b" -cf "$work/wheelhouse.tar" .
rm -rf "$dest/parts"
mkdir -p "$dest/parts"
(cd "$work" && sha256sum wheelhouse.tar) >"$dest/parts/wheelhouse.tar.sha256"
split -b 60M -d -a 2 "$work/wheelhouse.tar" "$dest/parts/wheelhouse.tar.part"
ls -l "$dest/parts"
cat "$dest/parts/wheelhouse.tar.sha256"
