# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small, dependency-free version handling for the stack checks.

Only what the compatibility matrix needs: release numbers with optional
pre/post/dev/local parts (PEP 440 subset) and requirement specifiers such as
``!=5.0.*,>=4.56.0`` as published in wheel metadata. Runs on the managed
host's Python (3.8 and newer), so no third-party ``packaging`` import.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# ASCII only ([0-9], never \d, which also matches full-width and other
# Unicode digits), matched in full after stripping surrounding whitespace.
_VERSION_RE = re.compile(
    r"(?P<v>[vV])?(?P<release>[0-9]+(?:\.[0-9]+)*)"
    r"(?:[-_.]?(?P<pre>a|b|rc)(?P<pre_n>[0-9]*))?"
    r"(?:[-_.]?post(?P<post>[0-9]*))?"
    r"(?:[-_.]?dev(?P<dev>[0-9]*))?"
    r"(?:\+(?P<local>[A-Za-z0-9]+(?:[.][A-Za-z0-9]+)*))?"
)

# Longest text taken as a version: release numbers of real packages are
# short; a longer text is refused before any number is converted.
MAX_VERSION_LENGTH = 64

_PRE_ORDER = {"a": 0, "b": 1, "rc": 2}

# Parsed versions and specifiers by their text (bounded): the gate parses
# the same few hundred strings over and over.
_PARSED = {}
_SPECIFIERS = {}


class VersionError(ValueError):
    """A string that is not a version or specifier."""


class Version(object):
    """A comparable version: release tuple, then pre < final < post."""

    def __init__(self, text):
        if not isinstance(text, str):
            raise VersionError("not a version string: %r" % (text,))
        cached = _PARSED.get(text)
        if cached is not None:
            self.__dict__.update(cached)
            return
        self._parse(text)
        if len(_PARSED) < 4096:
            _PARSED[text] = dict(self.__dict__)

    def _parse(self, text):
        stripped = text.strip()
        if len(stripped) > MAX_VERSION_LENGTH:
            raise VersionError("not a version: %d characters (at most %d)" % (len(stripped), MAX_VERSION_LENGTH))
        match = _VERSION_RE.fullmatch(stripped)
        if not match:
            raise VersionError("not a version: %r" % (text,))
        # text: as given, without surrounding whitespace and a leading 'v'
        self.text = stripped[1:] if match.group("v") else stripped
        self.prefixed = bool(match.group("v"))
        self.release = tuple(int(part) for part in match.group("release").split("."))
        pre = match.group("pre")
        self.pre = (_PRE_ORDER[pre], int(match.group("pre_n") or 0)) if pre else None
        post = match.group("post")
        self.post = int(post or 0) if post is not None else None
        dev = match.group("dev")
        self.dev = int(dev or 0) if dev is not None else None
        self.local = match.group("local")

    def canonical(self):
        """The normalized spelling: '2.10.0', '5.0.0rc1', '2.8.3.post2', '2.10.0+cu128' (no 'v', no separators)."""
        text = ".".join(str(part) for part in self.release)
        if self.pre is not None:
            text += ("a", "b", "rc")[self.pre[0]] + str(self.pre[1])
        if self.post is not None:
            text += ".post%d" % self.post
        if self.dev is not None:
            text += ".dev%d" % self.dev
        if self.local:
            text += "+" + self.local.lower()
        return text

    def _key(self):
        # trailing zeros do not count: 2.10 == 2.10.0
        release = _strip(self.release)
        if self.pre is None and self.post is None and self.dev is not None:
            pre = (-1, 0)  # 1.0.dev0 sorts before 1.0a0
        elif self.pre is None:
            pre = (9, 0)
        else:
            pre = self.pre
        post = -1 if self.post is None else self.post
        dev = 1 << 30 if self.dev is None else self.dev
        return (release, pre, post, dev)

    def public(self):
        """The version without its local part ('2.10.0+cu128' -> '2.10.0')."""
        return self.text.split("+", 1)[0]

    def public_canonical(self):
        """canonical() without the local part."""
        return self.canonical().split("+", 1)[0]

    @property
    def major(self):
        return self.release[0]

    @property
    def minor(self):
        return self.release[1] if len(self.release) > 1 else 0

    def major_minor(self):
        return "%d.%d" % (self.major, self.minor)

    def __eq__(self, other):
        return self._key() == _coerce(other)._key()

    def __ne__(self, other):
        return not self.__eq__(other)

    def __lt__(self, other):
        return self._key() < _coerce(other)._key()

    def __le__(self, other):
        return self._key() <= _coerce(other)._key()

    def __gt__(self, other):
        return self._key() > _coerce(other)._key()

    def __ge__(self, other):
        return self._key() >= _coerce(other)._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return "Version(%r)" % (self.text,)

    def __str__(self):
        return self.text


def _strip(release):
    while len(release) > 1 and release[-1] == 0:
        release = release[:-1]
    return release


def _coerce(value):
    return value if isinstance(value, Version) else Version(value)


def normalize_version(text):
    """The canonical spelling of a version ('v0.19.1 ' -> '0.19.1'); raises VersionError."""
    return Version(text).canonical()


def is_version(text):
    try:
        Version(text)
    except VersionError:
        return False
    return True


_SPEC_RE = re.compile(r"[ \t]*(===|==|!=|~=|<=|>=|<|>)[ \t]*([A-Za-z0-9_.+*-]+)[ \t]*")


def _matches_wildcard(version, prefix_text):
    prefix = tuple(int(part) for part in prefix_text.split("."))
    return version.release[:len(prefix)] == prefix or (
        len(version.release) < len(prefix)
        and (version.release + (0,) * len(prefix))[:len(prefix)] == prefix
    )


def _clause_ok(version, operator, target):
    if target.endswith(".*"):
        hit = _matches_wildcard(version, target[:-2])
        return hit if operator == "==" else not hit
    wanted = Version(target)
    public = Version(version.public())
    if operator in ("==", "==="):
        return public == wanted
    if operator == "!=":
        return public != wanted
    if operator == ">=":
        return public >= wanted
    if operator == "<=":
        return public <= wanted
    if operator == ">":
        return public > wanted
    if operator == "<":
        # PEP 440: "<V" excludes pre-releases of V itself
        return public < wanted and not (public.pre is not None and _strip(public.release) == _strip(wanted.release))
    if operator == "~=":
        if len(wanted.release) < 2:
            raise VersionError("~= needs at least two release parts: %s" % target)
        prefix = ".".join(str(part) for part in wanted.release[:-1])
        return public >= wanted and _matches_wildcard(public, prefix)
    raise VersionError("unknown operator %r" % operator)  # pragma: no cover - regex limits operators


def parse_specifier(spec):
    """Split '>=3.10,<3.14' into [('>=', '3.10'), ('<', '3.14')]; raises VersionError."""
    if not isinstance(spec, str):
        raise VersionError("not a specifier: %r" % (spec,))
    cached = _SPECIFIERS.get(spec)
    if cached is not None:
        return list(cached)
    clauses = _parse_specifier(spec)
    if len(_SPECIFIERS) < 1024:
        _SPECIFIERS[spec] = tuple(clauses)
    return clauses


def _parse_specifier(spec):
    clauses = []
    for raw in spec.split(","):
        if not raw.strip():
            continue
        match = _SPEC_RE.fullmatch(raw)
        if not match:
            raise VersionError("not a version specifier: %r" % raw.strip())
        operator, target = match.groups()
        if target.endswith(".*"):
            if operator not in ("==", "!="):
                raise VersionError("wildcard only allowed with == and !=: %s" % raw.strip())
            Version(target[:-2])
        else:
            Version(target)
        clauses.append((operator, target))
    return clauses


def satisfies(version, spec):
    """True when version (str or Version) meets every clause of spec."""
    version = _coerce(version)
    return all(_clause_ok(version, operator, target) for operator, target in parse_specifier(spec))


def in_range(version, low, high):
    """low <= version.major_minor <= high, comparing major.minor only (for Python ranges)."""
    version = _coerce(version)
    mm = Version(version.major_minor())
    return Version(low) <= mm <= Version(high)
