# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The torch role's gate around its reading of the venv, as pure functions.

The torch_state action (plugins/action/torch_state.py) reads the host with
torch_info (the options come from ``reading_options``), judges the reading
with the gate, stack_compat's part torch (``gate_options``), and gives the
role's verdict where the reading is the last one (``verdict``). Nothing
here reads or changes the host.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpufleet.llm_stack.plugins.module_utils.host_gpus import gpus_known, host_gpus

# What the action sets itself, never the caller: from the play's facts, and how the reading is returned.
READ_SET_HERE = ("read_gpus", "gpu_count", "compute_caps", "driver_version", "set_facts")
# What the gate takes from the host's GPUs and the reading, never from the caller.
GATE_SET_HERE = ("parts", "gpus", "driver_version", "interpreter", "venv_python", "fail_as", "show_warnings",
                 "package_index")


class TorchStateError(TypeError):
    """The role passed something of the wrong shape (a bug of the caller, not of the inventory)."""


def caller_options(options, name, reserved):
    """The caller's options (a dict) without the null ones; refuses those the action sets itself."""
    if not isinstance(options, dict):
        raise TorchStateError("%s must be a dict of options, got %s" % (name, type(options).__name__))
    taken = sorted(set(options) & set(reserved))
    if taken:
        raise TorchStateError("%s: %s are set by torch_state itself (from the play's facts and the reading)"
                              % (name, ", ".join(taken)))
    return dict((key, value) for key, value in options.items() if value is not None)


def pip_source(gate):
    """Where the role's pip installs torch from: "wheelhouse" where the gate's torch_wheelhouse (the controller's
    wheelhouse, pushed to the host) is set, else "index"."""
    return "wheelhouse" if gate.get("torch_wheelhouse") else "index"


def fail_as(label, collect=False):
    """Who stops on an error: nobody with collect (preflight, which collects every role's gate), else label."""
    return "" if collect else label


def reading_wheelhouse(gate, dest):
    """The reading's wheelhouse: dest (where the role pushes the controller's wheelhouse) where pip installs from
    the wheelhouse (``pip_source``), else None (the reading names the index)."""
    return dest if pip_source(gate) == "wheelhouse" else None


def reading_options(read, facts=None, collect=False):
    """torch_info's options: the caller's, and the GPUs from the play's facts, or read by torch_info where
    neither preflight's report nor the GPU facts are in the play. The reading is returned, not set as facts.
    With collect (preflight) torch is not imported and no record is read (torch/version.py only)."""
    options = caller_options(read, "read", READ_SET_HERE)
    options["set_facts"] = False
    if collect:
        options.update(import_torch=False, use_record=False)
    if gpus_known(facts):
        gpus = host_gpus(facts)
        options.update(read_gpus=False, gpu_count=gpus["count"], compute_caps=list(gpus["compute_caps"]))
        if gpus["driver_version"]:
            options["driver_version"] = gpus["driver_version"]
    else:
        options["read_gpus"] = True
    return options


def gate_options(gate, facts, reading, fail_as=""):
    """stack_compat's options for part torch: the caller's, the host's GPUs and driver (the play's facts with what
    the reading read), the interpreter the venv is made from and the venv's own Python, as the reading found them."""
    options = caller_options(gate, "gate", GATE_SET_HERE)
    if not isinstance(reading, dict):
        raise TorchStateError("reading must be a torch_info result, got %s" % type(reading).__name__)
    gpus = host_gpus(facts)
    venv = reading.get("venv") if isinstance(reading.get("venv"), dict) else {}
    options.update(parts=["torch"], gpus=list(gpus["compute_caps"]), interpreter=reading.get("interpreter"),
                   fail_as="" if fail_as is None else str(fail_as).strip())
    if gpus["driver_version"]:
        options["driver_version"] = gpus["driver_version"]
    if venv.get("python_version"):
        options["venv_python"] = venv["python_version"]
    if isinstance(reading.get("package_index"), dict):
        options["package_index"] = reading["package_index"]
    return options


def mark_planned_proxy(reading, planned):
    """Marks the reading's answer of the package proxy planned (the gate then warns where it did not answer) where
    planned: preflight, with the inventory's cache host running the proxy, which the run sets up after preflight."""
    if planned and isinstance(reading, dict) and isinstance(reading.get("package_index"), dict):
        reading["package_index"]["planned"] = True
    return reading


def controller_text(path):
    """The text of a controller file (the package proxy's CA), '' where path is empty or no readable file."""
    if not path or not os.path.isfile(path):
        return ""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return ""


def last_reading(reading, after_install=False):
    """Whether this reading is the role's last: after its install, or where it asks for no install and no record."""
    return bool(after_install) or not (reading.get("needs_install") or reading.get("record_stale"))


def verdict(reading, hostname, check_mode=False):
    """The role's verdict on its last reading: None where the venv's torch is right (or, in check mode, would be
    installed), else the failure, every problem of the reading in it."""
    if reading.get("ok") or (check_mode and reading.get("needs_install")):
        return None
    return "%s: %s" % (hostname, reading.get("failure") or "the venv's torch is not right")


def split_reading(result):
    """A torch_info result as an action got it: (the reading without its invocation, warnings and facts, the
    warnings, the facts). The reading's warnings and facts become the action's own."""
    reading = dict(result)
    reading.pop("invocation", None)
    warnings = list(reading.pop("warnings", None) or [])
    facts = dict(reading.pop("ansible_facts", None) or {})
    return reading, warnings, facts
