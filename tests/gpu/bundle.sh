#!/usr/bin/env bash
# Build, where PyPI is reachable, the air-gapped wheel set of a vLLM release
# for a host that already has its torch venv, as pieces small enough to carry
# one at a time (docs/operations.md, "Air-gapped install"):
#
#   tests/gpu/bundle.sh VERSION [DEST]        DEST defaults to .gpu
#
# 1. pip resolves vllm==VERSION (and supervisor, for vllm_serve's supervisord
#    mode) for the host's Python and platform against the index, without
#    installing anything, keeping the host's torch stack and transformers
#    (DEST/constraints.txt, from the freeze): DEST/report.json (pip's
#    installation report), and DEST/resolved.txt, every NAME==VERSION it
#    resolved (GPU_BUNDLE_PINS of a later run that must give the same set).
# 2. tests/gpu/bundle_resolve.py follows the release's requirements for that
#    host and subtracts the host venv's pip freeze: the packages the host has
#    at a version the release accepts stay the host's; DEST/vllm-requirements.txt
#    pins what the host lacks, DEST/vllm-requirements-host.txt what it has at a
#    version the release refuses (both installed with --no-deps into the torch
#    venv as vllm_source_requirements), DEST/resolution.json says why for each.
# 3. The wheels of both lists (DEST/wheels/wheelhouse) and ansible-core with
#    its requirements (DEST/wheels/ansible) go into one tar with fixed names,
#    times and owners (the same wheels give the same sha256 on any machine),
#    split into DEST/parts/wheelhouse.tar.partNN of GPU_BUNDLE_PIECE each;
#    DEST/parts/wheelhouse.tar.sha256 and DEST/vllm-wheelhouse.sha256 hold its
#    sha256 (run.sh vllm-bundle checks the reassembled tar against it).
#
# The environment:
#   GPU_BUNDLE_PYTHON          a Python of the host's version X.Y (pip evaluates
#                              the requirements' markers with the Python it runs
#                              under); default python3.12
#   GPU_BUNDLE_PYTHON_VERSION  the host's Python (default 3.12)
#   GPU_BUNDLE_FREEZE          pip freeze of the host's venv (default
#                              tests/gpu/h200-venv-freeze.txt, the H200's)
#   GPU_BUNDLE_EXTRA           more roots (default supervisor==4.3.0)
#   GPU_BUNDLE_ANSIBLE         the ansible-core that travels (default 2.19.14)
#   GPU_BUNDLE_UPLOADED_PRIOR_TO  resolve as the index was at that time (an ISO
#                              8601 time; needs pip 25.3 or later): the same
#                              wheel set again, later (the H200's 0.20.2 set:
#                              2026-12-01T04:00:00Z)
#   GPU_BUNDLE_PINS            a file of NAME==VERSION lines the resolution must
#                              keep (a resolved.txt of an earlier run): the same
#                              set again, whatever the index has gained since
#   GPU_BUNDLE_PIECE           the size of a piece, as split(1) reads it
#                              (default 54M: a piece and a working tree of a few
#                              MiB together stay under a 64 MiB transfer)
# The wheels are CPython manylinux x86_64 builds (glibc 2.17 to 2.39).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
if [[ $# -lt 1 || $1 == -* || ! $1 =~ ^[0-9]+(\.[0-9]+)+([.a-z0-9+]*)$ ]]; then
  echo "usage: $0 VERSION [DEST]   (VERSION: the vLLM release, as 0.26.0)" >&2
  exit 2
fi
version=$1
dest=${2:-$root/.gpu}
pyver=${GPU_BUNDLE_PYTHON_VERSION:-3.12}
python=${GPU_BUNDLE_PYTHON:-python$pyver}
freeze=${GPU_BUNDLE_FREEZE:-$here/h200-venv-freeze.txt}
read -r -a extra <<<"${GPU_BUNDLE_EXTRA-supervisor==4.3.0}"
ansible=${GPU_BUNDLE_ANSIBLE:-2.19.14}
piece=${GPU_BUNDLE_PIECE:-54M}
pins=()
if [[ -n ${GPU_BUNDLE_PINS:-} ]]; then
  [[ -r $GPU_BUNDLE_PINS ]] || { echo "GPU_BUNDLE_PINS=$GPU_BUNDLE_PINS cannot be read. Fix: the resolved.txt of an earlier run." >&2; exit 2; }
  pins=(-c "$GPU_BUNDLE_PINS")
fi

got=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
if [[ $got != "$pyver" ]]; then
  echo "GPU_BUNDLE_PYTHON=$python is Python $got, the host's is $pyver: pip would evaluate the requirements'" \
    "markers for $got. Fix: set GPU_BUNDLE_PYTHON to a Python $pyver." >&2
  exit 2
fi
[[ -r $freeze ]] || { echo "GPU_BUNDLE_FREEZE=$freeze cannot be read. Fix: pip freeze of the host's venv." >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
abi=cp${pyver/./}
plat=(--only-binary=:all: --python-version "$pyver" --implementation cp --abi "$abi" --platform manylinux2014_x86_64)
for n in $(seq 17 39); do plat+=(--platform "manylinux_2_${n}_x86_64"); done

mkdir -p "$dest"
echo "resolving vllm==$version ${extra[*]} for CPython $pyver manylinux x86_64"
"$python" "$here/bundle_resolve.py" --freeze "$freeze" --constraints >"$dest/constraints.txt"
when=()
[[ -z ${GPU_BUNDLE_UPLOADED_PRIOR_TO:-} ]] || when=(--uploaded-prior-to "$GPU_BUNDLE_UPLOADED_PRIOR_TO")
"$python" -m pip install -q --dry-run --ignore-installed --target "$work/target" --report "$dest/report.json" \
    -c "$dest/constraints.txt" "${pins[@]}" "${when[@]}" "${plat[@]}" "vllm==$version" "${extra[@]}"
"$python" -c 'import json, sys
report = json.load(open(sys.argv[1]))
pins = sorted("%s==%s" % (i["metadata"]["name"].lower(), i["metadata"]["version"]) for i in report["install"])
open(sys.argv[2], "w").write("".join(p + "\n" for p in pins))' "$dest/report.json" "$dest/resolved.txt"
"$python" "$here/bundle_resolve.py" --report "$dest/report.json" --freeze "$freeze" --python-version "$pyver" \
    --out "$dest"

rm -rf "$dest/wheels"
mkdir -p "$dest/wheels/wheelhouse" "$dest/wheels/ansible"
"$python" -m pip download -q --no-deps -d "$dest/wheels/wheelhouse" "${plat[@]}" \
    -r "$dest/vllm-requirements.txt" -r "$dest/vllm-requirements-host.txt"
"$python" -m pip download -q -d "$dest/wheels/ansible" "${plat[@]}" "ansible-core==$ansible"

tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$dest/wheels" -cf "$work/wheelhouse.tar" .
rm -rf "$dest/parts"
mkdir -p "$dest/parts"
(cd "$work" && sha256sum wheelhouse.tar) | tee "$dest/vllm-wheelhouse.sha256" >"$dest/parts/wheelhouse.tar.sha256"
split -b "$piece" -d -a 2 "$work/wheelhouse.tar" "$dest/parts/wheelhouse.tar.part"
echo "wheels: $(find "$dest/wheels/wheelhouse" -name '*.whl' | wc -l) ($(du -sh "$dest/wheels/wheelhouse" | cut -f1))," \
  "pieces: $(find "$dest/parts" -name 'wheelhouse.tar.part*' | wc -l), tar $(du -h "$work/wheelhouse.tar" | cut -f1)"
cat "$dest/vllm-wheelhouse.sha256"
