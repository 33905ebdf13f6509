# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options of stack_compat and the one way to turn them into its result.

Used by the module (plugins/modules/stack_compat.py) and by its action
plugin (plugins/action/stack_compat.py), which runs the gate inside the
controller's worker: the gate is a pure function of its options and reads
nothing from the host, so no module needs to be sent anywhere.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.llm_stack.plugins.module_utils.compat import StackInputError
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.gate import PARTS, host_facts, run_gate

OPTIONS = dict(
    parts=dict(type="list", elements="str", choices=list(PARTS), default=["matrix"]),
    gpus=dict(type="list", elements="str", default=[]),
    driver_version=dict(type="str"),
    cuda_version=dict(type="str", required=True),
    torch_version=dict(type="str"),
    torch_cuda=dict(type="str"),
    python_version=dict(type="str"),
    flash_attn_version=dict(type="str"),
    vllm_version=dict(type="str"),
    transformers_version=dict(type="str"),
    model=dict(type="str"),
    allow_unlisted_versions=dict(type="bool", default=False),
    gpu_count=dict(type="int"),
    gpu_error=dict(type="str"),
    require_gpu=dict(type="bool", default=True),
    cpu_only_test_host=dict(type="bool", default=False),
    arch_list=dict(type="str"),
    free_gb=dict(type="float"),
    min_free_gb=dict(type="float"),
    free_mount=dict(type="str", aliases=["space_mount"]),
    prefix=dict(type="str"),
    nvcc_version=dict(type="str"),
    nvcc_path=dict(type="str"),
    raw_pins=dict(type="dict"),
    toolkit_installed=dict(type="bool", default=False),
    runfile_name=dict(type="str"),
    runfile_source=dict(type="str", default="url"),
    runfile_checksum=dict(type="str", no_log=False),
    runfile_src=dict(type="path"),
    runfile_url=dict(type="str"),
    interpreter=dict(type="dict"),
    host_pythons=dict(type="list", elements="str", default=[]),
    venv_python=dict(type="str"),
    torch_venv=dict(type="str"),
    torch_python=dict(type="str"),
    torch_wheelhouse=dict(type="str"),
    torch_extra_packages=dict(type="list", elements="str", default=[]),
    package_index_url=dict(type="str"),
    package_index_ca_cert=dict(type="str"),
    package_index=dict(type="dict"),
    flash_attn_source=dict(type="str", default="sdist"),
    flash_attn_below_sm80=dict(type="str"),
    flash_attn_arch_list=dict(type="str"),
    flash_attn_wheelhouse=dict(type="str"),
    flash_attn_build_requirements=dict(type="list", elements="str", default=[]),
    flash_attn_runtime_requirements=dict(type="list", elements="str", default=[]),
    vllm_method=dict(type="str"),
    vllm_distribution=dict(type="str"),
    vllm_target_device=dict(type="str"),
    vllm_venv_torch=dict(type="str"),
    serve_model=dict(type="str"),
    serve_tensor_parallel_size=dict(type="str"),
    serve_pipeline_parallel_size=dict(type="str"),
    serve_max_model_len=dict(type="str"),
    serve_gpu_memory_utilization=dict(type="str"),
    serve_extra_args=dict(type="list", elements="str", default=[]),
    serve_env=dict(type="dict", default={}),
    serve_preset=dict(type="str"),
    serve_model_config=dict(type="dict"),
    serve_model_size=dict(type="int"),
    serve_vllm_options=dict(type="dict"),
    gpu_memory_mib=dict(type="list", elements="int", default=[]),
    extra_errors=dict(type="list", elements="str", default=[]),
    extra_warnings=dict(type="list", elements="str", default=[]),
    role_gates=dict(type="list", elements="dict", default=[]),
    facts=dict(type="bool", default=False),
    contract=dict(type="dict", default={}),
    fail_as=dict(type="str", default=""),
    show_warnings=dict(type="bool", default=False),
)


def stop_message(fail_as, errors):
    """The failure of a role's gate: who stops, how many problems, each once, in order."""
    unique = list(dict.fromkeys(errors))
    return "%s: %d problem(s), nothing was changed:\n- %s" % (fail_as, len(unique), "\n- ".join(unique))


def gate_result(params):
    """(result, None) for validated options, or (None, failure) with ``msg`` and ``option`` for bad input."""
    try:
        result = run_gate(params)
        if params["facts"]:
            result["ansible_facts"] = {"llm_stack_host": host_facts(params, result)}
    except StackInputError as exc:
        return None, {"msg": "Invalid option %s" % exc, "option": exc.option}
    result["changed"] = False
    if params.get("show_warnings") and result.get("compat_warnings"):
        result["warnings"] = list(result["compat_warnings"])
    if params.get("fail_as") and not result["ok"]:
        result.update(failed=True, msg=stop_message(params["fail_as"], result["errors"]))
    return result, None


def gate_from_options(options):
    """gate_result for options a caller made up (a role's own plan), validated and converted as the module's are."""
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
    validated = ArgumentSpecValidator(OPTIONS).validate(options)
    if validated.error_messages:
        return None, {"msg": "Invalid option: %s" % "; ".join(validated.error_messages), "option": None}
    return gate_result(validated.validated_parameters)
