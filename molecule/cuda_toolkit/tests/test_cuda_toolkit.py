# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""State of the cuda_toolkit test hosts after converge and side_effect.

cuda_toolkit-air: runfile from the controller, /usr/local/cuda moved to 13.0,
another toolkit directory (12.8) left alone, a toolkit installed by hand in
/opt/old removed on request, a second 13.0 toolkit installed under
/opt/cuda-side with the link left alone, a third one under /opt/cuda-check
planned in the check step (check mode: nothing written).
cuda_toolkit-mirror: runfile from the local mirror, half-installed 13.0
repaired, /usr/local/cuda kept where the user had it; a corrupted download,
a failing installer, an old driver and wrong settings changed nothing.
cuda_toolkit-pkg: CUDA 13.0 as NVIDIA's packages leave it, recognised and
kept with its own setup; nothing written.
"""

import json
import os

import pytest

TOOLKIT = "/usr/local/cuda-13.0"
RUNFILE = "cuda_13.0.2_580.95.05_linux.run"
# Where prepare.yml builds the runfile on the controller (tests/runfile/build.sh).
RUNFILE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".cache", "cuda-runfile")
MARKER = "# Managed by Ansible (gpufleet.llm_stack.cuda_toolkit)"


def groups(host):
    return host.ansible.get_variables().get("group_names", [])


def only_on(host, group):
    if group not in groups(host):
        pytest.skip("case of the %s host" % group)


def installed_by_the_role(host):
    if "pkg" in groups(host):
        pytest.skip("the pkg host's toolkit comes from packages")


def test_nvcc_reports_cuda_13_0(host):
    out = host.check_output("%s/bin/nvcc --version" % TOOLKIT)
    assert "Cuda compilation tools, release 13.0, V13.0.88" in out


def test_version_json_is_13_0_2(host):
    installed_by_the_role(host)
    data = json.loads(host.file("%s/version.json" % TOOLKIT).content_string)
    assert data["cuda"]["version"] == "13.0.2"
    assert data["cuda_nvcc"]["version"] == "13.0.88"
    assert data["cuda_cudart"]["version"] == "13.0.96"


def test_linker_entry(host):
    installed_by_the_role(host)
    conf = host.file("/etc/ld.so.conf.d/cuda-13-0.conf")
    assert conf.mode == 0o644
    lines = conf.content_string.splitlines()
    assert lines[0] == MARKER
    assert lines[-1] == "%s/lib64" % TOOLKIT


def test_linker_resolves_libcudart_13_to_the_toolkit(host):
    installed_by_the_role(host)
    entries = [line.strip() for line in host.check_output("ldconfig -p").splitlines()
               if line.strip().startswith("libcudart.so.13 ")]
    assert entries == ["libcudart.so.13 (libc6,x86-64) => %s/lib64/libcudart.so.13" % TOOLKIT]


def test_login_shell_finds_the_toolkit_nvcc_first(host):
    installed_by_the_role(host)
    assert host.check_output("bash -lc 'command -v nvcc'") == "%s/bin/nvcc" % TOOLKIT
    assert host.check_output("bash -lc 'echo $CUDA_HOME'") == TOOLKIT
    path = host.check_output("bash -lc 'echo $PATH'").split(":")
    assert path[0] == "%s/bin" % TOOLKIT
    assert path.count("%s/bin" % TOOLKIT) == 1


def test_install_logs(host):
    installed_by_the_role(host)
    ours = host.file("/var/log/llm-stack/cuda-toolkit-install.log")
    assert ours.is_file
    assert "Toolkit:  Installed in %s/" % TOOLKIT in ours.content_string
    assert "Logfile is /var/log/cuda-installer.log" in ours.content_string
    assert "[INFO]: Install CUDA Toolkit in: %s/" % TOOLKIT in host.file("/var/log/cuda-installer.log").content_string


def test_install_log_is_the_run_logged_log_of_the_install(host):
    installed_by_the_role(host)
    lines = host.file("/var/log/llm-stack/cuda-toolkit-install.log").content_string.splitlines()
    # The header run_logged writes: what ran, when and where, and the command line.
    assert lines[0] == "# CUDA 13.0.2 installer"
    assert lines[1].startswith("# started ")
    assert ("# $ /bin/sh /var/cache/cuda-toolkit/%s --silent --toolkit --override --no-drm --no-man-page"
            " --toolkitpath=%s --tmpdir=/var/tmp" % (RUNFILE, TOOLKIT)) in lines


def test_nothing_left_behind(host):
    installed_by_the_role(host)
    assert not host.file("%s.previous" % TOOLKIT).exists
    assert host.file("/var/tmp").mode == 0o1777
    # The installer unpacks under --tmpdir and removes what it unpacked.
    assert host.check_output("find /var/tmp -maxdepth 1 -name 'selfgz*'") == ""


# air: runfile from the controller


def test_air_runfile_removed_after_good_installs(host):
    only_on(host, "air")
    assert not host.file("/var/cache/cuda-toolkit/%s" % RUNFILE).exists


def test_air_link_moved_to_the_new_toolkit(host):
    only_on(host, "air")
    link = host.file("/usr/local/cuda")
    assert link.is_symlink
    assert link.linked_to == TOOLKIT


def test_air_other_toolkit_left_alone(host):
    only_on(host, "air")
    data = json.loads(host.file("/usr/local/cuda-12.8/version.json").content_string)
    assert data["cuda"]["version"] == "12.8.1"
    # Its own linker entry, not written by the role, is kept.
    assert host.file("/etc/ld.so.conf.d/cuda-12-8.conf").content_string == "/usr/local/cuda-12.8/lib64\n"


def test_air_toolkit_removed_on_request_by_its_uninstaller(host):
    only_on(host, "air")
    assert not host.file("/opt/old/cuda-13.0").exists
    assert "Removed /opt/old/cuda-13.0" in host.file("/var/log/cuda-uninstaller.log").content_string


def test_air_second_toolkit_side_by_side_link_left_alone(host):
    only_on(host, "air")
    out = host.check_output("/opt/cuda-side/cuda-13.0/bin/nvcc --version")
    assert "release 13.0, V13.0.88" in out
    # The installer pointed /usr/local/cuda at it; the role put the link back.
    assert "Created symlink /usr/local/cuda -> /opt/cuda-side/cuda-13.0" in \
        host.file("/var/log/cuda-installer.log").content_string
    assert host.file("/usr/local/cuda").linked_to == TOOLKIT
    # No linker entry or profile script for it (both turned off for that run).
    assert host.check_output("grep -l cuda-side /etc/ld.so.conf.d/* /etc/profile.d/* || true") == ""


def test_air_second_toolkit_logged_on_its_own(host):
    only_on(host, "air")
    log = host.file("/var/log/llm-stack/cuda-side-install.log").content_string
    assert "Toolkit:  Installed in /opt/cuda-side/cuda-13.0/" in log
    assert "--toolkitpath=/opt/cuda-side/cuda-13.0 " in log


def test_air_check_mode_on_a_new_toolkit_wrote_nothing(host):
    only_on(host, "air")
    assert not host.file("/opt/cuda-check").exists
    assert not host.file("/var/log/llm-stack/cuda-check-install.log").exists
    assert "/opt/cuda-check" not in host.file("/var/log/cuda-installer.log").content_string
    assert host.check_output("grep -l cuda-check /etc/ld.so.conf.d/* /etc/profile.d/* || true") == ""


# mirror: runfile from the local mirror


def test_mirror_link_left_where_the_user_had_it(host):
    only_on(host, "mirror")
    link = host.file("/usr/local/cuda")
    assert link.is_symlink
    assert link.linked_to == "/opt/vendor/cuda"
    # The installer did point it at the toolkit; the role put it back.
    assert "Created symlink /usr/local/cuda -> %s" % TOOLKIT in host.file("/var/log/cuda-installer.log").content_string


def test_mirror_download_logged_its_progress(host):
    """The download ran through run_logged: its log on the host holds the byte counts run_logged shows."""
    only_on(host, "mirror")
    log = host.file("/var/cache/cuda-toolkit/%s.log" % RUNFILE)
    assert log.is_file
    text = log.content_string
    assert "Progress " in text and "Saved /var/cache/cuda-toolkit/%s" % RUNFILE in text
    assert not host.file("/var/cache/cuda-toolkit/%s.part" % RUNFILE).exists


def test_mirror_half_installed_toolkit_reinstalled(host):
    only_on(host, "mirror")
    assert not host.file("%s/HALF-INSTALLED" % TOOLKIT).exists
    assert host.file("%s/bin/cuda-uninstaller" % TOOLKIT).is_file


def test_mirror_checksum_mismatch_installed_nothing(host):
    only_on(host, "mirror")
    assert not host.file("/opt/mismatch").exists
    assert "/opt/mismatch" not in host.file("/var/log/cuda-installer.log").content_string


def test_mirror_failed_install_put_the_previous_directory_back(host):
    only_on(host, "mirror")
    # The verified runfile is kept for the next try, and only that one.
    with open(os.path.join(RUNFILE_DIR, RUNFILE + ".md5")) as handle:
        md5 = handle.read().split()[0]
    assert host.file("/var/cache/cuda-toolkit/%s" % RUNFILE).md5sum == md5
    assert host.file("/opt/failing/cuda-13.0/HALF-INSTALLED").is_file
    assert not host.file("/opt/failing/cuda-13.0/bin/nvcc").exists
    assert not host.file("/opt/failing/cuda-13.0.previous").exists
    assert "[ERROR]: Unknown option: --no-such-flag" in host.file("/var/log/cuda-installer.log").content_string


def test_mirror_failed_install_logged_on_its_own(host):
    only_on(host, "mirror")
    log = host.file("/var/log/llm-stack/cuda-failing-install.log").content_string
    assert "Unknown option: --no-such-flag" in log
    assert "Toolkit:  Installed" not in log


def test_mirror_refused_settings_changed_nothing(host):
    only_on(host, "mirror")
    assert host.check_output("ls -A /opt/badinput") == "cuda-13.0.previous"
    assert "/opt/badinput" not in host.file("/var/log/cuda-installer.log").content_string


def test_mirror_old_driver_changed_nothing(host):
    only_on(host, "mirror")
    assert not host.file("/opt/olddriver").exists


# pkg: a toolkit from packages, already in use


def test_pkg_toolkit_recognised_not_reinstalled(host):
    only_on(host, "pkg")
    # Nothing in the toolkit is newer than the starting state.
    assert host.check_output("find %s -newer /root/pkg-start.stamp" % TOOLKIT) == ""
    assert not host.file("%s/version.json" % TOOLKIT).exists
    assert not host.file("/var/log/llm-stack/cuda-toolkit-install.log").exists
    assert not host.file("/var/cache/cuda-toolkit/%s" % RUNFILE).exists


def test_pkg_setup_kept_as_the_packages_made_it(host):
    only_on(host, "pkg")
    # The link itself, not where it resolves (linked_to resolves it all).
    assert host.check_output("readlink /usr/local/cuda") == "/etc/alternatives/cuda"
    assert host.check_output("readlink /etc/alternatives/cuda") == TOOLKIT
    assert host.file("/etc/ld.so.conf.d/988_cuda-13.conf").content_string == "/usr/local/cuda/targets/x86_64-linux/lib\n"
    assert not host.file("/etc/ld.so.conf.d/cuda-13-0.conf").exists
    assert not host.file("/etc/profile.d/cuda.sh").exists
    assert host.check_output("find /etc /usr/local -maxdepth 3 -newer /root/pkg-start.stamp ! -type d") == ""
    entries = [line.strip() for line in host.check_output("ldconfig -p").splitlines()
               if line.strip().startswith("libcudart.so.13 ")]
    assert entries == ["libcudart.so.13 (libc6,x86-64) => /usr/local/cuda/targets/x86_64-linux/lib/libcudart.so.13"]
