#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: cuda_toolkit_state
short_description: Read a CUDA toolkit directory's state and plan its setup (link, linker, login shells)
version_added: "0.1.0"
description:
  - Reads, never changes, the host. Returns where CUDA O(version) goes (O(prefix)/cuda-X.Y), whether a working
    toolkit of that release is there now (RV(installed)), why not (RV(problems)), the O(home_link) link, what the
    dynamic linker resolves for C(libcudart.so.X) (C(ldconfig -p)), an install left interrupted (RV(aside)), the
    other toolkits, and the setup changes the M(gpufleet.llm_stack.cuda_toolkit) role makes (RV(plan)).
  - A toolkit is installed when its C(version.json) names O(version), its C(bin/nvcc) runs and reports release X.Y
    (and the nvcc build C(version.json) lists), and C(lib64/libcudart.so.X) is there.
  - A toolkit installed from packages has no C(version.json); nvcc tells its release (13.0) but not its update
    (13.0.2). One of the wanted release that passes the other checks is taken as installed, with
    RV(update_unknown=true), and the setup that already leads to it is kept (RV(plan.kept)).
  - Settings that cannot work, and states that must stop the host before any change, are returned in RV(errors),
    each naming the role variable and the fix; the module itself fails only on options of the wrong type.
    A O(version) that is not C(X.Y) or C(X.Y.Z) gives an error in RV(errors) and nothing else is read.
  - Every program it runs (C(nvcc --version), C(ldconfig -p)) has a time limit, O(timeout).
author:
  - gpufleet maintainers (@gpufleet)
options:
  version:
    description:
      - CUDA release, C(X.Y.Z) such as C(12.8.1) (C(cuda_toolkit_version)). C(X.Y) is read too.
    type: str
    required: true
  prefix:
    description:
      - Directory that holds the versioned toolkit directories (C(cuda_toolkit_prefix)). The toolkit is
        O(prefix)/cuda-X.Y.
    type: str
    default: /usr/local
  home_link:
    description:
      - The conventional C(CUDA_HOME) link the role points at the toolkit.
    type: path
    default: /usr/local/cuda
  toolkit_root:
    description:
      - Directory scanned for other toolkits (C(cuda-*)), besides O(scan_prefixes).
    type: path
    default: /usr/local
  scan_prefixes:
    description:
      - Other toolkit directories to report (C(cuda_toolkit_scan_prefixes)).
    type: list
    elements: path
    default: []
  ldconfig_file:
    description:
      - The dynamic linker entry the role writes. Default C(/etc/ld.so.conf.d/cuda-X-Y.conf).
    type: path
  profile_script:
    description:
      - Login-shell script the role writes (C(cuda_toolkit_profile_script)); empty for none.
    type: str
    default: /etc/profile.d/cuda.sh
  manage_cuda_link:
    description:
      - Whether the role points O(home_link) at the toolkit (C(cuda_toolkit_manage_cuda_link)).
    type: bool
    default: true
  manage_ldconfig:
    description:
      - Whether the role writes O(ldconfig_file) (C(cuda_toolkit_manage_ldconfig)).
    type: bool
    default: true
  remove_toolkits:
    description:
      - Other toolkits to remove with their own C(bin/cuda-uninstaller) (C(cuda_toolkit_remove_toolkits)).
    type: list
    elements: str
    default: []
  managed_marker:
    description:
      - Text that marks the linker entries the role wrote; those of other toolkits are listed in
        RV(plan.remove_ldconfig_files).
    type: str
    default: Managed by Ansible (gpufleet.llm_stack.cuda_toolkit)
  tmpdir:
    description:
      - Where the runfile unpacks (C(cuda_toolkit_tmpdir)). Checked (absolute, no spaces); its free space counts for
        RV(install_check).
    type: str
  download_dir:
    description:
      - Where the runfile is kept on the host (C(cuda_toolkit_download_dir)). Only checked.
    type: str
  log_file:
    description:
      - Log of the installer runs (C(cuda_toolkit_log_file)). Only checked.
    type: str
  installer_extra_args:
    description:
      - More installer flags (C(cuda_toolkit_installer_extra_args)). Only checked; C(--driver) and the flags the
        role sets are refused.
    type: list
    elements: str
    default: []
  runfile:
    description:
      - The runfile on the host, once downloaded or copied. When set, RV(install_check) says whether it is the
        right file (O(runfile_checksum)) and whether there is room to unpack and install it.
    type: path
  runfile_checksum:
    description:
      - C(sha256:<hex>) or C(md5:<hex>) of O(runfile) (C(cuda_toolkit_runfile_checksum)); empty checks none.
    type: str
    default: ""
  min_free_mb:
    description:
      - Free space (MiB) O(tmpdir) and O(prefix) each need to install O(runfile) (C(cuda_toolkit_min_free_mb));
        C(0) is three times the size of O(runfile).
    type: int
    default: 0
  keep_runfile:
    description:
      - Whether the role keeps O(runfile) after a good install (C(cuda_toolkit_keep_runfile)); else
        RV(plan.cleanup) lists it.
    type: bool
    default: false
  collect:
    description:
      - Whether preflight collects the role's gate (C(llm_stack_gate_collect)); then RV(gate_parts) leaves the
        matrix's driver rule to preflight.
    type: bool
    default: false
  require_installed:
    description:
      - Fail, with the state and a message naming what is missing, unless CUDA O(version) is installed (used right
        after the installer ran).
    type: bool
    default: false
  fetch_url:
    description:
      - The URL of the runfile (the gate's C(cuda_runfile.url)), where the role downloads it. When set, RV(fetch) is
        the command of that download to O(fetch_dest).
    type: str
  fetch_dest:
    description:
      - Where the download of O(fetch_url) puts the runfile on the host (absolute). Needed with O(fetch_url).
    type: str
  timeout:
    description:
      - Time limit in seconds of each program the module runs.
    type: int
    default: 30
extends_documentation_fragment:
  - gpufleet.llm_stack.attributes.read_only
notes:
  - RV(installed) is the state when the module runs. The role reads it before the install (its plan), after the
    installer (to roll back on failure) and at the end (verification).
seealso:
  - module: gpufleet.llm_stack.nvcc_facts
  - module: gpufleet.llm_stack.stack_compat
"""

EXAMPLES = r"""
- name: Read the state of CUDA 12.8.1 under /usr/local
  gpufleet.llm_stack.cuda_toolkit_state:
    version: "12.8.1"
  register: toolkit

- name: Stop when the toolkit is not there
  ansible.builtin.assert:
    that: toolkit.installed
    fail_msg: "{{ toolkit.report }}"

- name: The planned setup of a second toolkit that leaves the host's setup alone
  gpufleet.llm_stack.cuda_toolkit_state:
    version: "13.0.2"
    prefix: /opt/cuda-side
    manage_cuda_link: false
    manage_ldconfig: false
    profile_script: ""
"""

RETURN = r"""
version:
  description: O(version), stripped.
  returned: always
  type: str
  sample: "13.0.2"
major:
  description: Major version; null when O(version) cannot be read.
  returned: always
  type: str
  sample: "13"
major_minor:
  description: Release C(X.Y); null when O(version) cannot be read.
  returned: always
  type: str
  sample: "13.0"
dir:
  description: The toolkit directory, O(prefix)/cuda-X.Y; null when O(version) cannot be read.
  returned: always
  type: str
  sample: /usr/local/cuda-13.0
exists:
  description: Something is at RV(dir).
  returned: always
  type: bool
  sample: true
installed:
  description: A working toolkit of the release is in RV(dir) now (see the description).
  returned: always
  type: bool
  sample: true
update_unknown:
  description: Installed, from packages (no C(version.json)), so only the release is known, not the update.
  returned: always
  type: bool
  sample: false
problems:
  description: Why RV(dir) is not a working toolkit of O(version); empty when it is, or when nothing is there.
  returned: always
  type: list
  elements: str
  sample: ["bin/nvcc is missing", "lib64/libcudart.so.13 is missing"]
report:
  description: One line on the state, for the play output.
  returned: always
  type: str
  sample: "CUDA 13.0.2 is installed in /usr/local/cuda-13.0 (nvcc V13.0.88)."
toolkit:
  description: The scan entry of RV(dir) (as in M(gpufleet.llm_stack.nvcc_facts)' C(cuda_toolkits)), or null.
  returned: always
  type: dict
  sample: {path: /usr/local/cuda-13.0, version: "13.0.2", release: "13.0", nvcc_build: "13.0.88",
           nvcc: /usr/local/cuda-13.0/bin/nvcc, source: version.json}
nvcc:
  description: The toolkit's own C(bin/nvcc) and its C(--version).
  returned: always
  type: dict
  contains:
    path:
      description: RV(dir)/bin/nvcc.
      type: str
    version:
      description: Release it reports (C(release X.Y)), or null.
      type: str
    build:
      description: Its full version (C(VX.Y.Z)), or null.
      type: str
    error:
      description: Null, or why it could not be read (missing, failed, timed out).
      type: str
  sample: {path: /usr/local/cuda-13.0/bin/nvcc, version: "13.0", build: "13.0.88", error: null}
linker:
  description: What C(ldconfig -p) lists first for C(libcudart.so.X).
  returned: always
  type: dict
  contains:
    soname:
      description: C(libcudart.so.X).
      type: str
    library:
      description: The toolkit's own, RV(dir)/lib64/libcudart.so.X.
      type: str
    found:
      description: The path C(ldconfig -p) lists first, or null.
      type: str
    ok:
      description: RV(linker.found) and RV(linker.library) resolve to the same file.
      type: bool
    error:
      description: Null, or why C(ldconfig -p) could not be read.
      type: str
  sample: {soname: libcudart.so.13, library: /usr/local/cuda-13.0/lib64/libcudart.so.13,
           found: /usr/local/cuda/targets/x86_64-linux/lib/libcudart.so.13, ok: true, error: null}
link:
  description: O(home_link), not followed.
  returned: always
  type: dict
  contains:
    path:
      description: O(home_link).
      type: str
    exists:
      description: Something is there (a dangling link too).
      type: bool
    islink:
      description: It is a symbolic link.
      type: bool
    target:
      description: The link's own target (C(readlink)), or null.
      type: str
    resolved:
      description: Where it leads in the end, or null (absent, dangling).
      type: str
    leads_to_dir:
      description: It resolves to RV(dir).
      type: bool
  sample: {path: /usr/local/cuda, exists: true, islink: true, target: /etc/alternatives/cuda,
           resolved: /usr/local/cuda-13.0, leads_to_dir: true}
aside:
  description: Where the role keeps the previous RV(dir) while the installer runs; it exists only after an
    interrupted install.
  returned: always
  type: dict
  sample: {path: /usr/local/cuda-13.0.previous, exists: false}
ldconfig_file:
  description: The linker entry the role writes (O(ldconfig_file) or its default).
  returned: always
  type: str
  sample: /etc/ld.so.conf.d/cuda-13-0.conf
ldconfig_file_exists:
  description: RV(ldconfig_file) is there.
  returned: always
  type: bool
profile_script:
  description: O(profile_script).
  returned: always
  type: str
profile_exists:
  description: O(profile_script) is set and there.
  returned: always
  type: bool
missing_dirs:
  description: Of O(prefix) and O(tmpdir), those that do not exist (the role creates them before the installer runs).
  returned: always
  type: list
  elements: str
  sample: [/opt/cuda-side]
remove:
  description: Each of O(remove_toolkits) (C(path)), whether a toolkit is still there (C(present)) and has
    C(bin/cuda-uninstaller) (C(uninstaller)).
  returned: always
  type: list
  elements: dict
  sample: [{path: /opt/old/cuda-13.0, present: true, uninstaller: true}]
remove_without_uninstaller:
  description: Toolkits of O(remove_toolkits) still there without an uninstaller (an error in RV(errors)).
  returned: always
  type: list
  elements: str
others:
  description: The other toolkits found, entries as in RV(toolkit).
  returned: always
  type: list
  elements: dict
others_report:
  description: One line on the other toolkits and what happens to them, or null when there are none.
  returned: always
  type: str
plan:
  description: The setup changes for the toolkit, as the state is now.
  returned: always
  type: dict
  contains:
    set_link:
      description: Point O(home_link) at RV(dir).
      type: bool
    set_ldconfig:
      description: Write RV(ldconfig_file).
      type: bool
    set_profile:
      description: Write O(profile_script).
      type: bool
    kept:
      description: What is kept as found, one line each (a link through /etc/alternatives, a package's linker
        entry, no login-shell script for a toolkit from packages).
      type: list
      elements: str
    remove_ldconfig_files:
      description: Linker entries the role wrote for other toolkits (they carry O(managed_marker)).
      type: list
      elements: str
    uninstall:
      description: Toolkits of O(remove_toolkits) whose C(bin/cuda-uninstaller) is there.
      type: list
      elements: str
    create_dirs:
      description: RV(missing_dirs), each with the mode the role creates it with (C(path), C(mode)), C(0700) for
        O(tmpdir), else C(0755).
      type: list
      elements: dict
    restore_link:
      description:
        - How the role puts O(home_link) back as it is now, where the installer (which points it at the new
          toolkit) is not to have the last word - the C(state), C(src) and C(force) of M(ansible.builtin.file).
        - A link to its target again (C(state=link), C(force=true)), else C(state=absent) with C(src=null).
      type: dict
    cleanup:
      description: What the role removes after a good install - RV(aside) (its C(path)), and O(runfile) unless
        O(keep_runfile).
      type: list
      elements: str
  sample:
    set_link: false
    set_ldconfig: false
    set_profile: false
    kept:
      - /usr/local/cuda already leads to /usr/local/cuda-13.0 (through /etc/alternatives/cuda)
      - the dynamic linker already resolves libcudart.so.13 to it (/usr/local/cuda/targets/x86_64-linux/lib/libcudart.so.13)
      - "no /etc/profile.d/cuda.sh: a toolkit from packages leaves PATH to the host"
    remove_ldconfig_files: []
    uninstall: []
    create_dirs: []
    restore_link: {state: link, src: /etc/alternatives/cuda, force: true}
    cleanup: [/usr/local/cuda-13.0.previous]
gate_parts:
  description: The parts of M(gpufleet.llm_stack.stack_compat) the role's gate runs - C(matrix) (the matrix's
    driver rule) and C(cuda_toolkit), or C(cuda_toolkit) alone with O(collect) (preflight applies the driver rule
    itself).
  returned: always
  type: list
  elements: str
  sample: [matrix, cuda_toolkit]
install_check:
  description:
    - With O(runfile), whether it is the right file and there is room to install it; null without O(runfile).
    - In check mode a runfile that is not there yet is not an error.
  returned: always
  type: dict
  contains:
    runfile:
      description: O(runfile).
      type: str
    exists:
      description: O(runfile) is a file on the host.
      type: bool
    size:
      description: Its size in bytes.
      type: int
    algorithm:
      description: C(md5) or C(sha256), from O(runfile_checksum); null without one.
      type: str
    checksum:
      description: Its checksum with RV(install_check.algorithm).
      type: str
    checksum_ok:
      description: It matches O(runfile_checksum); null when none is given or the file is not there.
      type: bool
    need_mb:
      description: Free MiB needed in O(tmpdir) and under O(prefix).
      type: int
    free_mb:
      description: Free MiB of each (C(variable), C(path), C(filesystem_of) the deepest existing directory, C(free_mb)).
      type: list
      elements: dict
    errors:
      description: What stops the install, each naming the role variable and the fix.
      type: list
      elements: str
  sample:
    runfile: /var/cache/cuda-toolkit/cuda_13.0.2_580.95.05_linux.run
    exists: true
    size: 4331207365
    algorithm: md5
    checksum: 9d2cf8dbd0c8e5ec4a4b33ac6fa66aa5
    checksum_ok: true
    need_mb: 12392
    free_mb:
      - {variable: cuda_toolkit_tmpdir, path: /var/tmp, filesystem_of: /var/tmp, free_mb: 81234}
      - {variable: cuda_toolkit_prefix, path: /usr/local, filesystem_of: /usr/local, free_mb: 81234}
    errors: []
fetch:
  description:
    - With O(fetch_url), the command of a M(gpufleet.llm_stack.run_logged) download of the runfile to O(fetch_dest),
      with the host's C(python3); null without O(fetch_url).
    - The URL travels in the environment (C(LLM_STACK_FETCH_URL)), never on the command line; the file appears at
      O(fetch_dest) only once the whole body arrived.
  returned: always
  type: dict
  contains:
    argv:
      description: The command.
      type: list
      elements: str
    environment:
      description: Its environment (the URL).
      type: dict
    no_log:
      description: Whether the URL holds a user and password (the task that runs the download hides its result).
      type: bool
    shown_url:
      description: The URL without its user and password, for messages.
      type: str
errors:
  description: What stops the host before any change, each naming the role variable and the fix.
  returned: always
  type: list
  elements: str
  sample:
    - "/usr/local/cuda-13.0.previous exists: an earlier install of CUDA 13.0 was interrupted ..."
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.llm_stack.plugins.module_utils.cuda_toolkit import MANAGED_MARKER, read_state, runfile_fetch
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.fetch_url import FetchError


def main():
    module = AnsibleModule(
        argument_spec=dict(
            version=dict(type="str", required=True),
            prefix=dict(type="str", default="/usr/local"),
            home_link=dict(type="path", default="/usr/local/cuda"),
            toolkit_root=dict(type="path", default="/usr/local"),
            scan_prefixes=dict(type="list", elements="path", default=[]),
            ldconfig_file=dict(type="path"),
            profile_script=dict(type="str", default="/etc/profile.d/cuda.sh"),
            manage_cuda_link=dict(type="bool", default=True),
            manage_ldconfig=dict(type="bool", default=True),
            remove_toolkits=dict(type="list", elements="str", default=[]),
            managed_marker=dict(type="str", default=MANAGED_MARKER),
            tmpdir=dict(type="str"),
            download_dir=dict(type="str"),
            log_file=dict(type="str"),
            installer_extra_args=dict(type="list", elements="str", default=[]),
            runfile=dict(type="path"),
            runfile_checksum=dict(type="str", default=""),
            min_free_mb=dict(type="int", default=0),
            timeout=dict(type="int", default=30),
            keep_runfile=dict(type="bool", default=False),
            collect=dict(type="bool", default=False),
            require_installed=dict(type="bool", default=False),
            fetch_url=dict(type="str"),
            fetch_dest=dict(type="str"),
        ),
        required_by=dict(fetch_url="fetch_dest"),
        supports_check_mode=True,
    )
    if module.params["timeout"] < 1:
        module.fail_json(msg="timeout is %s; give the time limit of each program in seconds, 1 or more"
                             % module.params["timeout"])
    try:
        fetch = runfile_fetch(module.params)
    except FetchError as exc:
        module.fail_json(msg=str(exc))
    # PATH first, then /sbin, /usr/sbin and /usr/local/sbin.
    ldconfig = module.get_bin_path("ldconfig")
    state = read_state(module.params, ldconfig=ldconfig, check_mode=module.check_mode)
    state["fetch"] = fetch
    for warning in state.pop("warnings"):
        module.warn(warning)
    if module.params["require_installed"] and not state.get("installed"):
        module.fail_json(msg="The installer finished, but %s Was the runfile NVIDIA's runfile of CUDA %s?"
                             % (state.get("report", "").strip(), module.params["version"]), **state)
    module.exit_json(changed=False, **state)


if __name__ == "__main__":
    main()
