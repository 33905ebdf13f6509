# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write a copy of makeself's stock header that behaves like the header of
NVIDIA's CUDA runfiles on the command line (test stand-in only).

makeself's own header rejects flags it does not know ("Unrecognized flag")
unless they come after "--". NVIDIA's runfile hands its flags (--silent,
--toolkit, --toolkitpath=..., ...) to the installer it carries, and unpacks
under --tmpdir=DIR. The copy written here:

- passes the first flag it does not know, and everything after it, to the
  embedded install script, with the quoting of each argument intact;
- unpacks under the directory given by --tmpdir=DIR (wherever it stands on
  the command line), which is still passed on to the install script.

Usage: python3 patch_header.py STOCK_HEADER OUTPUT
The patch is anchored on exact lines of makeself 2.4.x; if they are not
found it stops with an error instead of writing a header that would behave
differently.
"""

import sys

UNKNOWN_FLAG = (
    "    -*)\n"
    "\techo Unrecognized flag : \"\\$1\" >&2\n"
    "\tMS_Help\n"
    "\texit 1\n"
    "\t;;\n"
)
PASS_ON = (
    "    -*)\n"
    "\t# Not a makeself flag: this and what follows go to the installer.\n"
    "\tbreak ;;\n"
)
LOOP_START = "\nwhile true\ndo\n    case \"\\$1\" in\n"
TMPDIR_SCAN = (
    "\n# Like NVIDIA's runfile: --tmpdir=DIR anywhere on the command line\n"
    "# selects where the archive is unpacked.\n"
    "for ms_arg in \"\\$@\"\n"
    "do\n"
    "    case \"\\$ms_arg\" in\n"
    "    --tmpdir=*)\n"
    "\tTMPROOT=\\`expr \"x\\$ms_arg\" : 'x--tmpdir=\\\\(.*\\\\)'\\`\n"
    "\t;;\n"
    "    esac\n"
    "done\n"
)


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1], encoding="utf-8") as handle:
        text = handle.read()
    for anchor in (UNKNOWN_FLAG, LOOP_START):
        if text.count(anchor) != 1:
            sys.stderr.write(
                "patch_header.py: %s does not look like makeself 2.4.x's header "
                "(anchor found %d times):\n%s\n" % (argv[1], text.count(anchor), anchor)
            )
            return 1
    text = text.replace(UNKNOWN_FLAG, PASS_ON)
    text = text.replace(LOOP_START, TMPDIR_SCAN + LOOP_START)
    with open(argv[2], "w", encoding="utf-8") as handle:
        handle.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
