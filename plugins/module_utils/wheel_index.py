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
* ``simple_url``, ``parse_links``, ``key_wheels``, ``lookup``: read the index's
  simple page of the project (PEP 503 HTML; pypiserver adds ``#sha256=`` to
  each link) and find the key's wheel with its checksum.
* ``multipart``: the body of the upload (the file as raw bytes).
* ``upload_verdict``: what an upload's answer means (pypiserver answers 409 for
  a file it already has).

Nothing here talks to the network itself: ``lookup`` is given the function
that fetches a URL, so the modules use Ansible's own HTTP code and the tests
use a dict.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import re

try:
    from html.parser import HTMLParser
    from urllib.parse import urljoin, urlsplit
except ImportError:  # pragma: no cover - Python 2 is not supported by the collection
    HTMLParser = object
    urljoin = urlsplit = None

_HEX12 = re.compile(r"^[0-9a-f]{12}$")
_WHEEL = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-(?P<build>\d[^-]*))?-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl$")


class WheelIndexError(ValueError):
    """Input that names no index or no key; the message says which variable and the fix."""


def normalize(name):
    """PEP 503 project name: runs of -, _ and . become one -, lower case."""
    return re.sub(r"[-_.]+", "-", name or "").lower()


def build_tag(entry):
    """The wheel build tag of a cache entry (``<label>-<12 hex>``): '0' and the hash (a build tag starts with a digit)."""
    digest = (entry or "").rsplit("-", 1)[-1]
    if not _HEX12.match(digest):
        raise WheelIndexError("build_tag: %r is not a wheel_build cache entry (<label>-<12 hex digits>)" % (entry,))
    return "0" + digest


def parse_wheel(filename):
    """The parts of a wheel's file name (name, version, build, py, abi, plat), or None when it is no wheel name."""
    match = _WHEEL.match(filename or "")
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
        return ("%s=%r is not the base URL of the fleet's package index. Fix: set it to http(s)://host:port of the "
                "cache host's index (no user or password in it; they go in llm_stack_wheel_index_username and "
                "llm_stack_wheel_index_password), or to \"\" for the controller cache." % (var, url))
    return ""


def simple_url(index_url, name):
    """The project's simple page on the index (index_url is the server's base URL)."""
    problem = check_index_url(index_url)
    if problem:
        raise WheelIndexError(problem)
    return "%s/simple/%s/" % (index_url.rstrip("/"), normalize(name))


class _Links(HTMLParser):
    def __init__(self):
        HTMLParser.__init__(self)
        self.links = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.links.append(href)


def parse_links(html, page_url):
    """The files of a simple page: [{filename, url (absolute, no fragment), sha256 ('' when the link has none)}]."""
    parser = _Links()
    parser.feed(html or "")
    files = []
    for href in parser.links:
        url, _sep, fragment = href.partition("#")
        url = urljoin(page_url, url)
        filename = urlsplit(url).path.rsplit("/", 1)[-1]
        sha = ""
        if fragment.startswith("sha256="):
            sha = fragment[len("sha256="):].lower()
        files.append({"filename": filename, "url": url, "sha256": sha})
    return files


def key_wheels(files, name, entry):
    """The files of the list that are name's wheels of the key of entry (by build tag), sorted by file name."""
    tag = build_tag(entry)
    wanted = normalize(name)
    found = []
    for item in files or []:
        parts = parse_wheel(item.get("filename"))
        if parts and parts["build"] == tag and normalize(parts["name"]) == wanted:
            found.append(item)
    return sorted(found, key=lambda item: item["filename"])


def lookup(index_url, name, entry, get):
    """Whether the index holds the key's wheel.

    get(url) returns (status, body text). Returns {found, wheel (or None),
    url (the page read), problem ('' when the answer is usable)}. A 404 is a
    project the index does not have yet: not found, no problem.
    """
    url = simple_url(index_url, name)
    status, body = get(url)
    result = {"found": False, "wheel": None, "url": url, "problem": ""}
    if status == 404:
        return result
    if status != 200:
        result["problem"] = ("The package index answered %s for %s. Fix: check that the index on the cache host runs "
                             "(fleet_cache role, its health check) and that llm_stack_wheel_index_url points at it."
                             % (status, url))
        return result
    wheels = key_wheels(parse_links(body, url), name, entry)
    if len(wheels) > 1:
        result["problem"] = ("The package index has %d wheels of %s for key %s (%s); one build key has one wheel. Fix: "
                             "remove the extra ones from the index's packages directory on the cache host."
                             % (len(wheels), name, entry, ", ".join(item["filename"] for item in wheels)))
        return result
    if wheels:
        if not re.match(r"^[0-9a-f]{64}$", wheels[0]["sha256"]):
            result["problem"] = ("The package index gives no sha256 for %s. Fix: run the index with sha256 hashes on its "
                                 "links (pypiserver --hash-algo sha256, its default)." % wheels[0]["filename"])
            return result
        result.update(found=True, wheel=wheels[0])
    return result


def upload_verdict(status, filename, present_sha256=None, local_sha256=None):
    """What an upload's HTTP status means: {ok, changed, msg}.

    200/201: uploaded. 409: the index already has a file of that name; it is
    fine when it is the same file (present_sha256 == local_sha256), a problem
    otherwise. 401/403: the credentials.
    """
    if status in (200, 201):
        return {"ok": True, "changed": True, "msg": "uploaded %s" % filename}
    if status == 409:
        if present_sha256 and present_sha256 == local_sha256:
            return {"ok": True, "changed": False, "msg": "the index already has %s (same sha256)" % filename}
        return {"ok": False, "changed": False,
                "msg": ("The package index already has another file named %s (sha256 %s, this build %s). Fix: remove it "
                        "from the index's packages directory on the cache host and run again."
                        % (filename, present_sha256 or "unknown", local_sha256))}
    if status in (401, 403):
        return {"ok": False, "changed": False,
                "msg": ("The package index refused the upload of %s (HTTP %s). Fix: set llm_stack_wheel_index_username "
                        "and llm_stack_wheel_index_password to the index's upload account (fleet_cache_index_username "
                        "and fleet_cache_index_password on the cache host)." % (filename, status))}
    return {"ok": False, "changed": False, "msg": "The package index answered HTTP %s to the upload of %s." % (status, filename)}


def config_problems(index_url, cache_host, hosts, username, password, cache_host_vars=None):
    """What is wrong with the index settings ([] when nothing, or when no index is used: index_url empty).

    hosts: the inventory's host names. The cache host must be one of them
    (its locks are taken with delegate_to), unless cache_host_vars gives the
    connection variables to add it to the job's inventory (an AWX job slice
    holds only its own hosts).
    password None: not judged (preflight reads no secret; the builder and the cache host check it).
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
    if not username or (password is not None and not password):
        problems.append("llm_stack_wheel_index_username and llm_stack_wheel_index_password must both be set (the index's "
                        "upload account, fleet_cache_index_username and fleet_cache_index_password of the cache host). "
                        "Fix: set them, the password in a vault.")
    return problems


def server_problems(settings):
    """What is wrong with the cache host's settings of the index (role fleet_cache), [] when nothing.

    settings: port, username, password, data_dir, wheelhouse (a controller
    directory, or empty) and service_mgr (the ansible_facts value; None when
    facts were not gathered, taken as systemd). Each message names the
    variable and the fix; the password is never part of one.
    """
    if not isinstance(settings, dict):
        raise WheelIndexError("server_problems needs a dict of the fleet_cache settings")
    problems = []
    port = settings.get("port")
    text = "" if isinstance(port, bool) or port is None else str(port).strip()
    if not (re.match(r"^[0-9]{1,5}$", text) and 0 < int(text) < 65536):
        problems.append("fleet_cache_index_port is %r: set it to a TCP port number (1 to 65535)." % (port,))
    if not settings.get("username") or not settings.get("password"):
        problems.append("The index's upload account is not set. Fix: set llm_stack_wheel_index_username and "
                        "llm_stack_wheel_index_password (the password in a vault) for the cache host and the fleet.")
    for key, variable, empty_ok in (("data_dir", "fleet_cache_data_dir (llm_stack_cache_data_dir)", False),
                                    ("wheelhouse", "fleet_cache_wheelhouse", True)):
        value = settings.get(key)
        value = "" if value is None else str(value)
        if (value or not empty_ok) and not (value.startswith("/") and not re.search(r"[\s\x00-\x1f]", value)):
            problems.append("%s is %r: set it to an absolute %s%s." % (
                variable, value[:120], "controller directory" if empty_ok else "directory on the cache host",
                ", or leave it empty" if empty_ok else ""))
    service_mgr = settings.get("service_mgr")
    if service_mgr not in (None, "", "systemd"):
        problems.append("fleet_cache runs the index under systemd; PID 1 of this host is %s. Fix: a cache host that "
                        "runs systemd." % service_mgr)
    return problems


def multipart(fields, filename, content, boundary=None):
    """(content type, body) of a multipart/form-data upload: the text fields, then the file as field 'content'.

    The file goes in as raw bytes (binary, no transfer encoding): index
    servers read the part as it is, so a base64-encoded part would be stored
    as base64.
    """
    boundary = boundary or "----gpufleet-" + hashlib.sha256(content).hexdigest()[:32]
    lines = []
    for name in sorted(fields):
        lines.append(b"--" + boundary.encode("ascii"))
        lines.append(('Content-Disposition: form-data; name="%s"' % name).encode("utf-8"))
        lines.append(b"")
        lines.append(str(fields[name]).encode("utf-8"))
    lines.append(b"--" + boundary.encode("ascii"))
    lines.append(('Content-Disposition: form-data; name="content"; filename="%s"' % filename).encode("utf-8"))
    lines.append(b"Content-Type: application/octet-stream")
    lines.append(b"")
    lines.append(content)
    lines.append(b"--" + boundary.encode("ascii") + b"--")
    lines.append(b"")
    return "multipart/form-data; boundary=%s" % boundary, b"\r\n".join(lines)
