# shellcheck shell=bash
# The lock of a controller-side test fixture. Sourced by every builder
# (tests/runfile/build.sh, tests/wheelhouse/build, tests/wheelhouse/download,
# tests/vllm/build, tests/model/testbed.sh), which calls
#
#   fixture_lock DIR
#
# before it checks whether DIR is up to date, and holds the lock until it
# exits. The lock is an exclusive flock on DIR.lock, next to DIR, so it
# outlives DIR when a build replaces DIR as a whole. Two callers that build
# the same DIR at once (make site and a scenario, two scenarios, the AWX
# test) run one after the other: the second waits here, then finds DIR up to
# date. The lock is released when the builder and every process it started
# have exited (they share the file descriptor).
# FIXTURE_LOCK_WAIT: the seconds to wait at most (default 3600).

fixture_lock() {
    local dir="${1%/}" wait="${FIXTURE_LOCK_WAIT:-3600}" start
    if [[ -z "${dir}" ]]; then
        echo "fixture_lock: give the fixture's directory" >&2
        exit 2
    fi
    mkdir -p "$(dirname "${dir}")"
    exec {FIXTURE_LOCK_FD}>"${dir}.lock"
    if flock --nonblock "${FIXTURE_LOCK_FD}"; then
        return 0
    fi
    echo "waiting for the build of ${dir} that holds ${dir}.lock (at most ${wait} s)" >&2
    start="${SECONDS}"
    if ! flock --wait "${wait}" "${FIXTURE_LOCK_FD}"; then
        echo "another build of ${dir} still holds ${dir}.lock after ${wait} s." \
            "Fix: let it finish, or stop it; FIXTURE_LOCK_WAIT sets the wait" >&2
        exit 1
    fi
    echo "got ${dir}.lock after $((SECONDS - start)) s" >&2
}
