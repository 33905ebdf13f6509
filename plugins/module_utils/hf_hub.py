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
credentials), never the token.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re
from fnmatch import fnmatchcase

try:
    from urllib.parse import quote, urlsplit, urlunsplit
except ImportError:  # pragma: no cover - Python 2 is not supported by the collection
    from urllib import quote  # type: ignore
    from urlparse import urlsplit, urlunsplit  # type: ignore

DEFAULT_ENDPOINT = "https://huggingface.co"
USER_AGENT = "gpufleet.llm_stack (hf_model_info)"

REPO_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}$")
COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
LINK_NEXT_RE = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?')

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
        super(HubError, self).__init__(message)
        self.kind = kind
        self.message = message
        self.status = status


def validate_repo_id(repo_id):
    """Return None when repo_id looks like ORG/NAME, else the reason."""
    if not isinstance(repo_id, str) or not REPO_ID_RE.match(repo_id):
        return (
            "'%s' is not a model repository id of the form ORG/NAME "
            "(letters, digits, '.', '_', '-'), e.g. Qwen/Qwen3.5-9B" % (repo_id,)
        )
    if "--" in repo_id or ".." in repo_id:
        return "'%s' is not a valid repository id ('--' and '..' are not allowed)" % repo_id
    return None


def validate_endpoint(endpoint):
    """Return None when endpoint is an http(s) URL, else the reason."""
    parts = urlsplit(endpoint or "")
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return "'%s' is not an http:// or https:// URL" % display_endpoint(endpoint)
    return None


def display_endpoint(endpoint):
    """The endpoint without any user:password@ part, for messages."""
    try:
        parts = urlsplit(endpoint or "")
    except ValueError:
        return "<invalid URL>"
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, netloc, parts.path, "", "")).rstrip("/")


def request_headers(token=None):
    headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
    if token:
        headers["Authorization"] = "Bearer %s" % token
    return headers


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
            repo_status, _headers, _body = fetch(repo_url(endpoint, repo_id), request_headers(token))
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
            raise HubError(BAD_ANSWER, "A tree entry has no path: %r" % (entry,))
        lfs = entry.get("lfs") or {}
        sha256 = lfs.get("oid") if isinstance(lfs, dict) else None
        if isinstance(sha256, str) and sha256.startswith("sha256:"):
            sha256 = sha256[len("sha256:"):]
        if not (isinstance(sha256, str) and SHA256_RE.match(sha256)):
            sha256 = None
        size = lfs.get("size") if sha256 and isinstance(lfs, dict) and "size" in lfs else entry.get("size")
        if not isinstance(size, int) or size < 0:
            raise HubError(BAD_ANSWER, "The tree entry for %s has no valid size." % path)
        files.append({
            "path": path,
            "size": size,
            "blob_id": entry.get("oid") if isinstance(entry.get("oid"), str) else None,
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
    except (ValueError, UnicodeDecodeError, AttributeError):
        raise HubError(BAD_ANSWER, "The answer for %s is not JSON; is the endpoint a Hugging Face hub or mirror?" % what)


def list_tree(fetch, endpoint, repo_id, revision, commit, token=None, max_pages=1000):
    """Every file of the repo at commit, following pagination."""
    url = tree_url(endpoint, repo_id, commit)
    entries = []
    for _page in range(max_pages):
        status, headers, body = fetch(url, request_headers(token))
        if status != 200:
            raise classify_revision_answer(fetch, endpoint, repo_id, revision, token, status, headers, body)
        page = _json(body, "the file list of %s" % describe(repo_id, revision, endpoint))
        if not isinstance(page, list):
            raise HubError(BAD_ANSWER, "The file list of %s is not a JSON list." % describe(repo_id, revision, endpoint))
        entries.extend(page)
        url = next_link(headers)
        if not url:
            return parse_tree(entries)
    raise HubError(BAD_ANSWER, "The file list of %s has more than %d pages." % (
        describe(repo_id, revision, endpoint), max_pages))


def model_info(fetch, endpoint, repo_id, revision, token=None, include=None, exclude=None, check_access=True):
    """Resolve revision to a commit and list the files selected by include/exclude.

    Returns a dict: repo_id, revision, commit, gated, files (selected), total_size,
    file_count, repo_file_count, repo_total_size, endpoint (without credentials).
    Raises HubError with a message that names repo and revision, never the token.
    """
    problem = validate_repo_id(repo_id)
    if problem:
        raise HubError(BAD_INPUT, problem)
    problem = validate_endpoint(endpoint)
    if problem:
        raise HubError(BAD_INPUT, "Endpoint %s" % problem)
    if not revision or not isinstance(revision, str):
        raise HubError(BAD_INPUT, "The revision of '%s' is empty: give a commit SHA, branch or tag." % repo_id)

    try:
        return _model_info(fetch, endpoint, repo_id, revision, token, include, exclude, check_access)
    except HubError:
        raise
    except Exception as exc:  # pylint: disable=broad-except
        # Connection refused, DNS, TLS, timeouts: the text names no secret.
        raise unavailable_error(repo_id, revision, endpoint, None, str(exc))


def _model_info(fetch, endpoint, repo_id, revision, token, include, exclude, check_access):
    status, headers, body = fetch(revision_url(endpoint, repo_id, revision), request_headers(token))
    if status != 200:
        raise classify_revision_answer(fetch, endpoint, repo_id, revision, token, status, headers, body)
    info = _json(body, describe(repo_id, revision, endpoint))
    commit = info.get("sha") if isinstance(info, dict) else None
    if not (isinstance(commit, str) and COMMIT_RE.match(commit)):
        raise HubError(BAD_ANSWER, "The hub gave no commit SHA for %s." % describe(repo_id, revision, endpoint))

    all_files = list_tree(fetch, endpoint, repo_id, revision, commit, token)
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
        status, headers, body = fetch(resolve_url(endpoint, repo_id, commit, probe), request_headers(token), "HEAD")
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
    }
