# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""cuda_arch_list filter; documentation in cuda_arch_list.yml next to this file.

Each filter imports its module_utils when it runs: to find one filter of the collection, Ansible loads every filter
file of it, in every worker."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError


def cuda_arch_list(caps, ptx=False, arch_specific=False):
    """Compute capabilities in, TORCH_CUDA_ARCH_LIST out."""
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils.cuda_arch import ArchError
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils.cuda_arch import arch_list
    from ansible_collections.gpufleet.llm_stack.plugins.module_utils.cuda_arch import caps_of
    if not isinstance(ptx, bool):
        raise AnsibleFilterError("cuda_arch_list: ptx must be true or false, got %r" % (ptx,))
    if not isinstance(arch_specific, bool):
        raise AnsibleFilterError("cuda_arch_list: arch_specific must be true or false, got %r" % (arch_specific,))
    try:
        return arch_list(caps, ptx=ptx, arch_specific=arch_specific)
    except ArchError as exc:
        error = exc
    if isinstance(caps, str):
        # a TORCH_CUDA_ARCH_LIST itself ("9.0a;8.0+PTX"): its compute capabilities
        try:
            return arch_list(caps_of(caps), ptx=ptx, arch_specific=arch_specific)
        except ArchError:
            pass
    raise AnsibleFilterError("cuda_arch_list: %s" % error)


class FilterModule(object):
    def filters(self):
        return {"cuda_arch_list": cuda_arch_list}
