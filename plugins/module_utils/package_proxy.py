# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cache host's proxy of the upstream package indexes, and the URL the fleet's pips use.

The cache host runs devpi-server (role fleet_cache, ``fleet_cache_proxy``)
with caching mirrors of PyPI (``root/pypi``) and of PyTorch's index of each
torch build the fleet installs (``root/pytorch-<build>``, a mirror of
``https://download.pytorch.org/whl/<build>/``), and for each build one index
that inherits from both (``root/<build>``, PyTorch's first). A host installs
everything pip resolves from its build's index:
``<llm_stack_package_index_url>/root/<build>/+simple/``. Each file crosses
the uplink once: devpi keeps what it fetched, and serves it to every other
host from its own store.

devpi fetches a file's upstream page with the file's sha256 (``#sha256=`` of
PyPI and of PyTorch's pages) and repeats it in its own pages: pip checks
every file it downloads against it, and devpi does not keep a file whose
sha256 differs from upstream's.

* ``first_fetchers``: the hosts of a batch that install first, one per
  index and requirement, so that the others find the proxy filled.
* ``index_url``: the URL a host's pip uses for a torch build; ``config_url``
  and ``answer``: the question a host asks the proxy before any change, and
  what it makes of the answer.
* ``problems``: the fleet_cache settings of the proxy, each message naming
  the variable and the fix; ``fleet_problem``: ``llm_stack_package_index_url``.
* ``indexes``: the devpi indexes the settings ask for, as devpi's JSON API
  takes them; ``changes``: what to send to devpi to get there.
* ``host_problems``, ``server_plan``: the cache host's settings of the
  proxy, and what the fleet_cache role's tasks run; ``server_argv``:
  devpi-server's command line in its systemd unit.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_index
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import mask_credentials

# A torch build as PyTorch's index names its directories (whl/cu128, whl/cpu, whl/rocm6.4, whl/xpu).
_BUILD = re.compile(r"^(cu[0-9]{2,3}|cpu|xpu|rocm[0-9]+(\.[0-9]+)*)$")
_URL = re.compile(r"^https?://[^/@\s]+(/[^\s@]*)?$")
_VERSION = re.compile(r"^[0-9]+(\.[0-9]+)*([a-z]+[0-9]+)?$")
# The keys of an index's configuration that this module sets (the rest stay as devpi has them).
_MIRROR_KEYS = ("type", "mirror_url", "title", "volatile")
_STAGE_KEYS = ("type", "bases", "title", "volatile", "mirror_whitelist", "acl_upload", "acl_toxresult_upload")


class PackageProxyError(ValueError):
    """Input that is not a setting of the proxy; the message says which."""


def index_url(base, build):
    """The URL of the index a host's pip uses (``<base>/root/<build>/+simple/``), '' where base is empty."""
    base = base.strip() if isinstance(base, str) else ""
    if not base:
        return ""
    if not isinstance(build, str) or not _BUILD.match(build):
        raise PackageProxyError("%r is not a torch build (cu128, cu130, cpu, rocm6.4, xpu)" % (build,))
    return "%s/root/%s/+simple/" % (base.rstrip("/"), build)


def pip_environment(base, build=None, ca_cert="", ca_path="", own_source=""):
    """The environment that points a pip at the cache host's package proxy: PIP_INDEX_URL, the index of build (a
    torch build, for a pip that installs into the venv of torch) or, where build is None, the proxy's mirror of PyPI
    (root/pypi: the hub client, supervisor, olah); PIP_CERT, ca_path where ca_cert (the controller's CA file,
    llm_stack_package_index_ca_cert) is set. {} where base is empty, or where the role has a source of its own
    (own_source: its index URL, wheelhouse or pip arguments, or a list of them), which wins."""
    own = own_source if isinstance(own_source, (list, tuple)) else [own_source]
    if not (isinstance(base, str) and base.strip()) or any(own):
        return {}
    if build is None:
        url = "%s/root/pypi/+simple/" % base.strip().rstrip("/")
    else:
        url = index_url(base, build)
    env = {"PIP_INDEX_URL": url}
    if ca_cert and ca_path:
        env["PIP_CERT"] = ca_path
    return env


def config_url(base, build):
    """The URL of the build's index configuration on the proxy (devpi's JSON, without its project list)."""
    return index_url(base, build).replace("/+simple/", "?no_projects=")


def answer(url, status, body):
    """What a host makes of the proxy's answer for its build's index (``GET config_url``): {url, answered, error}.

    url: the index pip uses; status: the HTTP status (None where nothing answered, body then holding the reason);
    body: the answer. answered is true for 200 with an index that inherits (devpi's ``stage`` index of
    ``indexes``).
    """
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else (body or "")
    if status is None:
        return {"url": url, "answered": False, "error": "no answer: %s" % text[:200]}
    if status == 404:
        return {"url": url, "answered": False, "error": "the proxy has no such index (404)"}
    if status != 200:
        return {"url": url, "answered": False, "error": "HTTP %s" % status}
    try:
        result = json.loads(text).get("result") or {}
    except (ValueError, AttributeError):
        result = None
    if not isinstance(result, dict) or result.get("type") != "stage":
        return {"url": url, "answered": False, "error": "the answer is not a devpi index that inherits (a stage)"}
    return {"url": url, "answered": True, "error": ""}


def first_fetchers(keys):
    """The hosts that install first, one per key: keys maps each host of the batch, in play order, to the key of
    what it installs through the proxy (its index URL and what pip is asked for), '' where it installs nothing
    through it. devpi fetches a file a second time when two hosts ask for it before it holds it, and may answer
    an empty page to the second of two first questions for a project: the first host of each key fills the proxy
    alone, and the others install after it, from what the proxy then holds."""
    if not isinstance(keys, (list, tuple)):
        raise PackageProxyError("first_fetchers needs a list of [host, key] pairs in play order")
    first = {}
    for pair in keys:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise PackageProxyError("first_fetchers: %r is not a [host, key] pair" % (pair,))
        host, key = pair
        if key and key not in first:
            first[key] = host
    return sorted(first.values())


def fleet_problem(base):
    """'' when llm_stack_package_index_url is empty or the base URL of a proxy, else the message and the fix."""
    if base in (None, ""):
        return ""
    if not isinstance(base, str) or not _URL.match(base.strip()) or base.strip().rstrip("/").endswith("+simple"):
        shown = mask_credentials(base) if isinstance(base, str) else base
        return ("llm_stack_package_index_url=%r is not the base URL of the cache host's package proxy. Fix: set it to"
                " https://host:port (or http://) of the cache host's proxy (fleet_cache_proxy_port), without a path,"
                " a user or a password; each host's pip then uses <URL>/root/<torch build>/+simple/. Or \"\": pip's"
                " own configuration and each role's index variable." % (shown,))
    return ""


def problems(settings):
    """What is wrong with the proxy's settings ([] when nothing).

    settings: port (fleet_cache_proxy_port, where the fleet reaches it), devpi_port (fleet_cache_proxy_devpi_port,
    devpi-server's own port on the loopback), index_port (fleet_cache_index_port: the ports must differ),
    pypi_url (fleet_cache_proxy_pypi_url), torch_url (fleet_cache_proxy_torch_url, the base of PyTorch's index),
    builds (fleet_cache_proxy_torch_builds), devpi_version (fleet_cache_proxy_devpi_version) and offline
    (fleet_cache_proxy_offline).
    """
    if not isinstance(settings, dict):
        raise PackageProxyError("problems needs a dict of the fleet_cache proxy settings")
    found = []
    for key, variable in (("port", "fleet_cache_proxy_port"), ("devpi_port", "fleet_cache_proxy_devpi_port")):
        problem = wheel_index.port_problem(settings.get(key), variable)
        if problem:
            found.append(problem)
    ports = [str(settings.get(key)).strip() for key in ("port", "devpi_port", "index_port")]
    if not found and len(set(ports)) != len(ports):
        found.append("fleet_cache_proxy_port (%s), fleet_cache_proxy_devpi_port (%s) and fleet_cache_index_port (%s)"
                     " must differ: each is a service of the cache host. Fix: give each its own port."
                     % tuple(ports))
    for key, variable, example in (("pypi_url", "fleet_cache_proxy_pypi_url", "https://pypi.org/simple/"),
                                   ("torch_url", "fleet_cache_proxy_torch_url", "https://download.pytorch.org/whl")):
        value = settings.get(key)
        if not isinstance(value, str) or not _URL.match(value.strip()):
            found.append("%s is %r: set it to the http(s) URL of the upstream index (%s), without a user or a"
                         " password." % (variable, value, example))
    builds = settings.get("builds")
    if not isinstance(builds, list) or not builds:
        found.append("fleet_cache_proxy_torch_builds is %r: set it to the list of the torch builds the fleet installs"
                     " (llm_stack_torch_cuda of each group, such as [cu128, cu130]; cpu for CPU-only test hosts)."
                     % (builds,))
    else:
        bad = [b for b in builds if not isinstance(b, str) or not _BUILD.match(b)]
        if bad:
            found.append("fleet_cache_proxy_torch_builds holds %s: each item is a torch build as PyTorch's index names"
                         " it (cu128, cu130, cpu, rocm6.4, xpu)." % ", ".join(repr(b) for b in bad))
        elif len(set(builds)) != len(builds):
            found.append("fleet_cache_proxy_torch_builds names a build twice (%s): list each once." % ", ".join(builds))
    version = settings.get("devpi_version")
    if not isinstance(version, str) or not _VERSION.match(version):
        found.append("fleet_cache_proxy_devpi_version is %r: set it to a devpi-server release such as 6.20.3."
                     % (version,))
    if not isinstance(settings.get("offline"), bool):
        found.append("fleet_cache_proxy_offline is %r: set it to true (serve only what the cache holds) or false."
                     % (settings.get("offline"),))
    return found


def indexes(settings):
    """The devpi indexes of the settings (checked by problems), in the order to create them: [{path, config}].

    root/pypi mirrors pypi_url, root/pytorch-<build> mirrors <torch_url>/<build>/, and root/<build> inherits from
    both (PyTorch's first: a file of one name in both is PyTorch's). None is volatile: a file a mirror fetched
    stays, and no index can be deleted over the API. Only root may upload to a build's index (devpi lets anyone
    attach test results to its files by default).
    """
    pypi = settings["pypi_url"].strip()
    torch = settings["torch_url"].strip().rstrip("/")
    planned = [{"path": "root/pypi", "config": {"type": "mirror", "mirror_url": pypi, "volatile": False,
                                                "title": "PyPI (mirror of %s)" % pypi}}]
    for build in settings["builds"]:
        url = "%s/%s/" % (torch, build)
        planned.append({"path": "root/pytorch-%s" % build,
                        "config": {"type": "mirror", "mirror_url": url, "volatile": False,
                                   "title": "PyTorch %s (mirror of %s)" % (build, url)}})
    for build in settings["builds"]:
        planned.append({"path": "root/%s" % build,
                        "config": {"type": "stage", "bases": ["root/pytorch-%s" % build, "root/pypi"],
                                   "volatile": False, "mirror_whitelist": [], "acl_upload": ["root"],
                                   "acl_toxresult_upload": ["root"],
                                   "title": "The fleet's packages for torch builds %s" % build}})
    return planned


def _differs(have, want):
    if isinstance(want, list):
        return list(have or []) != want
    return have != want


def changes(current, planned):
    """What to send to devpi: [{path, method, config}] for each planned index that is missing (PUT) or differs.

    current: {path: the index's configuration as devpi's GET answers it (``result``), or None where it answers
    404}. A differing index gets PATCH with its whole configuration: devpi's as it is, with the planned keys set
    (``projects`` left out, which devpi lists in its answer but does not take).
    """
    sent = []
    for index in planned:
        path, want = index["path"], index["config"]
        have = current.get(path)
        if have is None:
            sent.append({"path": path, "method": "PUT", "config": dict(want)})
            continue
        if have.get("type") != want["type"]:
            raise PackageProxyError("%s on the cache host's proxy is a %s index, not a %s one: the proxy keeps it "
                                    "(nothing is deleted). Fix: remove it on the cache host (devpi's index "
                                    "command) or name another build." % (path, have.get("type"), want["type"]))
        keys = _MIRROR_KEYS if want["type"] == "mirror" else _STAGE_KEYS
        if any(_differs(have.get(key), want[key]) for key in keys):
            config = {k: v for k, v in have.items() if k != "projects"}
            config.update(want)
            sent.append({"path": path, "method": "PATCH", "config": config})
    return sent


def host_problems(settings):
    """problems, and the proxy's directories and user on the cache host: venv (fleet_cache_proxy_venv) and
    serverdir (fleet_cache_proxy_dir) absolute and normalized, without what its systemd unit cannot hold, and user
    (fleet_cache_proxy_user) a system user name that is not root and not the index's (fleet_cache_user)."""
    found = problems(settings)
    for key, variable in (("venv", "fleet_cache_proxy_venv"), ("serverdir", "fleet_cache_proxy_dir")):
        value = settings.get(key)
        value = "" if value is None else str(value)
        if not value.startswith("/") or wheel_index.unit_path_bad(value):
            found.append("%s is %r: set it to an absolute directory on the cache host without white space, quotes,"
                         " backslashes, %% or $ (the proxy's systemd unit names it)." % (variable, value[:120]))
        elif wheel_index.path_abnormality(value):
            found.append(wheel_index.path_problem(variable, value, repr(value[:120])))
    problem = wheel_index.service_user_problem("fleet_cache_proxy_user", settings.get("user"), "fleet-pypi")
    if problem:
        found.append(problem)
    elif settings.get("user") == settings.get("index_user"):
        found.append("fleet_cache_proxy_user is %r, the index's user (fleet_cache_user): the proxy writes its cache, "
                     "the index must not write its packages. Fix: give the proxy a user of its own (fleet-pypi)."
                     % (settings.get("user"),))
    if settings.get("outside_url"):
        problem = fleet_problem(settings.get("outside_url"))
        if problem:
            found.append(problem)
    return found


def server_plan(settings):
    """What the fleet_cache role's proxy tasks run (settings checked by host_problems): indexes, argv
    (server_argv), pip_argv (pip's command that installs devpi-server into its venv, from the pushed wheelhouse
    alone where wheelhouse is set), devpi_url (devpi on the loopback) and probe_url (the proxy's front where the
    cache host asks it, https where tls is set, local_host's address)."""
    pip_argv = ["%s/bin/python" % settings["venv"], "-m", "pip", "install", "--no-input", "--disable-pip-version-check"]
    if settings.get("wheelhouse"):
        pip_argv += ["--no-index", "--find-links", settings["wheelhouse_dest"]]
    pip_argv.append("devpi-server==%s" % settings["devpi_version"])
    return {
        "indexes": indexes(settings),
        "argv": server_argv(settings),
        "pip_argv": pip_argv,
        "devpi_url": "http://127.0.0.1:%s" % str(settings["devpi_port"]).strip(),
        "probe_url": "%s://%s:%s/+api" % ("https" if settings.get("tls") else "http",
                                          wheel_index.local_host(settings.get("listen_host")),
                                          str(settings["port"]).strip()),
    }


def server_argv(settings):
    """devpi-server's command line: its venv's devpi-server on the loopback at devpi_port, with its serverdir,
    its secret file, root alone allowed to change users and indexes, the fleet's URL as its outside URL, and
    --offline-mode where offline is set (air-gapped sites: only what the cache holds)."""
    argv = ["%s/bin/devpi-server" % settings["venv"], "--serverdir", settings["serverdir"],
            "--host", "127.0.0.1", "--port", str(settings["devpi_port"]).strip(),
            "--secretfile", "%s/devpi-secret" % settings["config_dir"], "--restrict-modify", "root"]
    if settings.get("outside_url"):
        argv += ["--outside-url", settings["outside_url"]]
    if settings.get("offline"):
        argv.append("--offline-mode")
    return argv
