# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check an installed flash-attn in the venv whose Python runs this script.

Prints one line "FLASH_ATTN_CHECK {json}" and exits 0 when every check
passed, 1 otherwise. Checks, in order:

1. ``import flash_attn`` and the version installed.
2. The CUDA extension (flash_attn_2_cuda) holds code for each arch given
   with --archs (``cuobjdump --list-elf`` lists an sm_XX cubin for it).
3. With GPUs (--gpus N > 0): one small forward pass of flash_attn_func on
   GPU 0 matches PyTorch's own attention, computed in float32, within
   --tolerance (largest absolute difference).

--cpu-only-test-host (test path only): the wheel was built with
FLASH_ATTENTION_SKIP_CUDA_BUILD=TRUE, so it has no CUDA extension. The
check then proves that the Python package is installed and imports as far
as the CUDA extension, and reports the kernel and GPU checks as skipped.
"""

import argparse
import json
import os
import re
import subprocess
import sys

MARK = "FLASH_ATTN_CHECK "


def elf_archs(listing):
    """sm archs in `cuobjdump --list-elf` output: 'ELF file 1: x.1.sm_90.cubin' -> {90}."""
    return sorted(set(int(m) for m in re.findall(r"\.sm_(\d+)a?\.cubin", listing or "")))


def forward_error(torch, flash_attn_func):
    """Largest |flash_attn_func - reference| for one small causal fp16 batch on GPU 0."""
    torch.manual_seed(0)
    shape = (2, 256, 8, 64)  # batch, seqlen, heads, head dim
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.float16) for dummy in range(3))
    out = flash_attn_func(q, k, v, causal=True)
    ref = torch.nn.functional.scaled_dot_product_attention(
        q.float().transpose(1, 2), k.float().transpose(1, 2), v.float().transpose(1, 2), is_causal=True
    ).transpose(1, 2)
    torch.cuda.synchronize()
    return float((out.float() - ref).abs().max().item())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--archs", default="", help="FA2 targets the extension must contain, e.g. 80,90")
    ap.add_argument("--gpus", type=int, default=0, help="GPUs on the host; 0 skips the forward pass")
    ap.add_argument("--cuda-home", default="", help="CUDA toolkit holding bin/cuobjdump")
    ap.add_argument("--tolerance", type=float, default=0.01)
    ap.add_argument("--expect-version", default="")
    ap.add_argument("--cpu-only-test-host", action="store_true")
    args = ap.parse_args(argv)

    res = {"ok": False, "problems": [], "skipped": [], "version": None, "extension": None,
           "elf_archs": [], "forward_max_abs_err": None, "tolerance": args.tolerance}
    wanted = sorted(set(int(a) for a in re.split(r"[;, ]+", args.archs) if a))

    try:
        from importlib import metadata
        res["version"] = metadata.version("flash-attn")
    except Exception as e:  # PackageNotFoundError
        res["problems"].append("flash-attn is not installed in %s (%s)" % (sys.prefix, e))
        return finish(res)
    if args.expect_version and res["version"].split("+")[0] != args.expect_version:
        res["problems"].append("flash-attn %s is installed, %s was expected" % (res["version"], args.expect_version))

    flash_attn = None
    try:
        import flash_attn  # noqa: F401
    except ModuleNotFoundError as e:
        if args.cpu_only_test_host and e.name == "flash_attn_2_cuda":
            res["skipped"].append("CUDA extension: absent by design on the CPU-only test path "
                                  "(built with FLASH_ATTENTION_SKIP_CUDA_BUILD=TRUE); the package imports up to it")
            res["skipped"].append("forward pass: CPU-only test host")
            return finish(res)
        res["problems"].append("import flash_attn failed: %s" % e)
        return finish(res)
    except Exception as e:
        res["problems"].append("import flash_attn failed: %s: %s" % (type(e).__name__, e))
        return finish(res)

    import flash_attn_2_cuda
    res["extension"] = flash_attn_2_cuda.__file__
    cuobjdump = os.path.join(args.cuda_home, "bin", "cuobjdump") if args.cuda_home else "cuobjdump"
    try:
        proc = subprocess.run([cuobjdump, "--list-elf", res["extension"]], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True, check=False)
        res["elf_archs"] = elf_archs(proc.stdout)
        missing = [a for a in wanted if a not in res["elf_archs"]]
        if missing:
            res["problems"].append(
                "%s has no code for %s (it has %s): kernels would fail with \"no kernel image is available\". "
                "Rebuild with these archs in FLASH_ATTN_CUDA_ARCHS." % (
                    os.path.basename(res["extension"]), ", ".join("sm_%d" % a for a in missing),
                    ", ".join("sm_%d" % a for a in res["elf_archs"]) or "none"))
    except OSError as e:
        res["problems"].append("cannot run %s to list the extension's kernels: %s (set flash_attn_build_cuda_home)" % (cuobjdump, e))

    if args.gpus <= 0:
        res["skipped"].append("forward pass: no GPU on this host")
        return finish(res)
    try:
        import torch
        from flash_attn import flash_attn_func
        err = forward_error(torch, flash_attn_func)
        res["forward_max_abs_err"] = err
        if not err <= args.tolerance:
            res["problems"].append("flash_attn_func differs from PyTorch's attention by %g (tolerance %g)" % (err, args.tolerance))
    except Exception as e:
        res["problems"].append("forward pass on GPU 0 failed: %s: %s" % (type(e).__name__, e))
    return finish(res)


def finish(res):
    res["ok"] = not res["problems"]
    print(MARK + json.dumps(res, sort_keys=True))
    return 0 if res["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
