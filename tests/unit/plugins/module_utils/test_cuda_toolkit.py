# -*- coding: utf-8 -*-
"""The cuda_toolkit state and plan, on toolkit trees laid out like real ones in tmp dirs.

nvcc and ldconfig are small stand-in scripts that print what the H200 host
printed (tests/fixtures/gpu/h200: nvcc-version.txt, ldconfig-p-cuda.txt);
the H200's toolkit came from NVIDIA's packages (no version.json,
/usr/local/cuda through /etc/alternatives, the packages' own linker entry).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import cuda_toolkit as ct

HERE = os.path.dirname(os.path.abspath(__file__))
H200 = os.path.abspath(os.path.join(HERE, "..", "..", "..", "fixtures", "gpu", "h200"))
H200_NVCC = os.path.join(H200, "nvcc-version.txt")
H200_LDCONFIG = os.path.join(H200, "ldconfig-p-cuda.txt")

NVCC_12_8 = """nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2025 NVIDIA Corporation
Built on Fri_Feb_21_20:23:50_PST_2025
Cuda compilation tools, release 12.8, V12.8.93
Build cuda_12.8.r12.8/compiler.35583870_0
"""


def read(path):
    with open(path) as handle:
        return handle.read()


def write(path, text, mode=None):
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        os.makedirs(folder)
    with open(path, "w") as handle:
        handle.write(text)
    if mode:
        os.chmod(path, mode)


def script(path, body):
    write(path, "#!/bin/sh\n# test-only stand-in\n%s\n" % body, 0o755)


def toolkit(path, sdk="13.0.2", nvcc_build="13.0.88", nvcc_output=None, nvcc_body=None, version_json=True,
            cudart=True, uninstaller=True):
    """A toolkit dir as NVIDIA's runfile lays it out (lib64 -> targets/x86_64-linux/lib)."""
    os.makedirs(os.path.join(path, "bin"))
    major = sdk.split(".")[0]
    if version_json:
        write(os.path.join(path, "version.json"), json.dumps(
            {"cuda": {"name": "CUDA SDK", "version": sdk}, "cuda_nvcc": {"name": "CUDA NVCC", "version": nvcc_build},
             "cuda_cudart": {"name": "CUDA Runtime (cudart)", "version": "13.0.96"}}, indent=3))
    if nvcc_body is not None:
        script(os.path.join(path, "bin", "nvcc"), nvcc_body)
    elif nvcc_output is not False:
        output = os.path.join(path, "nvcc-output.txt")
        write(output, nvcc_output or read(H200_NVCC))
        script(os.path.join(path, "bin", "nvcc"), "cat '%s'" % output)
    lib = os.path.join(path, "targets", "x86_64-linux", "lib")
    os.makedirs(lib)
    os.symlink("targets/x86_64-linux/lib", os.path.join(path, "lib64"))
    if cudart:
        write(os.path.join(lib, "libcudart.so.%s.0.96" % major), "ELF stand-in\n")
        os.symlink("libcudart.so.%s.0.96" % major, os.path.join(lib, "libcudart.so.%s" % major))
    if uninstaller:
        script(os.path.join(path, "bin", "cuda-uninstaller"), "exit 0")
    return path


@pytest.fixture
def host(tmp_path):
    """A host tree: <tmp>/usr/local, <tmp>/etc, and an ldconfig stand-in whose output tests set."""
    root = tmp_path / "usr" / "local"
    root.mkdir(parents=True)
    (tmp_path / "etc" / "ld.so.conf.d").mkdir(parents=True)
    (tmp_path / "etc" / "profile.d").mkdir(parents=True)

    class Host(object):
        base = str(tmp_path)
        prefix = str(root)
        link = str(root / "cuda")
        ldconfig = str(tmp_path / "sbin" / "ldconfig")
        ldconfig_out = str(tmp_path / "ldconfig-p.txt")

        def set_ldconfig(self, text):
            write(self.ldconfig_out, text)

        def params(self, **extra):
            params = {
                "version": "13.0.2", "prefix": self.prefix, "home_link": self.link, "toolkit_root": self.prefix,
                "scan_prefixes": [], "ldconfig_file": None, "profile_script": self.base + "/etc/profile.d/cuda.sh",
                "manage_cuda_link": True, "manage_ldconfig": True, "remove_toolkits": [],
                "managed_marker": ct.MANAGED_MARKER, "tmpdir": "/var/tmp", "download_dir": "/var/cache/cuda-toolkit",
                "log_file": "/var/log/llm-stack/cuda-toolkit-install.log", "installer_extra_args": [], "timeout": 10,
            }
            params["ldconfig_file"] = self.base + "/etc/ld.so.conf.d/cuda-13-0.conf"
            params.update(extra)
            return params

        def state(self, **extra):
            return ct.read_state(self.params(**extra), ldconfig=self.ldconfig)

    value = Host()
    value.set_ldconfig("0 libs found in cache `/etc/ld.so.cache'\n")
    script(value.ldconfig, "[ \"$1\" = -p ] || exit 2\ncat '%s'" % value.ldconfig_out)
    return value


def ldconfig_line(path, soname="libcudart.so.13"):
    return "\t%s (libc6,x86-64) => %s\n" % (soname, path)


# versions


@pytest.mark.parametrize("version, expected", [
    ("12.8.1", ("12", "12.8")),
    ("13.0.2", ("13", "13.0")),
    (" 12.4.1 ", ("12", "12.4")),
    ("12.8", ("12", "12.8")),
    ("012.08.1", ("12", "12.8")),
])
def test_split_version(version, expected):
    assert ct.split_version(version) == expected


@pytest.mark.parametrize("version", ["", "12", "v12.8.1", "12.8.1.4", "12.8.x", "１２.８.１", "12.8.1\n2", None, 12.8])
def test_split_version_refuses(version):
    with pytest.raises(ct.ToolkitInputError) as info:
        ct.split_version(version)
    assert str(info.value).startswith("cuda_toolkit_version is ")
    assert "X.Y.Z" in str(info.value)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30))
def test_split_version_any_text(text):
    try:
        major, major_minor = ct.split_version(text)
    except ct.ToolkitInputError:
        return
    assert major_minor.startswith(major + ".")
    assert ct.toolkit_dir("/usr/local", major_minor) == "/usr/local/cuda-" + major_minor


@pytest.mark.parametrize("prefix, expected", [
    ("/usr/local", "/usr/local/cuda-13.0"),
    ("/opt/cuda-side/", "/opt/cuda-side/cuda-13.0"),
    ("/", "/cuda-13.0"),
])
def test_toolkit_dir(prefix, expected):
    assert ct.toolkit_dir(prefix, "13.0") == expected


def test_default_ldconfig_file():
    assert ct.default_ldconfig_file("12.8") == "/etc/ld.so.conf.d/cuda-12-8.conf"


# ldconfig -p


def test_parse_ldconfig_h200_capture():
    text = read(H200_LDCONFIG)
    assert ct.parse_ldconfig_p(text, "libcudart.so.13") == "/usr/local/cuda/targets/x86_64-linux/lib/libcudart.so.13"
    # libcudart.so (no major) and other libraries are not it
    assert ct.parse_ldconfig_p(text, "libcudart.so.12") is None


def test_parse_ldconfig_first_entry_wins():
    text = ("3 libs found in cache `/etc/ld.so.cache'\n" + ldconfig_line("/opt/a/libcudart.so.13")
            + ldconfig_line("/opt/b/libcudart.so.13") + ldconfig_line("/opt/c/libcudart.so.12", "libcudart.so.12"))
    assert ct.parse_ldconfig_p(text, "libcudart.so.13") == "/opt/a/libcudart.so.13"
    assert ct.parse_ldconfig_p(text, "libcudart.so.12") == "/opt/c/libcudart.so.12"
    assert ct.parse_ldconfig_p(text, "libcudart.so.1") is None


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_parse_ldconfig_any_text(text):
    found = ct.parse_ldconfig_p(text, "libcudart.so.13")
    assert found is None or (found and found == found.strip())


# settings


def test_settings_defaults_pass(host):
    assert ct.check_settings(host.params(), "/usr/local/cuda-13.0") == []


@pytest.mark.parametrize("extra, variable", [
    ({"prefix": "usr/local"}, "cuda_toolkit_prefix"),
    ({"tmpdir": "/var/my tmp"}, "cuda_toolkit_tmpdir"),
    ({"download_dir": "~/cache"}, "cuda_toolkit_download_dir"),
    ({"log_file": "/var/log/"}, "cuda_toolkit_log_file"),
    ({"profile_script": "profile.d/cuda.sh"}, "cuda_toolkit_profile_script"),
    ({"installer_extra_args": ["--driver"]}, "cuda_toolkit_installer_extra_args"),
    ({"installer_extra_args": ["--toolkitpath=/opt/x"]}, "cuda_toolkit_installer_extra_args"),
    ({"installer_extra_args": ["--silent"]}, "cuda_toolkit_installer_extra_args"),
    ({"installer_extra_args": ["no-opengl-libs"]}, "cuda_toolkit_installer_extra_args"),
    ({"installer_extra_args": ["--no-opengl-libs --driver"]}, "cuda_toolkit_installer_extra_args"),
    ({"remove_toolkits": ["/usr/local/cuda-12.4/"]}, "cuda_toolkit_remove_toolkits"),
    ({"remove_toolkits": ["cuda-12.4"]}, "cuda_toolkit_remove_toolkits"),
    ({"remove_toolkits": ["/usr/local/cuda-13.0"]}, "cuda_toolkit_remove_toolkits"),
])
def test_settings_refused(host, extra, variable):
    errors = ct.check_settings(host.params(**extra), "/usr/local/cuda-13.0")
    assert len(errors) == 1 and errors[0].startswith(variable + " "), errors


def test_settings_accepted_variants(host):
    params = host.params(profile_script="", installer_extra_args=["--no-opengl-libs", "--toolkitpathx"],
                         remove_toolkits=["/usr/local/cuda-12.4"], tmpdir=None)
    assert ct.check_settings(params, "/usr/local/cuda-13.0") == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=20), max_size=4), st.text(max_size=20))
def test_settings_any_input_gives_messages(args, path):
    errors = ct.check_settings({"installer_extra_args": args, "prefix": path, "remove_toolkits": [path]}, "/x/cuda-1.0")
    assert all(isinstance(error, str) and error.startswith("cuda_toolkit_") for error in errors)


# the state of the toolkit directory


def test_nothing_there_plans_everything(host):
    state = host.state()
    assert state["dir"] == host.prefix + "/cuda-13.0"
    assert (state["major"], state["major_minor"], state["version"]) == ("13", "13.0", "13.0.2")
    assert (state["exists"], state["installed"], state["update_unknown"], state["problems"]) == (False, False, False, [])
    assert state["report"] == "CUDA 13.0.2 is not installed: it goes to %s/cuda-13.0." % host.prefix
    assert state["plan"] == {"set_link": True, "set_ldconfig": True, "set_profile": True, "kept": [],
                             "remove_ldconfig_files": [], "uninstall": [], "create_dirs": [],
                             "restore_link": {"state": "absent", "src": None, "force": False},
                             "cleanup": [host.prefix + "/cuda-13.0.previous"]}
    assert state["gate_parts"] == ["matrix", "cuda_toolkit"]
    assert state["link"] == {"path": host.link, "exists": False, "islink": False, "target": None, "resolved": None,
                             "leads_to_dir": False}
    assert state["aside"] == {"path": host.prefix + "/cuda-13.0.previous", "exists": False}
    assert state["nvcc"]["error"].endswith("is missing or not executable")
    assert state["linker"]["found"] is None and state["linker"]["ok"] is False
    assert state["errors"] == [] and state["warnings"] == [] and state["others"] == []


def test_runfile_toolkit_installed_and_set_up(host):
    tk_dir = toolkit(host.prefix + "/cuda-13.0")
    os.symlink(tk_dir, host.link)
    host.set_ldconfig(ldconfig_line(tk_dir + "/lib64/libcudart.so.13"))
    write(host.base + "/etc/ld.so.conf.d/cuda-13-0.conf", "# %s\n%s/lib64\n" % (ct.MANAGED_MARKER, tk_dir))
    write(host.base + "/etc/profile.d/cuda.sh", "# %s\n" % ct.MANAGED_MARKER)
    state = host.state()
    assert state["installed"] is True and state["update_unknown"] is False and state["problems"] == []
    assert state["report"] == "CUDA 13.0.2 is installed in %s (nvcc V13.0.88)." % tk_dir
    assert state["toolkit"]["source"] == "version.json"
    assert state["nvcc"] == {"path": tk_dir + "/bin/nvcc", "version": "13.0", "build": "13.0.88", "error": None}
    assert state["linker"]["ok"] is True
    assert state["link"]["leads_to_dir"] is True and state["link"]["target"] == tk_dir
    # The role's own files are kept up to date (their templates decide whether they change).
    assert state["plan"] == {"set_link": False, "set_ldconfig": True, "set_profile": True, "kept": [],
                             "remove_ldconfig_files": [], "uninstall": [], "create_dirs": [],
                             "restore_link": {"state": "link", "src": tk_dir, "force": True},
                             "cleanup": [tk_dir + ".previous"]}


def test_h200_packaged_toolkit_kept_as_found(host):
    """The H200's CUDA 13.0 from NVIDIA's packages: recognised, nothing to write."""
    tk_dir = toolkit(host.prefix + "/cuda-13.0", version_json=False, uninstaller=False)
    alternatives = host.base + "/etc/alternatives/cuda"
    os.makedirs(os.path.dirname(alternatives))
    os.symlink(tk_dir, alternatives)
    os.symlink(alternatives, host.link)
    # The captured ldconfig -p, with /usr/local moved under the test tree.
    host.set_ldconfig(read(H200_LDCONFIG).replace("/usr/local/", host.prefix + "/"))
    write(host.base + "/etc/ld.so.conf.d/988_cuda-13.conf", host.prefix + "/cuda/targets/x86_64-linux/lib\n")
    state = host.state()
    assert state["installed"] is True and state["update_unknown"] is True
    assert state["toolkit"]["source"] == "nvcc" and state["toolkit"]["version"] == "13.0"
    assert state["report"] == (
        "CUDA 13.0 is installed in %s (nvcc V13.0.88): no version.json (installed from packages?), so only the"
        " release is known, not whether it is the update 13.0.2; it is kept as it is." % tk_dir)
    assert state["linker"] == {"soname": "libcudart.so.13", "library": tk_dir + "/lib64/libcudart.so.13",
                               "found": host.prefix + "/cuda/targets/x86_64-linux/lib/libcudart.so.13",
                               "ok": True, "error": None}
    assert state["link"]["target"] == alternatives and state["link"]["leads_to_dir"] is True
    plan = state["plan"]
    assert (plan["set_link"], plan["set_ldconfig"], plan["set_profile"]) == (False, False, False)
    assert plan["kept"] == [
        "%s already leads to %s (through %s)" % (host.link, tk_dir, alternatives),
        "the dynamic linker already resolves libcudart.so.13 to it (%s/cuda/targets/x86_64-linux/lib/libcudart.so.13)"
        % host.prefix,
        "no %s/etc/profile.d/cuda.sh: a toolkit from packages leaves PATH to the host" % host.base,
    ]
    assert state["errors"] == []


def test_packaged_toolkit_with_the_role_script_keeps_it_up_to_date(host):
    tk_dir = toolkit(host.prefix + "/cuda-13.0", version_json=False, uninstaller=False)
    os.symlink(tk_dir, host.link)
    write(host.base + "/etc/profile.d/cuda.sh", "# %s\n" % ct.MANAGED_MARKER)
    state = host.state()
    assert state["update_unknown"] is True
    # libcudart not in the linker cache: the role's entry is written
    assert state["plan"]["set_profile"] is True and state["plan"]["set_ldconfig"] is True
    assert state["plan"]["kept"] == []


def test_packaged_toolkit_of_another_release_is_not_it(host):
    toolkit(host.prefix + "/cuda-13.0", version_json=False, nvcc_output=NVCC_12_8)
    state = host.state()
    assert state["installed"] is False and state["update_unknown"] is False
    assert state["problems"] == ["its nvcc says 12.8", "bin/nvcc reports release 12.8"]


def test_half_installed_toolkit(host):
    tk_dir = host.prefix + "/cuda-13.0"
    os.makedirs(tk_dir + "/bin")
    write(tk_dir + "/version.json", json.dumps({"cuda": {"name": "CUDA SDK", "version": "13.0.2"}}))
    write(tk_dir + "/HALF-INSTALLED", "left by an interrupted install\n")
    state = host.state()
    assert state["exists"] is True and state["installed"] is False
    assert state["problems"] == ["bin/nvcc is missing", "lib64/libcudart.so.13 is missing"]
    assert state["report"] == ("%s is there but is not a working CUDA 13.0.2 (bin/nvcc is missing; lib64/libcudart.so.13"
                               " is missing): it is reinstalled, and put back as it is if the install fails." % tk_dir)
    assert state["plan"]["set_link"] and state["plan"]["set_ldconfig"] and state["plan"]["set_profile"]


def test_empty_directory(host):
    os.makedirs(host.prefix + "/cuda-13.0")
    assert host.state()["problems"] == ["version.json is missing or unreadable", "bin/nvcc is missing",
                                        "lib64/libcudart.so.13 is missing"]


def test_a_file_in_place_of_the_directory(host):
    write(host.prefix + "/cuda-13.0", "not a toolkit\n")
    state = host.state()
    assert state["exists"] is True and state["installed"] is False
    assert state["problems"] == ["it is not a directory"]


def test_other_update_of_the_release(host):
    toolkit(host.prefix + "/cuda-13.0", sdk="13.0.1", nvcc_build="13.0.88")
    assert host.state()["problems"] == ["its version.json says 13.0.1"]


def test_nvcc_build_differs_from_version_json(host):
    toolkit(host.prefix + "/cuda-13.0", nvcc_build="13.0.48")
    assert host.state()["problems"] == ["bin/nvcc is V13.0.88 but version.json lists nvcc 13.0.48"]


def test_nvcc_that_fails(host):
    toolkit(host.prefix + "/cuda-13.0", nvcc_body="echo 'cannot load libnvvm' >&2; exit 3")
    state = host.state()
    nvcc = host.prefix + "/cuda-13.0/bin/nvcc"
    assert state["problems"] == ["bin/nvcc does not work: %s exited with 3: cannot load libnvvm" % nvcc]
    assert state["nvcc"]["error"] == "%s exited with 3: cannot load libnvvm" % nvcc


def test_nvcc_that_hangs_is_stopped(host):
    toolkit(host.prefix + "/cuda-13.0", nvcc_body="exec sleep 30")
    state = host.state(timeout=1)
    nvcc = host.prefix + "/cuda-13.0/bin/nvcc"
    assert state["problems"] == ["bin/nvcc does not work: %s did not answer within 1 seconds" % nvcc]


def test_nvcc_that_prints_no_release(host):
    toolkit(host.prefix + "/cuda-13.0", nvcc_body="echo hello")
    assert host.state()["problems"] == ["bin/nvcc does not work: %s/cuda-13.0/bin/nvcc --version printed no"
                                        " 'release X.Y, VX.Y.Z' line" % host.prefix]


# the dynamic linker


def test_linker_resolves_another_toolkit(host):
    tk_dir = toolkit(host.prefix + "/cuda-13.0")
    other = toolkit(host.prefix + "/cuda-13.1", sdk="13.1.0")
    host.set_ldconfig(ldconfig_line(other + "/lib64/libcudart.so.13") + ldconfig_line(tk_dir + "/lib64/libcudart.so.13"))
    state = host.state()
    assert state["linker"]["found"] == other + "/lib64/libcudart.so.13" and state["linker"]["ok"] is False
    assert state["plan"]["set_ldconfig"] is True


def test_linker_entry_without_the_file(host):
    tk_dir = toolkit(host.prefix + "/cuda-13.0", cudart=False)
    host.set_ldconfig(ldconfig_line(tk_dir + "/lib64/libcudart.so.13"))
    assert host.state()["linker"]["ok"] is False


def test_no_ldconfig(host):
    toolkit(host.prefix + "/cuda-13.0")
    state = ct.read_state(host.params(), ldconfig=None)
    assert state["linker"]["error"] == "ldconfig: not found" and state["linker"]["ok"] is False
    assert state["plan"]["set_ldconfig"] is True


def test_ldconfig_that_fails(host):
    toolkit(host.prefix + "/cuda-13.0")
    script(host.ldconfig, "echo \"ldconfig: Can't open cache file\" >&2; exit 1")
    assert host.state()["linker"]["error"].endswith("exited with 1: ldconfig: Can't open cache file")


def test_linker_not_managed(host):
    toolkit(host.prefix + "/cuda-13.0")
    plan = host.state(manage_ldconfig=False)["plan"]
    assert plan["set_ldconfig"] is False and plan["kept"] == [] and plan["remove_ldconfig_files"] == []


def test_stale_linker_entries_of_the_role(host):
    conf = host.base + "/etc/ld.so.conf.d"
    write(conf + "/cuda-12-8.conf", "# %s\n/usr/local/cuda-12.8/lib64\n" % ct.MANAGED_MARKER)
    write(conf + "/cuda-12-4.conf", "/usr/local/cuda-12.4/lib64\n")
    write(conf + "/cuda-13-0.conf", "# %s\n" % ct.MANAGED_MARKER)
    write(conf + "/gds-13-0.conf", "# %s\n" % ct.MANAGED_MARKER)
    os.symlink(conf + "/cuda-12-8.conf", conf + "/cuda-12-9.conf")
    state = host.state()
    assert state["ldconfig_file_exists"] is True
    assert state["plan"]["remove_ldconfig_files"] == [conf + "/cuda-12-8.conf"]


# the /usr/local/cuda link


def test_link_elsewhere_is_moved(host):
    tk_dir = toolkit(host.prefix + "/cuda-13.0")
    os.makedirs(host.base + "/opt/vendor/cuda")
    os.symlink(host.base + "/opt/vendor/cuda", host.link)
    state = host.state()
    assert state["link"]["leads_to_dir"] is False and state["plan"]["set_link"] is True
    # not managed: left, and not listed as kept
    state = host.state(manage_cuda_link=False)
    assert state["plan"]["set_link"] is False and state["plan"]["kept"] == [] and state["errors"] == []
    assert tk_dir


def test_dangling_link(host):
    os.symlink(host.prefix + "/cuda-12.4", host.link)
    link = host.state()["link"]
    assert (link["exists"], link["islink"], link["resolved"], link["target"]) == (True, True, None,
                                                                                  host.prefix + "/cuda-12.4")


def test_link_that_is_a_directory_stops_the_host(host):
    os.makedirs(host.link)
    state = host.state()
    assert len(state["errors"]) == 1
    assert state["errors"][0].startswith("%s is a real directory, not a link, so it cannot point at %s/cuda-13.0;"
                                         " nothing was changed." % (host.link, host.prefix))
    assert "cuda_toolkit_manage_cuda_link: false" in state["errors"][0]
    assert host.state(manage_cuda_link=False)["errors"] == []


def test_the_link_is_put_back_as_it_was_read(host):
    os.symlink(host.prefix + "/cuda-12.4", host.link)
    assert host.state()["plan"]["restore_link"] == {"state": "link", "src": host.prefix + "/cuda-12.4", "force": True}
    os.remove(host.link)
    os.makedirs(host.link)
    # a real directory (an error while the role manages the link): the when of the task leaves it alone
    restore = host.state(manage_cuda_link=False)["plan"]["restore_link"]
    assert restore == {"state": "absent", "src": None, "force": False}


# around the installer: the directories it needs, what goes after a good install, the gate's parts


def test_missing_directories_are_created_the_unpacking_one_private(host):
    prefix, tmpdir = host.base + "/opt/cuda-side", host.base + "/var/tmp/cuda"
    state = host.state(prefix=prefix, tmpdir=tmpdir)
    assert state["missing_dirs"] == [prefix, tmpdir]
    assert state["plan"]["create_dirs"] == [{"path": prefix, "mode": "0755"}, {"path": tmpdir, "mode": "0700"}]
    os.makedirs(prefix)
    assert host.state(prefix=prefix, tmpdir=tmpdir)["plan"]["create_dirs"] == [{"path": tmpdir, "mode": "0700"}]
    # one directory for both: it unpacks there, so it is private
    assert host.state(prefix=tmpdir, tmpdir=tmpdir)["plan"]["create_dirs"] == [{"path": tmpdir, "mode": "0700"}] * 2


def test_after_a_good_install_the_runfile_goes_unless_kept(host):
    runfile = host.base + "/var/cache/cuda-toolkit/cuda_13.0.2_580.95.05_linux.run"
    aside = host.prefix + "/cuda-13.0.previous"
    assert host.state()["plan"]["cleanup"] == [aside]
    assert host.state(runfile=runfile)["plan"]["cleanup"] == [aside, runfile]
    assert host.state(runfile=runfile, keep_runfile=True)["plan"]["cleanup"] == [aside]
    assert host.state(runfile=runfile, keep_runfile=False)["plan"]["cleanup"] == [aside, runfile]


@pytest.mark.parametrize("collect, parts", [(False, ["matrix", "cuda_toolkit"]), (True, ["cuda_toolkit"]),
                                            (None, ["matrix", "cuda_toolkit"])])
def test_the_gate_leaves_the_driver_rule_to_preflight_when_it_collects(host, collect, parts):
    assert host.state(collect=collect)["gate_parts"] == parts
    assert ct.gate_parts(collect) == parts


# an interrupted install, removals, other toolkits


def test_interrupted_install_stops_the_host(host):
    tk_dir = host.prefix + "/cuda-13.0"
    toolkit(tk_dir + ".previous")
    state = host.state()
    assert state["aside"] == {"path": tk_dir + ".previous", "exists": True}
    assert state["errors"] == [
        "%s.previous exists: an earlier install of CUDA 13.0 was interrupted after moving the previous toolkit there."
        " Nothing was changed. If %s is broken, put the old one back (rm -rf %s; mv %s.previous %s), else remove"
        " %s.previous; then run again." % (tk_dir, tk_dir, tk_dir, tk_dir, tk_dir, tk_dir)]


def test_toolkits_to_remove(host):
    runfile = toolkit(host.base + "/opt/old/cuda-12.4", sdk="12.4.1")
    packaged = toolkit(host.base + "/opt/pkg/cuda-12.6", sdk="12.6.3", uninstaller=False)
    gone = host.base + "/opt/gone/cuda-12.1"
    os.makedirs(gone)
    state = host.state(remove_toolkits=[runfile, packaged, gone])
    assert state["remove"] == [{"path": runfile, "present": True, "uninstaller": True},
                               {"path": packaged, "present": True, "uninstaller": False},
                               {"path": gone, "present": False, "uninstaller": False}]
    assert state["remove_without_uninstaller"] == [packaged]
    assert state["plan"]["uninstall"] == [runfile]
    assert state["errors"] == [
        "cuda_toolkit_remove_toolkits lists %s, which has no bin/cuda-uninstaller (not installed by NVIDIA's runfile):"
        " nothing was changed. Remove it with the tool that installed it (apt, dnf, ...) and take it out of"
        " cuda_toolkit_remove_toolkits." % packaged]


def test_other_toolkits_reported(host):
    tk_dir = toolkit(host.prefix + "/cuda-13.0")
    old = toolkit(host.prefix + "/cuda-12.8", sdk="12.8.1", nvcc_build="12.8.93", nvcc_output=NVCC_12_8)
    os.symlink("cuda-13.0", host.prefix + "/cuda-13")
    extra = toolkit(host.base + "/opt/cuda-12.4", sdk="12.4.1", nvcc_build="12.4.131", nvcc_output=False)
    missing = host.base + "/opt/none"
    state = host.state(scan_prefixes=[extra, missing])
    assert [t["path"] for t in state["others"]] == [extra, old]
    assert state["toolkit"]["path"] == tk_dir
    assert state["others_report"] == (
        "Other CUDA toolkits: %s (CUDA 12.4.1), %s (CUDA 12.8.1). Left in place; list one in"
        " cuda_toolkit_remove_toolkits to remove it with its bin/cuda-uninstaller." % (extra, old))
    assert state["warnings"] == ["prefix %s is not a directory; skipped" % missing]
    state = host.state(remove_toolkits=[old])
    assert state["others_report"] == ("Other CUDA toolkits: %s (CUDA 12.8.1). Removing as asked"
                                      " (cuda_toolkit_remove_toolkits): %s." % (old, old))


def test_no_other_toolkit(host):
    toolkit(host.prefix + "/cuda-13.0")
    assert host.state()["others_report"] is None


def test_half_installed_dir_gives_no_scan_warning(host):
    os.makedirs(host.prefix + "/cuda-13.0")
    assert host.state()["warnings"] == []


def test_default_ldconfig_file_in_state(host):
    state = host.state(ldconfig_file=None)
    assert state["ldconfig_file"] == "/etc/ld.so.conf.d/cuda-13-0.conf"


# bad input: errors, never an exception


@pytest.mark.parametrize("version", ["12", "twelve", "", "13.0.2 beta"])
def test_unreadable_version(host, version):
    state = host.state(version=version, tmpdir="relative")
    assert state["dir"] is None and state["installed"] is False
    assert state["errors"][0].startswith("cuda_toolkit_version is ")
    assert state["errors"][1].startswith("cuda_toolkit_tmpdir is ")
    assert state["report"].startswith("The toolkit's state was not read: cuda_toolkit_version is ")
    assert state["plan"]["set_link"] is False
    assert (state["plan"]["create_dirs"], state["plan"]["cleanup"]) == ([], [])
    assert state["plan"]["restore_link"] == {"state": "absent", "src": None, "force": False}
    assert state["gate_parts"] == ["matrix", "cuda_toolkit"]
    assert host.state(version=version, collect=True)["gate_parts"] == ["cuda_toolkit"]


@settings(max_examples=100, deadline=None)
@given(version=st.text(max_size=12), prefix=st.text(max_size=12), args=st.lists(st.text(max_size=8), max_size=3))
def test_any_input_reads_without_exception(tmp_path_factory, version, prefix, args):
    base = str(tmp_path_factory.mktemp("any"))
    state = ct.read_state({"version": version, "prefix": base + "/" + prefix.replace("\x00", ""),
                           "home_link": base + "/cuda", "toolkit_root": base, "installer_extra_args": args,
                           "timeout": 5}, ldconfig=None)
    assert isinstance(state["errors"], list) and isinstance(state["report"], str)
    assert state["installed"] is False


def test_hung_nvcc_of_another_toolkit_is_a_warning(host):
    toolkit(host.prefix + "/cuda-13.0")
    toolkit(host.prefix + "/cuda-12.8", sdk="12.8.1", version_json=False, nvcc_body="exec sleep 30")
    state = host.state(timeout=1)
    assert state["installed"] is True and state["others"] == []
    assert len(state["warnings"]) == 1
    assert state["warnings"][0].startswith("%s/cuda-12.8/bin/nvcc did not answer within 1 seconds" % host.prefix)
