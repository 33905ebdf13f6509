#!/usr/bin/env bash
# make engine: a Docker engine for molecule's docker driver and the test
# fleet. Does nothing when one already answers. Otherwise installs what is
# missing from Debian (docker.io, debootstrap, makeself) and starts dockerd
# in the background with no bridge and no iptables rules (containers use
# host networking; see docs of the scenarios), then waits until it answers.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DOCKERD_LOG="${DOCKERD_LOG:-/var/log/dockerd-llm-stack-ci.log}"
# Extra dockerd options (e.g. another -H/--data-root for a second engine,
# reached with DOCKER_HOST).
read -r -a dockerd_extra <<<"${DOCKERD_EXTRA_ARGS:-}"

missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
command -v makeself >/dev/null 2>&1 || missing+=(makeself)
# The stand-in CUDA runfile (tests/runfile) unpacks NVIDIA's PyPI wheels.
command -v unzip >/dev/null 2>&1 || missing+=(unzip)
# The docker CLI may come on its own (a static binary); docker.io brings one
# otherwise.
command -v docker >/dev/null 2>&1 || missing+=(docker.io)

if [[ "${#missing[@]}" -gt 0 ]]; then
    mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
    [[ "$(id -u)" -eq 0 ]] || die "missing ${missing[*]} and not root: install them with apt-get"
    log "installing from Debian: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >"${CI_OUT}/apt-engine.log" 2>&1 || {
        tail -n 40 "${CI_OUT}/apt-engine.log" >&2
        die "apt-get install ${missing[*]} failed (log: ${CI_OUT}/apt-engine.log)"
    }
fi

if engine_up; then
    log "Docker engine answers: $(docker version --format '{{.Server.Version}}' 2>/dev/null)"
    exit 0
fi

[[ "$(id -u)" -eq 0 ]] || die "no Docker engine answers and dockerd needs root to start"

# A daemon killed without cleanup leaves its pid file, and a new one then
# refuses to start: drop it when the process it names is gone.
for pidfile in /var/run/docker.pid /var/run/docker/containerd/containerd.pid; do
    if [[ -f "${pidfile}" ]] && ! kill -0 "$(cat "${pidfile}")" 2>/dev/null; then
        log "removing stale ${pidfile}"
        rm -f "${pidfile}"
    fi
done

log "starting dockerd (log: ${DOCKERD_LOG})"
setsid dockerd --bridge=none --iptables=false --ip6tables=false \
    ${dockerd_extra[@]+"${dockerd_extra[@]}"} >>"${DOCKERD_LOG}" 2>&1 </dev/null &
dockerd_pid=$!

for _ in $(seq 1 60); do
    if engine_up; then
        log "Docker engine answers (dockerd pid ${dockerd_pid}): $(docker version --format '{{.Server.Version}}')"
        exit 0
    fi
    kill -0 "${dockerd_pid}" 2>/dev/null || break
    sleep 1
done
tail -n 30 "${DOCKERD_LOG}" >&2
die "dockerd did not answer within 60 s (log: ${DOCKERD_LOG})"
