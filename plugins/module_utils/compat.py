# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Apply the compatibility matrix (compat_matrix.py) to one host's stack.

``check_stack`` is a pure function: it never touches the host. It returns
every problem it finds, each message naming the variables involved (the
``llm_stack_*`` pins users set, and the ``gpu_*`` facts), the rule id, its
source and the fix.

The pins, the input, and the rules live in private modules (``_compat_pins``, ``_compat_input``,
``_compat_checks``, ``_compat_models``); every name is imported here, where the gate, the plugins and the
tests import it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import compat_matrix as M  # noqa: F401  pylint: disable=unused-import
# The parts of compat live in private modules (_compat_pins <- _compat_input, _compat_checks <- _compat_models);
# every name stays importable from here.
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._compat_checks import (  # noqa: F401  pylint: disable=unused-import
    _REFRESH,
    _check_archs,
    _check_cuda_driver,
    _check_flash_attn,
    _check_torch,
    _check_torch_runtime,
    _check_vllm,
    _nearest_python,
    _newest,
    _prefer_build,
    _range,
    _release_at_least,
    _release_below,
    _spec_floor,
    _torch_release,
    builds_covering,
    flash_attn_below_sm80_problems,
    python_versions,
    release_of_minor,
    torch_builds,
    unlisted,
)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._compat_input import (  # noqa: F401  pylint: disable=unused-import
    Report,
    _Report,
    _plain_release,
    _version_option,
    normalized_pins,
    validate,
    variables_in,
)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._compat_models import (  # noqa: F401  pylint: disable=unused-import
    _check_model_family,
    _check_qwen35,
    _check_transformers,
    _size_number,
    _vllm_for,
    nearest_qwen35,
    qwen35_parts,
)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._compat_pins import (  # noqa: F401  pylint: disable=unused-import
    MAX_MODEL_LENGTH,
    PINS,
    RULES,
    StackInputError,
    VARIABLES,
    _FIRST_OF_MINOR,
    _GPU_RE,
    _LISTED,
    _MODEL_RE,
    _QWEN35_RE,
    _SIZE_RE,
    _TORCH_CUDA_RE,
    _VARIABLE_RE,
    _cu,
    _minor_key,
    _release_driver,
    _short,
    _src,
    _torch_builds_for_driver,
    _v,
    cuda_tag_or_none,
    driver_runs,
    driver_runtime_problems,
    known_runfile_releases,
    listed,
    model_family,
    nearest_listed,
    normalize_torch_cuda,
    runfile_for,
    torch_cuda_tag,
    torch_cuda_version,
    transformers_for,
    vllm_entry,
)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.cuda_arch import (  # noqa: F401  pylint: disable=unused-import
    ArchError,
    arch_list,
    cap_str,
    covered_by,
    parse_cap,
)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.versions import (  # noqa: F401  pylint: disable=unused-import
    Version,
    VersionError,
    in_range,
    parse_specifier,
    satisfies,
)


def check_matrix(p, report):
    """The matrix part: every rule of the compatibility matrix over validate()'s result."""
    _check_cuda_driver(p, report)
    _check_archs(p, report)
    _check_torch(p, report)
    _check_torch_runtime(p, report)
    _check_vllm(p, report)
    _check_transformers(p, report)
    _check_flash_attn(p, report)
    _check_qwen35(p, report)
    _check_model_family(p, report)


def check_stack(params):
    """Validate params and run the matrix. Returns dict(ok, errors, compat_warnings, problems, torch_cuda_arch_list).

    Raises StackInputError (naming the option) on malformed input.
    """
    p = validate(params)
    p["flash_attn_below_sm80"] = params.get("flash_attn_below_sm80")
    report = Report("matrix")
    check_matrix(p, report)
    try:
        archs = arch_list(p["gpus"])
    except ArchError:  # pragma: no cover - validate() already parsed every cap
        archs = ""
    return {
        "ok": not report.errors,
        "errors": report.errors,
        "compat_warnings": report.warnings,
        "problems": report.problems,
        "torch_cuda_arch_list": archs,
    }
