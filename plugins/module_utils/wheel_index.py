# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet's package index as the wheel_build role uses it.

A build key's wheel is kept on the index under its usual file name with a
wheel build tag (PEP 427) made of the key's hash: ``flash_attn-2.8.3-0<hash>-
cp311-cp311-linux_x86_64.whl``. The build tag is the part of a wheel's name
meant to tell apart two builds of one version; pip accepts it and ignores it
when it installs, so every key's wheel sits on the index side by side.

* ``build_tag``, ``tagged_filename``: the name of a key's wheel on the index.
* ``download_problem``: what an installing host says when the file it
  downloaded is not the one the cache host's ledger recorded (the builder's).
* ``config_problems``, ``server_problems``: the settings of the fleet and of
  the cache host; ``server_warnings``: what the cache host's settings allow
  that the fleet does not need (the index listening on every address).
* ``server_plan``: what the fleet_cache role's tasks run (pip's command for
  pypiserver, the variables of pip's index URL, the URL the index is probed at).
* ``path_abnormality``, ``service_user_problem``, ``listen_warning``,
  ``local_host``: the checks of a directory, a service user and a listen
  address, and the address a service is probed at on its own host, that the
  cache host's roles share (fleet_cache here, hf_mirror in
  module_utils/hf_mirror.py).

The index takes no uploads: the cache host puts each wheel into its packages
directory itself (module_utils/fleet_lock.py, ``publish``), and its ledger,
not the index's listing, says which file and sha256 a key has.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import os
import posixpath
import re
from urllib.parse import urlsplit

_HEX12 = re.compile(r"^[0-9a-f]{12}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_WHEEL = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-(?P<build>\d[^-]*))?-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl$")
# An address to listen on: an IPv4 or IPv6 address, or a host name (it goes on the service's command line).
_LISTEN = re.compile(r"^([0-9A-Fa-f:.]+|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252}[A-Za-z0-9])?)$")
# What a directory written into the index's systemd unit may not hold: white space splits it (ExecStart=,
# ReadWritePaths=), a line break or another control character starts a new directive, quotes and backslashes are
# unquoted and unescaped, % is a specifier (%h: the user's home) and $ a variable on the ExecStart= line.
_UNIT_PATH_BAD = re.compile(r"[\s\x00-\x1f\x7f%$\"'\\]")
# The cache host's directories the unit names: settings key, the inventory variable.
_UNIT_DIRS = (("data_dir", "fleet_cache_data_dir (llm_stack_cache_data_dir)"), ("venv", "fleet_cache_venv"),
              ("config_dir", "fleet_cache_config_dir"), ("log_dir", "fleet_cache_log_dir"))
# The cache host's other directories (not in the unit): settings key, the inventory variable.
_HOST_DIRS = (("prefix", "fleet_cache_prefix"), ("wheelhouse_dest", "fleet_cache_wheelhouse_dest"))
# A system user name as Debian's useradd takes it without --badname (at most 32 characters).
_USER = re.compile(r"[a-z_][a-z0-9_-]*[$]?")
# Listen addresses that mean every address of the host.
_EVERY_ADDRESS = ("0.0.0.0", "::")


class WheelIndexError(ValueError):
    """Input that names no index or no key; the message says which variable and the fix."""


def normalize(name):
    """PEP 503 project name: runs of -, _ and . become one -, lower case."""
    return re.sub(r"[-_.]+", "-", name if isinstance(name, str) else "").lower()


def build_tag(entry):
    """The wheel build tag of a cache entry (``<label>-<12 hex>``): '0' and the hash (a build tag starts with a digit)."""
    digest = entry.rsplit("-", 1)[-1] if isinstance(entry, str) else ""
    if not _HEX12.match(digest):
        raise WheelIndexError("build_tag: %r is not a wheel_build cache entry (<label>-<12 hex digits>)" % (entry,))
    return "0" + digest


def parse_wheel(filename):
    """The parts of a wheel's file name (name, version, build, py, abi, plat), or None when it is no wheel name."""
    match = _WHEEL.match(filename) if isinstance(filename, str) else None
    return match.groupdict() if match else None


def tagged_filename(filename, entry):
    """The wheel's name on the index: the build's own name with the key's build tag (replacing any build tag)."""
    parts = parse_wheel(filename)
    if not parts:
        raise WheelIndexError("%r is not the file name of a wheel" % (filename,))
    return "%s-%s-%s-%s-%s-%s.whl" % (parts["name"], parts["version"], build_tag(entry), parts["py"], parts["abi"], parts["plat"])


def check_index_url(url, var="llm_stack_wheel_index_url"):
    """'' when url is an http(s) base URL without credentials; else the message naming var and the fix."""
    if not isinstance(url, str) or not re.match(r"^https?://[^/@\s]+(/[^\s@]*)?$", url):
        return ("%s=%r is not the base URL of the fleet's package index. Fix: set it to https://host:port (or "
                "http://) of the cache host's index, without a user or a password (the index takes no uploads), "
                "or to \"\" for the controller cache." % (var, url))
    return ""


def _controller_file_problem(value, variable, what):
    if value in (None, ""):
        return ""
    if not isinstance(value, str) or not value.startswith("/") or not os.path.isfile(value):
        return "%s=%r is not a file on the controller. Fix: set it to the absolute path of %s, or to \"\"." % (
            variable, value, what)
    return ""


def config_problems(index_url, cache_host, hosts, cache_host_vars=None, ca_cert=None):
    """What is wrong with the index settings ([] when nothing, or when no index is used: index_url empty).

    hosts: the inventory's host names. The cache host must be one of them
    (its locks are taken with delegate_to), unless cache_host_vars gives the
    connection variables to add it to the job's inventory (an AWX job slice
    holds only its own hosts). ca_cert: llm_stack_wheel_index_ca_cert, a
    controller file (checked where it is read: the gpufleet.llm_stack.wheel_build_state and
    gpufleet.llm_stack.flash_attn_build_state actions run on the controller).
    """
    if index_url is None or index_url == "":
        return []
    problems = []
    url_problem = check_index_url(index_url)
    if url_problem:
        problems.append(url_problem)
    if not cache_host:
        problems.append("llm_stack_wheel_index_url is set but llm_stack_cache_host is empty. Fix: put the cache host in "
                        "group llm_cache (or set llm_stack_cache_host to its inventory name): the build locks are there.")
    elif cache_host not in (hosts or []) and not cache_host_vars:
        problems.append("llm_stack_cache_host=%r is not a host of this job's inventory. Fix: set it to the inventory "
                        "name of the cache host (group llm_cache), or, where a job sees only part of the inventory (AWX "
                        "job slicing), set llm_stack_cache_host_vars to its connection variables (ansible_host, ...)."
                        % (cache_host,))
    ca_problem = _controller_file_problem(ca_cert, "llm_stack_wheel_index_ca_cert",
                                          "the CA certificate (PEM) that signed the index's certificate")
    if ca_problem:
        problems.append(ca_problem)
    elif ca_cert and not url_problem and not index_url.startswith("https://"):
        problems.append("llm_stack_wheel_index_ca_cert is set but llm_stack_wheel_index_url=%r is plain http. Fix: "
                        "set the URL to the index's https:// address (fleet_cache_index_tls_cert on the cache host)."
                        % (index_url,))
    return problems


def port_problem(value, variable):
    """'' when value is a TCP port number (1 to 65535), else the message naming variable."""
    text = "" if isinstance(value, bool) or value is None else str(value).strip()
    if re.match(r"^[0-9]{1,5}$", text) and 0 < int(text) < 65536:
        return ""
    return "%s is %r: set it to a TCP port number (1 to 65535)." % (variable, value)


def unit_path_bad(path):
    """Whether a directory cannot go into a systemd unit's lines as it is (white space, control characters,
    quotes, backslashes, % or $)."""
    return bool(_UNIT_PATH_BAD.search(path))


def path_abnormality(path):
    """Why path is not an absolute, normalized path other than / ('' when it is one).

    Normalized: no '..' or '.' component, no '//' and no trailing '/' (what posixpath.normpath would change).
    """
    if not isinstance(path, str) or not path.startswith("/"):
        return "it is not an absolute path"
    if path == "/":
        return "it is / itself"
    parts = path.split("/")[1:]
    if ".." in parts:
        return "it has a '..' component"
    if "." in parts:
        return "it has a '.' component"
    if "//" in path:
        return "it has '//'"
    if path.endswith("/"):
        return "it ends in '/'"
    return "" if posixpath.normpath(path) == path else "it is not normalized"


def path_problem(variable, path, shown=None):
    """'' when path is an absolute, normalized directory other than /; else the message naming variable and the fix."""
    why = path_abnormality(path)
    if not why:
        return ""
    return ("%s is %s: %s. Fix: set it to the directory written out in full, an absolute path without '..' or '.' "
            "components, '//' or a trailing '/', and not / itself." % (variable, shown or repr(path), why))


def service_user_problem(variable, user, example, shown=None):
    """'' when user can be the system user a cache host's service runs as; else the message naming variable and the fix.

    A name Debian's useradd takes without --badname (lower-case letters, digits, '_' and '-', starting with a letter
    or '_', an optional '$' at the end, at most 32 characters), and not root: the service takes files from the
    network or serves them to the fleet.
    """
    shown = shown or repr(user)
    if user == "root":
        return ("%s is 'root': the service serves files to the whole fleet and must not run as root. Fix: set it to "
                "a system user of its own, e.g. %s." % (variable, example))
    if not isinstance(user, str) or len(user) > 32 or not _USER.fullmatch(user):
        return ("%s is %s: set it to a system user name (lower-case letters, digits, '_' and '-', starting with a "
                "letter or '_', an optional '$' at the end, at most 32 characters), e.g. %s." % (variable, shown, example))
    return ""


def listen_warning(listen_host, listen_var, url, url_var, service):
    """'' unless the service listens on every address (0.0.0.0 or ::) while the fleet reaches it at one IP address.

    url: the URL the fleet uses (url_var); a host name there is not judged (it may resolve to several addresses).
    The warning says what else the service listens on and names listen_var and the value to set.
    """
    if listen_host not in _EVERY_ADDRESS or not isinstance(url, str):
        return ""
    try:
        address = ipaddress.ip_address(urlsplit(url.strip()).hostname or "")
    except ValueError:
        return ""
    if address.is_unspecified or (listen_host == "0.0.0.0" and address.version != 4):
        return ""
    return ("%s is '%s': %s listens on every interface of this host, but the fleet reaches it at %s only (%s). Set %s: "
            "\"%s\" so that it listens on that address alone." % (listen_var, listen_host, service, address, url_var,
                                                                  listen_var, address))


def local_host(listen_host):
    """The address this host reaches its own service at: 127.0.0.1 where the service listens on every address
    (0.0.0.0 or ::), else the address it listens on (fleet_cache's index, hf_mirror's olah)."""
    return "127.0.0.1" if listen_host in _EVERY_ADDRESS else listen_host


def server_plan(settings):
    """What the fleet_cache role's tasks run, from the settings server_problems checked.

    settings: venv, wheelhouse (a controller directory, or empty: pip uses an index), wheelhouse_dest (where the
    cache host keeps the pushed wheelhouse), pypiserver_version and gunicorn_version (the releases pip installs),
    pip_index (whether fleet_cache_pip_index_url is set), tls_cert (set: the index serves https), listen_host and
    port. Returns pip_argv (pip's command that installs pypiserver and gunicorn into the venv, from the wheelhouse
    alone where one is set), pip_index_variables (the environment variables that carry fleet_cache_pip_index_url
    to pip: PIP_INDEX_URL, none where it is empty; the URL itself stays out of the plan) and probe_url (the URL the
    cache host checks that its index answers /simple/ at, local_host's address).
    """
    if not isinstance(settings, dict):
        raise WheelIndexError("server_plan needs a dict of the fleet_cache settings")
    argv = ["%s/bin/python" % (settings.get("venv"),), "-m", "pip", "install", "--no-input",
            "--disable-pip-version-check"]
    if settings.get("wheelhouse"):
        argv += ["--no-index", "--find-links", settings.get("wheelhouse_dest")]
    argv += ["pypiserver==%s" % (settings.get("pypiserver_version"),),
             "gunicorn==%s" % (settings.get("gunicorn_version"),)]
    scheme = "https" if settings.get("tls_cert") else "http"
    return {
        "pip_argv": argv,
        "pip_index_variables": ["PIP_INDEX_URL"] if settings.get("pip_index") else [],
        "probe_url": "%s://%s:%s/simple/" % (scheme, local_host(settings.get("listen_host")), settings.get("port")),
    }


def server_problems(settings):
    """What is wrong with the cache host's settings of the index (role fleet_cache), [] when nothing.

    settings: port, listen_host, data_dir, wheelhouse (a controller
    directory, or empty), tls_cert and tls_key (controller files, both or
    neither), workers and threads (gunicorn's), venv, config_dir and log_dir (directories on the cache host that
    the unit names, as data_dir does; each left out is not checked), prefix and wheelhouse_dest (the cache host's
    other directories), user (the index's system user; each left out is not checked) and service_mgr (the
    ansible_facts value; None when facts were not gathered, taken as systemd). Each directory on the cache host
    must be absolute and normalized (path_abnormality). Each message names the variable and the fix.
    """
    if not isinstance(settings, dict):
        raise WheelIndexError("server_problems needs a dict of the fleet_cache settings")
    problems = []
    problem = port_problem(settings.get("port"), "fleet_cache_index_port")
    if problem:
        problems.append(problem)
    listen = settings.get("listen_host")
    if not isinstance(listen, str) or not _LISTEN.match(listen):
        problems.append("fleet_cache_index_listen_host is %r: set it to the address the index listens on, the cache "
                        "host's address on the fleet's network (or 0.0.0.0 for every address)." % (listen,))
    for key, variable in _UNIT_DIRS:
        value = settings.get(key)
        if value is None and key != "data_dir":
            continue
        value = "" if value is None else str(value)
        if not value.startswith("/") or _UNIT_PATH_BAD.search(value):
            problems.append("%s is %r: set it to an absolute directory on the cache host without white space, quotes,"
                            " backslashes, %% or $ (the index's systemd unit names it, and systemd expands %% as a"
                            " specifier such as %%h and $ as a variable)." % (variable, value[:120]))
        elif path_abnormality(value):
            problems.append(path_problem(variable, value, repr(value[:120])))
    for key, variable in _HOST_DIRS:
        value = settings.get(key)
        if value is not None and path_abnormality(str(value)):
            problems.append(path_problem(variable, str(value), repr(str(value)[:120])))
    if "user" in settings:
        problem = service_user_problem("fleet_cache_user", settings["user"], "fleet-index")
        if problem:
            problems.append(problem)
    wheelhouse = settings.get("wheelhouse")
    wheelhouse = "" if wheelhouse is None else str(wheelhouse)
    if wheelhouse and not (wheelhouse.startswith("/") and not re.search(r"[\s\x00-\x1f]", wheelhouse)):
        problems.append("fleet_cache_wheelhouse is %r: set it to an absolute controller directory, or leave it empty."
                        % (wheelhouse[:120],))
    for key, variable in (("workers", "fleet_cache_index_workers"), ("threads", "fleet_cache_index_threads")):
        value = settings.get(key, 1)
        text = "" if isinstance(value, bool) or value is None else str(value).strip()
        if not (re.match(r"^[0-9]{1,4}$", text) and int(text) >= 1):
            problems.append("%s is %r: set it to a number of 1 or more." % (variable, value))
    cert, key = settings.get("tls_cert") or "", settings.get("tls_key") or ""
    if bool(cert) != bool(key):
        problems.append("fleet_cache_index_tls_cert and fleet_cache_index_tls_key go together: set both (the "
                        "certificate and its private key, PEM files on the controller) for https, or neither.")
    for value, variable, what in ((cert, "fleet_cache_index_tls_cert", "the index's certificate (PEM)"),
                                  (key, "fleet_cache_index_tls_key", "its private key (PEM)")):
        problem = _controller_file_problem(value, variable, what)
        if problem:
            problems.append(problem)
    service_mgr = settings.get("service_mgr")
    if service_mgr not in (None, "", "systemd"):
        problems.append("fleet_cache runs the index under systemd; PID 1 of this host is %s. Fix: a cache host that "
                        "runs systemd." % service_mgr)
    return problems


def server_warnings(settings):
    """What the cache host's index settings allow that the fleet does not need ([] when nothing).

    settings: listen_host (fleet_cache_index_listen_host) and index_url (llm_stack_wheel_index_url, the URL the
    fleet uses; empty or missing: no warning).
    """
    if not isinstance(settings, dict):
        raise WheelIndexError("server_warnings needs a dict of the fleet_cache settings")
    warning = listen_warning(settings.get("listen_host"), "fleet_cache_index_listen_host", settings.get("index_url"),
                             "llm_stack_wheel_index_url", "the index")
    return [warning] if warning else []


def check_download(entry, wheel, got_sha256, cache_host=""):
    """'' when the downloaded file is the key's recorded wheel (got_sha256 is the ledger's sha256), else the refusal.

    wheel: fleet_lock's ``wheel`` (filename, sha256 from the cache host's
    ledger, path on the cache host, built_on). The message names the key,
    both sha256 values and the fix.
    """
    if not isinstance(wheel, dict) or not _SHA256.match(str(wheel.get("sha256") or "")):
        raise WheelIndexError("the expected wheel must be fleet_lock's wheel, with the ledger's sha256")
    if got_sha256 == wheel["sha256"]:
        return ""
    return ("Refused %s for build key %s: the file the index served has sha256 %s, but the cache host's ledger "
            "records sha256 %s for the wheel built on %s. It is not the wheel the builder built; nothing was "
            "installed. Fix: remove %s on the cache host%s and run again (the key is then built anew)."
            % (wheel.get("filename") or "the wheel", entry, got_sha256, wheel["sha256"], wheel.get("built_on") or "its builder",
               wheel.get("path") or "the file from the index's packages directory", " " + cache_host if cache_host else ""))
