"""Offline stand-in for the get-pip bootstrap script of ansible-test (test tooling only).

`ansible-test sanity` bootstraps pip in each virtual environment it creates
with a get-pip script downloaded from a CI file server that the project's
test machines cannot reach. ansible-test looks for a copy at
``~/.ansible/test/cache/get_pip_<version>.py`` first; tests/ci/sanity.sh
puts this file there. It does what get-pip does, from what is at hand:
bootstraps the pip bundled with Python (ensurepip), then has that pip
install the pip version ansible-test asked for from the package index.

ansible-test runs it as ``python get_pip_X_Y.py --disable-pip-version-check
pip==X.Y [--no-setuptools] [--no-wheel]``; the last two are get-pip options
that ``pip install`` does not have, so they are dropped.
"""

from __future__ import annotations

import ensurepip
import os
import subprocess
import sys

CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
GET_PIP_ONLY = ("--no-setuptools", "--no-wheel")


def main() -> int:
    """Bootstrap pip, then install the requested pip version."""
    args = [arg for arg in sys.argv[1:] if arg not in GET_PIP_ONLY]
    ensurepip.bootstrap(upgrade=True)
    command = [sys.executable, "-m", "pip", "install"]
    if "PIP_CERT" not in os.environ and os.path.isfile(CA_BUNDLE):
        # Hosts whose TLS goes through a proxy with its own CA.
        command += ["--cert", CA_BUNDLE]
    return subprocess.call(command + args)


if __name__ == "__main__":
    sys.exit(main())
