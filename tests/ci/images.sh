#!/usr/bin/env bash
# make images: the local base images of the molecule scenarios and the test
# fleet. No registry is reachable, so nothing is pulled:
#   local/debian-ansible:bookworm  Debian 12 minbase from debootstrap + IMAGE_PACKAGES
#   local/debian-systemd:bookworm  the above + SYSTEMD_PACKAGES (docker commit)
# An image is kept when it exists and has every package of its list; it is
# built (or rebuilt, when a package was added to a list) otherwise.
# CI_BASE_IMAGE / CI_SYSTEMD_IMAGE override the tags (e.g. to time a cold
# build without touching the images in use).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The one list of packages in every test image. Add what a role's scenario
# needs on a bare host here (comma-separated, debootstrap --include syntax).
IMAGE_PACKAGES="${IMAGE_PACKAGES:-python3,python3-venv,python3-pip,ca-certificates,sudo,git,procps,iproute2}"
# Added on top for the systemd image (space-separated).
SYSTEMD_PACKAGES="${SYSTEMD_PACKAGES:-systemd systemd-sysv dbus}"
DEBIAN_SUITE="${DEBIAN_SUITE:-bookworm}"
DEBIAN_MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
BUILD_TMP="${BUILD_TMP:-/var/tmp}"

engine_up || die "no Docker engine answers: run 'make engine' first"

# has_packages IMAGE PKG...: the image exists and every package is installed.
has_packages() {
    local image="$1"
    shift
    docker image inspect "${image}" >/dev/null 2>&1 || return 1
    docker run --rm --network none --entrypoint dpkg-query "${image}" \
        -W -f='${Status}\n' "$@" 2>/dev/null | grep -c '^install ok installed$' |
        grep -qx "$#"
}

build_base() {
    local rootfs
    command -v debootstrap >/dev/null 2>&1 || die "debootstrap is missing: run 'make engine' first"
    rootfs="$(mktemp -d "${BUILD_TMP}/llm-stack-rootfs.XXXXXX")"
    # shellcheck disable=SC2064 # expand now: the trap must remove this rootfs
    trap "rm -rf '${rootfs}'" EXIT
    log "debootstrap ${DEBIAN_SUITE} (minbase + ${IMAGE_PACKAGES}) into ${rootfs}"
    if ! debootstrap --variant=minbase --include="${IMAGE_PACKAGES}" \
        "${DEBIAN_SUITE}" "${rootfs}" "${DEBIAN_MIRROR}" >"${CI_OUT}/debootstrap.log" 2>&1; then
        tail -n 40 "${CI_OUT}/debootstrap.log" >&2
        die "debootstrap failed (log: ${CI_OUT}/debootstrap.log)"
    fi
    # Keep the image small: no downloaded .deb files (the package lists
    # stay, as on a freshly installed host).
    rm -f "${rootfs}/var/cache/apt/archives/"*.deb
    log "importing ${CI_BASE_IMAGE}"
    tar -C "${rootfs}" -c . | docker import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["sleep", "infinity"]' \
        --change "LABEL org.gpufleet.llm_stack.packages=${IMAGE_PACKAGES}" \
        - "${CI_BASE_IMAGE}" >/dev/null
    rm -rf "${rootfs}"
    trap - EXIT
}

build_systemd() {
    local builder="llm-stack-ci-image-builder-$$"
    log "building ${CI_SYSTEMD_IMAGE} from ${CI_BASE_IMAGE} (+ ${SYSTEMD_PACKAGES})"
    docker rm -f "${builder}" >/dev/null 2>&1 || true
    # shellcheck disable=SC2064 # expand now: the trap must remove this container
    trap "docker rm -f '${builder}' >/dev/null 2>&1 || true" EXIT
    if ! docker run --name "${builder}" --network host \
        -v "${CI_CA_BUNDLE}:${CI_CA_BUNDLE}:ro" \
        -e DEBIAN_FRONTEND=noninteractive \
        "${CI_BASE_IMAGE}" sh -ec "
            apt-get update -qq
            apt-get install -y -qq --no-install-recommends ${SYSTEMD_PACKAGES}
            apt-get clean
            # No getty or udev work in a container.
            systemctl mask getty.target systemd-udevd.service systemd-udev-trigger.service >/dev/null 2>&1 || true
        " >"${CI_OUT}/systemd-image.log" 2>&1; then
        tail -n 40 "${CI_OUT}/systemd-image.log" >&2
        die "installing ${SYSTEMD_PACKAGES} failed (log: ${CI_OUT}/systemd-image.log)"
    fi
    docker commit \
        --change 'CMD ["/lib/systemd/systemd"]' \
        --change "LABEL org.gpufleet.llm_stack.packages=${IMAGE_PACKAGES},${SYSTEMD_PACKAGES// /,}" \
        "${builder}" "${CI_SYSTEMD_IMAGE}" >/dev/null
    docker rm -f "${builder}" >/dev/null
    trap - EXIT
}

IFS=',' read -r -a base_list <<<"${IMAGE_PACKAGES}"
read -r -a systemd_list <<<"${SYSTEMD_PACKAGES}"

if has_packages "${CI_BASE_IMAGE}" "${base_list[@]}"; then
    log "${CI_BASE_IMAGE} is present with ${IMAGE_PACKAGES}"
else
    start="$(date +%s)"
    build_base
    log "${CI_BASE_IMAGE} built in $(($(date +%s) - start))s"
fi

if has_packages "${CI_SYSTEMD_IMAGE}" "${base_list[@]}" "${systemd_list[@]}"; then
    log "${CI_SYSTEMD_IMAGE} is present with ${SYSTEMD_PACKAGES}"
else
    start="$(date +%s)"
    build_systemd
    log "${CI_SYSTEMD_IMAGE} built in $(($(date +%s) - start))s"
fi

docker image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' |
    grep -E "^(${CI_BASE_IMAGE}|${CI_SYSTEMD_IMAGE}) " || true
