# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stack compatibility matrix: every rule, its data and its source.

This file is the one place where the rules live. It is plain data (no
logic) so that it ships with the ``stack_compat`` module to wherever the
module runs; ``compat.py`` applies it and ``docs/compat-matrix.md`` is
rendered from it (``python tests/unit/compat_doc.py > docs/compat-matrix.md``;
a unit test fails when the two differ).

To add a release: add its row to the table below, with the source you
checked, then re-render the doc.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

SOURCES = {
    "cuda-release-notes": {
        "url": "https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html",
        "note": "CUDA Toolkit and Minimum Required Driver Version for CUDA Minor Version Compatibility",
    },
    "cuda-runfiles": {
        "url": "https://developer.download.nvidia.com/compute/cuda/<version>/local_installers/",
        "note": "the driver bundled with each toolkit release is in the runfile name, cuda_<version>_<driver>_linux.run",
    },
    "cuda-archs": {
        "url": "https://developer.nvidia.com/cuda-gpus",
        "note": "new GPU architectures per CUDA release from each release's notes; CUDA 13.0 removes Maxwell,"
                " Pascal and Volta (sm_75 is the minimum)",
    },
    "torch-release-matrix": {
        "url": "https://github.com/pytorch/pytorch/blob/main/RELEASE.md#release-compatibility-matrix",
        "note": "Python range and CUDA builds (stable and experimental) per torch release",
    },
    "torch-wheels": {
        "url": "https://pypi.org/project/torch/#files",
        "note": "wheel tags of torch 2.13.0 and 2.14.0: cp310 to cp314 (RELEASE.md lists 3.15, no cp315 wheel is published)",
    },
    "torch-arch-list": {
        "url": "https://github.com/pytorch/pytorch/blob/main/RELEASE.md#pytorch-cuda-support-matrix",
        "note": "archs per CUDA build; torch.cuda.get_arch_list() of 2.11.0+cu130 on the H200 capture:"
                " sm_75 sm_80 sm_86 sm_90 sm_100 sm_120",
    },
    "torch-cpp-extension": {
        "url": "https://github.com/pytorch/pytorch/blob/main/torch/utils/cpp_extension.py",
        "note": "_check_cuda_version: a CUDA major mismatch between nvcc and torch.version.cuda raises RuntimeError,"
                " a minor mismatch only warns",
    },
    "vllm-metadata": {
        "url": "https://pypi.org/project/vllm/<version>/",
        "note": "wheel metadata of each release: Requires-Dist torch==, transformers; Requires-Python."
                " transformers 5.x is accepted from 0.19.1 on (vllm-project/vllm#40146)",
    },
    "flash-attn-readme": {
        "url": "https://github.com/Dao-AILab/flash-attention/blob/v2.8.3/README.md",
        "note": "Requirements: PyTorch 2.2 and above; CUDA 12.0 and above; Ampere, Ada or Hopper GPUs (sm80 and newer)",
    },
    "qwen35": {
        "url": "https://huggingface.co/collections/Qwen/qwen35",
        "note": "model ids; Qwen3.5 support from vLLM 0.17.0 (release notes) and transformers 5.2.0"
                " (model_type qwen3_5; 5.0 fails with KeyError: 'qwen3_5')",
    },
}

# Every rule the checker applies. severity: error (the stack cannot work)
# or warning (works with caveats, or the matrix cannot tell).
RULES = (
    {"id": "cuda-known", "severity": "warning", "source": "cuda-runfiles",
     "text": "The CUDA toolkit release is in the matrix; for an unknown release only the major version is checked."},
    {"id": "cuda-driver-minimum", "severity": "error", "source": "cuda-release-notes",
     "text": "The driver is at least the minimum for the toolkit's major version (minor version compatibility)."},
    {"id": "cuda-driver-release", "severity": "warning", "source": "cuda-runfiles",
     "text": "The driver is at least the one bundled with the toolkit release; older drivers run it through"
             " minor version compatibility, without PTX JIT of newer PTX."},
    {"id": "arch-known", "severity": "warning", "source": "cuda-archs",
     "text": "The GPU compute capability is in the matrix."},
    {"id": "arch-first-cuda", "severity": "error", "source": "cuda-archs",
     "text": "The toolkit knows the GPU architecture (first CUDA release per compute capability)."},
    {"id": "arch-dropped", "severity": "error", "source": "cuda-archs",
     "text": "The toolkit still supports the GPU architecture (CUDA 12 dropped Kepler, CUDA 13 dropped everything below sm_75)."},
    {"id": "torch-known", "severity": "warning", "source": "torch-release-matrix",
     "text": "The torch release is in the matrix."},
    {"id": "torch-cuda-build", "severity": "error", "source": "torch-release-matrix",
     "text": "torch publishes a build for the requested CUDA (cuXYZ index) of that release."},
    {"id": "torch-python", "severity": "error", "source": "torch-release-matrix",
     "text": "torch publishes wheels for the Python version."},
    {"id": "torch-driver", "severity": "error", "source": "cuda-release-notes",
     "text": "The driver runs the CUDA runtime that the torch build bundles (minimum for its major version)."},
    {"id": "torch-driver-release", "severity": "warning", "source": "cuda-runfiles",
     "text": "The driver is at least the one released with torch's CUDA runtime (otherwise minor version compatibility only)."},
    {"id": "torch-build-archs", "severity": "error", "source": "torch-arch-list",
     "text": "The torch build carries kernels (cubin or PTX) that run on every GPU of the host."},
    {"id": "torch-cpu-build", "severity": "error", "source": "torch-release-matrix",
     "text": "A CPU build of torch (torch_cuda cpu) cannot use the host's GPUs."},
    {"id": "torch-toolkit-major", "severity": "error", "source": "torch-cpp-extension",
     "text": "nvcc and torch's CUDA share the major version, or torch refuses to build extensions (flash-attn, vLLM)."},
    {"id": "torch-toolkit-minor", "severity": "warning", "source": "torch-cpp-extension",
     "text": "nvcc and torch's CUDA share the minor version (a mismatch builds, with a warning)."},
    {"id": "vllm-known", "severity": "warning", "source": "vllm-metadata",
     "text": "The vLLM release is in the matrix."},
    {"id": "vllm-torch-pin", "severity": "error", "source": "vllm-metadata",
     "text": "torch is exactly the release vLLM pins."},
    {"id": "vllm-python", "severity": "error", "source": "vllm-metadata",
     "text": "The Python version is in vLLM's Requires-Python."},
    {"id": "vllm-transformers", "severity": "error", "source": "vllm-metadata",
     "text": "transformers satisfies vLLM's requirement."},
    {"id": "flash-attn-known", "severity": "warning", "source": "flash-attn-readme",
     "text": "The flash-attn release has its floors in the matrix (only the architecture floor is checked otherwise)."},
    {"id": "flash-attn-arch", "severity": "error", "source": "flash-attn-readme",
     "text": "Every GPU is sm80 or newer (FlashAttention-2 has no Turing or Volta kernels)."},
    {"id": "flash-attn-cuda", "severity": "error", "source": "flash-attn-readme",
     "text": "The CUDA toolkit is at least flash-attn's floor."},
    {"id": "flash-attn-torch", "severity": "error", "source": "flash-attn-readme",
     "text": "torch is at least flash-attn's floor."},
    {"id": "qwen35-vllm", "severity": "error", "source": "qwen35",
     "text": "Qwen3.5 models need vLLM 0.17.0 or newer."},
    {"id": "qwen35-transformers", "severity": "error", "source": "qwen35",
     "text": "Qwen3.5 models need transformers 5.2.0 or newer."},
    {"id": "qwen35-model-id", "severity": "error", "source": "qwen35",
     "text": "A Qwen/Qwen3.5-* model id names a size that exists."},
    {"id": "qwen35-model-variant", "severity": "warning", "source": "qwen35",
     "text": "A Qwen/Qwen3.5-* model id of a real size but a variant the matrix does not list."},
)

# cuda-driver-minimum: minimum Linux driver per CUDA major version (minor
# version compatibility). 13.x: the R580 branch.
CUDA_DRIVER_MINIMUM = {
    11: "450.80.02",
    12: "525.60.13",
    13: "580.65.06",
}

# cuda-driver-release / cuda-known: the driver bundled with each toolkit
# release, as in its runfile name.
CUDA_RELEASE_DRIVER = {
    "11.8.0": "520.61.05",
    "12.0.0": "525.60.13",
    "12.0.1": "525.85.12",
    "12.1.0": "530.30.02",
    "12.1.1": "530.30.02",
    "12.2.0": "535.54.03",
    "12.2.2": "535.104.05",
    "12.3.2": "545.23.08",
    "12.4.0": "550.54.14",
    "12.4.1": "550.54.15",
    "12.5.1": "555.42.06",
    "12.6.0": "560.28.03",
    "12.6.3": "560.35.05",
    "12.8.0": "570.86.10",
    "12.8.1": "570.124.06",
    "12.9.0": "575.51.03",
    "12.9.1": "575.57.08",
    "13.0.0": "580.65.06",
    "13.0.1": "580.82.07",
    "13.0.2": "580.95.05",
    "13.1.0": "590.44.01",
}

# arch-first-cuda / arch-known: first CUDA toolkit that compiles for each
# compute capability.
ARCH_FIRST_CUDA = {
    "3.5": "5.0",
    "3.7": "6.5",
    "5.0": "6.0",
    "5.2": "6.5",
    "5.3": "7.0",
    "6.0": "8.0",
    "6.1": "8.0",
    "6.2": "8.0",
    "7.0": "9.0",
    "7.2": "10.0",
    "7.5": "10.0",
    "8.0": "11.0",
    "8.6": "11.1",
    "8.7": "11.4",
    "8.9": "11.8",
    "9.0": "11.8",
    "10.0": "12.8",
    "10.1": "12.8",
    "10.3": "12.9",
    "11.0": "13.0",
    "12.0": "12.8",
    "12.1": "12.9",
}

# arch-dropped: from this CUDA release on, archs below the given one are gone.
ARCH_DROPPED = (
    {"cuda": "12.0", "min_arch": "5.0"},
    {"cuda": "13.0", "min_arch": "7.5"},
)

# torch-*: CUDA builds (download.pytorch.org/whl/cuXYZ) and Python range per
# torch minor release.
TORCH = {
    "2.0": {"cuda": ["11.7", "11.8"], "python": ["3.8", "3.11"]},
    "2.1": {"cuda": ["11.8", "12.1"], "python": ["3.8", "3.11"]},
    "2.2": {"cuda": ["11.8", "12.1"], "python": ["3.8", "3.12"]},
    "2.3": {"cuda": ["11.8", "12.1"], "python": ["3.8", "3.12"]},
    "2.4": {"cuda": ["11.8", "12.1", "12.4"], "python": ["3.8", "3.12"]},
    "2.5": {"cuda": ["11.8", "12.1", "12.4"], "python": ["3.9", "3.13"]},
    "2.6": {"cuda": ["11.8", "12.4", "12.6"], "python": ["3.9", "3.13"]},
    "2.7": {"cuda": ["11.8", "12.6", "12.8"], "python": ["3.9", "3.13"]},
    "2.8": {"cuda": ["12.6", "12.8", "12.9"], "python": ["3.9", "3.13"]},
    "2.9": {"cuda": ["12.6", "12.8", "13.0"], "python": ["3.10", "3.14"]},
    "2.10": {"cuda": ["12.6", "12.8", "13.0"], "python": ["3.10", "3.14"]},
    "2.11": {"cuda": ["12.6", "12.8", "13.0"], "python": ["3.10", "3.14"]},
    "2.12": {"cuda": ["12.6", "13.0", "13.2"], "python": ["3.10", "3.14"]},
    "2.13": {"cuda": ["12.6", "13.0", "13.2"], "python": ["3.10", "3.14"], "python_source": "torch-wheels"},
    "2.14": {"cuda": ["12.6", "13.0", "13.2"], "python": ["3.10", "3.14"], "python_source": "torch-wheels"},
}

# torch-build-archs: archs compiled into torch's Linux x86_64 wheels per CUDA
# build: cubins ("sass") and PTX.
TORCH_BUILD_ARCHS = {
    "11.7": {"sass": ["3.7", "5.0", "6.0", "6.1", "7.0", "7.5", "8.0", "8.6"], "ptx": []},
    "11.8": {"sass": ["3.7", "5.0", "6.0", "6.1", "7.0", "7.5", "8.0", "8.6", "9.0"], "ptx": []},
    "12.1": {"sass": ["5.0", "6.0", "6.1", "7.0", "7.5", "8.0", "8.6", "9.0"], "ptx": []},
    "12.4": {"sass": ["5.0", "6.0", "6.1", "7.0", "7.5", "8.0", "8.6", "9.0"], "ptx": []},
    "12.6": {"sass": ["5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "9.0"], "ptx": []},
    "12.8": {"sass": ["7.5", "8.0", "8.6", "9.0", "10.0", "12.0"], "ptx": []},
    "12.9": {"sass": ["7.5", "8.0", "8.6", "9.0", "10.0", "12.0"], "ptx": []},
    "13.0": {"sass": ["7.5", "8.0", "8.6", "9.0", "10.0", "12.0"], "ptx": ["12.0"]},
    "13.2": {"sass": ["7.5", "8.0", "8.6", "9.0", "10.0", "12.0"], "ptx": ["12.0"]},
}

# vllm-*: from each release's wheel metadata on PyPI.
# transformers_suggest: a release that meets the requirement and Qwen3.5's
# floor (None when no release does).
VLLM = {
    "0.17.0": {"torch": "2.10.0", "python": ">=3.10,<3.14", "transformers": ">=4.56.0,<5", "transformers_suggest": None},
    "0.17.1": {"torch": "2.10.0", "python": ">=3.10,<3.14", "transformers": ">=4.56.0,<5", "transformers_suggest": None},
    "0.18.0": {"torch": "2.10.0", "python": ">=3.10,<3.14", "transformers": ">=4.56.0,<5", "transformers_suggest": None},
    "0.18.1": {"torch": "2.10.0", "python": ">=3.10,<3.14", "transformers": ">=4.56.0,<5", "transformers_suggest": None},
    "0.19.0": {"torch": "2.10.0", "python": ">=3.10,<3.14", "transformers": ">=4.56.0,<5", "transformers_suggest": None},
    "0.19.1": {"torch": "2.10.0", "python": ">=3.10,<3.14",
               "transformers": "!=5.0.*,!=5.1.*,!=5.2.*,!=5.3.*,!=5.4.*,!=5.5.0,>=4.56.0", "transformers_suggest": "5.5.4"},
    "0.20.0": {"torch": "2.11.0", "python": ">=3.10,<3.15",
               "transformers": "!=5.0.*,!=5.1.*,!=5.2.*,!=5.3.*,!=5.4.*,!=5.5.0,>=4.56.0", "transformers_suggest": "5.5.4"},
    "0.27.1": {"torch": "2.13.0", "python": ">=3.10,<3.15", "transformers": ">=5.5.3", "transformers_suggest": "5.5.4"},
    "0.28.0": {"torch": "2.13.0", "python": ">=3.10,<3.15", "transformers": ">=5.5.3", "transformers_suggest": "5.5.4"},
}

# flash-attn-*: FlashAttention-2 floors per minor release; the architecture
# floor holds for every 2.x release.
FLASH_ATTN_MIN_ARCH = "8.0"
FLASH_ATTN = {
    "2.8": {"min_cuda": "12.0", "min_torch": "2.2", "latest": "2.8.3.post2"},
}

# qwen35-*: the Qwen3.5 family.
QWEN35 = {
    "min_vllm": "0.17.0",
    "min_transformers": "5.2.0",
    "sizes": ["0.8B", "2B", "4B", "9B", "27B", "35B-A3B", "122B-A10B", "397B-A17B"],
    "models": [
        "Qwen/Qwen3.5-0.8B", "Qwen/Qwen3.5-0.8B-Base",
        "Qwen/Qwen3.5-2B", "Qwen/Qwen3.5-2B-Base",
        "Qwen/Qwen3.5-4B", "Qwen/Qwen3.5-4B-Base",
        "Qwen/Qwen3.5-9B", "Qwen/Qwen3.5-9B-Base",
        "Qwen/Qwen3.5-27B", "Qwen/Qwen3.5-27B-FP8",
        "Qwen/Qwen3.5-35B-A3B", "Qwen/Qwen3.5-35B-A3B-Base", "Qwen/Qwen3.5-35B-A3B-FP8",
        "Qwen/Qwen3.5-122B-A10B", "Qwen/Qwen3.5-122B-A10B-FP8",
        "Qwen/Qwen3.5-397B-A17B", "Qwen/Qwen3.5-397B-A17B-FP8",
    ],
}
