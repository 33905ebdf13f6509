# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The state of one CUDA toolkit directory and the setup the cuda_toolkit role plans for it.

``read_state(params, run=proc.run, ldconfig=...)`` reads the host (never
changes it) and returns one dict: where the toolkit goes, whether a working
toolkit of the wanted release is there now, why not, what ``/usr/local/cuda``,
the dynamic linker and the login-shell script look like, and the plan
(``set_link``, ``set_ldconfig``, ``set_profile``, what is kept as found,
which toolkits to uninstall). Every message names the role variable
involved and the fix. ``gpufleet.llm_stack.cuda_toolkit_state`` is a thin
module around it.

A toolkit counts as installed when its ``version.json`` names the wanted
release, its ``bin/nvcc`` runs and reports release X.Y (and the nvcc build
``version.json`` lists), and ``lib64/libcudart.so.X`` is there. A toolkit
installed from packages has no ``version.json``: nvcc tells its release but
not its update, so one of the wanted release that passes the other checks
is taken as installed (``update_unknown``) and kept with the setup that
already leads to it.

Standard library only, Python 3.8+ (it runs on the managed host).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os
import re

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import fetch_url
from ansible_collections.gpufleet.llm_stack.plugins.module_utils import nvcc as nvcc_utils
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._checksum import parse_checksum
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.proc import run as proc_run

MANAGED_MARKER = "Managed by Ansible (gpufleet.llm_stack.cuda_toolkit)"
LDCONFIG_DIR = "/etc/ld.so.conf.d"
ASIDE_SUFFIX = ".previous"

# Installer flags the role sets itself (or never passes: --driver).
RESERVED_FLAGS = ("driver", "toolkitpath", "installpath", "tmpdir", "silent", "toolkit")

_VERSION_RE = re.compile(r"(\d{1,4})\.(\d{1,4})(?:\.(\d{1,6}))?", re.ASCII)
# Absolute, no whitespace (the installer takes paths as --flag=value).
_ABS_RE = re.compile(r"/\S*")
# The same, naming a file: no trailing slash.
_ABS_FILE_RE = re.compile(r"/\S*[^/\s]")
_FLAG_RE = re.compile(r"--\S+")
_RESERVED_RE = re.compile(r"--(?:%s)(?:=.*)?" % "|".join(RESERVED_FLAGS), re.DOTALL)
MIB = 1024 * 1024
_CUDART_LINE_RE = re.compile(r"^\s*(?P<name>libcudart\.so\.\d+)\s+\([^)]*\)\s+=>\s+(?P<path>\S.*?)\s*$")


class ToolkitInputError(ValueError):
    """An option the state cannot be read with: names the role variable and the fix."""

    def __init__(self, variable, message):
        ValueError.__init__(self, "%s %s" % (variable, message))
        self.variable = variable


def split_version(version):
    """'12.8.1' -> ('12', '12.8'); also 'X.Y'. Raises ToolkitInputError on anything else."""
    text = version.strip() if isinstance(version, str) else ""
    match = _VERSION_RE.fullmatch(text)
    if not match:
        raise ToolkitInputError("cuda_toolkit_version", "is %r; it must be a CUDA release \"X.Y.Z\" such as"
                                                        " \"12.8.1\" (quoted in YAML)." % (version,))
    major, minor = int(match.group(1)), int(match.group(2))
    return str(major), "%d.%d" % (major, minor)


def toolkit_dir(prefix, major_minor):
    """<prefix>/cuda-X.Y, the directory NVIDIA's runfile uses (prefix without trailing slashes)."""
    return "%s/cuda-%s" % (prefix.rstrip("/"), major_minor)


def default_ldconfig_file(major_minor):
    """/etc/ld.so.conf.d/cuda-X-Y.conf."""
    return "%s/cuda-%s.conf" % (LDCONFIG_DIR, major_minor.replace(".", "-"))


def parse_ldconfig_p(text, soname):
    """Path `ldconfig -p` lists first for soname (e.g. 'libcudart.so.13'), or None.

    Lines look like ``\tlibcudart.so.13 (libc6,x86-64) => /usr/local/cuda/.../libcudart.so.13``;
    the header ("N libs found in cache") and anything else are ignored.
    """
    for line in (text or "").splitlines():
        match = _CUDART_LINE_RE.match(line)
        if match and match.group("name") == soname:
            return match.group("path")
    return None


def check_settings(params, tk_dir):
    """Errors in the role's settings (formats, reserved flags), each naming the variable and the fix."""
    errors = []
    dirs = (("cuda_toolkit_prefix", params.get("prefix")), ("cuda_toolkit_tmpdir", params.get("tmpdir")),
            ("cuda_toolkit_download_dir", params.get("download_dir")))
    for variable, value in dirs:
        if value is not None and not _ABS_RE.fullmatch(value):
            errors.append("%s is %r: it must be an absolute path without spaces (the installer takes paths as"
                          " --flag=value)." % (variable, value))
    files = (("cuda_toolkit_log_file", params.get("log_file"), ""),
             ("cuda_toolkit_profile_script", params.get("profile_script") or None, ", or \"\" for no script"))
    for variable, value, alternative in files:
        if value is not None and not _ABS_FILE_RE.fullmatch(value):
            errors.append("%s is %r: it must be the absolute path of a file, without spaces or a trailing slash%s."
                          % (variable, value, alternative))
    bad_flags = [arg for arg in params.get("installer_extra_args") or []
                 if not _FLAG_RE.fullmatch(arg) or _RESERVED_RE.fullmatch(arg)]
    if bad_flags:
        errors.append("cuda_toolkit_installer_extra_args has %s: each entry must be one installer flag starting with"
                      " \"--\", and the role never installs the driver (--driver) and sets --silent, --toolkit,"
                      " --toolkitpath and --tmpdir itself (use cuda_toolkit_prefix and cuda_toolkit_tmpdir)."
                      % ", ".join(repr(arg) for arg in bad_flags))
    for path in params.get("remove_toolkits") or []:
        if not _ABS_FILE_RE.fullmatch(path):
            errors.append("cuda_toolkit_remove_toolkits lists %r: list the directories of other toolkits, absolute,"
                          " without spaces or a trailing slash (e.g. /usr/local/cuda-12.4)." % (path,))
        elif tk_dir and os.path.normpath(path) == os.path.normpath(tk_dir):
            errors.append("cuda_toolkit_remove_toolkits lists %s, the toolkit this role installs: list only other"
                          " toolkits." % path)
    return errors


def _exec_file(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _command_runner(run, timeout, env):
    """run_command(argv) -> ProcResult over proc.run, with the time limit, for nvcc.py's scan."""
    def run_command(argv):
        return run(argv, timeout=timeout, env=env)
    return run_command


def read_nvcc(path, run, timeout, env):
    """{path, version, build, error} of one nvcc: its `--version`, with a readable error."""
    info = {"path": path, "version": None, "build": None, "error": None}
    if not _exec_file(path):
        info["error"] = "%s is missing or not executable" % path
        return info
    result = run([path, "--version"], timeout=timeout, env=env)
    if result.rc != 0 or result.timed_out:
        info["error"] = result.error or "%s --version failed" % path
        return info
    info["version"], info["build"] = nvcc_utils.parse_nvcc_version(result.stdout)
    if info["version"] is None:
        info["error"] = "%s --version printed no 'release X.Y, VX.Y.Z' line" % path
    return info


def read_linker(tk_dir, major, ldconfig, run, timeout):
    """What the dynamic linker resolves for libcudart.so.<major>, and whether it is the toolkit's own."""
    soname = "libcudart.so.%s" % major
    own = os.path.join(tk_dir, "lib64", soname) if tk_dir else None
    info = {"soname": soname, "library": own, "found": None, "ok": False, "error": None}
    if not ldconfig:
        info["error"] = "ldconfig: not found"
        return info
    result = run([ldconfig, "-p"], timeout=timeout)
    if result.rc != 0 or result.timed_out:
        info["error"] = result.error or "ldconfig -p failed"
        return info
    info["found"] = parse_ldconfig_p(result.stdout, soname)
    if info["found"] and own and os.path.exists(own) and os.path.exists(info["found"]):
        # Both resolved: /usr/local/cuda/... and a package's targets/ directory count as the toolkit's own.
        info["ok"] = os.path.realpath(info["found"]) == os.path.realpath(own)
    return info


def read_link(path, tk_dir):
    """{path, exists, islink, target, resolved, leads_to_dir} of the /usr/local/cuda link (not followed)."""
    exists = os.path.lexists(path)
    islink = os.path.islink(path)
    resolved = os.path.realpath(path) if exists and os.path.exists(path) else None
    return {
        "path": path,
        "exists": exists,
        "islink": islink,
        "target": os.readlink(path) if islink else None,
        "resolved": resolved,
        "leads_to_dir": bool(resolved and tk_dir and os.path.isdir(tk_dir) and resolved == os.path.realpath(tk_dir)),
    }


def toolkit_problems(tk_dir, version, major, major_minor, entry, nvcc):
    """Why tk_dir is not a working toolkit of version (empty list: it is). Returns (problems, update_unknown)."""
    if not os.path.isdir(tk_dir):
        return ["it is not a directory"], False
    problems = []
    entry = entry or {}
    found = entry.get("version")
    update_unknown = entry.get("source") == "nvcc" and found == major_minor
    if found is None:
        problems.append("version.json is missing or unreadable")
    elif found != version and not update_unknown:
        problems.append("its %s says %s" % (entry.get("source"), found))
    if not _exec_file(nvcc["path"]):
        problems.append("bin/nvcc is missing")
    elif nvcc["error"]:
        problems.append("bin/nvcc does not work: %s" % nvcc["error"])
    elif nvcc["version"] != major_minor:
        problems.append("bin/nvcc reports release %s" % nvcc["version"])
    if nvcc["build"] and entry.get("nvcc_build") and entry["nvcc_build"] != nvcc["build"]:
        problems.append("bin/nvcc is V%s but version.json lists nvcc %s" % (nvcc["build"], entry["nvcc_build"]))
    if not os.path.exists(os.path.join(tk_dir, "lib64", "libcudart.so.%s" % major)):
        problems.append("lib64/libcudart.so.%s is missing" % major)
    return problems, update_unknown and not problems


def removal(paths):
    """[{path, present, uninstaller}] for cuda_toolkit_remove_toolkits.

    present: a toolkit is still there (version.json or bin/nvcc); uninstaller: its bin/cuda-uninstaller.
    A directory already uninstalled (gone, or only what the uninstaller left) is not present.
    """
    out = []
    for path in paths:
        present = any(os.path.exists(os.path.join(path, name)) for name in ("version.json", os.path.join("bin", "nvcc")))
        out.append({"path": path, "present": present,
                    "uninstaller": os.path.isfile(os.path.join(path, "bin", "cuda-uninstaller"))})
    return out


def stale_ldconfig_files(ldconfig_file, marker):
    """Linker entries this role wrote for other toolkits: cuda-*.conf next to ldconfig_file that carry marker."""
    folder = os.path.dirname(ldconfig_file)
    found = []
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return found
    for name in names:
        path = os.path.join(folder, name)
        if not (name.startswith("cuda-") and name.endswith(".conf")) or path == ldconfig_file:
            continue
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        try:
            with open(path, "rb") as handle:
                text = handle.read(65536).decode("utf-8", "replace")
        except OSError:
            continue
        if marker in text:
            found.append(path)
    return found


def free_mb(path):
    """(deepest existing ancestor, free MiB for unprivileged users) of the filesystem path is on (or will be)."""
    probe = os.path.abspath(path)
    while not os.path.exists(probe) and os.path.dirname(probe) != probe:
        probe = os.path.dirname(probe)
    stat = os.statvfs(probe)
    return probe, stat.f_bavail * stat.f_frsize // MIB


def file_digest(path, algorithm, chunk=MIB):
    """Hex digest of a file, read in chunks (runfiles are several GB)."""
    digest = hashlib.new(algorithm)
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


def check_install(params, check_mode=False):
    """Is the runfile on the host the right one, and is there room to unpack and install it?

    Returns None without params['runfile'], else {runfile, exists, size, algorithm, checksum, checksum_ok,
    need_mb, free_mb: [{variable, path, filesystem_of, free_mb}], errors}. checksum_ok is None when no
    checksum is given (or the file is not there). In check mode a runfile not yet there is not an error.
    """
    runfile = params.get("runfile")
    if not runfile:
        return None
    out = {"runfile": runfile, "exists": os.path.isfile(runfile), "size": None, "algorithm": None, "checksum": None,
           "checksum_ok": None, "need_mb": None, "free_mb": [], "errors": []}
    errors = out["errors"]
    if not out["exists"]:
        if not check_mode:
            errors.append("%s is not on the host: getting the runfile did not leave it there." % runfile)
        return out
    size = out["size"] = os.path.getsize(runfile)
    wanted = (params.get("runfile_checksum") or "").strip()
    if wanted:
        parsed = parse_checksum(wanted)
        if parsed is None:
            errors.append("cuda_toolkit_runfile_checksum is %r; write it as \"sha256:<64 hex digits>\" or"
                          " \"md5:<32 hex digits>\"." % wanted)
        else:
            out["algorithm"], digest = parsed
            try:
                out["checksum"] = file_digest(runfile, out["algorithm"])
            except (OSError, ValueError) as exc:
                errors.append("cannot compute the %s of %s: %s." % (out["algorithm"], runfile, exc))
            else:
                out["checksum_ok"] = out["checksum"] == digest.lower()
                if not out["checksum_ok"]:
                    errors.append("%s has %s %s, which did not match cuda_toolkit_runfile_checksum (%s): it is not the"
                                  " file the checksum describes (a damaged or different download, or the wrong file on"
                                  " the controller). Check cuda_toolkit_runfile_url or cuda_toolkit_runfile_src, and"
                                  " cuda_toolkit_runfile_checksum." % (runfile, out["algorithm"], out["checksum"], wanted))
    min_free = params.get("min_free_mb") or 0
    need = out["need_mb"] = min_free if min_free > 0 else -(-size * 3 // MIB)
    for variable in ("tmpdir", "prefix"):
        path = params.get(variable) or ("/var/tmp" if variable == "tmpdir" else "/usr/local")
        where, free = free_mb(path)
        out["free_mb"].append({"variable": "cuda_toolkit_" + variable, "path": path, "filesystem_of": where,
                               "free_mb": free})
        if free < need:
            errors.append("Not enough room: %s (cuda_toolkit_%s) has %d MiB free, it needs %d MiB (%s). Free space, or"
                          " point cuda_toolkit_%s at a larger volume." % (
                              path, variable, free, need,
                              "cuda_toolkit_min_free_mb" if min_free > 0 else "three times the runfile's size",
                              variable))
    return out


def _report(state, version):
    tk_dir, nvcc = state["dir"], state["nvcc"]
    if state["installed"] and state["update_unknown"]:
        return ("CUDA %s is installed in %s (nvcc V%s): no version.json (installed from packages?), so only the release"
                " is known, not whether it is the update %s; it is kept as it is."
                % (state["major_minor"], tk_dir, nvcc["build"], version))
    if state["installed"]:
        return "CUDA %s is installed in %s (nvcc V%s)." % (version, tk_dir, nvcc["build"])
    if state["exists"]:
        return ("%s is there but is not a working CUDA %s (%s): it is reinstalled, and put back as it is if the install"
                " fails." % (tk_dir, version, "; ".join(state["problems"])))
    return "CUDA %s is not installed: it goes to %s." % (version, tk_dir)


def gate_parts(collect):
    """The stack_compat parts of the role's gate: the matrix's driver rule and cuda_toolkit, or cuda_toolkit alone
    when preflight collects the verdict (collect: llm_stack_gate_collect; preflight applies the driver rule itself)."""
    return ["cuda_toolkit"] if collect else ["matrix", "cuda_toolkit"]


def restore_link(link):
    """How the role puts the home link back as it was read (link: read_link's answer) when the installer, which
    points it at the new toolkit, is not to have the last word: {state, src, force} of ansible.builtin.file,
    the link to its own target again, else absent (src None: not given)."""
    if link["islink"]:
        return {"state": "link", "src": link["target"], "force": True}
    return {"state": "absent", "src": None, "force": False}


def plan_setup(state, params):
    """The setup changes for the toolkit: {set_link, set_ldconfig, set_profile, kept, ...}.

    What already leads to a toolkit found installed is kept, whoever made it: a /usr/local/cuda that
    resolves to it (a package install links it through /etc/alternatives) and a linker path that already
    resolves its libcudart (the packages' own entry), unless the role's own file is there, which it keeps
    up to date. A toolkit from packages (update_unknown) gets no login-shell script unless the script is
    already there: its packages leave PATH to the host, and so does the role.

    And around the installer: the directories to create (create_dirs: tmpdir private, 0700), how to put the
    home link back (restore_link), and what goes after a good install (cleanup: the previous toolkit kept
    aside, and params['runfile'] unless params['keep_runfile']).
    """
    installed = state["installed"]
    link, linker = state["link"], state["linker"]
    manage_link = bool(params.get("manage_cuda_link"))
    manage_ldconfig = bool(params.get("manage_ldconfig"))
    profile = params.get("profile_script") or ""
    set_link = manage_link and not (installed and link["leads_to_dir"])
    set_ldconfig = manage_ldconfig and (state["ldconfig_file_exists"] or not (installed and linker["ok"]))
    set_profile = bool(profile) and (state["profile_exists"] or not (installed and state["update_unknown"]))
    kept = []
    if manage_link and not set_link and link["target"] != state["dir"]:
        kept.append("%s already leads to %s (through %s)" % (link["path"], state["dir"], link["target"]))
    if manage_ldconfig and not set_ldconfig:
        kept.append("the dynamic linker already resolves %s to it (%s)" % (linker["soname"], linker["found"]))
    if profile and not set_profile:
        kept.append("no %s: a toolkit from packages leaves PATH to the host" % profile)
    runfile = [params["runfile"]] if params.get("runfile") and not params.get("keep_runfile") else []
    return {
        "set_link": set_link,
        "set_ldconfig": set_ldconfig,
        "set_profile": set_profile,
        "kept": kept,
        "remove_ldconfig_files": (stale_ldconfig_files(state["ldconfig_file"], params.get("managed_marker") or MANAGED_MARKER)
                                  if manage_ldconfig else []),
        "uninstall": [item["path"] for item in state["remove"] if item["uninstaller"]],
        "create_dirs": [{"path": path, "mode": "0700" if path == params.get("tmpdir") else "0755"}
                        for path in state["missing_dirs"]],
        "restore_link": restore_link(link),
        "cleanup": [state["aside"]["path"]] + runfile,
    }


def _blocking_errors(state, params):
    """What stops the host before any change, besides the settings: each with the fix."""
    errors = []
    link, tk_dir = state["link"], state["dir"]
    if params.get("manage_cuda_link") and link["exists"] and not link["islink"]:
        errors.append("%s is a real %s, not a link, so it cannot point at %s; nothing was changed. Move it away (it may be"
                      " a toolkit installed there directly), or set cuda_toolkit_manage_cuda_link: false to leave it"
                      " alone." % (link["path"], "directory" if os.path.isdir(link["path"]) else "file", tk_dir))
    aside = state["aside"]["path"]
    if state["aside"]["exists"]:
        errors.append("%s exists: an earlier install of CUDA %s was interrupted after moving the previous toolkit there."
                      " Nothing was changed. If %s is broken, put the old one back (rm -rf %s; mv %s %s), else remove"
                      " %s; then run again." % (aside, state["major_minor"], tk_dir, tk_dir, aside, tk_dir, aside))
    if state["remove_without_uninstaller"]:
        errors.append("cuda_toolkit_remove_toolkits lists %s, which has no bin/cuda-uninstaller (not installed by"
                      " NVIDIA's runfile): nothing was changed. Remove it with the tool that installed it (apt, dnf,"
                      " ...) and take it out of cuda_toolkit_remove_toolkits."
                      % ", ".join(state["remove_without_uninstaller"]))
    return errors


def _others_report(others, remove_paths, uninstall):
    if not others and not uninstall:
        return None
    listed = ", ".join("%s (CUDA %s)" % (entry["path"], entry["version"]) for entry in others) or "none found"
    if uninstall:
        return "Other CUDA toolkits: %s. Removing as asked (cuda_toolkit_remove_toolkits): %s." % (
            listed, ", ".join(uninstall))
    if remove_paths:
        return "Other CUDA toolkits: %s. Left in place." % listed
    return ("Other CUDA toolkits: %s. Left in place; list one in cuda_toolkit_remove_toolkits to remove it with its"
            " bin/cuda-uninstaller." % listed)


def _empty_state(params, errors):
    """The answer when the version cannot be read: nothing examined, the errors say why."""
    link = read_link(params.get("home_link") or "/usr/local/cuda", None)
    return {
        "version": params.get("version"), "major": None, "major_minor": None, "dir": None, "exists": False,
        "installed": False, "update_unknown": False, "problems": [], "toolkit": None,
        "nvcc": {"path": None, "version": None, "build": None, "error": None},
        "linker": {"soname": None, "library": None, "found": None, "ok": False, "error": None},
        "link": link,
        "aside": {"path": None, "exists": False}, "ldconfig_file": params.get("ldconfig_file") or None,
        "ldconfig_file_exists": False, "profile_script": params.get("profile_script") or "", "profile_exists": False,
        "missing_dirs": [], "remove": [], "remove_without_uninstaller": [], "others": [], "others_report": None,
        "plan": {"set_link": False, "set_ldconfig": False, "set_profile": False, "kept": [],
                 "remove_ldconfig_files": [], "uninstall": [], "create_dirs": [], "restore_link": restore_link(link),
                 "cleanup": []},
        "gate_parts": gate_parts(params.get("collect")),
        "install_check": None, "report": "The toolkit's state was not read: %s" % " ".join(errors),
        "errors": errors, "warnings": [],
    }


def runfile_fetch(params):
    """The run_logged download of the runfile (fetch_url.fetch_command: argv, environment, no_log, shown_url) from
    params['fetch_url'] to params['fetch_dest'] with the host's python3; None without fetch_url.

    fetch_url.FetchError (its message says what is wrong) for a URL or a destination it cannot take.
    """
    if params.get("fetch_url") is None:
        return None
    return fetch_url.fetch_command("python3", params["fetch_url"], params.get("fetch_dest"))


def read_state(params, run=proc_run, ldconfig="ldconfig", check_mode=False):
    """Everything the cuda_toolkit role decides about the host, read now; changes nothing.

    params: version, prefix, home_link, toolkit_root, scan_prefixes, ldconfig_file, profile_script,
    manage_cuda_link, manage_ldconfig, remove_toolkits, managed_marker, tmpdir, download_dir, log_file,
    installer_extra_args, timeout, collect, and for the install check runfile, runfile_checksum, min_free_mb,
    keep_runfile.
    run: proc.run or a stand-in with its interface. ldconfig: the program to run for ``ldconfig -p``
    (None when the host has none).
    """
    timeout = params.get("timeout") or 30
    version = params.get("version")
    try:
        major, major_minor = split_version(version)
    except ToolkitInputError as exc:
        return _empty_state(params, [str(exc)] + check_settings(params, None))
    version = version.strip()
    tk_dir = toolkit_dir(params.get("prefix") or "/usr/local", major_minor)
    env = dict(os.environ, LC_ALL="C")
    run_command = _command_runner(run, timeout, env)

    # Other toolkits, and this one's version.json (or its nvcc's release when there is none).
    prefixes = ([tk_dir] if os.path.isdir(tk_dir) else []) + list(params.get("scan_prefixes") or [])
    toolkits, scan_warnings = nvcc_utils.find_toolkits(params.get("toolkit_root") or "/usr/local", prefixes, run_command)
    real_dir = os.path.realpath(tk_dir)
    entry = next((t for t in toolkits if t["path"] == tk_dir), None)
    others = [t for t in toolkits if t["path"] != tk_dir and os.path.realpath(t["path"]) != real_dir]
    # What the scan says of the toolkit directory itself is in problems.
    warnings = [w for w in scan_warnings if not (w.startswith("prefix %s " % tk_dir) or w.startswith(tk_dir + "/"))]

    state = {"version": version, "major": major, "major_minor": major_minor, "dir": tk_dir,
             "exists": os.path.lexists(tk_dir), "toolkit": entry, "others": others, "warnings": warnings}
    state["nvcc"] = read_nvcc(os.path.join(tk_dir, "bin", "nvcc"), run, timeout, env)
    if state["exists"]:
        problems, update_unknown = toolkit_problems(tk_dir, version, major, major_minor, entry, state["nvcc"])
    else:
        problems, update_unknown = [], False
    state["problems"] = problems
    state["installed"] = state["exists"] and not problems
    state["update_unknown"] = state["installed"] and update_unknown
    state["linker"] = read_linker(tk_dir, major, ldconfig, run, timeout)
    state["link"] = read_link(params.get("home_link") or "/usr/local/cuda", tk_dir)
    aside = tk_dir + ASIDE_SUFFIX
    state["aside"] = {"path": aside, "exists": os.path.lexists(aside)}
    state["ldconfig_file"] = params.get("ldconfig_file") or default_ldconfig_file(major_minor)
    state["ldconfig_file_exists"] = os.path.lexists(state["ldconfig_file"])
    state["profile_script"] = params.get("profile_script") or ""
    state["profile_exists"] = bool(state["profile_script"]) and os.path.lexists(state["profile_script"])
    state["missing_dirs"] = [path for path in (params.get("prefix") or "/usr/local", params.get("tmpdir"))
                             if path and not os.path.lexists(path)]
    remove_paths = list(params.get("remove_toolkits") or [])
    state["remove"] = removal(remove_paths)
    state["remove_without_uninstaller"] = [r["path"] for r in state["remove"] if r["present"] and not r["uninstaller"]]
    state["plan"] = plan_setup(state, params)
    state["gate_parts"] = gate_parts(params.get("collect"))
    state["install_check"] = check_install(params, check_mode)
    state["others_report"] = _others_report(others, remove_paths, state["plan"]["uninstall"])
    state["report"] = _report(state, version)
    state["errors"] = check_settings(params, tk_dir) + _blocking_errors(state, params)
    return state
