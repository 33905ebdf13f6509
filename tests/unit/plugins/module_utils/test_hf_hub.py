# -*- coding: utf-8 -*-
"""hf_hub: resolving a revision and listing files, driven by recorded hub answers."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import hf_hub

TOKEN = "hf_unitTestTokenThatMustNeverBePrinted"
ENDPOINT = "http://127.0.0.1:28918"
REPO = "Qwen/Qwen3.5-0.8B"
SHA = "b793f2c2f4561216306b1de00763201a1ee10381"

# Answers as the stand-in hub (olah 0.5.4 behind an olah cache) gave them.
REVISION_OK = {"_id": "x", "id": REPO, "sha": SHA, "private": False, "gated": False,
               "siblings": [{"rfilename": "config.json"}]}
TREE_PAGE_1 = [
    {"type": "file", "oid": "9ea1cfaef7e97135090c76550d9ef55b9771f010", "size": 227, "path": ".gitattributes"},
    {"type": "file", "oid": "e8cbf26006f3e1abc172fe59d026d146bf06f1ad", "size": 1848, "path": "config.json"},
    {"type": "file", "oid": "3b37ada67bd61b90249d84f60cf0f6ad2cb5db45", "size": 171328,
     "path": "model-00001-of-00002.safetensors",
     "lfs": {"oid": "6454ec904475c64020cd78e27e40bd5fbc46837e96c1d94eb61e1e981c912643", "size": 171328,
             "pointerSize": 134}},
]
# The real hub also returns directories and xetHash; the second page comes
# through a Link header.
TREE_PAGE_2 = [
    {"type": "directory", "oid": "ab" * 20, "size": 0, "path": "onnx"},
    {"type": "file", "oid": "cd" * 20, "size": 4932054528, "path": "model-00002-of-00002.safetensors",
     "xetHash": "ef" * 32,
     "lfs": {"oid": "a428c9842d0ecfc964016c5570d7ff372d35b7f11e895a4ec36e6b207ff6c403", "size": 4932054528,
             "pointerSize": 135}},
    {"type": "file", "oid": "12" * 20, "size": 2048, "path": "onnx/model.onnx_data"},
]
NEXT = ENDPOINT + "/api/models/%s/tree/%s?recursive=true&cursor=abc" % (REPO, SHA)


class FakeHub(object):
    """fetch() that answers from a table {(method, url): (status, headers, body)} and records calls."""

    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def __call__(self, url, headers, method="GET"):
        self.calls.append((method, url, dict(headers)))
        try:
            status, hdrs, body = self.answers[(method, url)]
        except KeyError:
            raise AssertionError("unexpected request %s %s" % (method, url))
        if isinstance(status, Exception):
            raise status
        return status, hdrs, body if isinstance(body, bytes) else json.dumps(body).encode()


def ok_answers(overrides=None):
    answers = {
        ("GET", hf_hub.revision_url(ENDPOINT, REPO, "main")): (200, {}, REVISION_OK),
        ("GET", hf_hub.tree_url(ENDPOINT, REPO, SHA)): (200, {"Link": '<%s>; rel="next"' % NEXT}, TREE_PAGE_1),
        ("GET", NEXT): (200, {}, TREE_PAGE_2),
    }
    answers.update(overrides or {})
    return answers


def not_found(code, message):
    return {"X-Error-Code": code, "X-Error-Message": message}, {"error": message}


def assert_no_token(hub, message):
    assert TOKEN not in message
    for _method, url, _headers in hub.calls:
        assert TOKEN not in url


def test_resolves_branch_and_lists_all_pages():
    hub = FakeHub(ok_answers())
    info = hf_hub.model_info(hub, ENDPOINT, REPO, "main", token=TOKEN)
    assert info["commit"] == SHA
    assert [f["path"] for f in info["files"]] == [
        ".gitattributes", "config.json", "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors", "onnx/model.onnx_data"]
    big = [f for f in info["files"] if f["path"] == "model-00002-of-00002.safetensors"][0]
    assert big == {"path": "model-00002-of-00002.safetensors", "size": 4932054528, "blob_id": "cd" * 20,
                   "sha256": "a428c9842d0ecfc964016c5570d7ff372d35b7f11e895a4ec36e6b207ff6c403"}
    small = [f for f in info["files"] if f["path"] == "config.json"][0]
    assert small["sha256"] is None and small["blob_id"] == "e8cbf26006f3e1abc172fe59d026d146bf06f1ad"
    assert info["total_size"] == 227 + 1848 + 171328 + 4932054528 + 2048
    assert info["file_count"] == info["repo_file_count"] == 5
    # The token goes in the header of every request, never in a URL.
    assert all(h["Authorization"] == "Bearer " + TOKEN for _m, _u, h in hub.calls)
    assert_no_token(hub, json.dumps(info))


def test_no_token_no_authorization_header():
    hub = FakeHub(ok_answers())
    hf_hub.model_info(hub, ENDPOINT, REPO, "main")
    assert all("Authorization" not in h for _m, _u, h in hub.calls)


def test_include_exclude_like_the_hf_client():
    hub = FakeHub(ok_answers())
    info = hf_hub.model_info(hub, ENDPOINT, REPO, "main", include=["*.safetensors", "*.json", "onnx/"],
                             exclude=["*-00002-*"])
    assert [f["path"] for f in info["files"]] == ["config.json", "model-00001-of-00002.safetensors",
                                                  "onnx/model.onnx_data"]
    assert info["repo_file_count"] == 5


def test_filter_is_case_sensitive_and_star_crosses_directories():
    files = [{"path": p, "size": 1} for p in ["a/b/c.json", "A.JSON", "x.json"]]
    assert [f["path"] for f in hf_hub.filter_files(files, include=["*.json"])] == ["a/b/c.json", "x.json"]
    assert [f["path"] for f in hf_hub.filter_files(files, exclude=["a\\"])] == ["A.JSON", "x.json"]


def test_no_file_selected_is_bad_input():
    hub = FakeHub(ok_answers())
    with pytest.raises(hf_hub.HubError) as err:
        hf_hub.model_info(hub, ENDPOINT, REPO, "main", include=["*.gguf"])
    assert err.value.kind == hf_hub.BAD_INPUT
    assert "*.gguf" in err.value.message and "5 files" in err.value.message


def test_revision_not_found_names_repo_and_revision():
    headers, body = not_found("RevisionNotFound", "Invalid rev id: v9")
    hub = FakeHub({("GET", hf_hub.revision_url(ENDPOINT, REPO, "v9")): (404, headers, body)})
    with pytest.raises(hf_hub.HubError) as err:
        hf_hub.model_info(hub, ENDPOINT, REPO, "v9", token=TOKEN)
    assert err.value.kind == hf_hub.REVISION_NOT_FOUND
    assert err.value.message.startswith("Revision 'v9' of 'Qwen/Qwen3.5-0.8B' does not exist on http://127.0.0.1:28918")
    assert_no_token(hub, err.value.message)


def test_ambiguous_not_found_on_existing_repo_is_a_missing_revision():
    # olah in offline mode answers a missing revision with RepoNotFound.
    headers, body = not_found("RepoNotFound", "Repository not found")
    hub = FakeHub({
        ("GET", hf_hub.revision_url(ENDPOINT, REPO, "nope")): (401, headers, body),
        ("GET", hf_hub.repo_url(ENDPOINT, REPO)): (200, {}, REVISION_OK),
    })
    with pytest.raises(hf_hub.HubError) as err:
        hf_hub.model_info(hub, ENDPOINT, REPO, "nope")
    assert err.value.kind == hf_hub.REVISION_NOT_FOUND
    assert "Revision 'nope' of 'Qwen/Qwen3.5-0.8B' was not found" in err.value.message
    assert "the repository exists there" in err.value.message


def test_missing_repo_says_what_it_can_be_without_the_token():
    headers, body = not_found("RepoNotFound", "Repository not found")
    hub = FakeHub({
        ("GET", hf_hub.revision_url(ENDPOINT, "Qwen/Qwen3.5-2B", "main")): (401, headers, body),
        ("GET", hf_hub.repo_url(ENDPOINT, "Qwen/Qwen3.5-2B")): (401, headers, body),
    })
    with pytest.raises(hf_hub.HubError) as err:
        hf_hub.model_info(hub, ENDPOINT, "Qwen/Qwen3.5-2B", "main", token=TOKEN)
    message = err.value.message
    assert err.value.kind == hf_hub.REPO_NOT_FOUND and err.value.status == 401
    assert message.startswith("'Qwen/Qwen3.5-2B' at revision 'main' on http://127.0.0.1:28918 was not found")
    assert "a token was given" in message and "private or gated" in message and "olah in offline mode" in message
    assert_no_token(hub, message)


def test_gated_repo_without_token():
    gated = dict(REVISION_OK, gated="manual")
    hub = FakeHub(ok_answers({
        ("GET", hf_hub.revision_url(ENDPOINT, REPO, "main")): (200, {}, gated),
        ("HEAD", hf_hub.resolve_url(ENDPOINT, REPO, SHA, ".gitattributes")): (
            401, {"X-Error-Code": "GatedRepo"}, b""),
    }))
    with pytest.raises(hf_hub.HubError) as err:
        hf_hub.model_info(hub, ENDPOINT, REPO, "main")
    assert err.value.kind == hf_hub.GATED
    assert "'Qwen/Qwen3.5-0.8B' is a gated repository" in err.value.message
    assert "revision 'main'" in err.value.message and "no token was given" in err.value.message


def test_gated_repo_token_without_access():
    gated = dict(REVISION_OK, gated="auto")
    hub = FakeHub(ok_answers({
        ("GET", hf_hub.revision_url(ENDPOINT, REPO, "main")): (200, {}, gated),
        ("HEAD", hf_hub.resolve_url(ENDPOINT, REPO, SHA, ".gitattributes")): (403, {}, b""),
    }))
    with pytest.raises(hf_hub.HubError) as err:
        hf_hub.model_info(hub, ENDPOINT, REPO, "main", token=TOKEN)
    assert err.value.kind == hf_hub.GATED and "the token given has no access" in err.value.message
    assert_no_token(hub, err.value.message)


def test_gated_repo_token_with_access():
    gated = dict(REVISION_OK, gated="auto")
    hub = FakeHub(ok_answers({
        ("GET", hf_hub.revision_url(ENDPOINT, REPO, "main")): (200, {}, gated),
        ("HEAD", hf_hub.resolve_url(ENDPOINT, REPO, SHA, ".gitattributes")): (302, {}, b""),
    }))
    assert hf_hub.model_info(hub, ENDPOINT, REPO, "main", token=TOKEN)["gated"] is True


@pytest.mark.parametrize("status,kind", [(429, hf_hub.RATE_LIMITED), (500, hf_hub.UNAVAILABLE), (504, hf_hub.UNAVAILABLE)])
def test_server_trouble(status, kind):
    hub = FakeHub({("GET", hf_hub.revision_url(ENDPOINT, REPO, "main")): (status, {"X-Error-Code": "ProxyTimeout"}, b"")})
    with pytest.raises(hf_hub.HubError) as err:
        hf_hub.model_info(hub, ENDPOINT, REPO, "main", token=TOKEN)
    assert err.value.kind == kind and err.value.status == status
    assert "'Qwen/Qwen3.5-0.8B' at revision 'main'" in err.value.message


def test_connection_error_names_the_endpoint_without_credentials():
    endpoint = "https://user:secretpw@mirror.example:8443"
    hub = FakeHub({("GET", hf_hub.revision_url(endpoint, REPO, "main")): (OSError("Connection refused"), None, b"")})
    with pytest.raises(hf_hub.HubError) as err:
        hf_hub.model_info(hub, endpoint, REPO, "main")
    assert err.value.kind == hf_hub.UNAVAILABLE
    assert "https://***@mirror.example:8443" in err.value.message and "Connection refused" in err.value.message
    assert "secretpw" not in err.value.message


def test_answer_without_commit_is_bad_answer():
    hub = FakeHub({("GET", hf_hub.revision_url(ENDPOINT, REPO, "main")): (200, {}, {"id": REPO})})
    with pytest.raises(hf_hub.HubError) as err:
        hf_hub.model_info(hub, ENDPOINT, REPO, "main")
    assert err.value.kind == hf_hub.BAD_ANSWER


def test_html_answer_is_bad_answer():
    hub = FakeHub({("GET", hf_hub.revision_url(ENDPOINT, REPO, "main")): (200, {}, b"<html>proxy login</html>")})
    with pytest.raises(hf_hub.HubError) as err:
        hf_hub.model_info(hub, ENDPOINT, REPO, "main")
    assert err.value.kind == hf_hub.BAD_ANSWER and "not JSON" in err.value.message


@pytest.mark.parametrize("repo_id", ["Qwen", "Qwen/", "/Qwen3.5-9B", "Qwen/Qwen3.5 9B", "Qwen/a/b", "Qwen/x--y", "Qwen/..x", ""])
def test_bad_repo_ids(repo_id):
    assert hf_hub.validate_repo_id(repo_id)
    with pytest.raises(hf_hub.HubError) as err:
        hf_hub.model_info(FakeHub({}), ENDPOINT, repo_id, "main")
    assert err.value.kind == hf_hub.BAD_INPUT


@pytest.mark.parametrize("repo_id", ["Qwen/Qwen3.5-9B", "Qwen/Qwen3.5-35B-A3B", "org_1/name.v2"])
def test_good_repo_ids(repo_id):
    assert hf_hub.validate_repo_id(repo_id) is None


def test_bad_endpoint():
    with pytest.raises(hf_hub.HubError) as err:
        hf_hub.model_info(FakeHub({}), "ftp://mirror", REPO, "main")
    assert err.value.kind == hf_hub.BAD_INPUT and "ftp://mirror" in err.value.message


def test_revision_is_quoted():
    assert hf_hub.revision_url(ENDPOINT, REPO, "refs/pr/1").endswith("/revision/refs%2Fpr%2F1")


def test_next_link_variants():
    assert hf_hub.next_link({"link": '<https://h/next?cursor=1>; rel="next"'}) == "https://h/next?cursor=1"
    assert hf_hub.next_link({"Link": '<https://h/p>; rel="prev", <https://h/n>; rel=next'}) == "https://h/n"
    assert hf_hub.next_link({}) is None


def test_tree_entry_without_size_is_bad_answer():
    with pytest.raises(hf_hub.HubError):
        hf_hub.parse_tree([{"type": "file", "path": "x"}])


# --- the token stays with the endpoint's origin ------------------------------------------------------------------

OTHER = "http://127.0.0.2:9"


def test_redirect_to_another_origin_is_followed_without_the_token():
    moved = OTHER + "/api/models/%s/revision/main" % REPO
    hub = FakeHub(ok_answers({
        ("GET", hf_hub.revision_url(ENDPOINT, REPO, "main")): (302, {"Location": moved}, b""),
        ("GET", moved): (200, {}, REVISION_OK),
    }))
    info = hf_hub.model_info(hub, ENDPOINT, REPO, "main", token=TOKEN)
    assert info["commit"] == SHA
    sent = dict((url, headers) for _m, url, headers in hub.calls)
    assert "Authorization" not in sent[moved]
    assert sent[hf_hub.revision_url(ENDPOINT, REPO, "main")]["Authorization"] == "Bearer " + TOKEN
    assert sent[hf_hub.tree_url(ENDPOINT, REPO, SHA)]["Authorization"] == "Bearer " + TOKEN


def test_redirect_within_the_origin_keeps_the_token():
    renamed = "/api/models/Qwen/Qwen3.5-0.8B-renamed/revision/main"
    hub = FakeHub(ok_answers({
        ("GET", hf_hub.revision_url(ENDPOINT, REPO, "main")): (307, {"location": renamed}, b""),
        ("GET", ENDPOINT + renamed): (200, {}, REVISION_OK),
    }))
    hf_hub.model_info(hub, ENDPOINT, REPO, "main", token=TOKEN)
    assert all(h.get("Authorization") == "Bearer " + TOKEN for _m, _u, h in hub.calls)


def test_same_host_other_port_or_scheme_is_another_origin():
    assert hf_hub.same_origin("http://h:80/a", "http://h/b")
    assert hf_hub.same_origin("https://u:p@H:443/a", "https://h/b")
    assert not hf_hub.same_origin("http://h:8080/a", "http://h:8081/a")
    assert not hf_hub.same_origin("http://h/a", "https://h/a")
    assert not hf_hub.same_origin("http://[::1/a", "http://h/a")


def test_redirect_loop_is_a_bad_answer():
    url = hf_hub.revision_url(ENDPOINT, REPO, "main")
    hub = FakeHub({("GET", url): (302, {"Location": url}, b"")})
    with pytest.raises(hf_hub.HubError) as err:
        hf_hub.model_info(hub, ENDPOINT, REPO, "main", token=TOKEN)
    assert err.value.kind == hf_hub.BAD_ANSWER and "redirect" in err.value.message
    assert len(hub.calls) == hf_hub.MAX_REDIRECTS + 1


def test_redirect_to_another_scheme_is_refused():
    hub = FakeHub({("GET", hf_hub.revision_url(ENDPOINT, REPO, "main")): (302, {"Location": "file:///etc/passwd"}, b"")})
    with pytest.raises(hf_hub.HubError) as err:
        hf_hub.model_info(hub, ENDPOINT, REPO, "main", token=TOKEN)
    assert err.value.kind == hf_hub.BAD_ANSWER and len(hub.calls) == 1


def test_next_page_on_another_origin_is_refused_and_not_fetched():
    elsewhere = OTHER + "/api/models/%s/tree/%s?cursor=abc" % (REPO, SHA)
    hub = FakeHub(ok_answers({
        ("GET", hf_hub.tree_url(ENDPOINT, REPO, SHA)): (200, {"Link": '<%s>; rel="next"' % elsewhere}, TREE_PAGE_1),
        ("GET", elsewhere): (200, {}, TREE_PAGE_2),
    }))
    with pytest.raises(hf_hub.HubError) as err:
        hf_hub.model_info(hub, ENDPOINT, REPO, "main", token=TOKEN)
    assert err.value.kind == hf_hub.BAD_ANSWER
    assert "http://127.0.0.2:9" in err.value.message and "another origin" in err.value.message
    assert all(url != elsewhere for _m, url, _h in hub.calls)


def test_relative_next_page_stays_home_with_the_endpoint_credentials():
    endpoint = "http://user:pw@127.0.0.1:28918"
    nxt = "/api/models/%s/tree/%s?cursor=abc" % (REPO, SHA)
    hub = FakeHub({
        ("GET", hf_hub.revision_url(endpoint, REPO, "main")): (200, {}, REVISION_OK),
        ("GET", hf_hub.tree_url(endpoint, REPO, SHA)): (200, {"Link": '<%s>; rel="next"' % nxt}, TREE_PAGE_1),
        ("GET", endpoint + nxt): (200, {}, TREE_PAGE_2),
    })
    info = hf_hub.model_info(hub, endpoint, REPO, "main", token=TOKEN)
    assert info["repo_file_count"] == 5 and info["endpoint"] == "http://***@127.0.0.1:28918"


def test_gated_probe_does_not_follow_the_file_redirect():
    gated = dict(REVISION_OK, gated="auto")
    probe = hf_hub.resolve_url(ENDPOINT, REPO, SHA, ".gitattributes")
    hub = FakeHub(ok_answers({
        ("GET", hf_hub.revision_url(ENDPOINT, REPO, "main")): (200, {}, gated),
        ("HEAD", probe): (302, {"Location": OTHER + "/cdn/blob"}, b""),
    }))
    assert hf_hub.model_info(hub, ENDPOINT, REPO, "main", token=TOKEN)["gated"] is True
    assert all(not url.startswith(OTHER) for _m, url, _h in hub.calls)


# --- input checks: full match, ASCII, after stripping ---------------------------------------------------------------


def test_repo_id_and_revision_are_stripped_before_use():
    hub = FakeHub(ok_answers())
    info = hf_hub.model_info(hub, ENDPOINT, REPO + "\n", " main\n", token=TOKEN)
    assert info["repo_id"] == REPO and info["revision"] == "main"


@pytest.mark.parametrize("repo_id", ["Qwen/Qwen3.5-9B\nx", "--help", "-x/y", "Qwen/name-", "Qwen/name.git",
                                     "Qwen/\u0661\u0662", "Qw\u0435n/x", "a" * 97 + "/b", None, 5])
def test_more_bad_repo_ids(repo_id):
    assert hf_hub.validate_repo_id(repo_id)
    with pytest.raises(hf_hub.HubError) as err:
        hf_hub.normalize_repo_id(repo_id)
    assert err.value.kind == hf_hub.BAD_INPUT and "repo_id" in err.value.message


@pytest.mark.parametrize("revision", ["main", "v1.0", "refs/pr/1", "refs/convert/parquet", SHA, "release_2024-01"])
def test_good_revisions(revision):
    assert hf_hub.normalize_revision(revision) == revision


@pytest.mark.parametrize("revision", ["", "  ", "-x", "--help", "a..b", "a//b", "a/", "/a", "a.lock", "ma\u0131n",
                                      "a b", "a\nb", "x" * 300, ".hidden", "a/.b", None, 12])
def test_bad_revisions(revision):
    with pytest.raises(hf_hub.HubError) as err:
        hf_hub.normalize_revision(revision)
    assert err.value.kind == hf_hub.BAD_INPUT and "revision" in err.value.message


@pytest.mark.parametrize("endpoint", ["http://[::1", "http://[::1]:99999", "http://host:port", "http:///x",
                                      "https://h/x?y=1", "https://h x", "", None, "huggingface.co"])
def test_malformed_endpoints_are_bad_input_not_tracebacks(endpoint):
    assert hf_hub.validate_endpoint(endpoint)
    with pytest.raises(hf_hub.HubError) as err:
        hf_hub.model_info(FakeHub({}), endpoint, REPO, "main")
    assert err.value.kind == hf_hub.BAD_INPUT and "endpoint" in err.value.message


def test_hub_commit_with_a_newline_is_a_bad_answer():
    hub = FakeHub({("GET", hf_hub.revision_url(ENDPOINT, REPO, "main")): (200, {}, dict(REVISION_OK, sha=SHA + "\n"))})
    with pytest.raises(hf_hub.HubError) as err:
        hf_hub.model_info(hub, ENDPOINT, REPO, "main")
    assert err.value.kind == hf_hub.BAD_ANSWER


@pytest.mark.parametrize("path", ["../etc/passwd", "/etc/passwd", "a/../../b", "a\x00b", ""])
def test_tree_paths_that_leave_the_directory_are_a_bad_answer(path):
    with pytest.raises(hf_hub.HubError) as err:
        hf_hub.parse_tree([{"type": "file", "path": path, "size": 1}])
    assert err.value.kind == hf_hub.BAD_ANSWER


def test_repository_file_named_like_the_manifest_is_left_out():
    page = TREE_PAGE_1 + [{"type": "file", "oid": "77" * 20, "size": 5, "path": ".llm_stack_manifest.json"},
                          {"type": "file", "oid": "78" * 20, "size": 5, "path": "sub/.llm_stack_manifest.json"}]
    hub = FakeHub(ok_answers({("GET", hf_hub.tree_url(ENDPOINT, REPO, SHA)): (200, {}, page)}))
    info = hf_hub.model_info(hub, ENDPOINT, REPO, "main")
    paths = [f["path"] for f in info["files"]]
    assert ".llm_stack_manifest.json" not in paths and "sub/.llm_stack_manifest.json" in paths
    assert info["skipped"] == [".llm_stack_manifest.json"]
    assert info["repo_file_count"] == 4


def test_messages_never_hold_the_token_or_url_passwords():
    endpoint = "https://user:secretpw@mirror.example:8443"
    failure = OSError("GET https://user:secretpw@mirror.example:8443/x with Authorization: Bearer %s failed" % TOKEN)
    hub = FakeHub({("GET", hf_hub.revision_url(endpoint, REPO, "main")): (failure, None, b"")})
    with pytest.raises(hf_hub.HubError) as err:
        hf_hub.model_info(hub, endpoint, REPO, "main", token=TOKEN)
    assert "secretpw" not in err.value.message and TOKEN not in err.value.message
    assert "https://***@mirror.example:8443" in err.value.message
