#!/usr/bin/env bash
# make docs: regenerate the variables section of every role README that has
# the markers
#   <!-- BEGIN_ANSIBLE_DOCS -->
#   <!-- END_ANSIBLE_DOCS -->
# from the role's meta/argument_specs.yml, with aar-doc in inject mode and
# the template docs/templates/role-readme.j2. The prose around the markers
# is kept as written.
#
# docs.sh --check (run by `make lint`): regenerate into a scratch copy
# instead, and fail, naming each role and showing the diff, when a
# committed README differs from what the argument specs give. Also fails
# when a generated table row does not have the table's four columns or a
# generated line ends in blanks.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
use_venv
cd "${CI_ROOT}" || exit 1

mode="write"
if [[ "${1:-}" == "--check" ]]; then
    mode="check"
elif [[ $# -gt 0 ]]; then
    die "usage: $0 [--check]"
fi

TEMPLATE="${CI_ROOT}/docs/templates/role-readme.j2"
BEGIN='<!-- BEGIN_ANSIBLE_DOCS -->'
END='<!-- END_ANSIBLE_DOCS -->'
[[ -f "${TEMPLATE}" ]] || die "${TEMPLATE} is missing"
command -v aar-doc >/dev/null || die "aar-doc is not in ${CI_VENV}: run 'make venv'"

scratch="$(mktemp -d "${CI_OUT}/docs.XXXXXX")"
trap 'rm -rf "${scratch}"' EXIT

# The same output whatever the locale or the terminal.
export LC_ALL=C.UTF-8 COLUMNS=80 TERM=dumb

generated=0
drifted=()
for readme in roles/*/README.md; do
    role_dir="$(dirname "${readme}")"
    role="$(basename "${role_dir}")"
    if ! grep -qxF "${BEGIN}" "${readme}"; then
        log "${role}: no ${BEGIN} line in its README, left alone"
        continue
    fi
    grep -qxF "${END}" "${readme}" || die "${readme}: ${BEGIN} without a ${END} line"
    [[ "$(grep -cxF "${BEGIN}" "${readme}")" -eq 1 && "$(grep -cxF "${END}" "${readme}")" -eq 1 ]] ||
        die "${readme}: the markers must appear once each"
    [[ -f "${role_dir}/meta/argument_specs.yml" ]] ||
        die "${readme}: has the markers but ${role_dir}/meta/argument_specs.yml is missing"

    out="${scratch}/${role}.md"
    cp "${readme}" "${out}"
    if ! aar-doc --output-file "${out}" --output-template "${TEMPLATE}" \
        --output-mode inject "${role_dir}" markdown >"${scratch}/${role}.log" 2>&1; then
        cat "${scratch}/${role}.log" >&2
        die "${role}: aar-doc failed on ${role_dir}/meta/argument_specs.yml"
    fi
    generated=$((generated + 1))

    # Every row of a generated table has four cells (a '|' inside a cell is
    # written '\|'), and no generated line ends in blanks.
    bad_rows="$(sed -n "\|^${BEGIN}\$|,\|^${END}\$|p" "${out}" |
        awk '/^\|/ { line = $0; gsub(/\\\|/, "", line); n = gsub(/\|/, "", line);
                     if (n != 5) print "  " $0 }')"
    [[ -z "${bad_rows}" ]] || die "${role}: generated table rows without four cells:
${bad_rows}"
    if sed -n "\|^${BEGIN}\$|,\|^${END}\$|p" "${out}" | grep -nE '[[:blank:]]+$' >"${scratch}/${role}.blank"; then
        sed 's/^/  /' "${scratch}/${role}.blank" >&2
        die "${role}: generated lines ending in blanks (above)"
    fi

    # A variable without a description leaves its last cell empty.
    # shellcheck disable=SC2016 # the backquotes are Markdown, not a command
    undocumented="$(sed -n "\|^${BEGIN}\$|,\|^${END}\$|p" "${out}" |
        sed -n 's/^| `\([^`]*\)` |.*| *|$/\1/p' | tr '\n' ' ')"
    if [[ -n "${undocumented}" ]]; then
        log "WARNING: ${role}: no description in meta/argument_specs.yml for: ${undocumented}"
    fi

    if cmp -s "${readme}" "${out}"; then
        log "${role}: README up to date"
        continue
    fi
    if [[ "${mode}" == check ]]; then
        drifted+=("${role}")
        printf '\n%s: README differs from its argument specs:\n' "${role}" >&2
        diff -u "${readme}" "${out}" --label "${readme} (committed)" \
            --label "${readme} (from meta/argument_specs.yml)" >&2 || true
    else
        cp "${out}" "${readme}"
        log "${role}: README regenerated"
    fi
done

[[ "${generated}" -gt 0 ]] || die "no role README has the ${BEGIN} marker"
if [[ "${#drifted[@]}" -gt 0 ]]; then
    die "role READMEs out of date with their argument specs: ${drifted[*]}. Run 'make docs' and commit the result."
fi
log "${generated} role README(s) checked against their argument specs"
