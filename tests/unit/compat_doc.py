# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Render docs/compat-matrix.md from plugins/module_utils/compat_matrix.py.

    python3 tests/unit/compat_doc.py > docs/compat-matrix.md

tests/unit/test_compat_doc.py fails when the committed doc differs from
this rendering, so the matrix stays the one source.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.util
import os
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MATRIX_PATH = os.path.join(REPO, "plugins", "module_utils", "compat_matrix.py")
DOC_PATH = os.path.join(REPO, "docs", "compat-matrix.md")


def load_matrix():
    spec = importlib.util.spec_from_file_location("compat_matrix_for_doc", MATRIX_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _key(version):
    return tuple(int(part) if part.isdigit() else 0 for part in version.replace("post", "").split("."))


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for dummy in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return lines


def render(m=None):
    m = m or load_matrix()
    out = [
        "# Stack compatibility matrix",
        "",
        "What `gpufleet.llm_stack.stack_compat` (and so the preflight role) checks, with the",
        "source of every rule. Rendered from `plugins/module_utils/compat_matrix.py`, the one",
        "place the rules live: edit that file, then run",
        "`python3 tests/unit/compat_doc.py > docs/compat-matrix.md` (a unit test fails when",
        "this page and the matrix differ).",
        "",
        "Errors make `ok` false; warnings do not. A vLLM, torch or transformers release the",
        "matrix does not list is an error; its fix names `make matrix`, which reads newer",
        "releases from the package index, and `llm_stack_allow_unlisted_versions: true`, which",
        "turns it into a warning (every rule that does not need that release's row still",
        "applies). A CUDA toolkit, flash-attn release or GPU the matrix does not know gives a",
        "warning. Each message names the variables involved (`llm_stack_*` pins, role",
        "variables, `gpu_*` facts), the rule id, its source and a fix that can be applied as",
        "written. Versions are normalized once before any lookup (white space and a leading `v`",
        "dropped, ASCII digits only) and compared under PEP 440: `0.19.1.0` is `0.19.1`, while",
        "`0.19.1.post1`, `0.19.1rc1` and `0.19.1.dev0` are other releases. The parts that",
        "install need the canonical spelling and give it as the fix.",
        "",
        "## Refreshing the matrix",
        "",
        "The vLLM rows and the torch and transformers releases below are generated: `make matrix`",
        "(`tests/matrix/refresh.py`, its logic in `plugins/module_utils/matrix_refresh.py`)",
        "reads them from the package index (`MATRIX_INDEX_URL`, default `https://pypi.org/simple`;",
        "a mirror must answer PEP 691 JSON and HTTP Range requests), rewrites only the block of",
        "`compat_matrix.py` between `# BEGIN GENERATED: make matrix` and",
        "`# END GENERATED: make matrix`, prints the diff and renders this page again;",
        "`tests/matrix/refresh.py --check` exits 1 when the block would change. For each vLLM",
        "release from `VLLM_FLOOR` on it reads the METADATA of the x86_64 wheel out of the",
        "wheel (Range requests for the end of the zip, its central directory and the one",
        "member; a PEP 658 file where the index has one), and the METADATA of the torch wheel",
        "it pins. `tests/matrix/refresh.py --record tests/fixtures/matrix-index` records what",
        "it read; a unit test holds the block equal to the command's output on that recording.",
        "Everything else in the file (torch minors, model families, the CUDA tables) is written",
        "by hand with its source.",
        "",
        "## Parts",
        "",
        "`stack_compat` runs the parts named in its `parts` option (default `matrix`). Preflight",
        "runs all of them; each installing role runs its own before it changes anything, with",
        "the same inputs, so a host that passes preflight passes every role's own checks.",
        "",
        "- `matrix`: the versions against the tables below.",
        "- `host`: what preflight checks on the host (GPUs, arch list override, free space,",
        "  pins given as YAML numbers).",
        "- `cuda_toolkit`, `torch`, `flash_attn`: the inputs of those roles.",
        "- `serve`: vllm_serve's checks that need no fetched weights (parallel sizes, the model's",
        "  limit, the memory fit, the role's own flags; `plugins/module_utils/serve_fit.py`).",
        "- `extra`: problems a role's own validation passed in (`extra_errors`, `extra_warnings`).",
        "",
        "When the pins fail, `suggested` is the complete stack nearest to them that passes every",
        "part for that host, and `suggested_group_vars` the same as a group_vars block. A CUDA",
        "runfile that is not at hand for the suggested release (no checksum given for it, no copy",
        "on the controller: rules `cuda-runfile-checksum`, `cuda-runfile-src`) does not stop a",
        "suggestion; the block names the file to download and what to set, as comments.",
        "",
        "## Rules",
        "",
    ]
    out += _table(["rule", "part", "severity", "what is checked", "source"],
                  [("`%s`" % r["id"], r["part"],
                    r["severity"] + (" (warning with `%s`)" % r["opt_in"] if r.get("opt_in") else ""),
                    r["text"], "[%s](#sources)" % r["source"])
                   for r in m.RULES])
    out += ["", "## Sources", ""]
    out += _table(["key", "where", "what it gives"],
                  [("`%s`" % key, "`%s`" % value["url"] if "<" in value["url"] else value["url"], value["note"])
                   for key, value in sorted(m.SOURCES.items())])

    out += ["", "## Driver (rules `cuda-driver-minimum`, `torch-driver`)", "",
            "Minimum Linux driver per CUDA major version, through minor version compatibility.", ""]
    out += _table(["CUDA", "driver >="], [("%d.x" % major, driver) for major, driver in sorted(m.CUDA_DRIVER_MINIMUM.items())])

    out += ["", "## Toolkit releases and runfiles (rules `cuda-known`, `cuda-driver-release`, `torch-driver-release`,"
                " `cuda-runfile-known`)", "",
            "The driver bundled with each toolkit release, and NVIDIA's runfile for it (the one runfile",
            "table: `CUDA_RUNFILES`, derived from the bundled drivers). The hosts download it from",
            "`%s`." % m.RUNFILE_URL.format(version="<version>", name="<runfile>"), ""]
    out += _table(["CUDA", "runfile", "bundled driver"],
                  [(v, m.CUDA_RUNFILES[v]["name"], m.CUDA_RUNFILES[v]["driver"])
                   for v in sorted(m.CUDA_RUNFILES, key=_key)])

    out += ["", "## GPU architectures (rules `arch-known`, `arch-first-cuda`, `arch-dropped`)", ""]
    out += _table(["compute capability", "first CUDA"],
                  sorted(m.ARCH_FIRST_CUDA.items(), key=lambda i: _key(i[0])))
    out += [""]
    out += _table(["from CUDA", "compute capabilities below this are dropped"],
                  [(d["cuda"], d["min_arch"]) for d in m.ARCH_DROPPED])

    out += ["", "## PyTorch (rules `torch-known`, `torch-cuda-build`, `torch-python`)", ""]
    out += _table(["torch", "CUDA builds (index)", "Python", "Python source"],
                  [(v, ", ".join("cu" + c.replace(".", "") for c in e["cuda"]), "%s - %s" % tuple(e["python"]),
                    e.get("python_source", "torch-release-matrix"))
                   for v, e in sorted(m.TORCH.items(), key=lambda i: _key(i[0]))])

    out += ["", "Releases on the package index of these minors (rule `torch-known`, generated):", "",
            ", ".join(m.TORCH_RELEASES) + "."]

    out += ["", "## Archs in torch's wheels (rule `torch-build-archs`)", "",
            "A cubin for X.y runs on X.z with z >= y; PTX for X.y runs on any newer GPU.", ""]
    out += _table(["CUDA build", "cubins", "PTX"],
                  [("cu" + c.replace(".", ""), ", ".join("sm_" + a.replace(".", "") for a in e["sass"]),
                    ", ".join("compute_" + a.replace(".", "") for a in e["ptx"]) or "-")
                   for c, e in sorted(m.TORCH_BUILD_ARCHS.items(), key=lambda i: _key(i[0]))])

    groups = []
    for cuda in sorted(set(m.VLLM_WHEEL_CUDA.values()), key=lambda c: c or ""):
        releases = [v for v in sorted(m.VLLM_WHEEL_CUDA, key=_key) if m.VLLM_WHEEL_CUDA[v] == cuda]
        groups.append("%s: %s" % (", ".join(releases), "CUDA %s" % cuda if cuda else "not checked"))
    out += ["", "## vLLM (rules `vllm-known`, `vllm-torch-pin`, `vllm-python`, `vllm-transformers`,"
                " `vllm-binary-driver`)", "",
            "Generated from each release's wheel METADATA, from %s on. The release wheel's CUDA comes from"
            % m.VLLM_FLOOR,
            "the hand-written `VLLM_WHEEL_CUDA` (%s); from %s on it is the CUDA runtime of the torch"
            % ("; ".join(groups), m.VLLM_WHEEL_CUDA_FOLLOWS_TORCH),
            "wheel it pins (`VLLM_MAIN_CUDA_VERSION` follows PyTorch), checked against the CUDA major",
            "that vLLM's own requirements name.", ""]
    out += _table(["vLLM", "torch pin", "Python", "transformers", "transformers for Qwen3.5", "release wheel CUDA"],
                  [(v, "`==%s`" % e["torch"], "`%s`" % e["python"], "`%s`" % e["transformers"],
                    e["transformers_suggest"] or "none (caps transformers below 5)", e.get("wheel_cuda") or "-")
                   for v, e in sorted(m.VLLM.items(), key=lambda i: _key(i[0]))])

    out += ["", "## flash-attn (rules `flash-attn-known`, `flash-attn-arch`, `flash-attn-cuda`, `flash-attn-torch`)", "",
            "Every FlashAttention-2 release needs compute capability >= %s. Floors per release:" % m.FLASH_ATTN_MIN_ARCH, ""]
    out += _table(["flash-attn", "CUDA >=", "torch >=", "newest known"],
                  [(v + ".x", e["min_cuda"], e["min_torch"], e["latest"]) for v, e in sorted(m.FLASH_ATTN.items())])

    out += ["", "## transformers (rule `transformers-known`)", "",
            "Releases on the package index from the oldest model family floor on (generated):", "",
            ", ".join(m.TRANSFORMERS_RELEASES) + "."]

    out += ["", "## Model families (rules `model-vllm`, `model-transformers`)", "",
            "By the name of the repo id after the org (any org), matched in full and case-insensitive,",
            "the first row that matches. The floors hold with or without a vLLM pin; they are",
            "necessary for every model of the family, and variants of another architecture (-VL,",
            "-Omni, -Next) need newer releases, which are not checked.", ""]
    out += _table(["family", "name (regular expression)", "model_type", "vLLM >=", "transformers >="],
                  [(f["family"], "`%s`" % f["name"], ", ".join(f["model_types"]), f["min_vllm"], f["min_transformers"])
                   for f in m.MODEL_FAMILIES])

    q = m.QWEN35
    out += ["", "## Qwen3.5 repos (rules `qwen35-model-id`, `qwen35-model-variant`)", "",
            "- Sizes: %s." % ", ".join(q["sizes"]),
            "- Repos: %s." % ", ".join("`%s`" % name for name in q["models"]),
            ""]
    return "\n".join(out)


if __name__ == "__main__":
    sys.stdout.write(render())
