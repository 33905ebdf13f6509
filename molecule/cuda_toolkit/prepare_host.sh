#!/bin/sh
# TEST-ONLY. The state a cuda_toolkit test host starts from (prepare.yml).
# Usage: prepare_host.sh air RUNFILE | prepare_host.sh mirror | prepare_host.sh pkg RUNFILE
set -eu

version_json() {
    printf '{\n   "cuda" : {\n      "name" : "CUDA SDK",\n      "version" : "%s"\n   }\n}\n' "$1"
}

case "$1" in
air)
    # A toolkit installed earlier by hand with the runfile ($2), which the
    # role is asked to remove (cuda_toolkit_remove_toolkits).
    sh "$2" --silent --toolkit --toolkitpath=/opt/old/cuda-13.0 --override >/dev/null
    rm -f "$2"
    # Another toolkit's directory, in use before the run: a version.json of
    # CUDA 12.8.1 and its own linker entry (not written by the role). The
    # role must report it and leave it alone.
    mkdir -p /usr/local/cuda-12.8/targets/x86_64-linux/lib
    version_json 12.8.1 >/usr/local/cuda-12.8/version.json
    ln -sfn /usr/local/cuda-12.8 /usr/local/cuda
    echo /usr/local/cuda-12.8/lib64 >/etc/ld.so.conf.d/cuda-12-8.conf
    ;;
mirror)
    # Half-installed CUDA 13.0 directories (version.json, no nvcc), as an
    # interrupted install leaves them: the role repairs the first; the
    # second is the previous state a failing install must put back.
    for dir in /usr/local/cuda-13.0 /opt/failing/cuda-13.0; do
        mkdir -p "$dir/bin"
        version_json 13.0.2 >"$dir/version.json"
        echo "left by an interrupted install" >"$dir/HALF-INSTALLED"
    done
    # The user's own /usr/local/cuda, which the role is told to leave alone.
    mkdir -p /opt/vendor/cuda
    ln -sfn /opt/vendor/cuda /usr/local/cuda
    # The replayed nvidia-smi plays an H200 (driver 580.159.04).
    echo h200 >/etc/nvidia-smi-fake/class
    ;;
pkg)
    # CUDA 13.0 as NVIDIA's Ubuntu packages leave it: no version.json and
    # no uninstaller; /usr/local/cuda through /etc/alternatives; the
    # libraries listed by the packages' own linker entry (988_cuda-13.conf)
    # through the link; nvcc not on PATH. A stamp dates the starting state.
    sh "$2" --silent --toolkit --toolkitpath=/usr/local/cuda-13.0 --override >/dev/null
    rm -f "$2" /usr/local/cuda-13.0/version.json /usr/local/cuda-13.0/bin/cuda-uninstaller /usr/local/cuda
    ln -sfn /usr/local/cuda-13.0 /etc/alternatives/cuda
    ln -sfn /etc/alternatives/cuda /usr/local/cuda
    echo /usr/local/cuda/targets/x86_64-linux/lib >/etc/ld.so.conf.d/988_cuda-13.conf
    ldconfig
    touch /root/pkg-start.stamp
    ;;
*)
    echo "usage: $0 air RUNFILE | $0 mirror | $0 pkg RUNFILE" >&2
    exit 2
    ;;
esac
