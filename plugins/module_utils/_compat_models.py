# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: the matrix's rules of compat (module_utils/compat.py) over the model: Qwen3.5 sizes,
model families and transformers. Not part of the public API.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat_matrix as M
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._compat_checks import _REFRESH, _range, unlisted
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._compat_pins import (
    VARIABLES,
    _QWEN35_RE,
    _SIZE_RE,
    _src,
    _v,
    listed,
    model_family,
    nearest_listed,
    transformers_for,
    vllm_entry,
)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.versions import Version


def qwen35_parts(model):
    """(org, size, variant) when model is a Qwen3.5 repo id ('Qwen/Qwen3.5' included), else None."""
    org, name = model.split("/", 1)
    match = _QWEN35_RE.fullmatch(name)
    if not match:
        return None
    if not match.group("rest"):
        return org, None, ""
    size = _SIZE_RE.fullmatch(match.group("rest"))
    if not size:
        return org, None, match.group("rest")
    return org, size.group("size"), size.group("variant")


def _size_number(size):
    try:
        return float(size.upper().split("B", 1)[0])
    except ValueError:
        return 9.0


def nearest_qwen35(model):
    """The listed Qwen3.5 repo nearest to a Qwen3.5 model id: same size and variant where it exists, else the size
    nearest in parameters (a variant kept where that size has it). None when model is not a Qwen3.5 id."""
    parts = qwen35_parts(model)
    if parts is None:
        return None
    dummy, size, variant = parts
    listed = M.QWEN35["models"]
    for name in listed:
        if name.lower() == model.lower():
            return name
    wanted = _size_number(size) if size else 9.0
    sizes = sorted(M.QWEN35["sizes"], key=lambda s: (abs(_size_number(s) - wanted), _size_number(s)))
    for candidate in sizes:
        with_variant = "Qwen/Qwen3.5-%s%s" % (candidate, variant or "")
        for name in listed:
            if name.lower() == with_variant.lower():
                return name
    return "Qwen/Qwen3.5-%s" % sizes[0]


def _check_qwen35(p, report):
    model = p["model"]
    if not model:
        return
    parts = qwen35_parts(model)
    if parts is None:
        return
    org, size, variant = parts
    q = M.QWEN35
    if org.lower() == "qwen":
        sizes = ", ".join("Qwen/Qwen3.5-" + s for s in q["sizes"])
        real = dict((s.lower(), s) for s in q["sizes"])
        if size is None or size.lower() not in real:
            report.add("qwen35-model-id",
                       "%s: %s (real sizes: %s) %s. Fix: set %s to %s (or another of them)"
                       % (_v("model", model), ("Qwen3.5 has no %s model" % size) if size
                          else "the id names no Qwen3.5 model size", sizes, _src("qwen35-model-id"),
                          VARIABLES["model"], nearest_qwen35(model)))
        elif model not in q["models"]:
            known = [m for m in q["models"] if m.lower() == model.lower()]
            hint = ("the hub id is spelled %s" % known[0]) if known else "check that it exists on the hub"
            report.add("qwen35-model-variant",
                       "%s: not among the Qwen3.5 repos the matrix lists (%s) %s. Fix: %s"
                       % (_v("model", model), ", ".join(q["models"]), _src("qwen35-model-variant"), hint))


def _vllm_for(family):
    """(vLLM release, transformers release): the oldest listed vLLM that has the family and a transformers release
    that meets its requirement and the family's floor, or (None, None)."""
    for release in sorted(M.VLLM, key=Version):
        if family.get("min_vllm") and Version(release) < Version(family["min_vllm"]):
            continue
        transformers = transformers_for(M.VLLM[release], family["min_transformers"])
        if transformers:
            return release, transformers
    return None, None


def _check_model_family(p, report):
    """model-vllm, model-transformers: the model family's floors, with or without vLLM, listed or not."""
    model, vllm, transformers = p["model"], p["vllm_version"], p["transformers_version"]
    family = model_family(model)
    if family is None:
        return
    types = " or ".join(family["model_types"])
    if vllm is not None and family.get("min_vllm") and Version(vllm.public()) < Version(family["min_vllm"]):
        release, pair = _vllm_for(family)
        fix = ("set %s to %s or newer (with %s %s and %s %s)" % (
            VARIABLES["vllm_version"], release, VARIABLES["torch_version"], M.VLLM[release]["torch"],
            VARIABLES["transformers_version"], pair)) if release else \
            "set %s to %s or newer" % (VARIABLES["vllm_version"], family["min_vllm"])
        report.add("model-vllm",
                   "%s / %s: %s models need vLLM >= %s, the first release with the model class of %s %s. Fix: %s"
                   % (_v("model", model), _v("vllm_version", vllm), family["family"], family["min_vllm"], types,
                      _src("model-vllm"), fix))
    if transformers is None or Version(transformers.public()) >= Version(family["min_transformers"]):
        return
    entry = vllm_entry(vllm) if vllm is not None else None
    wanted = transformers_for(entry, family["min_transformers"])
    if wanted:
        fix = "set %s to %s" % (VARIABLES["transformers_version"], wanted)
    else:
        release, pair = _vllm_for(family)
        fix = ("no transformers release meets both this and vLLM %s's requirement %s: set %s to %s or newer and %s"
               " to %s" % (vllm, entry["transformers"], VARIABLES["vllm_version"], release,
                           VARIABLES["transformers_version"], pair)) if release else \
            "set %s to %s or newer" % (VARIABLES["transformers_version"], family["min_transformers"])
    report.add("model-transformers",
               "%s / %s: %s models need transformers >= %s, the first release that knows model_type %s (older ones"
               " stop with KeyError: '%s' or \"does not recognize this architecture\") %s. Fix: %s"
               % (_v("model", model), _v("transformers_version", transformers), family["family"],
                  family["min_transformers"], types, family["model_types"][0], _src("model-transformers"), fix))


def _check_transformers(p, report):
    """transformers-known: a release the matrix records (the vLLM and model rules compare any version)."""
    transformers = p["transformers_version"]
    if transformers is None or listed(M.TRANSFORMERS_RELEASES, transformers) is not None:
        return
    unlisted(p, report, "transformers-known", "transformers_version", transformers,
             ("transformers %s" % transformers,
              "it lists the releases on the package index from %s" % _range(M.TRANSFORMERS_RELEASES)),
             "whether it is a release on the package index is not known (the vLLM and model rules compare it all"
             " the same)",
             _REFRESH, nearest_listed(M.TRANSFORMERS_RELEASES, transformers), project="transformers")
