"""Write a broken flash-attn sdist (test only, for side_effect.yml).

    make_broken_sdist.py SRC.tar.gz DEST_DIR NEW_VERSION

Repackages the real sdist as NEW_VERSION without csrc/cutlass, a sdist
with missing sources: flash-attn's own setup.py then stops the build with
"csrc/cutlass is missing".
"""
import io
import os
import re
import sys
import tarfile


def main(src, dest_dir, version):
    os.makedirs(dest_dir, exist_ok=True)
    dest = os.path.join(dest_dir, "flash_attn-%s.tar.gz" % version)
    with tarfile.open(src, "r:gz") as tin, tarfile.open(dest + ".tmp", "w:gz") as tout:
        for member in tin.getmembers():
            rest = member.name.partition("/")[2]
            if rest == "csrc/cutlass" or rest.startswith("csrc/cutlass/"):
                continue
            data = tin.extractfile(member).read() if member.isfile() else None
            member.name = "flash_attn-%s/%s" % (version, rest) if rest else "flash_attn-%s" % version
            member.pax_headers.pop("path", None)  # a long name lives here in PAX archives
            if rest in ("PKG-INFO", "flash_attn/__init__.py"):
                text = data.decode()
                text = re.sub(r"(?m)^Version: .*$", "Version: " + version, text)
                text = re.sub(r'(?m)^__version__ = ".*"$', '__version__ = "%s"' % version, text)
                data = text.encode()
                member.size = len(data)
            tout.addfile(member, io.BytesIO(data) if data is not None else None)
    os.replace(dest + ".tmp", dest)
    print(dest)


if __name__ == "__main__":
    main(*sys.argv[1:4])
