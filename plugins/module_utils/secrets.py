# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one credential-masking function of the collection.

Every line a module returns or writes, and every message it fails with, goes
through ``mask_credentials`` when it may hold a credential: URL passwords
(``scheme://user:pass@host``), ``Authorization`` header values, Hugging Face
tokens, and the secrets the caller knows of (the token option, a password).
The filter ``gpufleet.llm_stack.mask_credentials`` exposes the same function
to playbooks.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import re

try:
    from urllib.parse import urlsplit
except ImportError:  # pragma: no cover - Python 2 is not supported by the collection
    from urlparse import urlsplit  # type: ignore

MASK = "***"

# scheme://userinfo@ : the userinfo runs to the last "@" before the path,
# query or fragment starts (a password may itself hold "@" or ":").
_USERINFO_RE = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]{0,31}://)(?P<userinfo>[^/?#\s]+)@")
# Authorization: Bearer <x>, also as a Python/JSON mapping ('Authorization': 'Bearer x')
# and with the Basic and token schemes.
_AUTH_RE = re.compile(
    r"(?P<head>Authorization[\"']?\s*[:=]\s*[\"']?(?:Bearer|Basic|Token)\s+)(?P<value>[^\s\"',;]+)",
    re.IGNORECASE,
)
# Hugging Face user access tokens: "hf_" and then letters and digits.
_HF_TOKEN_RE = re.compile(r"hf_[A-Za-z0-9]{20,}")


def _as_text(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, str):
        return value
    return str(value)


def secret_forms(secret):
    """The ways a secret shows in a log: itself, and for a user:password (or a URL's userinfo) the base64 an
    HTTP Basic Authorization header carries (padded and not) and the userinfo itself."""
    forms = [secret]
    pairs = [secret] if ":" in secret else []
    found = _USERINFO_RE.search(secret)
    if found:
        pairs.append(found.group("userinfo"))
        forms.append(found.group("userinfo"))
    for pair in pairs:
        encoded = base64.b64encode(pair.encode("utf-8")).decode("ascii")
        forms += [encoded, encoded.rstrip("=")]
    return forms


def _secret_list(secrets):
    if secrets is None:
        return []
    if isinstance(secrets, (str, bytes)):
        secrets = [secrets]
    found = []
    for secret in secrets:
        if secret is None or isinstance(secret, bool):
            continue
        # A secret made only of "*" cannot be told from the mask itself.
        for text in secret_forms(_as_text(secret)):
            if text and text.strip("*"):
                found.append(text)
    # Longest first, so that a secret containing another one is masked whole.
    found.sort(key=len, reverse=True)
    return found


def _mask_once(text, secrets):
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    text = _USERINFO_RE.sub(lambda m: m.group("scheme") + MASK + "@", text)
    text = _AUTH_RE.sub(lambda m: m.group("head") + MASK, text)
    text = _HF_TOKEN_RE.sub("hf_" + MASK, text)
    return text


def mask_credentials(text, secrets=()):
    """Return text with every credential in it replaced by ``***``.

    Masks URL userinfo (``scheme://user:pass@host`` and ``scheme://user@host``
    become ``scheme://***@host``), ``Authorization: Bearer <x>`` values,
    Hugging Face tokens (``hf_`` followed by 20 or more letters and digits)
    and each non-empty string of ``secrets`` (whatever its length; for a
    ``user:password`` or a URL with one, also its base64 as a Basic
    Authorization header carries it), anywhere in the text.
    Idempotent: masking a masked text changes nothing. ``None`` gives ``None``.
    """
    if text is None:
        return None
    text = _as_text(text)
    wanted = _secret_list(secrets)
    # One pass can bring a new match to light (a secret that spans the mask of
    # another one); repeat until nothing changes. Every change that is not a
    # mere re-spelling of a mask removes a character that is not "*", so the
    # loop ends.
    for _round in range(len(text) + 2):
        masked = _mask_once(text, wanted)
        if masked == text:
            return masked
        text = masked
    return text  # pragma: no cover - the loop always reaches a fixed point


def has_credentials(url, loose=False):
    """True when url carries userinfo (``scheme://user[:password]@host``).

    ``loose`` counts any other "@" too: an scp-like git URL (``user@host:path``), a ``user:password@host``
    without a scheme, an "@" in a path or a query. That is the rule a play's ``no_log`` uses on a URL that
    nothing has checked yet (the test ``gpufleet.llm_stack.has_credentials`` exposes both).
    """
    if url is None:
        return False
    text = _as_text(url).strip()
    if loose and "@" in text:
        return True
    try:
        parts = urlsplit(text)
        netloc = parts.netloc
    except ValueError:
        netloc = None
    if netloc is not None and "@" in netloc:
        return True
    return bool(_USERINFO_RE.search(text))
