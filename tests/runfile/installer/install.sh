#!/usr/bin/env bash
# TEST STAND-IN ONLY. The installer carried by the test runfile that
# tests/runfile/build.sh makes from NVIDIA's CUDA 13.0 PyPI wheels. It stands
# in for the `cuda-installer` inside NVIDIA's real runfile, on the test fleet
# only (no GPU, no access to NVIDIA's download site), and does what the real
# one does in silent toolkit-only mode, as far as the cuda_toolkit role can
# see:
#
# - takes the real runfile's flags: --silent --toolkit --toolkitpath=DIR
#   --installpath=DIR --override --no-drm --no-man-page --no-opengl-libs
#   --defaultroot=DIR --tmpdir=DIR; refuses unknown flags and --driver
#   (the stand-in carries no driver);
# - without --override, stops when the host compiler (gcc) is missing, as
#   the real compiler check does;
# - installs the toolkit into DIR (default /usr/local/cuda-X.Y) with the
#   real layout: bin/nvcc, nvvm/, targets/x86_64-linux/{include,lib},
#   lib64 and include links, version.json, bin/cuda-uninstaller;
# - when run as root, points /usr/local/cuda at DIR (the installer's
#   "Create symbolic link from /usr/local/cuda" default) and logs to
#   /var/log/cuda-installer.log (/tmp/cuda-installer.log otherwise);
# - prints the same kind of summary and exits non-zero on failure.
set -u

here=$(cd "$(dirname "$0")" && pwd)
# CUDA_VERSION, CUDA_DRIVER_BUNDLED (written by build.sh).
. "$here/installer.env"
cuda_mm=${CUDA_VERSION%.*}

if [ "$(id -u)" -eq 0 ]; then
    logfile=/var/log/cuda-installer.log
else
    logfile=/tmp/cuda-installer.log
fi

log() {
    printf '[%s]: %s\n' "$1" "$2" >>"$logfile" 2>/dev/null || true
}

fail() {
    log ERROR "$1"
    echo "$1" >&2
    echo "Installation failed. See log at $logfile for details." >&2
    exit 1
}

usage() {
    cat <<EOF
Options (test stand-in of the CUDA ${CUDA_VERSION} runfile, toolkit only):
  --silent               Required: there is no interactive mode.
  --toolkit              Install the CUDA Toolkit.
  --toolkitpath=<path>   Install the toolkit to <path> (default /usr/local/cuda-${cuda_mm}).
  --installpath=<path>   Same as --toolkitpath for this toolkit-only runfile.
  --override             Skip the host compiler check.
  --no-drm --no-man-page --no-opengl-libs --defaultroot=<path> --tmpdir=<path>
                         Accepted; they change nothing in a toolkit-only install.
EOF
}

: >>"$logfile" 2>/dev/null || {
    echo "Cannot write the log file $logfile." >&2
    exit 1
}
log INFO "Test stand-in of the CUDA ${CUDA_VERSION} runfile (built from NVIDIA's PyPI wheels)."
log INFO "Arguments: $*"

silent=n
toolkit=n
override=n
toolkitpath=/usr/local/cuda-${cuda_mm}

for arg in "$@"; do
    case "$arg" in
    --silent) silent=y ;;
    --toolkit) toolkit=y ;;
    --override) override=y ;;
    --toolkitpath=* | --installpath=*) toolkitpath=${arg#*=} ;;
    --no-drm | --no-man-page | --no-opengl-libs) ;;
    --defaultroot=* | --tmpdir=*) ;;
    --driver)
        fail "This test runfile carries no NVIDIA driver: install the toolkit only (--toolkit)." ;;
    --help | -h)
        usage
        exit 0
        ;;
    *)
        usage >&2
        fail "Unknown option: $arg" ;;
    esac
done

[ "$silent" = y ] || fail "This test runfile has no interactive mode: run it with --silent."
[ "$toolkit" = y ] || fail "No component selected: pass --toolkit."
case "$toolkitpath" in
/*) ;;
*) fail "The toolkit path must be absolute: --toolkitpath=$toolkitpath" ;;
esac
toolkitpath=${toolkitpath%/}

if [ "$override" = n ]; then
    log INFO "Checking compiler version..."
    if ! gcc_path=$(command -v gcc); then
        log ERROR "Missing gcc. gcc is required to continue."
        fail "Failed to verify gcc version. See log at $logfile for details."
    fi
    log INFO "gcc location: $gcc_path"
fi

log INFO "Installing: CUDA Toolkit"
log INFO "Install CUDA Toolkit in: $toolkitpath/"
if ! out=$(mkdir -p "$toolkitpath" 2>&1 && cp -a "$here/toolkit/." "$toolkitpath/" 2>&1); then
    log ERROR "$out"
    fail "Installation of the CUDA Toolkit into $toolkitpath failed."
fi
log INFO "Installed: CUDA Toolkit"

if [ "$(id -u)" -eq 0 ]; then
    if [ -L /usr/local/cuda ] || [ ! -e /usr/local/cuda ]; then
        ln -sfn "$toolkitpath" /usr/local/cuda
        log INFO "Created symlink /usr/local/cuda -> $toolkitpath"
    else
        log WARNING "/usr/local/cuda exists and is not a symlink: left alone."
    fi
fi

cat <<EOF
===========
= Summary =
===========

Driver:   Not Selected
Toolkit:  Installed in $toolkitpath/

Please make sure that
 -   PATH includes $toolkitpath/bin
 -   LD_LIBRARY_PATH includes $toolkitpath/lib64, or, add $toolkitpath/lib64 to /etc/ld.so.conf and run ldconfig as root

To uninstall the CUDA Toolkit, run cuda-uninstaller in $toolkitpath/bin
***WARNING: Incomplete installation! This installation did not install the CUDA Driver. A driver of version at least ${CUDA_DRIVER_BUNDLED%%.*}.00 is required for CUDA ${cuda_mm} functionality to work.

Logfile is $logfile
EOF
exit 0
