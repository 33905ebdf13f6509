# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every decision of the vllm_serve role, as pure functions.

The role reads the host (module ``vllm_serve_info``: PID 1, the model's
``config.json`` and manifest, the venv's vLLM, the service's state), hands
what it read to ``plan`` (through the ``vllm_serve_state`` action) and acts
on the result:

- the service manager (``auto``: systemd when PID 1 is systemd, else
  supervisord);
- ``--tensor-parallel-size`` and ``--pipeline-parallel-size``, the model's
  limits and the memory fit (``serve_fit.check``, the same checks as the
  gate's part ``serve``; ``auto``: the host's GPU count reduced to the
  largest size vLLM accepts for the model's heads, with the reason), and the
  flags preset of vLLM's recipes for the model's family;
- the argv of ``vllm serve`` (never a secret: the API key reaches vLLM as
  ``VLLM_API_KEY`` from the 0600 environment file), its systemd and shell
  spellings, and the environment file's text (``env_file_text``, the only
  function that sees the secrets);
- the fingerprint that decides a restart (argv, environment names and
  non-secret values, unit settings, the installed vLLM, the model revision;
  the secrets change the environment file, which restarts on its own);
- the health gate's verdict (``health_verdict``) and the benchmark's
  result and thresholds (``bench_result``).

Bad input never raises here: each problem is a message in ``errors`` that
names the inventory variable and the fix. Only arguments of the wrong
shape, a bug of the role, raise ``VllmServeError``.

The code lives in private modules by concern, each name re-exported here
(the modules, actions and tests import it from vllm_serve): ``_serve_plan``
(the plan, the command lines, the environment file, the fingerprint),
``_serve_health`` (the health gate), ``_serve_bench`` (the benchmark) and
``_serve_state`` (the service's state and the log of a failed start).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# Re-exported: the names of the modules below are this module's interface.
# pylint: disable=unused-import
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._serve_plan import (  # noqa: F401
    API_KEY_MIN_LENGTH, BENCH_FACT, BENCH_WHEN, INPUTS, MODES, ROLE_ENV, SECRET_ENV, SERVE_KEYS, STOP_GRACE, STOP_TIMEOUT, THRESHOLDS,
    VllmServeError, env_file_text, env_quote, fingerprint, gate_fail_as, gpu_indexes, heads_of, host_gpu_count, host_gpu_memory,
    model_dir_of, pid1_mode, plan, read_env_key, reading_options, secret_problems, serve_inputs, shell_quote, slug,
    supervisor_pip_argv, supervisor_pip_environment, systemd_quote)
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._serve_health import completion_ok, headless_verdict, health_verdict, models_lists  # noqa: F401
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._serve_bench import BENCH_KEYS, bench_result  # noqa: F401
from ansible_collections.gpufleet.llm_stack.plugins.module_utils._serve_state import (  # noqa: F401
    SUPERVISOR_GAVE_UP, SUPERVISOR_UP, SYSTEMD_UP, log_excerpt, parse_systemctl_show, supervisor_state, systemd_state)
# The role's own flags and vLLM's tensor parallel rule live in serve_fit.
from ansible_collections.gpufleet.llm_stack.plugins.module_utils.serve_fit import OWN_FLAGS, tp_valid  # noqa: F401
