#!/usr/bin/env bash
# make build: build the collection tarball into build/collection/ from the
# files git sees (what a fresh clone holds), install it into a scratch
# collections path (no Galaxy server involved) and prove
# the installed copy works: ansible-doc renders every module, every role's
# argument spec and lists every filter, from the tarball and not from the
# working tree.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
use_venv
cd "${CI_ROOT}" || exit 1

namespace="$(galaxy_field namespace)"
name="$(galaxy_field name)"
version="$(galaxy_field version)"
out="${CI_ROOT}/build/collection"
tarball="${out}/${namespace}-${name}-${version}.tar.gz"
# Scratch space of this run (source copy, install target, cwd for
# ansible-doc), removed at the end.
mkdir -p "${CI_ROOT}/build" "${out}"
scratch="$(mktemp -d "${CI_ROOT}/build/collection-check.XXXXXX")"
trap 'rm -rf "${scratch}"' EXIT
src="${scratch}/src"
install_dir="${scratch}/install"
mkdir -p "${install_dir}" "${scratch}/cwd"

export_tree "${src}"
(cd "${src}" && ansible-galaxy collection build --force --output-path "${scratch}" .)
[[ -f "${scratch}/$(basename "${tarball}")" ]] || die "ansible-galaxy did not write $(basename "${tarball}")"
mv -f "${scratch}/$(basename "${tarball}")" "${tarball}"
log "built ${tarball} ($(du -h "${tarball}" | cut -f1), $(tar -tzf "${tarball}" | wc -l) entries)"

export ANSIBLE_COLLECTIONS_PATH="${install_dir}"
ansible-galaxy collection install --offline --force -p "${install_dir}" "${tarball}"
installed="${install_dir}/ansible_collections/${namespace}/${name}"
[[ -f "${installed}/MANIFEST.json" ]] || die "installed collection has no MANIFEST.json"

# Run ansible-doc outside the repo (its ansible.cfg points at the working
# tree) and against the installed copy only.
cd "${scratch}/cwd" || exit 1
: >ansible.cfg

# Every failure is listed before the step fails. One ansible-doc call per
# plugin type; when it fails, one call per plugin says which one.
# Collections bundled in the venv are left out of the search: faster, and
# nothing of this collection can come from elsewhere.
export ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false
failures=()

# doc_check TYPE NAME...: render the docs of NAME... (basenames) of TYPE.
doc_check() {
    local type="$1" item doc
    shift
    local fqcns=("${@/#/${namespace}.${name}.}")
    if doc="$(ansible-doc -t "${type}" "${fqcns[@]}" 2>&1)"; then
        for item in "$@"; do
            if [[ "${type}" == module ]]; then
                grep -qF "${installed}/plugins/modules/${item}.py" <<<"${doc}" ||
                    failures+=("ansible-doc ${namespace}.${name}.${item} did not render from the installed tarball")
            fi
        done
        if [[ "${type}" == module ]]; then
            local section count
            for section in OPTIONS EXAMPLES RETURN; do
                count="$(grep -Ec "^ *${section}" <<<"${doc}" || true)"
                [[ "${count}" -ge "$#" ]] || failures+=("ansible-doc -t module: ${section} found ${count} times for $# modules")
            done
        fi
        log "ansible-doc -t ${type}: $# rendered ($*), $(wc -l <<<"${doc}") lines"
        return 0
    fi
    for item in "$@"; do
        doc="$(ansible-doc -t "${type}" "${namespace}.${name}.${item}" 2>&1)" ||
            failures+=("ansible-doc -t ${type} ${namespace}.${name}.${item}: ${doc}")
    done
}

modules=()
for module in "${installed}"/plugins/modules/*.py; do
    [[ -e "${module}" ]] || continue
    base="$(basename "${module}" .py)"
    [[ "${base}" == "__init__" ]] || modules+=("${base}")
done
[[ "${#modules[@]}" -eq 0 ]] || doc_check module "${modules[@]}"

roles=()
for spec in "${installed}"/roles/*/meta/argument_specs.yml; do
    [[ -e "${spec}" ]] || continue
    roles+=("$(basename "$(dirname "$(dirname "${spec}")")")")
done
[[ "${#roles[@]}" -eq 0 ]] || doc_check role "${roles[@]}"
checked=$((${#modules[@]} + ${#roles[@]}))

if compgen -G "${installed}/plugins/filter/*.py" >/dev/null; then
    if listing="$(ansible-doc -t filter -l "${namespace}.${name}" 2>&1)"; then
        log "filters listed: $(grep -o "^${namespace}\.${name}\.[a-z0-9_]*" <<<"${listing}" | tr '\n' ' ')"
    else
        failures+=("ansible-doc -t filter -l ${namespace}.${name}: ${listing}")
    fi
fi

# The execution environment metadata, as ansible-builder reads it from the
# installed collection (meta/execution-environment.yml).
# ansible-builder leaves out what provides Ansible itself (ansible-core), so
# the collection must show exactly the other lines of requirements.txt.
ee="$(ansible-builder introspect --sanitize "${install_dir}" 2>&1)" || die "ansible-builder introspect failed: ${ee}"
want="$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "${CI_ROOT}/requirements.txt" | grep -Eiv '^(ansible|ansible-core)([=<>!~ ]|$)' | sort || true)"
got="$(grep "from collection ${namespace}.${name}" <<<"${ee}" | sed -e "s/^- '//" -e "s/[[:space:]]*#.*//" -e "s/'$//" | sort || true)"
[[ "${got}" == "${want}" ]] ||
    die "ansible-builder introspect gives [${got}] for ${namespace}.${name}, requirements.txt lists [${want}]: ${ee}"
log "execution environment requirements beyond ansible-core: ${got:-none}"

# The execution environment definition itself (ansible-builder v3): its
# build context must be created from the installed copy. Building the image
# pulls the base image from a registry, which this machine cannot reach:
# that part is skipped.
ee_context="${scratch}/ee"
ee_out="$(ansible-builder create -f "${installed}/meta/execution-environment.yml" -c "${ee_context}" 2>&1)" ||
    die "ansible-builder create failed on meta/execution-environment.yml: ${ee_out}"
containerfile=""
for candidate in "${ee_context}/Containerfile" "${ee_context}/Dockerfile"; do
    [[ -f "${candidate}" ]] && containerfile="${candidate}" && break
done
[[ -n "${containerfile}" ]] || die "ansible-builder create wrote no Containerfile: ${ee_out}"
core_pin="$(grep -Eo '^ansible-core==[^[:space:]#]+' "${CI_ROOT}/requirements.txt" || true)"
grep -qF "${core_pin}" "${containerfile}" ||
    die "the execution environment does not install ${core_pin} (requirements.txt): see meta/execution-environment.yml"
log "ansible-builder create: ${containerfile##*/} with ${core_pin} ($(grep -c '^FROM' "${containerfile}") stages); image build skipped (needs a registry)"

if [[ "${#failures[@]}" -gt 0 ]]; then
    printf 'ERROR: %s\n' "${failures[@]}" >&2
    die "${#failures[@]} problem(s) with the built collection (see above)"
fi
log "the built tarball installs and ${checked} module/role docs render from it"
