# -*- coding: utf-8 -*-
# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ask a Hugging Face hub (or a mirror of it) what a model repository holds at a revision.

Pure functions around one injected ``fetch(url, headers, method="GET")``
callable returning ``(status, headers, body)``, so that
unit tests drive them with recorded answers. The hub API routes used are the
ones the ``hf`` client itself uses:

- ``GET /api/models/{repo}/revision/{revision}``: resolves a branch, tag or
  commit to the commit SHA (``sha``) and says whether the repo is gated.
- ``GET /api/models/{repo}/tree/{commit}/?recursive=true&expand=false``: every
  file with its size, git blob id and, for files stored with Git LFS, the
  sha256 of the content (``lfs.oid``). Long listings are paginated with a
  ``Link: <...>; rel="next"`` header.
- ``GET /api/models/{repo}``: only to tell a missing revision from a missing
  repository when the first answer is ambiguous.
- ``HEAD /{repo}/resolve/{commit}/{file}``: only for gated repositories, to
  check that the token can download before any host starts.

Error messages name the repository, the revision and the endpoint (without
credentials), never the token: every message goes through
``secrets.mask_credentials``.

The token (and the user:password of the endpoint URL) is sent only to the
endpoint's own origin (scheme, host and port). ``fetch`` follows no
redirect itself; ``request`` here does: a redirect within the origin keeps
the token, a redirect to another origin is followed without it, and a
``Link: rel="next"`` page on another origin is refused. Identifiers are
checked with full-match ASCII patterns after stripping, and the stripped
value is the one used.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re
from fnmatch import fnmatchcase

try:
    from urllib.parse import quote, urljoin, urlsplit, urlunsplit
except ImportError:  # pragma: no cover - Python 2 is not supported by the collection
    from urllib import quote  # type: ignore
    from urlparse import urljoin, urlsplit, urlunsplit  # type: ignore

from ansible_collections.gpufleet.llm_stack.plugins.module_utils.hf_local import (
    PathError, RESERVED_PATHS, check_relpath, is_commit)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import mask_credentials

DEFAULT_ENDPOINT = "https://huggingface.co"
USER_AGENT = "gpufleet.llm_stack (hf_model_info)"

# Each part: 1 to 96 of letters, digits, '_', '.', '-', starting with a letter
# or digit and ending with a letter, digit or '_' (the hub's own rule; '--',
# '..' and a '.git' ending are refused separately). Used with fullmatch.
_REPO_PART = r"[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?"
REPO_ID_RE = re.compile(r"%s/%s" % (_REPO_PART, _REPO_PART), re.ASCII)
# A branch, tag or commit: git ref name characters the hub uses, ASCII only.
REVISION_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+/-]{0,254}", re.ASCII)
SHA256_RE = re.compile(r"[0-9a-f]{64}", re.ASCII)
BLOB_ID_RE = re.compile(r"[0-9a-f]{40}", re.ASCII)
LINK_NEXT_RE = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?')
MAX_REDIRECTS = 10
REDIRECT_STATUSES = (301, 302, 303, 307, 308)
DEFAULT_PORTS = {"http": 80, "https": 443}

# Error kinds returned in HubError.kind (and by the modules as `error`).
REPO_NOT_FOUND = "repo_not_found"
REVISION_NOT_FOUND = "revision_not_found"
GATED = "gated"
FORBIDDEN = "forbidden"
RATE_LIMITED = "rate_limited"
UNAVAILABLE = "unavailable"
BAD_ANSWER = "bad_answer"
BAD_INPUT = "bad_input"


class HubError(Exception):
    """A hub answer that stops the fetch; ``message`` is safe to print."""

    def __init__(self, kind, message, status=None):
        message = mask_credentials(message)
        super(HubError, self).__init__(message)
        self.kind = kind
        self.message = message
        self.status = status


def _shown(value):
    """A value as it may appear in a message: masked, and shortened when long."""
    text = mask_credentials(value if isinstance(value, str) else repr(value))
    return text if len(text) <= 200 else text[:197] + "..."


def validate_repo_id(repo_id):
    """Return None when repo_id (stripped) is ORG/NAME as the hub accepts it, else the reason."""
    value = repo_id.strip() if isinstance(repo_id, str) else repo_id
    if not isinstance(value, str) or not REPO_ID_RE.fullmatch(value):
        return (
            "'%s' is not a model repository id of the form ORG/NAME (ASCII letters, digits, '.', '_', '-', "
            "each part 1 to 96 characters starting with a letter or digit), e.g. Qwen/Qwen3.5-9B" % _shown(repo_id))
    if "--" in value or ".." in value:
        return "'%s' is not a valid repository id ('--' and '..' are not allowed)" % _shown(value)
    if value.endswith(".git"):
        return "'%s' is not a valid repository id (it must not end in '.git')" % _shown(value)
    return None


def normalize_repo_id(repo_id, option="repo_id"):
    """The stripped repo id; HubError(BAD_INPUT) naming the option when it is not one."""
    problem = validate_repo_id(repo_id)
    if problem:
        raise HubError(BAD_INPUT, "%s: %s. Give the model's id as the hub shows it." % (option, problem))
    return repo_id.strip()


def validate_revision(revision):
    """Return None when revision (stripped) is a usable branch, tag or commit name, else the reason."""
    value = revision.strip() if isinstance(revision, str) else revision
    if not isinstance(value, str) or not value:
        return "the revision is empty: give a commit SHA, branch or tag"
    if not REVISION_RE.fullmatch(value):
        return ("'%s' is not a branch, tag or commit SHA (ASCII letters, digits and '_.+/-', at most 255, "
                "not starting with '-', '.' or '/')" % _shown(revision))
    if ".." in value or "//" in value or "/." in value or value.endswith("/") or value.endswith(".") \
            or value.endswith(".lock"):
        return "'%s' is not a valid git revision name ('..', '//', '/.', a final '/', '.' or '.lock')" % _shown(value)
    return None


def normalize_revision(revision, option="revision"):
    """The stripped revision; HubError(BAD_INPUT) naming the option when it is not one."""
    problem = validate_revision(revision)
    if problem:
        raise HubError(BAD_INPUT, "%s: %s." % (option, problem))
    return revision.strip()


def normalize_commit(commit, option="commit"):
    """The stripped 40-hex commit SHA; HubError(BAD_INPUT) naming the option otherwise."""
    value = commit.strip() if isinstance(commit, str) else commit
    if not is_commit(value):
        raise HubError(BAD_INPUT, "%s: '%s' is not a commit SHA (exactly 40 lower-case hex digits); "
                                  "pass the commit that hf_model_info returned." % (option, _shown(commit)))
    return value


def validate_endpoint(endpoint):
    """Return None when endpoint (stripped) is an http(s) URL with a host, else the reason."""
    if not isinstance(endpoint, str) or not endpoint.strip():
        return "the endpoint is empty: give the hub's or mirror's URL, e.g. https://huggingface.co"
    text = endpoint.strip()
    if any(char.isspace() or ord(char) < 32 or ord(char) == 127 for char in text):
        return "'%s' holds spaces or control characters" % _shown(text)
    try:
        parts = urlsplit(text)
        host = parts.hostname
        parts.port  # pylint: disable=pointless-statement  # raises ValueError for a bad port
    except ValueError as exc:
        return "'%s' is not a valid URL (%s)" % (_shown(text), exc)
    if parts.scheme not in ("http", "https") or not host:
        return "'%s' is not an http:// or https:// URL with a host name" % _shown(text)
    if parts.query or parts.fragment:
        return "'%s' has a query or fragment; give the base URL only" % _shown(text)
    return None


def normalize_endpoint(endpoint, option="endpoint"):
    """The stripped endpoint; HubError(BAD_INPUT) naming the option when it is not an http(s) URL."""
    problem = validate_endpoint(endpoint)
    if problem:
        raise HubError(BAD_INPUT, "%s: %s." % (option, problem))
    return endpoint.strip()


def display_endpoint(endpoint):
    """The endpoint for messages and results: credentials masked, no final '/'."""
    if not isinstance(endpoint, str):
        return "<no endpoint>"
    return mask_credentials(endpoint.strip()).rstrip("/")


def origin(url):
    """(scheme, host, port) of an http(s) URL, or None when it has none."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        port = parts.port
    except (ValueError, TypeError, AttributeError):
        return None
    scheme = (parts.scheme or "").lower()
    if scheme not in DEFAULT_PORTS or not host:
        return None
    return scheme, host.lower(), port or DEFAULT_PORTS[scheme]


def same_origin(url, other):
    """True when both URLs have the same scheme, host and port (user information aside)."""
    mine = origin(url)
    return mine is not None and mine == origin(other)


def _home_url(url, endpoint):
    """url (of the endpoint's origin) carrying the endpoint's user information, if it has some."""
    userinfo = urlsplit(endpoint).netloc.rpartition("@")
    parts = urlsplit(url)
    if not userinfo[1] or "@" in parts.netloc:
        return url
    return urlunsplit((parts.scheme, userinfo[0] + "@" + parts.netloc, parts.path, parts.query, parts.fragment))


def request_headers(token=None):
    headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
    if token:
        headers["Authorization"] = "Bearer %s" % token
    return headers


def request(fetch, endpoint, url, token=None, method="GET", follow=True):
    """fetch(url) with the token only on the endpoint's origin, following redirects here.

    A redirect within the origin keeps the token (and the endpoint's user
    information); one to another origin is followed without them. At most
    MAX_REDIRECTS; a redirect to something other than http(s) is refused.
    With follow=False, a redirect is returned as it came.
    """
    for _hop in range(MAX_REDIRECTS + 1):
        home = same_origin(url, endpoint)
        status, headers, body = fetch(url, request_headers(token if home else None), method)
        if not follow or status not in REDIRECT_STATUSES:
            return status, headers, body
        location = header(headers, "Location")
        if not location:
            return status, headers, body
        target = urljoin(url, location.strip())
        if origin(target) is None:
            raise HubError(BAD_ANSWER, "The server redirected %s to '%s', which is not an http(s) URL." % (
                _shown(url), _shown(target)))
        url = _home_url(target, endpoint) if same_origin(target, endpoint) else target
        if status == 303 and method != "HEAD":
            method = "GET"
    raise HubError(BAD_ANSWER, "The server redirected more than %d times, starting at %s." % (
        MAX_REDIRECTS, display_endpoint(endpoint)))


def revision_url(endpoint, repo_id, revision):
    return "%s/api/models/%s/revision/%s" % (endpoint.rstrip("/"), repo_id, quote(revision, safe=""))


def repo_url(endpoint, repo_id):
    return "%s/api/models/%s" % (endpoint.rstrip("/"), repo_id)


def tree_url(endpoint, repo_id, commit):
    return "%s/api/models/%s/tree/%s/?recursive=true&expand=false" % (
        endpoint.rstrip("/"), repo_id, quote(commit, safe=""))


def resolve_url(endpoint, repo_id, commit, path):
    return "%s/%s/resolve/%s/%s" % (endpoint.rstrip("/"), repo_id, commit, quote(path))


def header(headers, name):
    """Case-insensitive header lookup on a dict or a message object."""
    if headers is None:
        return None
    if hasattr(headers, "get") and not isinstance(headers, dict):
        value = headers.get(name)
        if value is not None:
            return value
    for key, value in dict(headers).items():
        if key.lower() == name.lower():
            return value
    return None


def next_link(headers):
    """URL of the next page from a Link header, or None."""
    link = header(headers, "Link")
    if not link:
        return None
    for part in link.split(","):
        match = LINK_NEXT_RE.search(part)
        if match:
            return match.group(1)
    return None


def _error_code(headers, body):
    code = header(headers, "X-Error-Code")
    if code:
        return code
    try:
        data = json.loads(body.decode("utf-8") if isinstance(body, bytes) else body or "")
    except (ValueError, UnicodeDecodeError, AttributeError):
        return None
    if isinstance(data, dict) and isinstance(data.get("error"), str):
        text = data["error"].lower()
        if "repository not found" in text:
            return "RepoNotFound"
        if "revision" in text and ("not found" in text or "invalid" in text):
            return "RevisionNotFound"
    return None


def describe(repo_id, revision, endpoint):
    return "'%s' at revision '%s' on %s" % (repo_id, revision, display_endpoint(endpoint))


def unavailable_error(repo_id, revision, endpoint, status, reason):
    what = describe(repo_id, revision, endpoint)
    if status == 429:
        return HubError(
            RATE_LIMITED,
            "The hub rate-limited the request for %s (HTTP 429). Wait and run again, "
            "or fetch through a fleet mirror so that hosts do not each query the hub." % what,
            status,
        )
    if status is None:
        return HubError(UNAVAILABLE, "Could not reach the hub for %s: %s" % (what, reason))
    return HubError(
        UNAVAILABLE,
        "The hub answered HTTP %s for %s (%s); it or its upstream is not answering. "
        "Nothing was changed; run again when it answers." % (status, what, reason or "no detail"),
        status,
    )


def classify_revision_answer(fetch, endpoint, repo_id, revision, token, status, headers, body):
    """Turn a failed revision lookup into a HubError naming what is missing."""
    code = _error_code(headers, body)
    what = describe(repo_id, revision, endpoint)
    token_note = "a token was given" if token else "no token was given"
    if status == 404 and code == "RevisionNotFound":
        return HubError(
            REVISION_NOT_FOUND,
            "Revision '%s' of '%s' does not exist on %s (the repository does). "
            "Use a commit SHA, branch or tag that exists there." % (revision, repo_id, display_endpoint(endpoint)),
            status,
        )
    if status in (401, 403, 404) and code in (None, "RepoNotFound"):
        # The hub answers a missing repo, a private one and (on some mirrors)
        # a missing revision the same way. Ask for the repo itself to tell.
        repo_status = None
        try:
            repo_status, _headers, _body = request(fetch, endpoint, repo_url(endpoint, repo_id), token)
        except Exception:  # pylint: disable=broad-except
            repo_status = None
        if repo_status == 200:
            return HubError(
                REVISION_NOT_FOUND,
                "Revision '%s' of '%s' was not found on %s (the repository exists there; the server answered "
                "HTTP %s). Use a commit SHA, branch or tag that exists there." % (
                    revision, repo_id, display_endpoint(endpoint), status),
                status,
            )
        return HubError(
            REPO_NOT_FOUND,
            "%s was not found (HTTP %s, RepositoryNotFound; %s). Either the repository does not exist, "
            "or it is private or gated and the request has no token with access to it, or the server is a "
            "mirror that answers a missing revision the same way (olah in offline mode does). "
            "Check the repository id and the revision." % (what[0].upper() + what[1:], status, token_note),
            status,
        )
    if status in (401, 403) and code == "GatedRepo":
        return gated_error(repo_id, revision, endpoint, token, status)
    if status == 403:
        return HubError(FORBIDDEN, "The hub refused access to %s (HTTP 403, %s)." % (what, token_note), status)
    return unavailable_error(repo_id, revision, endpoint, status, code)


def gated_error(repo_id, revision, endpoint, token, status=None):
    if token:
        detail = ("the token given has no access to it: accept the model's terms on its hub page "
                  "with the token's account, or use a token of an account that did")
    else:
        detail = "no token was given: provide a token of an account that accepted the model's terms"
    return HubError(
        GATED,
        "'%s' is a gated repository: downloading its files at revision '%s' from %s needs a token; %s." % (
            repo_id, revision, display_endpoint(endpoint), detail),
        status,
    )


def parse_tree(entries):
    """Files of a tree listing as dicts {path, size, blob_id, sha256}."""
    if not isinstance(entries, list):
        raise HubError(BAD_ANSWER, "The tree listing is not a JSON list.")
    files = []
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("type") != "file":
            continue
        path = entry.get("path")
        if not isinstance(path, str) or not path:
            raise HubError(BAD_ANSWER, "A tree entry has no path: %s" % _shown(entry))
        try:
            check_relpath(path)
        except PathError as exc:
            raise HubError(BAD_ANSWER, "The tree listing holds a path that is not a plain relative path: %s" % exc)
        lfs = entry.get("lfs") or {}
        sha256 = lfs.get("oid") if isinstance(lfs, dict) else None
        if isinstance(sha256, str) and sha256.startswith("sha256:"):
            sha256 = sha256[len("sha256:"):]
        if not (isinstance(sha256, str) and SHA256_RE.fullmatch(sha256)):
            sha256 = None
        size = lfs.get("size") if sha256 and isinstance(lfs, dict) and "size" in lfs else entry.get("size")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise HubError(BAD_ANSWER, "The tree entry for %s has no valid size." % _shown(path))
        files.append({
            "path": path,
            "size": size,
            "blob_id": entry.get("oid") if isinstance(entry.get("oid"), str) and BLOB_ID_RE.fullmatch(entry["oid"]) else None,
            "sha256": sha256,
        })
    files.sort(key=lambda item: item["path"])
    return files


def _normalize_pattern(pattern):
    pattern = pattern.replace("\\", "/")
    if pattern.endswith("/"):
        pattern += "*"
    return pattern


def filter_files(files, include=None, exclude=None):
    """Apply include/exclude globs the way the hf client does (fnmatchcase; 'dir/' means 'dir/*')."""
    allow = [_normalize_pattern(p) for p in include] if include else None
    deny = [_normalize_pattern(p) for p in exclude] if exclude else None
    selected = []
    for item in files:
        path = item["path"].replace("\\", "/")
        if allow is not None and not any(fnmatchcase(path, p) for p in allow):
            continue
        if deny is not None and any(fnmatchcase(path, p) for p in deny):
            continue
        selected.append(item)
    return selected


def _json(body, what):
    try:
        return json.loads(body.decode("utf-8") if isinstance(body, bytes) else body)
    except (ValueError, UnicodeDecodeError, AttributeError, TypeError, RecursionError):
        raise HubError(BAD_ANSWER, "The answer for %s is not JSON; is the endpoint a Hugging Face hub or mirror?" % what)


def next_page_url(headers, url, endpoint, what):
    """The next page's URL from a Link header (relative ones resolved against url), or None.

    A next page on another origin than the endpoint's is refused: the
    listing, and the token, stay with the endpoint.
    """
    link = next_link(headers)
    if not link:
        return None
    target = urljoin(url, link.strip())
    if not same_origin(target, endpoint):
        raise HubError(
            BAD_ANSWER,
            "The answer for %s points its next page to another origin (%s) than the endpoint's (%s). "
            "The file list is only read from the endpoint, and the token only sent there: use an endpoint "
            "(or a mirror configured with its own public URL) whose Link headers point to itself." % (
                what, _shown(_origin_text(target)), display_endpoint(_origin_text(endpoint))))
    return _home_url(target, endpoint)


def _origin_text(url):
    found = origin(url)
    if found is None:
        return url if isinstance(url, str) else repr(url)
    scheme, host, port = found
    if ":" in host:
        host = "[%s]" % host
    return "%s://%s:%d" % (scheme, host, port)


def list_tree(fetch, endpoint, repo_id, revision, commit, token=None, max_pages=1000):
    """Every file of the repo at commit, following pagination on the endpoint's origin."""
    url = tree_url(endpoint, repo_id, commit)
    what = "the file list of %s" % describe(repo_id, revision, endpoint)
    entries = []
    for _page in range(max_pages):
        status, headers, body = request(fetch, endpoint, url, token)
        if status != 200:
            raise classify_revision_answer(fetch, endpoint, repo_id, revision, token, status, headers, body)
        page = _json(body, what)
        if not isinstance(page, list):
            raise HubError(BAD_ANSWER, "The file list of %s is not a JSON list." % describe(repo_id, revision, endpoint))
        entries.extend(page)
        url = next_page_url(headers, url, endpoint, what)
        if not url:
            return parse_tree(entries)
    raise HubError(BAD_ANSWER, "The file list of %s has more than %d pages." % (
        describe(repo_id, revision, endpoint), max_pages))


def model_info(fetch, endpoint, repo_id, revision, token=None, include=None, exclude=None, check_access=True):
    """Resolve revision to a commit and list the files selected by include/exclude.

    repo_id, revision and endpoint are stripped and checked first (HubError
    BAD_INPUT naming the option). Returns a dict: repo_id, revision, commit,
    gated, files (selected), total_size, file_count, repo_file_count,
    repo_total_size, skipped (repository files left out because their name is
    reserved, RESERVED_PATHS), endpoint (credentials masked).
    Raises HubError with a message that names repo and revision, never the token.
    """
    endpoint = normalize_endpoint(endpoint)
    repo_id = normalize_repo_id(repo_id)
    revision = normalize_revision(revision)

    try:
        return _model_info(fetch, endpoint, repo_id, revision, token, include, exclude, check_access)
    except HubError:
        raise
    except Exception as exc:  # pylint: disable=broad-except
        # Connection refused, DNS, TLS, timeouts: the text is masked by HubError.
        raise unavailable_error(repo_id, revision, endpoint, None, str(exc))


def _model_info(fetch, endpoint, repo_id, revision, token, include, exclude, check_access):
    status, headers, body = request(fetch, endpoint, revision_url(endpoint, repo_id, revision), token)
    if status != 200:
        raise classify_revision_answer(fetch, endpoint, repo_id, revision, token, status, headers, body)
    info = _json(body, describe(repo_id, revision, endpoint))
    commit = info.get("sha") if isinstance(info, dict) else None
    if not is_commit(commit):
        raise HubError(BAD_ANSWER, "The hub gave no commit SHA for %s." % describe(repo_id, revision, endpoint))

    listed = list_tree(fetch, endpoint, repo_id, revision, commit, token)
    skipped = [item["path"] for item in listed if item["path"] in RESERVED_PATHS]
    all_files = [item for item in listed if item["path"] not in RESERVED_PATHS]
    selected = filter_files(all_files, include, exclude)
    if not selected:
        raise HubError(
            BAD_INPUT,
            "No file of %s matches the include/exclude patterns (include=%s, exclude=%s); the repository has %d files." % (
                describe(repo_id, revision, endpoint), include or [], exclude or [], len(all_files)),
        )

    gated = info.get("gated", False)
    if gated and check_access:
        probe = selected[0]["path"]
        # Not followed: the file redirect goes to a CDN, and reaching it is the answer.
        status, headers, body = request(fetch, endpoint, resolve_url(endpoint, repo_id, commit, probe), token,
                                        method="HEAD", follow=False)
        if status in (401, 403):
            raise gated_error(repo_id, revision, endpoint, token, status)

    return {
        "repo_id": repo_id,
        "revision": revision,
        "commit": commit,
        "gated": bool(gated),
        "endpoint": display_endpoint(endpoint),
        "files": selected,
        "file_count": len(selected),
        "total_size": sum(item["size"] for item in selected),
        "repo_file_count": len(all_files),
        "repo_total_size": sum(item["size"] for item in all_files),
        "skipped": skipped,
    }
