# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: the one rule for cuda_toolkit_runfile_checksum, which the gate (part cuda_toolkit, on the controller)
and cuda_toolkit_state (on the host) both apply, so that preflight refuses exactly what the role refuses.

Standard library only, Python 3.8+ (it runs on the managed host). Not part of the public API.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# "<algorithm>:<hex digest>", ASCII only, matched in full; the digest's length is the algorithm's.
CHECKSUM_RE = re.compile(r"(?P<algorithm>md5|sha256):(?P<digest>[0-9a-fA-F]+)", re.ASCII)
DIGEST_LENGTH = {"md5": 32, "sha256": 64}


def parse_checksum(value):
    """(algorithm, hex digest as written) of "sha256:<64 hex digits>" or "md5:<32 hex digits>", else None.

    The value is taken as it is (callers strip it); the algorithm is lower case, the digest of either case.
    """
    match = CHECKSUM_RE.fullmatch(value) if isinstance(value, str) else None
    if not match or len(match.group("digest")) != DIGEST_LENGTH[match.group("algorithm")]:
        return None
    return match.group("algorithm"), match.group("digest")
