# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The input checks of the hf_mirror role (olah on the cache host), before anything is installed or written.

The role writes these values into olah's TOML configuration (quoted strings) and into a systemd unit (one
directive per line, paths split at spaces, % and $ expanded), so a value that could end a string, start a line,
split a path or be read by systemd as another path is refused here rather than written. URLs are checked by the
hub's own rule (hf_hub.validate_endpoint); olah takes scheme://host[:port] only, and a password in a URL would sit
in a world-readable configuration file.
Each problem names the hf_mirror_* variable and the fix; credentials are masked in every message.

``cache_size_limit`` gives olah its cache-size-limit: a size olah reads as the size it is meant to be (olah 0.5.4's
``convert_to_bytes`` takes a whole number with K, M, G, T, KB, MB, GB or TB, binary multiples; anything else it
reads as no limit, or fails on), or, for ``auto``, 80 % of the filesystem that holds the cache directory.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
from urllib.parse import urlsplit

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import hf_hub
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.hf_download import as_number
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import mask_credentials
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.wheel_index import listen_warning, path_abnormality, \
    path_problem, service_user_problem

# Characters no value written into olah.toml or the unit may hold: quotes and backslashes end or escape a TOML
# string; a line break or another control character starts a new TOML key or systemd directive.
UNSAFE_RE = re.compile(r'["\\\x00-\x1f\x7f]')
# What systemd expands in a unit: % (specifiers: %h, %n, ...) in every line, $ (variables) on ExecStart=.
UNIT_EXPANDED_RE = re.compile(r"[%$]")
# systemd unit names: ASCII letters, digits and ':-_.', not starting with '-' or '.'.
UNIT_RE = re.compile(r"[A-Za-z0-9_:][A-Za-z0-9_:.-]{0,200}", re.ASCII)
# What olah 0.5.4's convert_to_bytes (olah/utils/disk_utils.py) reads as the size written: a whole number, then one
# of K, M, G, T, KB, MB, GB, TB (upper or lower case: it upper-cases the text); '1.5TB' fails there, '2TiB' or '1PB'
# become no limit at all.
SIZE_RE = re.compile(r"[0-9]+ ?(K|M|G|T|KB|MB|GB|TB)?", re.ASCII | re.IGNORECASE)
# auto: this share of the filesystem that holds the cache directory.
AUTO_SHARE = 0.8
NETLOC_RE = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252}[A-Za-z0-9])?)(:[0-9]{1,5})?", re.ASCII)

PATH_OPTIONS = ("prefix", "venv", "config_dir", "cache_dir", "log_dir")
# The paths the systemd unit names (hf-mirror.service.j2).
UNIT_PATH_OPTIONS = ("venv", "config_dir", "cache_dir", "log_dir")
OPTIONS = ("upstream_url", "upstream_lfs_netloc", "url", "listen_host", "port", "user", "service_name",
           "cache_size_limit", "metadata_cache_ttl", "offline", "git_repos_dir", "tls_cert", "tls_key") + PATH_OPTIONS


def _shown(value):
    """A value as a message shows it: credentials masked, control characters escaped, shortened when long."""
    text = mask_credentials(value if isinstance(value, str) else repr(value)).encode("unicode_escape").decode("ascii")
    return text if len(text) <= 120 else text[:117] + "..."


def _unsafe(value, spaces_ok=False):
    """Whether value is not text that olah.toml and the unit can hold (spaces split a path or an address there)."""
    return not isinstance(value, str) or bool(UNSAFE_RE.search(value)) \
        or (not spaces_ok and any(c.isspace() for c in value))


def _url_problem(option, value, schemes, example):
    shown = _shown(value)
    problem = hf_hub.validate_endpoint(value)
    if problem is None:
        parts = urlsplit(value.strip())
        if parts.scheme not in schemes:
            problem = "'%s' is not an %s URL" % (shown, " or ".join("%s://" % s for s in schemes))
        elif parts.path not in ("", "/"):
            problem = "'%s' has a path (%s); olah takes scheme://host[:port] only" % (shown, _shown(parts.path))
        elif parts.username is not None or parts.password is not None:
            problem = "'%s' holds credentials, which olah cannot use and would keep in its world-readable configuration" % shown
        elif UNSAFE_RE.search(value):
            problem = "'%s' holds a quote or a backslash" % shown
    if problem is None:
        return None
    return "hf_mirror_%s: %s. Set it to %s." % (option, problem, example)


def problems(settings):
    """What is wrong with the hf_mirror role's variables, each naming the variable and the fix ([] when nothing).

    settings: a dict with the keys of OPTIONS, each the hf_mirror_<key> variable.
    """
    if not isinstance(settings, dict):
        raise TypeError("the settings must be a dict of the hf_mirror_* variables")
    missing = [key for key in OPTIONS if key not in settings]
    if missing:
        raise TypeError("the settings lack %s" % ", ".join(missing))
    found = []

    def add(problem):
        if problem:
            found.append(problem)

    add(_url_problem("upstream_url", settings["upstream_url"], ("http", "https"),
                     "scheme://host[:port] of the hub or of an upstream mirror, e.g. https://huggingface.co"))
    tls_cert, tls_key = settings["tls_cert"], settings["tls_key"]
    tls = isinstance(tls_cert, str) and bool(tls_cert)
    if tls:
        add(_url_problem("url", settings["url"], ("https",),
                         "the https://host:port at which the fleet reaches this mirror, a name its certificate "
                         "(hf_mirror_tls_cert) holds"))
    else:
        add(_url_problem("url", settings["url"], ("http",),
                         "the http://host:port at which the fleet reaches this mirror (https needs hf_mirror_tls_cert "
                         "and hf_mirror_tls_key)"))
    for option, value in (("tls_cert", tls_cert), ("tls_key", tls_key)):
        if not isinstance(value, str) or (value and (_unsafe(value) or not value.startswith("/") or not os.path.isfile(value))):
            add("hf_mirror_%s is '%s': set it to the absolute path of a PEM file on the controller, or leave it empty."
                % (option, _shown(value)))
    if isinstance(tls_cert, str) and isinstance(tls_key, str) and bool(tls_cert) != bool(tls_key):
        add("hf_mirror_tls_cert and hf_mirror_tls_key go together: set both (the mirror's certificate and its "
            "private key) for https, or neither.")

    netloc = settings["upstream_lfs_netloc"]
    match = NETLOC_RE.fullmatch(netloc) if isinstance(netloc, str) else None
    if not match or (match.group(2) and not 0 < int(match.group(2)[1:]) < 65536):
        add("hf_mirror_upstream_lfs_netloc is '%s': set it to the host[:port] of the upstream's LFS file server, "
            "without a scheme or a path, e.g. cdn-lfs.huggingface.co." % _shown(netloc))

    host = settings["listen_host"]
    if _unsafe(host) or not host:
        add("hf_mirror_listen_host is '%s': set it to the address olah listens on, e.g. 0.0.0.0 or 127.0.0.1."
            % _shown(host))

    port = as_number(settings["port"], int)
    if port is None or not 0 < port < 65536:
        add("hf_mirror_port is %s: set it to a TCP port number (1 to 65535)." % _shown(settings["port"]))

    ttl = as_number(settings["metadata_cache_ttl"], int)
    if ttl is None or ttl < 0:
        add("hf_mirror_metadata_cache_ttl is %s: set it to a number of seconds (0 or more)."
            % _shown(settings["metadata_cache_ttl"]))

    add(service_user_problem("hf_mirror_user", settings["user"], "hf-mirror", "'%s'" % _shown(settings["user"])))

    unit = settings["service_name"]
    if not isinstance(unit, str) or not UNIT_RE.fullmatch(unit) or unit.endswith(".service"):
        add("hf_mirror_service_name is '%s': set it to a systemd unit name without '.service' (ASCII letters, "
            "digits and ':_.-'), e.g. hf-mirror." % _shown(unit))

    size = settings["cache_size_limit"]
    if not isinstance(size, str) or (size.strip() not in ("", "auto") and not SIZE_RE.fullmatch(size.strip())):
        add("hf_mirror_cache_size_limit is '%s': set it to a whole number of K, M, G, T (or KB, MB, GB, TB; binary "
            "multiples) such as 500GB or 2TB (olah reads no other form), to auto (80%% of the filesystem of "
            "hf_mirror_cache_dir), or to \"\" for no limit." % _shown(size))

    for option in PATH_OPTIONS:
        path = settings[option]
        if _unsafe(path) or not path.startswith("/"):
            add("hf_mirror_%s is '%s': set it to an absolute path without spaces, quotes, backslashes or line "
                "breaks (it is written into olah.toml and the systemd unit)." % (option, _shown(path)))
        elif option in UNIT_PATH_OPTIONS and UNIT_EXPANDED_RE.search(path):
            add("hf_mirror_%s is '%s': systemd expands %% in the unit (a specifier such as %%h) and $ on its "
                "ExecStart= line (a variable), so the service would use another path. Set it to an absolute path "
                "without %% or $." % (option, _shown(path)))
        elif path_abnormality(path):
            add(path_problem("hf_mirror_" + option, path, "'%s'" % _shown(path)))

    repos = settings["git_repos_dir"]
    if _unsafe(repos, spaces_ok=True) or (repos and not repos.startswith("/")):
        add("hf_mirror_git_repos_dir is '%s': set it to an absolute path without quotes, backslashes or line "
            "breaks, or leave it empty." % _shown(repos))
    elif repos and path_abnormality(repos):
        add(path_problem("hf_mirror_git_repos_dir", repos, "'%s'" % _shown(repos)))

    offline = settings["offline"]
    if not isinstance(offline, bool):
        add("hf_mirror_offline is %s: set it to true or false." % _shown(offline))
    elif offline and isinstance(repos, str) and not repos:
        add("hf_mirror_offline is true but hf_mirror_git_repos_dir is empty: an offline mirror needs local git "
            "repositories to serve; set hf_mirror_git_repos_dir, or hf_mirror_offline: false.")
    return found


def warnings(settings):
    """What the hf_mirror role's variables allow that the fleet does not need ([] when nothing).

    settings: listen_host (hf_mirror_listen_host) and url (hf_mirror_url, the URL the fleet reaches the mirror at).
    """
    if not isinstance(settings, dict):
        raise TypeError("the settings must be a dict of the hf_mirror_* variables")
    warning = listen_warning(settings.get("listen_host"), "hf_mirror_listen_host", settings.get("url"), "hf_mirror_url",
                             "the mirror")
    return [warning] if warning else []


def mount_of(mounts, path):
    """The entry of ansible_facts.mounts that holds path (the longest mount point above it), None when none does."""
    best = None
    for mount in mounts or []:
        point = mount.get("mount") if isinstance(mount, dict) else None
        if not isinstance(point, str) or not point.startswith("/"):
            continue
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) > len(best["mount"])):
            best = mount
    return best


def statfs_size(text):
    """The size in bytes of a filesystem from ``stat --file-system --format '%S %b' DIR`` (the fundamental block size
    and the total of blocks, such as ``4096 66052064``); None when text is not that."""
    match = re.match(r"^\s*(\d{1,9}) (\d{1,20})\s*$", text or "", re.ASCII) if isinstance(text, str) else None
    return int(match.group(1)) * int(match.group(2)) if match else None


def cache_size_limit(setting, mounts, cache_dir, statfs=None):
    """olah's cache-size-limit for hf_mirror_cache_size_limit: '' (no limit), the size as set, or for auto 80 % of the
    filesystem that holds cache_dir (whole GiB, e.g. '1638G'): from statfs (statfs_size's reading of that filesystem
    on the host), else from ansible_facts.mounts (which leaves out an overlay root, a container's)."""
    if not isinstance(setting, str):
        raise TypeError("hf_mirror_cache_size_limit must be a string")
    setting = setting.strip()
    if setting != "auto":
        return setting
    size = statfs_size(statfs)
    if not size:
        mount = mount_of(mounts, cache_dir)
        size = mount.get("size_total") if mount else None
    if isinstance(size, bool) or not isinstance(size, (int, float)) or size <= 0:
        raise TypeError("hf_mirror_cache_size_limit is auto, but the facts give no size of the filesystem that "
                        "holds %s; set hf_mirror_cache_size_limit to a size such as 500GB" % cache_dir)
    return "%dG" % max(1, int(size * AUTO_SHARE) // 1024 ** 3)


def reads_filesystem(setting):
    """Whether the role reads the size of the cache directory's filesystem on the host (statfs for cache_size_limit):
    hf_mirror_cache_size_limit is auto, as written."""
    return setting == "auto"
