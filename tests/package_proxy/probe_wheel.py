#!/usr/bin/env python
"""TEST ONLY: write a tiny pure-Python wheel, llm_stack_probe-1.0-py3-none-any.whl, into DIR.

molecule/fleet_cache serves it from its stand-in PyPI. No host installs it in
the converge: side_effect.yml damages the upstream file after the index page
was written with its sha256, and a host's pip, through the cache host's
package proxy, must refuse it; then the file is made whole again and the
install goes through.

Usage: probe_wheel.py DIR
"""

import base64
import hashlib
import os
import sys
import zipfile

NAME, VERSION = "llm_stack_probe", "1.0"


def record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (path, digest, len(data))


def main():
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    dest = sys.argv[1]
    os.makedirs(dest, exist_ok=True)
    info = "%s-%s.dist-info" % (NAME, VERSION)
    files = {
        "%s/__init__.py" % NAME: b'"""The package proxy\'s probe (test only)."""\nVALUE = 1\n',
        "%s/METADATA" % info: ("Metadata-Version: 2.1\nName: llm-stack-probe\nVersion: %s\n" % VERSION).encode(),
        "%s/WHEEL" % info: b"Wheel-Version: 1.0\nGenerator: probe_wheel.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "\n".join([record_line(p, d) for p, d in files.items()] + ["%s/RECORD,," % info, ""])
    path = os.path.join(dest, "%s-%s-py3-none-any.whl" % (NAME, VERSION))
    with zipfile.ZipFile(path + ".part", "w", zipfile.ZIP_DEFLATED) as whl:
        for name, data in files.items():
            whl.writestr(zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0)), data)
        whl.writestr(zipfile.ZipInfo("%s/RECORD" % info, date_time=(2026, 1, 1, 0, 0, 0)), record)
    os.replace(path + ".part", path)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
