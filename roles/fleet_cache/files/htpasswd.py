# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Set one account of an htpasswd file (sha256-crypt), reading the password from stdin.

    htpasswd.py FILE USER [--check]

Run by the venv's Python (passlib). Prints "changed" when the file was (or,
with --check, would be) written, "ok" when the account already has that
password. The file is written 0600 through a temporary file and a rename.
"""

import os
import sys

from passlib.apache import HtpasswdFile


def main():
    path, user = sys.argv[1], sys.argv[2]
    check = "--check" in sys.argv[3:]
    password = sys.stdin.readline().rstrip("\r\n")
    if not password:
        sys.stderr.write("no password on stdin\n")
        return 2
    exists = os.path.exists(path)
    htpasswd = HtpasswdFile(path, new=not exists, default_scheme="sha256_crypt")
    if exists and set(htpasswd.users()) == {user} and htpasswd.check_password(user, password):
        print("ok")
        return 0
    if not check:
        fresh = HtpasswdFile(path + ".new", new=True, default_scheme="sha256_crypt")
        fresh.set_password(user, password)
        fd = os.open(path + ".new", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(fresh.to_string())
        os.rename(path + ".new", path)
    print("changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
