#!/usr/bin/env bash
# TEST STAND-IN ONLY. Build the test fleet's CUDA runfile: a makeself
# archive named like NVIDIA's CUDA 13.0 Update 2 runfile
# (cuda_13.0.2_580.95.05_linux.run), holding NVIDIA's own CUDA 13.0
# components from PyPI (a real nvcc 13.0.88, nvvm, crt headers, cudart
# 13.0.96) and an installer that takes the real runfile's silent flags.
# See tests/runfile/README.md.
#
# Usage: tests/runfile/build.sh [OUTPUT_DIR]     (default: .cache/cuda-runfile)
# Prints the path of the runfile. Writes next to it NAME.sha256 and NAME.md5
# ("<hash>  <name>", as sha256sum/md5sum print them). A second call with
# an unchanged recipe does nothing (the output holds a stamp of the recipe);
# downloaded wheels are kept in OUTPUT_DIR/wheels. The check and the build
# hold OUTPUT_DIR.lock (tests/ci/fixture_lock.sh): a second build of the
# same OUTPUT_DIR waits, then finds it up to date.
#
# Needs: makeself (Debian package), unzip, pip (PIP=..., else the repo's
# .venv, else python3 -m pip), sha256sum/md5sum. If g++ is present, the
# staged nvcc compiles a small sm_90 kernel before packaging.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:-$repo/.cache/cuda-runfile}
out=${out%/}
header=${MAKESELF_HEADER:-/usr/share/makeself/makeself-header.sh}

# shellcheck source=versions.env
. "$here/versions.env"
name=cuda_${CUDA_VERSION}_${CUDA_DRIVER_BUNDLED}_linux.run
cuda_mm=${CUDA_VERSION%.*}

for tool in makeself unzip sha256sum md5sum; do
    command -v "$tool" >/dev/null || {
        echo "build.sh: $tool is missing (apt-get install makeself unzip coreutils)" >&2
        exit 1
    }
done
[ -f "$header" ] || {
    echo "build.sh: makeself's header $header is missing (apt-get install makeself)" >&2
    exit 1
}

# shellcheck source=../ci/fixture_lock.sh
. "$repo/tests/ci/fixture_lock.sh"
fixture_lock "$out"

stamp=$(cat "$here/build.sh" "$here/patch_header.py" "$here/versions.env" \
    "$here/requirements.txt" "$here/installer/install.sh" \
    "$here/installer/cuda-uninstaller" "$header" | sha256sum | cut -d' ' -f1)
if [ -f "$out/$name" ] && [ -f "$out/$name.sha256" ] &&
    [ "$(cat "$out/recipe.sha256" 2>/dev/null)" = "$stamp" ]; then
    echo "Up to date: $out/$name" >&2
    echo "$out/$name"
    exit 0
fi

if [ -n "${PIP:-}" ]; then
    read -r -a pip <<<"$PIP"
elif [ -x "$repo/.venv/bin/pip" ]; then
    pip=("$repo/.venv/bin/pip")
else
    pip=(python3 -m pip)
fi

mkdir -p "$out/wheels"
# What an interrupted build left (no other build runs: this one holds the lock).
rm -rf "$out"/build.*
work=$(mktemp -d "$out/build.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "Downloading NVIDIA's CUDA ${cuda_mm} component wheels (about 100 MB, once)..." >&2
"${pip[@]}" download --quiet --no-deps --require-hashes --only-binary=:all: \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux_2_12_x86_64 --platform manylinux2010_x86_64 \
    --python-version 3.11 --implementation py \
    -r "$here/requirements.txt" -d "$out/wheels" >&2

for wheel in "$out"/wheels/nvidia_*.whl; do
    unzip -q -o "$wheel" 'nvidia/*' -d "$work/wheels"
done
nvcc_wheels=("$out"/wheels/nvidia_cuda_nvcc-"${CUDA_NVCC_VERSION}"-*.whl)
unzip -q -p "${nvcc_wheels[0]}" '*.dist-info/licenses/License.txt' >"$work/EULA.txt"

w=$work/wheels/nvidia/cu13
t=$work/payload/toolkit
tgt=$t/targets/x86_64-linux

# The layout of a toolkit installed by NVIDIA's runfile.
mkdir -p "$t/bin/crt" "$t/nvvm/bin" "$t/nvvm/libdevice" "$t/nvvm/lib64" \
    "$t/nvvm/include" "$tgt/include" "$tgt/lib"
for tool in nvcc ptxas nvlink fatbinary cudafe++ bin2c __nvcc_device_query; do
    install -m 0755 "$w/bin/$tool" "$t/bin/$tool"
done
install -m 0644 "$w/bin/nvcc.profile" "$t/bin/nvcc.profile"
install -m 0644 "$w"/bin/crt/* "$t/bin/crt/"
install -m 0755 "$w/nvvm/bin/cicc" "$t/nvvm/bin/cicc"
install -m 0644 "$w/nvvm/libdevice/libdevice.10.bc" "$t/nvvm/libdevice/"
install -m 0755 "$w/lib/libnvvm.so.4" "$t/nvvm/lib64/libnvvm.so.${CUDA_NVVM_VERSION%%.*}.0.0"
ln -s "libnvvm.so.${CUDA_NVVM_VERSION%%.*}.0.0" "$t/nvvm/lib64/libnvvm.so.${CUDA_NVVM_VERSION%%.*}"
ln -s "libnvvm.so.${CUDA_NVVM_VERSION%%.*}" "$t/nvvm/lib64/libnvvm.so"
install -m 0644 "$w/include/nvvm.h" "$t/nvvm/include/nvvm.h"
rm "$w/include/nvvm.h"
cp -R "$w/include/." "$tgt/include/"
find "$tgt/include" -type d -exec chmod 0755 {} +
find "$tgt/include" -type f -exec chmod 0644 {} +
cudart_major=${CUDA_CUDART_VERSION%%.*}
install -m 0755 "$w/lib/libcudart.so.$cudart_major" "$tgt/lib/libcudart.so.$CUDA_CUDART_VERSION"
ln -s "libcudart.so.$CUDA_CUDART_VERSION" "$tgt/lib/libcudart.so.$cudart_major"
ln -s "libcudart.so.$cudart_major" "$tgt/lib/libcudart.so"
install -m 0644 "$w/lib/libcudart_static.a" "$w/lib/libcudadevrt.a" "$tgt/lib/"
ln -s targets/x86_64-linux/lib "$t/lib64"
ln -s targets/x86_64-linux/include "$t/include"
install -m 0644 "$work/EULA.txt" "$t/EULA.txt"
install -m 0755 "$here/installer/cuda-uninstaller" "$t/bin/cuda-uninstaller"
# version.json in the format of NVIDIA's (keys sorted, three-space indent).
cat >"$t/version.json" <<EOF
{
   "cuda" : {
      "name" : "CUDA SDK",
      "version" : "${CUDA_VERSION}"
   },
   "cuda_crt" : {
      "name" : "CUDA crt Compiler for CUDA applications",
      "version" : "${CUDA_CRT_VERSION}"
   },
   "cuda_cudart" : {
      "name" : "CUDA Runtime (cudart)",
      "version" : "${CUDA_CUDART_VERSION}"
   },
   "cuda_nvcc" : {
      "name" : "CUDA NVCC",
      "version" : "${CUDA_NVCC_VERSION}"
   },
   "libnvvm" : {
      "name" : "NVVM",
      "version" : "${CUDA_NVVM_VERSION}"
   },
   "nvidia_driver" : {
      "name" : "NVIDIA Linux Driver",
      "version" : "${CUDA_DRIVER_BUNDLED}"
   }
}
EOF
chmod 0644 "$t/version.json"
# What bin/cuda-uninstaller removes: every entry, relative to the toolkit.
(cd "$t" && find . -mindepth 1 \( -type d -printf 'd %P\n' \) -o \( -type l -printf 'l %P\n' \) \
    -o \( -type f -printf 'f %P\n' \)) | sort -k2 >"$work/manifest"
install -m 0644 "$work/manifest" "$t/bin/.uninstall_manifest_do_not_delete.txt"

# The staged nvcc must print the release it claims to be.
nvcc_banner=$("$t/bin/nvcc" --version)
case "$nvcc_banner" in
*"release ${cuda_mm}, V${CUDA_NVCC_VERSION}"*) ;;
*)
    echo "build.sh: the staged nvcc does not report release ${cuda_mm}, V${CUDA_NVCC_VERSION}:" >&2
    echo "$nvcc_banner" >&2
    exit 1
    ;;
esac
if command -v g++ >/dev/null; then
    printf '__global__ void scale(float *x, float a) { x[threadIdx.x] *= a; }\n' >"$work/k.cu"
    "$t/bin/nvcc" -arch=sm_90 -c "$work/k.cu" -o "$work/k.o"
    echo "Staged nvcc compiled an sm_90 kernel." >&2
fi

install -m 0755 "$here/installer/install.sh" "$work/payload/install.sh"
printf 'CUDA_VERSION=%s\nCUDA_DRIVER_BUNDLED=%s\n' "$CUDA_VERSION" "$CUDA_DRIVER_BUNDLED" \
    >"$work/payload/installer.env"

python3 "$here/patch_header.py" "$header" "$work/header.sh"
makeself --quiet --nox11 --header "$work/header.sh" --complevel 6 --tar-quietly \
    "$work/payload" "$work/$name" \
    "CUDA ${CUDA_VERSION} toolkit (test stand-in from NVIDIA's PyPI wheels)" ./install.sh >&2
sh "$work/$name" --check >&2

(cd "$work" && sha256sum "$name" >"$name.sha256" && md5sum "$name" >"$name.md5")
mv -f "$work/$name.sha256" "$work/$name.md5" "$out/"
mv -f "$work/$name" "$out/$name"
echo "$stamp" >"$out/recipe.sha256"
echo "$out/$name"
