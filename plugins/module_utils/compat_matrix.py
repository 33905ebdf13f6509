# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stack compatibility matrix and the gate's rules: every rule, its data and its source.

This file is the one place where the rules live. It is plain data (no
logic) so that it ships with the ``stack_compat`` module to wherever the
module runs; ``compat.py`` applies it and ``docs/compat-matrix.md`` is
rendered from it (``python tests/unit/compat_doc.py > docs/compat-matrix.md``;
a unit test fails when the two differ).

The vLLM releases and the torch and transformers releases the gate knows
are generated: ``make matrix`` (tests/matrix/refresh.py, logic in
matrix_refresh.py) reads them from the package index and rewrites only the
block between the ``BEGIN GENERATED`` and ``END GENERATED`` lines below;
a unit test holds that block equal to the command's output on the recorded
index (tests/fixtures/matrix-index). Everything else is written by hand,
each fact with the source it was checked against: to add a torch minor or
a model family, add its row here with its source, run ``make matrix``,
then re-render the doc.
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
        "note": "METADATA of each release's x86_64 wheel, read by make matrix: Requires-Dist torch==, transformers;"
                " Requires-Python. transformers 5.x is accepted from 0.19.1 on (vllm-project/vllm#40146)",
    },
    "vllm-wheel-cuda": {
        "url": "https://github.com/vllm-project/vllm/releases/tag/v<version>",
        "note": "the CUDA of the default release wheel on PyPI: 0.19.x is built with CUDA 12.9 (CMakeLists.txt,"
                " VLLM_MAIN_CUDA_VERSION); from 0.20.0 on with the CUDA of the torch it pins (v0.20.0 release notes:"
                " CUDA 13.0; vllm/envs.py: VLLM_MAIN_CUDA_VERSION \"follows PyTorch\"), read by make matrix from the"
                " torch wheel's METADATA (cuda-toolkit==13.0.x) and checked against the CUDA major vLLM's own"
                " requirements name (nvidia-cutlass-dsl[cu13] from 0.22.0 on)",
    },
    "vllm-wheel-runtime": {
        "url": "https://pypi.org/project/vllm/<version>/#files",
        "note": "readelf -d of the x86_64 release wheels on PyPI (checked 2026-12-03): the extensions of 0.19.1"
                " (vllm/_C.abi3.so, _moe_C, vllm_flash_attn/_vllm_fa2_C) need libcudart.so.12, those of 0.20.0 and"
                " 0.32.0 libcudart.so.13, none with an RPATH or RUNPATH, so they use the CUDA runtime that torch's"
                " nvidia-cuda-runtime-cu<major> package loads; every libtorch, c10 and cudart symbol the 0.19.1"
                " extensions import is defined by torch 2.10.0's PyPI wheel (its cu128 build) and"
                " nvidia-cuda-runtime-cu12 12.8.90. vLLM's install guide warns that its binaries are tied to one"
                " CUDA and torch build (docs/getting_started/installation/gpu.cuda.inc.md)",
    },
    "flash-attn-readme": {
        "url": "https://github.com/Dao-AILab/flash-attention/blob/v2.8.3/README.md",
        "note": "Requirements: PyTorch 2.2 and above; CUDA 12.0 and above; Ampere, Ada or Hopper GPUs (sm80 and newer)",
    },
    "roles": {
        "url": "https://github.com/gpufleet/llm_stack/tree/main/roles",
        "note": "what each role needs from its inputs (its README and meta/argument_specs.yml): the checks the gate"
                " makes for the host (preflight), cuda_toolkit, torch and flash_attn_build before any change",
    },
    "qwen35": {
        "url": "https://huggingface.co/collections/Qwen/qwen35",
        "note": "Qwen3.5 model ids and sizes",
    },
    "package-index": {
        "url": "https://pypi.org/simple/<project>/",
        "note": "the releases of vllm, torch and transformers on the package index (PEP 691 listing), read by make"
                " matrix: pre-releases, dev releases and yanked releases are left out",
    },
    "transformers-wheels": {
        "url": "https://pypi.org/project/transformers/#files",
        "note": "the first wheel that holds transformers/models/<model_type>/: qwen2 4.37.0 (not 4.36.2), qwen2_moe"
                " 4.40.0 (not 4.39.3), qwen3 and qwen3_moe 4.51.0 (not 4.50.3), qwen3_5 and qwen3_5_moe 5.2.0"
                " (not 5.1.0); an older release does not know the model_type (KeyError: 'qwen3_5')",
    },
    "vllm-model-registry": {
        "url": "https://pypi.org/project/vllm/#files",
        "note": "the first wheel that holds vllm/model_executor/models/<model_type>.py: qwen2 0.3.0 (not 0.2.7),"
                " qwen2_moe 0.4.0 (not 0.3.3), qwen3 and qwen3_moe 0.8.4 (not 0.8.3), qwen3_5 0.17.0 (not 0.16.0)",
    },
    "vllm-serve-parallel": {
        "url": "https://github.com/vllm-project/vllm/blob/v0.19.1/vllm/config/parallel.py",
        "note": "world_size is tensor x pipeline parallel size, one GPU per worker; vllm/config/model.py"
                " (verify_with_parallel_config): the attention heads are divisible by the tensor parallel size",
    },
    "vllm-serve-max-len": {
        "url": "https://github.com/vllm-project/vllm/blob/v0.19.1/vllm/config/model.py",
        "note": "_get_and_verify_max_len: a max_model_len above the derived limit (max_position_embeddings times"
                " the RoPE scaling factor) raises ValueError unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1",
    },
    "vllm-serve-memory": {
        "url": "https://github.com/vllm-project/vllm/blob/v0.19.1/vllm/v1/core/kv_cache_utils.py",
        "note": "\"To serve at least one request with the models's max seq len (...) KV cache is needed, which is"
                " larger than the available KV cache memory\": the KV cache of one sequence of max_model_len tokens"
                " must fit in gpu_memory_utilization of each GPU after the weights; the estimate is"
                " plugins/module_utils/serve_fit.py's",
    },
    "vllm-argparse": {
        "url": "https://github.com/vllm-project/vllm/blob/v0.34.0/vllm/utils/argparse_utils.py",
        "note": "FlexibleArgumentParser.parse_args turns _ into - in a flag's name, replaces --config FILE by the"
                " YAML file's flags and leaves argparse's allow_abbrev on (a unique prefix of an option is that"
                " option); the options of each release: plugins/module_utils/vllm_options.py (make vllm-options)",
    },
    "vllm-recipes": {
        "url": "https://github.com/vllm-project/recipes/tree/45f3c8c0fce4d1b43ae328e454c8414410605c70/models/Qwen",
        "note": "the flags of vLLM's recipes per model (reasoning and tool-call parsers, --language-model-only), and"
                " the model facts of plugins/module_utils/models.py with their sources",
    },
}

# Every rule the gate applies. part: the part of stack_compat that owns it
# (matrix: the versions alone; host, cuda_toolkit, torch, flash_attn: what
# preflight and each role check before any change; extra: a role's own
# validation). severity: error (the stack cannot work, or the role would
# stop) or warning (works with caveats, or the matrix cannot tell).
# opt_in: the variable that turns the rule's error into a warning.
RULES = (
    {"id": "cuda-known", "part": "matrix", "severity": "warning", "source": "cuda-runfiles",
     "text": "The CUDA toolkit release is in the matrix; for an unknown release only the major version is checked."},
    {"id": "cuda-driver-minimum", "part": "matrix", "severity": "error", "source": "cuda-release-notes",
     "text": "The driver is at least the minimum for the toolkit's major version (minor version compatibility)."},
    {"id": "cuda-driver-release", "part": "matrix", "severity": "warning", "source": "cuda-runfiles",
     "text": "The driver is at least the one bundled with the toolkit release; older drivers run it through"
             " minor version compatibility, without PTX JIT of newer PTX."},
    {"id": "arch-known", "part": "matrix", "severity": "warning", "source": "cuda-archs",
     "text": "The GPU compute capability is in the matrix."},
    {"id": "arch-first-cuda", "part": "matrix", "severity": "error", "source": "cuda-archs",
     "text": "The toolkit knows the GPU architecture (first CUDA release per compute capability)."},
    {"id": "arch-dropped", "part": "matrix", "severity": "error", "source": "cuda-archs",
     "text": "The toolkit still supports the GPU architecture (CUDA 12 dropped Kepler, CUDA 13 dropped everything below sm_75)."},
    {"id": "torch-known", "part": "matrix", "severity": "error", "source": "package-index",
     "opt_in": "llm_stack_allow_unlisted_versions",
     "text": "The torch release is in the matrix: a release on the package index of a minor the matrix has a row"
             " for. With llm_stack_allow_unlisted_versions a warning, and every rule that does not need its row"
             " still applies."},
    {"id": "torch-cuda-build", "part": "matrix", "severity": "error", "source": "torch-release-matrix",
     "text": "torch publishes a build for the requested CUDA (cuXYZ index) of that release."},
    {"id": "torch-python", "part": "matrix", "severity": "error", "source": "torch-release-matrix",
     "text": "torch publishes wheels for the Python version."},
    {"id": "torch-driver", "part": "matrix", "severity": "error", "source": "cuda-release-notes",
     "text": "The driver runs the CUDA runtime that the torch build bundles (minimum for its major version)."},
    {"id": "torch-driver-release", "part": "matrix", "severity": "warning", "source": "cuda-runfiles",
     "text": "The driver is at least the one released with torch's CUDA runtime (otherwise minor version compatibility only)."},
    {"id": "torch-build-archs", "part": "matrix", "severity": "error", "source": "torch-arch-list",
     "text": "The torch build carries kernels (cubin or PTX) that run on every GPU of the host."},
    {"id": "torch-cpu-build", "part": "matrix", "severity": "error", "source": "torch-release-matrix",
     "text": "A CPU build of torch (torch_cuda cpu) cannot use the host's GPUs."},
    {"id": "torch-toolkit-major", "part": "matrix", "severity": "error", "source": "torch-cpp-extension",
     "text": "nvcc and torch's CUDA share the major version, or torch refuses to build extensions (flash-attn, vLLM)."},
    {"id": "torch-toolkit-minor", "part": "matrix", "severity": "warning", "source": "torch-cpp-extension",
     "text": "nvcc and torch's CUDA share the minor version (a mismatch builds, with a warning)."},
    {"id": "vllm-known", "part": "matrix", "severity": "error", "source": "vllm-metadata",
     "opt_in": "llm_stack_allow_unlisted_versions",
     "text": "The vLLM release is in the matrix (make matrix adds newer releases). Compared under PEP 440: 0.19.1.0"
             " is 0.19.1, 0.19.1.post1 is another release. With llm_stack_allow_unlisted_versions a warning, and"
             " every rule that does not need its row still applies."},
    {"id": "vllm-torch-pin", "part": "matrix", "severity": "error", "source": "vllm-metadata",
     "text": "torch is exactly the release vLLM pins."},
    {"id": "vllm-python", "part": "matrix", "severity": "error", "source": "vllm-metadata",
     "text": "The Python version is in vLLM's Requires-Python."},
    {"id": "vllm-transformers", "part": "matrix", "severity": "error", "source": "vllm-metadata",
     "text": "transformers satisfies vLLM's requirement."},
    {"id": "transformers-known", "part": "matrix", "severity": "error", "source": "package-index",
     "opt_in": "llm_stack_allow_unlisted_versions",
     "text": "The transformers release is in the matrix: a release on the package index, from the oldest model"
             " family floor on. With llm_stack_allow_unlisted_versions a warning; the vLLM and model rules compare"
             " any version and apply either way."},
    {"id": "flash-attn-known", "part": "matrix", "severity": "warning", "source": "flash-attn-readme",
     "text": "The flash-attn release has its floors in the matrix (only the architecture floor is checked otherwise)."},
    {"id": "flash-attn-arch", "part": "matrix", "severity": "error", "source": "flash-attn-readme",
     "text": "Every GPU is sm80 or newer (FlashAttention-2 has no Turing or Volta kernels)."},
    {"id": "flash-attn-cuda", "part": "matrix", "severity": "error", "source": "flash-attn-readme",
     "text": "The CUDA toolkit is at least flash-attn's floor."},
    {"id": "flash-attn-torch", "part": "matrix", "severity": "error", "source": "flash-attn-readme",
     "text": "torch is at least flash-attn's floor."},
    {"id": "model-vllm", "part": "matrix", "severity": "error", "source": "vllm-model-registry",
     "text": "vLLM has the model family's model class (MODEL_FAMILIES: Qwen3.5 from 0.17.0, Qwen3 from 0.8.4)."},
    {"id": "model-transformers", "part": "matrix", "severity": "error", "source": "transformers-wheels",
     "text": "transformers knows the model family's model_type (MODEL_FAMILIES: Qwen3.5 from 5.2.0, Qwen3 from"
             " 4.51.0), with or without vLLM."},
    {"id": "qwen35-model-id", "part": "matrix", "severity": "error", "source": "qwen35",
     "text": "A Qwen/Qwen3.5-* model id names a size that exists."},
    {"id": "qwen35-model-variant", "part": "matrix", "severity": "warning", "source": "qwen35",
     "text": "A Qwen/Qwen3.5-* model id of a real size but a variant the matrix does not list."},
    {"id": "torch-local-build", "part": "matrix", "severity": "error", "source": "torch-release-matrix",
     "text": "A local version label on the torch pin names a CUDA build (+cuXYZ) or cpu, never another platform (+rocm6.2)."},
    # part host: what preflight checks on the host itself.
    {"id": "host-quoted-pin", "part": "host", "severity": "error", "source": "roles",
     "text": "Every llm_stack_* version pin is a string in the inventory (YAML reads an unquoted 3.10 as the number 3.1)."},
    {"id": "host-gpu-error", "part": "host", "severity": "error", "source": "roles",
     "text": "nvidia-smi answers (a failing or hung nvidia-smi is a broken driver)."},
    {"id": "host-no-gpu", "part": "host", "severity": "error", "source": "roles",
     "text": "The host has an NVIDIA GPU, unless it is a build host (preflight_require_gpu false) or a CPU-only test host."},
    {"id": "host-arch-list-empty", "part": "host", "severity": "error", "source": "roles",
     "text": "There is an arch list to build for: the GPUs' own, or llm_stack_torch_cuda_arch_list."},
    {"id": "host-arch-list-invalid", "part": "host", "severity": "error", "source": "roles",
     "text": "llm_stack_torch_cuda_arch_list is a TORCH_CUDA_ARCH_LIST (\"8.0;9.0+PTX\", \"9.0a 10.0\")."},
    {"id": "host-arch-list-gpus", "part": "host", "severity": "error", "source": "roles",
     "text": "llm_stack_torch_cuda_arch_list names the compute capability of every GPU of the host."},
    {"id": "host-free-space", "part": "host", "severity": "error", "source": "roles",
     "text": "The filesystem that holds llm_stack_prefix has preflight_min_free_gb free."},
    {"id": "host-nvcc-differs", "part": "host", "severity": "warning", "source": "roles",
     "text": "The nvcc found on the host is another release than the pinned toolkit (cuda_toolkit installs and links the pin)."},
    {"id": "host-test-host", "part": "host", "severity": "warning", "source": "roles",
     "text": "A CPU-only test host (llm_stack_cpu_only_test_host) without GPUs takes the CPU test paths."},
    {"id": "host-build-host", "part": "host", "severity": "warning", "source": "roles",
     "text": "A build host without GPUs builds for the inventory's arch list."},
    # part cuda_toolkit: the cuda_toolkit role's checks.
    {"id": "cuda-version-format", "part": "cuda_toolkit", "severity": "error", "source": "cuda-runfiles",
     "text": "The toolkit pin is a full release X.Y.Z, as in the runfile's name."},
    {"id": "cuda-runfile-known", "part": "cuda_toolkit", "severity": "error", "source": "cuda-runfiles",
     "text": "A runfile name is known for the release (the runfile table) or given in cuda_toolkit_runfile_name."},
    {"id": "cuda-runfile-name", "part": "cuda_toolkit", "severity": "error", "source": "cuda-runfiles",
     "text": "cuda_toolkit_runfile_name is NVIDIA's name for the release, cuda_<X.Y.Z>_<driver>_linux.run."},
    {"id": "cuda-runfile-checksum-format", "part": "cuda_toolkit", "severity": "error", "source": "roles",
     "text": "cuda_toolkit_runfile_checksum is sha256:<64 hex digits> or md5:<32 hex digits>."},
    {"id": "cuda-runfile-source", "part": "cuda_toolkit", "severity": "error", "source": "roles",
     "text": "cuda_toolkit_runfile_source is url or controller."},
    {"id": "cuda-runfile-checksum", "part": "cuda_toolkit", "severity": "error", "source": "roles",
     "text": "A runfile the hosts download (source url) has a checksum, when the toolkit must be installed."},
    {"id": "cuda-runfile-src", "part": "cuda_toolkit", "severity": "error", "source": "roles",
     "text": "A controller runfile (source controller) is set, exists on the controller and has the release's name,"
             " when the toolkit must be installed."},
    # part torch: the torch role's checks.
    {"id": "torch-version-format", "part": "torch", "severity": "error", "source": "roles",
     "text": "The torch pin is a plain release X.Y.Z (the build goes in llm_stack_torch_cuda)."},
    {"id": "torch-cuda-format", "part": "torch", "severity": "error", "source": "roles",
     "text": "The torch build is a CUDA index tag cuXYZ (the CPU build is taken only on CPU-only test hosts)."},
    {"id": "python-version-format", "part": "torch", "severity": "error", "source": "roles",
     "text": "The Python pin is X.Y."},
    {"id": "torch-extra-packages", "part": "torch", "severity": "error", "source": "roles",
     "text": "torch_extra_packages are exact pins or bare names."},
    {"id": "torch-interpreter", "part": "torch", "severity": "error", "source": "roles",
     "text": "The interpreter the venv is created from is on the host, is the pinned Python and has a working venv module."},
    {"id": "torch-venv-python", "part": "torch", "severity": "error", "source": "roles",
     "text": "An existing venv runs the pinned Python."},
    {"id": "torch-wheelhouse", "part": "torch", "severity": "error", "source": "roles",
     "text": "torch_wheelhouse is a directory on the controller holding the torch wheel."},
    {"id": "package-index", "part": "torch", "severity": "error", "source": "roles",
     "text": "llm_stack_package_index_url is the base URL of the cache host's package proxy, and the proxy answers"
             " the host for its torch build's index."},
    {"id": "package-index-pending", "part": "torch", "severity": "warning", "source": "roles",
     "text": "In preflight, where the inventory's cache host runs the package proxy (fleet_cache_proxy), a proxy that"
             " does not answer yet is set up by the cache host's play of the run; the torch role asks again before"
             " it installs."},
    # part flash_attn: the flash_attn_build role's checks.
    {"id": "flash-attn-version-format", "part": "flash_attn", "severity": "error", "source": "roles",
     "text": "The flash-attn pin is a release such as 2.8.3."},
    {"id": "flash-attn-options", "part": "flash_attn", "severity": "error", "source": "roles",
     "text": "flash_attn_build_source is sdist or git; flash_attn_build_below_sm80 is skip or fail."},
    {"id": "flash-attn-arch-list", "part": "flash_attn", "severity": "error", "source": "roles",
     "text": "flash-attn has an arch list to build for (flash_attn_build_arch_list, else the GPUs) and it parses."},
    {"id": "flash-attn-below-sm80", "part": "matrix", "severity": "warning", "source": "flash-attn-readme",
     "text": "With flash_attn_build_below_sm80 skip, archs below sm80 are left out of the build (no flash-attn for them)."},
    {"id": "flash-attn-wheelhouse", "part": "flash_attn", "severity": "error", "source": "roles",
     "text": "flash_attn_build_wheelhouse is a directory on the controller holding the flash-attn sdist."},
    {"id": "flash-attn-requirements", "part": "flash_attn", "severity": "error", "source": "roles",
     "text": "flash_attn_build_build_requirements and flash_attn_build_runtime_requirements are exact pins or bare names."},
    {"id": "role-check", "part": "extra", "severity": "error", "source": "roles",
     "text": "A role's own validation (passed to the gate in extra_errors / extra_warnings) found a problem."},
    # part vllm: the vllm_source role's checks (the torch pin, Python and
    # transformers ranges are the matrix's vllm-* rules, run here as well).
    {"id": "vllm-method", "part": "vllm", "severity": "error", "source": "roles",
     "text": "vllm_source_method is auto, source, precompiled or wheel, with the inputs that method needs; auto takes"
             " the release wheel where its CUDA runs on the driver, its torch pin is the stack's and torch's CUDA build"
             " brings its CUDA runtime (rules vllm-binary-driver, vllm-wheel-torch-cuda), else source."},
    {"id": "vllm-binary-driver", "part": "vllm", "severity": "error", "source": "vllm-wheel-cuda",
     "text": "The driver runs the CUDA that the chosen method's binaries were built for (the release wheel's CUDA for"
             " wheel and precompiled; the toolkit's for source): minimum driver of that CUDA's major version."},
    {"id": "vllm-binary-driver-release", "part": "vllm", "severity": "warning", "source": "vllm-wheel-cuda",
     "text": "The driver is at least the one released with the CUDA of vLLM's binaries (otherwise minor version"
             " compatibility only)."},
    {"id": "vllm-wheel-torch", "part": "vllm", "severity": "error", "source": "vllm-metadata",
     "text": "The release wheel (method wheel) pins the torch the venv has: it would replace torch otherwise."},
    {"id": "vllm-wheel-torch-cuda", "part": "vllm", "severity": "error", "source": "vllm-wheel-runtime",
     "text": "The release wheel (method wheel) links the CUDA runtime of its CUDA major (libcudart.so.12 for 0.19.x,"
             " .so.13 from 0.20.0 on), which torch's CUDA build (llm_stack_torch_cuda) must bring: the same CUDA"
             " major."},
    {"id": "vllm-wheel-cuda-unknown", "part": "vllm", "severity": "warning", "source": "vllm-wheel-cuda",
     "text": "The CUDA of the release wheel is known (the matrix's wheel_cuda), so the driver can be checked."},
    # part serve: the vllm_serve role's checks that need no fetched weights (plugins/module_utils/serve_fit.py).
    {"id": "serve-input", "part": "serve", "severity": "error", "source": "roles",
     "text": "The serving sizes are whole numbers or fractions in range (tensor and pipeline parallel size,"
             " max_model_len, gpu_memory_utilization) and vllm_serve_extra_args is a list of strings."},
    {"id": "serve-parallel-gpus", "part": "serve", "severity": "error", "source": "vllm-serve-parallel",
     "text": "Tensor parallel size times pipeline parallel size is at most the host's GPU count."},
    {"id": "serve-tp-heads", "part": "serve", "severity": "error", "source": "vllm-serve-parallel",
     "text": "vLLM accepts the tensor parallel size for the model's attention and KV heads."},
    {"id": "serve-max-len", "part": "serve", "severity": "error", "source": "vllm-serve-max-len",
     "text": "vllm_serve_max_model_len is at most the model's own limit (max_position_embeddings, times a RoPE"
             " scaling factor the model's config sets)."},
    {"id": "serve-max-len-override", "part": "serve", "severity": "warning", "source": "vllm-serve-max-len",
     "text": "A max_model_len above the model's limit that the inventory allows itself (--hf-overrides with RoPE"
             " scaling, or VLLM_ALLOW_LONG_MAX_MODEL_LEN)."},
    {"id": "serve-memory", "part": "serve", "severity": "error", "source": "vllm-serve-memory",
     "text": "The weights at the served dtype and the KV cache of one sequence of max_model_len tokens fit the memory"
             " of the tensor x pipeline parallel GPUs times gpu_memory_utilization, less a margin per GPU."},
    {"id": "serve-own-flags", "part": "serve", "severity": "error", "source": "roles",
     "text": "vllm_serve_extra_args does not set a flag the role sets from its own variables, read as vLLM reads"
             " it (_ is -, a unique prefix is the option, any candidate of an ambiguous prefix counts)."},
    {"id": "serve-extra-args", "part": "serve", "severity": "error", "source": "vllm-argparse",
     "text": "vLLM reads vllm_serve_extra_args as given: no --config, no word that would become the model, no"
             " ambiguous abbreviation, and with the options of the vLLM that runs (or its release) no unknown flag"
             " and none without its value."},
    {"id": "serve-extra-args-unchecked", "part": "serve", "severity": "warning", "source": "vllm-argparse",
     "text": "Where only a nearby release's options are recorded, an unknown flag or one without its value is a"
             " warning."},
    {"id": "serve-preset", "part": "serve", "severity": "error", "source": "vllm-recipes",
     "text": "vllm_serve_preset is auto, none or a preset of plugins/module_utils/serve_fit.py."},
    {"id": "serve-not-checked", "part": "serve", "severity": "warning", "source": "vllm-recipes",
     "text": "A check that needs a value of the model that neither the model table nor a fetched config.json gives"
             " is named as not checked."},
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

# cuda-runfile-known: THE runfile table. NVIDIA's runfile of each release
# carries the bundled driver in its name, so the table is derived from
# CUDA_RELEASE_DRIVER (never written out a second time).
RUNFILE_NAME = "cuda_{version}_{driver}_linux.run"
RUNFILE_URL = "https://developer.download.nvidia.com/compute/cuda/{version}/local_installers/{name}"
# Checksums NVIDIA publishes for each release's installers.
RUNFILE_MD5_URL = "https://developer.download.nvidia.com/compute/cuda/{version}/docs/sidebar/md5sum.txt"
CUDA_RUNFILES = dict(
    (version, {"name": RUNFILE_NAME.format(version=version, driver=driver),
               "url": RUNFILE_URL.format(version=version, name=RUNFILE_NAME.format(version=version, driver=driver)),
               "driver": driver})
    for version, driver in CUDA_RELEASE_DRIVER.items()
)

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

# What make matrix reads, and the facts it cannot read from the index.
# VLLM_FLOOR: the oldest vLLM release the matrix lists.
VLLM_FLOOR = "0.17.0"
# vllm-binary-driver (source vllm-wheel-cuda): the CUDA of the default
# release wheel. Nothing in a wheel's METADATA names the CUDA it was built
# with, so it is taken: for a release in VLLM_WHEEL_CUDA, from that table
# (None: not checked, the rule warns); from VLLM_WHEEL_CUDA_FOLLOWS_TORCH on,
# from the CUDA runtime that the pinned torch's wheel on the index requires
# (VLLM_MAIN_CUDA_VERSION follows PyTorch); make matrix stops where that
# and the CUDA major that vLLM's own requirements name ([cu13]) differ.
VLLM_WHEEL_CUDA = {
    # not checked for these releases
    "0.17.0": None, "0.17.1": None, "0.18.0": None, "0.18.1": None,
    # CMakeLists.txt of v0.19.0 and v0.19.1: VLLM_MAIN_CUDA_VERSION 12.9 (torch 2.10.0's wheel runs CUDA 12.8)
    "0.19.0": "12.9", "0.19.1": "12.9",
}
VLLM_WHEEL_CUDA_FOLLOWS_TORCH = "0.20.0"

# model-vllm, model-transformers: each model family, by the name of its
# repo id (after the org, any org: quantized community repos keep the
# architecture; matched in full, case-insensitive, the first row that
# matches wins), its model_types and the first vLLM and transformers
# releases that know them (sources vllm-model-registry and
# transformers-wheels). A floor is a necessary minimum for every model of
# the family; variants of another architecture (-VL, -Omni, -Next) need
# newer releases, which the gate does not check.
MODEL_FAMILIES = (
    {"family": "Qwen3.5", "name": r"qwen3\.5(?:-.*)?", "model_types": ["qwen3_5", "qwen3_5_moe"],
     "min_vllm": "0.17.0", "min_transformers": "5.2.0"},
    {"family": "Qwen3", "name": r"qwen3-.*", "model_types": ["qwen3", "qwen3_moe"],
     "min_vllm": "0.8.4", "min_transformers": "4.51.0"},
    {"family": "Qwen2 MoE", "name": r"qwen2-[0-9.]+b-a[0-9.]+b(?:-.*)?", "model_types": ["qwen2_moe"],
     "min_vllm": "0.4.0", "min_transformers": "4.40.0"},
    {"family": "Qwen2", "name": r"qwen2(?:\.5)?-.*", "model_types": ["qwen2"],
     "min_vllm": "0.3.0", "min_transformers": "4.37.0"},
)

# BEGIN GENERATED: make matrix
# vllm-*: from each release's wheel METADATA on the package index (the
# x86_64 wheel: Requires-Dist torch==, transformers; Requires-Python).
# transformers_suggest: the newest patch of the oldest minor series that
# meets the requirement and Qwen3.5's floor (None when no release does).
# wheel_cuda: the CUDA of the release wheel (VLLM_WHEEL_CUDA above).
VLLM = {
    "0.17.0": {"torch": "2.10.0", "python": ">=3.10,<3.14", "transformers": ">=4.56.0,<5", "transformers_suggest": None,
               "wheel_cuda": None},
    "0.17.1": {"torch": "2.10.0", "python": ">=3.10,<3.14", "transformers": ">=4.56.0,<5", "transformers_suggest": None,
               "wheel_cuda": None},
    "0.18.0": {"torch": "2.10.0", "python": ">=3.10,<3.14", "transformers": ">=4.56.0,<5", "transformers_suggest": None,
               "wheel_cuda": None},
    "0.18.1": {"torch": "2.10.0", "python": ">=3.10,<3.14", "transformers": ">=4.56.0,<5", "transformers_suggest": None,
               "wheel_cuda": None},
    "0.19.0": {"torch": "2.10.0", "python": ">=3.10,<3.14", "transformers": ">=4.56.0,<5", "transformers_suggest": None,
               "wheel_cuda": "12.9"},
    "0.19.1": {"torch": "2.10.0", "python": ">=3.10,<3.14",
               "transformers": "!=5.0.*,!=5.1.*,!=5.2.*,!=5.3.*,!=5.4.*,!=5.5.0,>=4.56.0",
               "transformers_suggest": "5.5.4", "wheel_cuda": "12.9"},
    "0.20.0": {"torch": "2.11.0", "python": ">=3.10,<3.15",
               "transformers": "!=5.0.*,!=5.1.*,!=5.2.*,!=5.3.*,!=5.4.*,!=5.5.0,>=4.56.0",
               "transformers_suggest": "5.5.4", "wheel_cuda": "13.0"},
    "0.20.1": {"torch": "2.11.0", "python": ">=3.10,<3.15",
               "transformers": "!=5.0.*,!=5.1.*,!=5.2.*,!=5.3.*,!=5.4.*,!=5.5.0,>=4.56.0",
               "transformers_suggest": "5.5.4", "wheel_cuda": "13.0"},
    "0.20.2": {"torch": "2.11.0", "python": ">=3.10,<3.15",
               "transformers": "!=5.0.*,!=5.1.*,!=5.2.*,!=5.3.*,!=5.4.*,!=5.5.0,>=4.56.0",
               "transformers_suggest": "5.5.4", "wheel_cuda": "13.0"},
    "0.21.0": {"torch": "2.11.0", "python": ">=3.10,<3.15",
               "transformers": "!=5.0.*,!=5.1.*,!=5.2.*,!=5.3.*,!=5.4.*,!=5.5.0,>=4.56.0",
               "transformers_suggest": "5.5.4", "wheel_cuda": "13.0"},
    "0.22.0": {"torch": "2.11.0", "python": ">=3.10,<3.15",
               "transformers": "!=5.0.*,!=5.1.*,!=5.2.*,!=5.3.*,!=5.4.*,!=5.5.0,>=4.56.0",
               "transformers_suggest": "5.5.4", "wheel_cuda": "13.0"},
    "0.22.1": {"torch": "2.11.0", "python": ">=3.10,<3.15",
               "transformers": "!=5.0.*,!=5.1.*,!=5.2.*,!=5.3.*,!=5.4.*,!=5.5.0,>=4.56.0",
               "transformers_suggest": "5.5.4", "wheel_cuda": "13.0"},
    "0.23.0": {"torch": "2.11.0", "python": ">=3.10,<3.15",
               "transformers": "!=5.0.*,!=5.1.*,!=5.2.*,!=5.3.*,!=5.4.*,!=5.5.0,>=4.56.0",
               "transformers_suggest": "5.5.4", "wheel_cuda": "13.0"},
    "0.24.0": {"torch": "2.11.0", "python": ">=3.10,<3.15", "transformers": ">=5.5.3", "transformers_suggest": "5.5.4",
               "wheel_cuda": "13.0"},
    "0.25.0": {"torch": "2.11.0", "python": ">=3.10,<3.15", "transformers": ">=5.5.3", "transformers_suggest": "5.5.4",
               "wheel_cuda": "13.0"},
    "0.25.1": {"torch": "2.11.0", "python": ">=3.10,<3.15", "transformers": ">=5.5.3", "transformers_suggest": "5.5.4",
               "wheel_cuda": "13.0"},
    "0.26.0": {"torch": "2.11.0", "python": ">=3.10,<3.15", "transformers": ">=5.5.3", "transformers_suggest": "5.5.4",
               "wheel_cuda": "13.0"},
    "0.27.0": {"torch": "2.13.0", "python": ">=3.10,<3.15", "transformers": ">=5.5.3", "transformers_suggest": "5.5.4",
               "wheel_cuda": "13.0"},
    "0.27.1": {"torch": "2.13.0", "python": ">=3.10,<3.15", "transformers": ">=5.5.3", "transformers_suggest": "5.5.4",
               "wheel_cuda": "13.0"},
    "0.28.0": {"torch": "2.13.0", "python": ">=3.10,<3.15", "transformers": ">=5.5.3", "transformers_suggest": "5.5.4",
               "wheel_cuda": "13.0"},
    "0.29.0": {"torch": "2.13.0", "python": ">=3.10,<3.15", "transformers": ">=5.10.4",
               "transformers_suggest": "5.10.4", "wheel_cuda": "13.0"},
    "0.30.0": {"torch": "2.13.0", "python": ">=3.10,<3.15", "transformers": ">=5.10.4",
               "transformers_suggest": "5.10.4", "wheel_cuda": "13.0"},
    "0.31.0": {"torch": "2.13.0", "python": ">=3.10,<3.15", "transformers": ">=5.10.4,<5.18.0",
               "transformers_suggest": "5.10.4", "wheel_cuda": "13.0"},
    "0.32.0": {"torch": "2.13.0", "python": ">=3.11,<3.15", "transformers": ">=5.16.1,<5.20.0",
               "transformers_suggest": "5.16.1", "wheel_cuda": "13.0"},
    "0.33.0": {"torch": "2.14.0", "python": ">=3.11,<3.15", "transformers": ">=5.16.1,<5.21.0",
               "transformers_suggest": "5.16.1", "wheel_cuda": "13.0"},
    "0.34.0": {"torch": "2.14.0", "python": ">=3.11,<3.15", "transformers": ">=5.16.1,<5.23.0",
               "transformers_suggest": "5.16.1", "wheel_cuda": "13.0"},
}
# torch-known: the releases on the package index of the minors TORCH has.
TORCH_RELEASES = [
    "2.0.0", "2.0.1", "2.1.0", "2.1.1", "2.1.2", "2.2.0", "2.2.1", "2.2.2", "2.3.0", "2.3.1", "2.4.0", "2.4.1", "2.5.0",
    "2.5.1", "2.6.0", "2.7.0", "2.7.1", "2.8.0", "2.9.0", "2.9.1", "2.10.0", "2.11.0", "2.12.0", "2.12.1", "2.13.0",
    "2.14.0", "2.14.1",
]
# transformers-known: the releases on the package index from the oldest
# floor of MODEL_FAMILIES on.
TRANSFORMERS_RELEASES = [
    "4.37.0", "4.37.1", "4.37.2", "4.38.0", "4.38.1", "4.38.2", "4.39.0", "4.39.1", "4.39.2", "4.39.3", "4.40.0",
    "4.40.1", "4.40.2", "4.41.0", "4.41.1", "4.41.2", "4.42.0", "4.42.1", "4.42.2", "4.42.3", "4.42.4", "4.43.0",
    "4.43.1", "4.43.2", "4.43.3", "4.43.4", "4.44.0", "4.44.1", "4.44.2", "4.45.0", "4.45.1", "4.45.2", "4.46.1",
    "4.46.2", "4.46.3", "4.47.0", "4.47.1", "4.48.0", "4.48.1", "4.48.2", "4.48.3", "4.49.0", "4.50.0", "4.50.1",
    "4.50.2", "4.50.3", "4.51.0", "4.51.1", "4.51.2", "4.51.3", "4.52.1", "4.52.2", "4.52.3", "4.52.4", "4.53.0",
    "4.53.1", "4.53.2", "4.53.3", "4.54.0", "4.54.1", "4.55.0", "4.55.1", "4.55.2", "4.55.3", "4.55.4", "4.56.0",
    "4.56.1", "4.56.2", "4.57.1", "4.57.2", "4.57.3", "4.57.4", "4.57.5", "4.57.6", "5.0.0", "5.1.0", "5.2.0", "5.3.0",
    "5.4.0", "5.5.0", "5.5.1", "5.5.2", "5.5.3", "5.5.4", "5.6.0", "5.6.1", "5.6.2", "5.7.0", "5.8.0", "5.8.1", "5.9.0",
    "5.10.1", "5.10.2", "5.10.4", "5.11.0", "5.12.0", "5.12.1", "5.13.0", "5.13.1", "5.14.0", "5.14.1", "5.15.0",
    "5.15.1", "5.16.0", "5.16.1", "5.17.0", "5.18.0", "5.19.0", "5.20.0", "5.20.1", "5.20.2", "5.21.0", "5.21.1",
    "5.22.0", "5.22.1", "5.22.2", "5.23.0", "5.24.0", "5.25.0",
]
# END GENERATED: make matrix

# flash-attn-*: FlashAttention-2 floors per minor release; the architecture
# floor holds for every 2.x release.
FLASH_ATTN_MIN_ARCH = "8.0"
FLASH_ATTN = {
    "2.8": {"min_cuda": "12.0", "min_torch": "2.2", "latest": "2.8.3.post2"},
}

# qwen35-model-*: the Qwen3.5 repos.
QWEN35 = {
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
