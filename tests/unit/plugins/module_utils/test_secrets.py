# -*- coding: utf-8 -*-
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils.secrets import (
    MASK, has_credentials, mask_credentials)

TOKEN = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"


@pytest.mark.parametrize("text, expected", [
    ("https://bob:s3cret@mirror.example/hf", "https://***@mirror.example/hf"),
    ("https://bob@mirror.example/hf", "https://***@mirror.example/hf"),
    ("http://u:p@ss@host:8080/x", "http://***@host:8080/x"),
    ("retry 3/5 http://user:pw@[::1]:9/a failed", "retry 3/5 http://***@[::1]:9/a failed"),
    ("git+https://tok@github.com/org/repo.git", "git+https://***@github.com/org/repo.git"),
    ("URL_https://u:p@host", "URL_https://***@host"),
    ("Authorization: Bearer abc.def", "Authorization: Bearer ***"),
    ("authorization:bearer  abc", "authorization:bearer  ***"),
    ("{'Authorization': 'Bearer xyz', 'Accept': 'x'}", "{'Authorization': 'Bearer ***', 'Accept': 'x'}"),
    ('"Authorization": "Basic dXNlcjpwdw=="', '"Authorization": "Basic ***"'),
    ("token " + TOKEN + " end", "token hf_*** end"),
    ("no secret here: https://huggingface.co/Qwen/Qwen3-8B", "no secret here: https://huggingface.co/Qwen/Qwen3-8B"),
    ("mail bob@example.com", "mail bob@example.com"),
    ("", ""),
])
def test_masks(text, expected):
    assert mask_credentials(text) == expected


def test_none_stays_none():
    assert mask_credentials(None) is None


def test_bytes_and_numbers_become_text():
    assert mask_credentials(b"https://a:b@h\xff") == "https://***@h\ufffd"
    assert mask_credentials(12) == "12"


def test_given_secrets_anywhere():
    text = "HF_TOKEN=letmein and again letmein, password p4ss"
    assert mask_credentials(text, ["letmein", "", None, "p4ss"]) == "HF_TOKEN=*** and again ***, password ***"


def test_one_string_as_secrets():
    assert mask_credentials("x letmein y", "letmein") == "x *** y"


def test_longest_secret_first():
    assert mask_credentials("abcdef", ["abc", "abcdef"]) == MASK


def test_secret_of_stars_only_is_ignored():
    assert mask_credentials("a *** b", ["*"]) == "a *** b"


def test_secret_hidden_across_a_mask_is_masked_too():
    # "x*" appears only after "x" + the mask of "y": still masked, and masking again changes nothing.
    once = mask_credentials("xy", ["y", "x*"])
    assert "x*" not in once
    assert mask_credentials(once, ["y", "x*"]) == once


@pytest.mark.parametrize("url, expected", [
    ("https://a:b@host/x", True),
    ("https://a@host", True),
    ("http://u:p@[::1", True),
    ("https://host/x@y", False),
    ("https://huggingface.co", False),
    ("", False),
    (None, False),
    ("not a url", False),
])
def test_has_credentials(url, expected):
    assert has_credentials(url) is expected


SECRET_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60)
SECRETS = st.lists(st.text(min_size=1, max_size=8), max_size=3)


@settings(max_examples=300, deadline=None)
@given(text=SECRET_TEXT, secrets=SECRETS)
def test_idempotent_and_no_secret_left(text, secrets):
    once = mask_credentials(text, secrets)
    assert mask_credentials(once, secrets) == once
    for secret in secrets:
        if secret.strip("*"):
            assert secret not in once


@settings(max_examples=200, deadline=None)
@given(
    user=st.text(alphabet=st.characters(blacklist_characters="/?#@", blacklist_categories=("Cs", "Zs", "Cc", "Zl", "Zp")),
                 min_size=1, max_size=20),
    password=st.text(alphabet=st.characters(blacklist_characters="/?#", blacklist_categories=("Cs", "Zs", "Cc", "Zl", "Zp")),
                     min_size=1, max_size=20),
    prefix=st.text(max_size=20),
)
def test_url_password_never_survives(user, password, prefix):
    url = "https://%s:%s@mirror.example/hf" % (user, password)
    masked = mask_credentials(prefix + " " + url + " tail")
    assert "https://***@mirror.example/hf tail" in masked
    assert has_credentials(url)


@settings(max_examples=100, deadline=None)
@given(body=st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=20, max_size=40))
def test_hf_tokens_never_survive(body):
    assert "hf_" + body not in mask_credentials("x hf_%s y" % body)


@pytest.mark.parametrize("secret", ["abc", "1234", "none", "0"])
def test_a_secret_is_masked_whatever_its_length_or_shape(secret):
    assert mask_credentials("key=%s." % secret, [secret]) == "key=***."


def test_the_base64_of_a_user_password_is_masked():
    import base64
    pair = "builder:pw-0123"
    encoded = base64.b64encode(pair.encode()).decode()
    for given in (pair, "https://%s@mirror.example/simple" % pair):
        text = mask_credentials("Authorization header %s and %s" % (encoded, encoded.rstrip("=")), [given])
        assert encoded.rstrip("=") not in text and pair not in text


def test_run_logged_masks_short_digit_and_none_secrets_but_not_switches():
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils import run_logged as R
    env = {"OPENAI_API_KEY": "abc", "PIN_TOKEN": "1234", "VLLM_API_KEY": "none", "HF_HUB_DISABLE_IMPLICIT_TOKEN": "0",
           "USE_AUTH": "true", "MAX_JOBS": "4"}
    assert sorted(R.secret_values(env)) == ["1234", "abc", "none"]
