#!/usr/bin/env bash
# make collection: .collections/ansible_collections/<namespace>/<name> ->
# the repo root, the collections path that ansible.cfg, the unit tests and
# the molecule scenarios use, so they all run the working tree.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${CI_ROOT}" || exit 1

namespace="$(galaxy_field namespace)"
name="$(galaxy_field name)"
[[ -n "${namespace}" && -n "${name}" ]] || die "galaxy.yml has no namespace/name"

link=".collections/ansible_collections/${namespace}/${name}"
target="../../.."
mkdir -p "$(dirname "${link}")"
if [[ -L "${link}" && "$(readlink "${link}")" == "${target}" ]]; then
    log "${link} -> repo root (present)"
else
    [[ ! -e "${link}" || -L "${link}" ]] || die "${link} exists and is not a symlink: remove it"
    ln -sfn "${target}" "${link}"
    log "${link} -> repo root (created)"
fi
[[ -f "${link}/galaxy.yml" ]] || die "${link} does not resolve to the repo root"
