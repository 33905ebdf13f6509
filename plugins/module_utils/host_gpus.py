# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host's GPUs as every role reads them: preflight's contract when it is there, else gpu_facts' facts.

``ansible_facts['llm_stack_host']['gpu']`` (set by preflight) wins; a play
without preflight has the ``gpu_*`` facts of gpufleet.llm_stack.gpu_facts
(or of torch_info with ``read_gpus``). The ``host_gpus`` filter exposes it to
the roles, and flash_attn's and vllm's plans use it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.llm_stack.plugins.module_utils._readers import as_dict as _dict, text as _text


def gpus_known(facts):
    """Whether the play has read the host's GPUs already: preflight's contract, or the gpu_* facts of a reading."""
    facts = _dict(facts)
    return "llm_stack_host" in facts or "gpu_count" in facts


def host_gpus(facts):
    """{count, compute_caps, driver_version, memory_mib} of the host; driver_version is None when unknown.

    memory_mib: memory.total of each GPU (the contract's gpu.memory_mib, else gpu_devices' memory_total_mib).
    """
    facts = _dict(facts)
    host = facts.get("llm_stack_host")
    if isinstance(host, dict):
        gpu = _dict(host.get("gpu"))
        count, caps, driver = gpu.get("count"), gpu.get("compute_caps"), gpu.get("driver_version")
        memory = gpu.get("memory_mib")
    else:
        count, caps, driver = facts.get("gpu_count"), facts.get("gpu_compute_caps"), facts.get("gpu_driver_version")
        memory = [_dict(device).get("memory_total_mib") for device in facts.get("gpu_devices") or []
                  if isinstance(device, dict)]
    try:
        count = int(count or 0)
    except (TypeError, ValueError):
        count = 0
    caps = [_text(cap) for cap in caps if _text(cap)] if isinstance(caps, (list, tuple)) else []
    memory = [int(m) for m in memory if isinstance(m, (int, float)) and not isinstance(m, bool) and m > 0] \
        if isinstance(memory, (list, tuple)) else []
    return {"count": count, "compute_caps": caps, "driver_version": _text(driver) or None, "memory_mib": memory}
