"""Run one command and report its wall time, CPU time (user + sys of the
command and its children) and the largest RSS among them, as JSON.

    python3 tests/gpu/measure.py LABEL -- COMMAND [ARGS...]
"""

import json
import resource
import subprocess
import sys
import time


def main(argv):
    label = argv[1]
    cmd = argv[argv.index("--") + 1:]
    start = time.monotonic()
    rc = subprocess.call(cmd)
    wall = time.monotonic() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({
        "label": label,
        "rc": rc,
        "wall_s": round(wall, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "max_rss_gb": round(usage.ru_maxrss / 1024 ** 2, 2),
    }))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
