# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vLLM's command line, read the way vLLM reads it: the one parser of ``vllm_serve_extra_args``.

``vllm serve`` does not hand its arguments to argparse as given.
``FlexibleArgumentParser.parse_args`` (vllm/utils/argparse_utils.py, the
same in every release from 0.17.0 to 0.34.0) first:

- turns ``_`` into ``-`` in a flag's name, from ``--`` up to the first
  ``.`` (``--api_key`` is ``--api-key``, ``--port_`` is ``--port-``);
- turns ``-O3`` and ``-O=3`` into ``--optimization-level 3``;
- turns a dotted flag (``--hf-overrides.rope_scaling.factor 4``, ``-x.y=v``)
  into its base flag with a JSON value, added after the other arguments;
- replaces ``--config FILE`` (the literal word) by the flags the YAML file
  holds, which nobody here can check.

argparse then resolves each flag: exactly, or before its ``=``, or as an
abbreviation (vLLM leaves ``allow_abbrev`` on: ``--api-ke`` is ``--api-key``
when no other option starts so; a single-dash flag takes the rest of its word
as its value, ``-qfp8`` is ``-q fp8``), and gives the words no flag takes to the positional
``model_tag``, which replaces the model served.

``parse`` does the same over the inventory's arguments and a table of vLLM's
options: the installed vLLM's own, read on the host by ``DUMP_SCRIPT``
through the venv's Python (``vllm_serve_info``), else the options recorded
from the release wheels of the matrix's vLLM releases (``vllm_options.py``,
``make vllm-options``). ``findings`` lists what vLLM would read as a flag the
role sets itself (any of an abbreviation's candidates counts), ``--config``,
an ambiguous or unknown flag, a flag without its value, and a word that
would become the positional model. The serving checks (``serve_fit.check``,
the gate's part ``serve`` and the role's plan) use nothing else.

Standard library only (the module runs on the managed host too).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import vllm_options

# The destinations of the flags the role sets from its own variables: every alias of them counts
# (--device-memory-utilization is gpu_memory_utilization from vLLM 0.31.0 on, -tp is tensor_parallel_size).
OWN_DESTS = {
    "api_key": "vllm_serve_api_key",
    "host": "vllm_serve_host",
    "port": "vllm_serve_port",
    "served_model_name": "vllm_serve_served_model_name",
    "tensor_parallel_size": "vllm_serve_tensor_parallel_size",
    "pipeline_parallel_size": "vllm_serve_pipeline_parallel_size",
    "gpu_memory_utilization": "vllm_serve_gpu_memory_utilization",
    "max_model_len": "vllm_serve_max_model_len",
    "model": "vllm_serve_model",
}
# --config reads further flags from a YAML file on the host, which no check here reads.
CONFIG_DEST = "config"

# The marker of the line DUMP_SCRIPT prints (vLLM's own log lines may go to stdout too).
DUMP_MARKER = "LLM_STACK_VLLM_OPTIONS "
# Run with the venv's Python on the host: the options of the parser `vllm serve` builds (its serve
# subcommand), each with its nargs and destination, and the positionals. Imports vLLM, so it takes
# seconds (5 to 17 s on a 2-core test machine).
DUMP_SCRIPT = r'''
import argparse, json
try:
    from vllm.utils.argparse_utils import FlexibleArgumentParser
except ImportError:
    from vllm.utils import FlexibleArgumentParser
from vllm.entrypoints.cli.serve import ServeSubcommand
import vllm

top = FlexibleArgumentParser(prog="vllm")
serve = ServeSubcommand().subparser_init(top.add_subparsers(dest="subparser"))


def nargs(action):
    if action.nargs is None:
        return "1"
    if action.nargs == argparse.REMAINDER:
        return "..."
    return str(action.nargs)


print("LLM_STACK_VLLM_OPTIONS " + json.dumps({
    "version": getattr(vllm, "__version__", None),
    "allow_abbrev": bool(serve.allow_abbrev),
    "options": dict((option, [nargs(action), action.dest]) for action in serve._actions
                    for option in action.option_strings),
    "positionals": [[action.dest, nargs(action)] for action in serve._actions if not action.option_strings],
}, sort_keys=True))
'''
NARGS = ("0", "1", "?", "*", "+", "...")
_NARGS_RE = re.compile(r"[0-9]{1,2}|[?*+]|\.\.\.", re.ASCII)
_OPTION_RE = re.compile(r"-{1,2}[A-Za-z0-9][A-Za-z0-9_.-]{0,99}", re.ASCII)
_DEST_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}", re.ASCII)
_NEGATIVE_RE = re.compile(r"^-\d+$|^-\d*\.\d+$")
_DOTTED_KEY_RE = re.compile(r"(?<=--)[^.]*")


class Table(object):
    """vLLM's options: {option: (nargs, dest)}, allow_abbrev, where they come from, and whether they are vLLM's own.

    exact: the options of the vLLM that runs (the host's dump) or recorded from the same release.
    """

    __slots__ = ("options", "allow_abbrev", "source", "exact", "version")

    def __init__(self, options, allow_abbrev=True, source="", exact=False, version=None):
        self.options = options
        self.allow_abbrev = allow_abbrev
        self.source = source
        self.exact = exact
        self.version = version


def read_dump(stdout):
    """The dict DUMP_SCRIPT printed (its last marked line), checked; None when there is none or it is malformed."""
    found = None
    for line in (stdout or "").splitlines():
        if line.startswith(DUMP_MARKER):
            found = line[len(DUMP_MARKER):]
    if found is None:
        return None
    try:
        data = json.loads(found)
    except ValueError:
        return None
    return data if dump_problem(data) is None else None


def dump_problem(data):
    """Why a dump (DUMP_SCRIPT's dict, or one handed to the gate) cannot be used, or None."""
    if not isinstance(data, dict):
        return "not a dict"
    options = data.get("options")
    if not isinstance(options, dict) or not options:
        return "no options"
    for name, value in options.items():
        if not isinstance(name, str) or not _OPTION_RE.fullmatch(name):
            return "%r is not an option name" % (name,)
        if (not isinstance(value, (list, tuple)) or len(value) != 2 or not isinstance(value[0], str)
                or not _NARGS_RE.fullmatch(value[0]) or not isinstance(value[1], str) or not _DEST_RE.fullmatch(value[1])):
            return "%s: not [nargs, dest]" % name
    if not isinstance(data.get("allow_abbrev", True), bool):
        return "allow_abbrev is not a bool"
    return None


def table(dump=None, version=None):
    """The options to read the arguments against: the host's dump when it is usable, else the recorded release.

    version: the vLLM release installed (or pinned) for the recorded fallback; the newest recorded release
    not newer than it (else the oldest) when it is not recorded itself.
    """
    if dump is not None and dump_problem(dump) is None:
        options = dict((name, (value[0], value[1])) for name, value in dump["options"].items())
        shown = dump.get("version") or version or "unknown"
        return Table(options, dump.get("allow_abbrev", True), "the options of the installed vLLM %s" % shown,
                     True, dump.get("version") or version)
    release, exact = vllm_options.nearest(version)
    options = vllm_options.options_of(release)
    if exact:
        source = "the options of vLLM %s, recorded from its release wheel" % release
    else:
        source = ("the options of vLLM %s, recorded from its release wheel (vLLM %s is not recorded)"
                  % (release, version or "unknown"))
    return Table(options, vllm_options.ALLOW_ABBREV, source, exact, release)


def _derived_dest(name):
    bare = name.lstrip("-")
    if bare.startswith("no-"):
        bare = bare[3:]
    return bare.replace("-", "_")


# --- vLLM's rewriting (FlexibleArgumentParser.parse_args) ----------------------------------

def rewrite(args):
    """The words vLLM hands to argparse, each with the index of the inventory's word it comes from.

    Returns (words, config): config is the index of a literal --config, which vLLM replaces by the
    YAML file's flags (None when absent).
    """
    config = None
    processed = []
    for index, arg in enumerate(args):
        if arg == "--config" and config is None:
            config = index
        if arg.startswith("--"):
            if "=" in arg:
                key, value = arg.split("=", 1)
                processed.append((_DOTTED_KEY_RE.sub(lambda m: m.group(0).replace("_", "-"), key, count=1)
                                  + "=" + value, index))
            else:
                processed.append((_DOTTED_KEY_RE.sub(lambda m: m.group(0).replace("_", "-"), arg, count=1), index))
        elif arg.startswith("-O") and arg != "-O":
            processed += [("--optimization-level", index), (arg[3:] if arg[2:3] == "=" else arg[2:], index)]
        elif arg == "-O" and index + 1 < len(args) and args[index + 1] in ("0", "1", "2", "3"):
            processed.append(("--optimization-level", index))
        else:
            processed.append((arg, index))
    # Dotted flags: --key.a.b VALUE (or =VALUE) become "--key JSON", after every other word.
    kept, dicts, skip = [], {}, set()
    for position, (word, index) in enumerate(processed):
        if position in skip:
            continue
        if word.startswith("-") and "." in word:
            head = word
            if "=" in word:
                head, value = word.split("=", 1)
                if "." not in head:
                    kept.append((word, index))
                    continue
            elif position + 1 < len(processed):
                value = processed[position + 1][0]
                skip.add(position + 1)
            else:
                # vLLM itself fails here (an IndexError); nothing is passed.
                kept.append((head.split(".", 1)[0], index))
                continue
            if head.endswith("+"):
                head = head[:-1]
            key, rest = head.split(".", 1)
            node = dicts.setdefault(key, ({}, index))[0]
            parts = rest.split(".")
            for part in parts[:-1]:
                child = node.get(part)
                if not isinstance(child, dict):
                    child = node[part] = {}
                node = child
            node[parts[-1]] = value
            continue
        kept.append((word, index))
    for key in dicts:
        value, index = dicts[key]
        kept += [(key, index), (json.dumps(value, sort_keys=True), index)]
    return kept, config


# --- argparse's reading ----------------------------------------------------------------------

def _candidates(word, options, allow_abbrev):
    """[(option, explicit value or None)] argparse would take word for (its _parse_optional)."""
    if word in options:
        return [(word, None)]
    if len(word) == 1:
        return []
    if "=" in word:
        name, explicit = word.split("=", 1)
        if name in options:
            return [(name, explicit)]
    found = []
    if word[1] == "-":
        if allow_abbrev:
            prefix, explicit = word.split("=", 1) if "=" in word else (word, None)
            found = [(option, explicit) for option in sorted(options) if option.startswith(prefix)]
    else:
        short, attached = word[:2], word[2:]
        for option in sorted(options):
            if option == short:
                found.append((option, attached))
            elif option.startswith(word):
                found.append((option, None))
    return found


def _classify(word, options, allow_abbrev):
    """'A' for a word argparse takes as a value or positional, 'O' for a flag (known or not)."""
    if not word or word[0] != "-" or len(word) == 1:
        return "A"
    if _candidates(word, options, allow_abbrev):
        return "O"
    if _NEGATIVE_RE.match(word) and not any(_NEGATIVE_RE.match(option) for option in options):
        return "A"
    if " " in word:
        return "A"
    return "O"


def parse(args, table_):
    """Read args as vLLM would; returns {flags, findings}.

    flags: [{word, option, dest, values}] in the order vLLM applies them (the last one of a dest wins).
    findings: [{kind, word, index (of the inventory's item), ...}], kind one of own (a flag the role sets; dest, option, variable,
    candidates), config, ambiguous (candidates), unknown, no_value (option), explicit_on_switch (option),
    positional.
    """
    options = table_.options
    words, config = rewrite(list(args))
    findings = []
    if config is not None:
        findings.append({"kind": "config", "word": args[config], "index": config, "option": "--config"})
    kinds = [("A" if seen_dashes else _classify(word, options, table_.allow_abbrev))
             for seen_dashes, (word, dummy) in _after_dashes(words)]
    flags = []
    position = 0
    while position < len(words):
        word, origin = words[position]
        given = args[origin]
        if kinds[position] == "A":
            if word == "--":
                position += 1
                continue
            findings.append({"kind": "positional", "word": given, "index": origin})
            position += 1
            continue
        found = _candidates(word, options, table_.allow_abbrev)
        dests = sorted(set(options[option][1] for option, dummy in found))
        own = [(option, options[option][1]) for option, dummy in found if options[option][1] in OWN_DESTS]
        if own:
            findings.append({"kind": "own", "word": given, "index": origin, "option": own[0][0], "dest": own[0][1],
                             "variable": OWN_DESTS[own[0][1]], "candidates": [option for option, dummy in found]})
        if any(options[option][1] == CONFIG_DEST for option, dummy in found) and config is None:
            findings.append({"kind": "config", "word": given, "index": origin, "option": "--config"})
        if not found:
            near = _derived_dest(word.split("=", 1)[0].rstrip("-"))
            if near in OWN_DESTS:
                # --port_ (--port-): argparse refuses it, but a later release may know an option it abbreviates
                findings.append({"kind": "own", "word": given, "index": origin, "option": "--" + near.replace("_", "-"),
                                 "dest": near, "variable": OWN_DESTS[near], "candidates": []})
            findings.append({"kind": "unknown", "word": given, "index": origin})
            position = _past_values(words, kinds, position + 1)
            continue
        if len(dests) > 1:
            if not own:
                findings.append({"kind": "ambiguous", "word": given, "index": origin,
                                 "candidates": [option for option, dummy in found]})
            position = _past_values(words, kinds, position + 1)
            continue
        option, explicit = found[0]
        nargs, dest = options[option]
        position += 1
        values = []
        if explicit is not None:
            if nargs == "0" and word[1] != "-" and explicit != "":
                # -xyz: argparse reads the rest as further single-dash flags
                words.insert(position, ("-" + explicit, origin))
                kinds.insert(position, _classify("-" + explicit, options, table_.allow_abbrev))
            elif nargs == "0":
                findings.append({"kind": "explicit_on_switch", "word": given, "index": origin, "option": option})
            elif nargs in ("1", "?", "*", "+", "..."):
                values = [explicit]
            else:
                findings.append({"kind": "no_value", "word": given, "index": origin, "option": option})
        elif nargs == "...":
            values = [item[0] for item in words[position:]]
            position = len(words)
        elif nargs != "0":
            while position < len(words) and kinds[position] == "A" and words[position][0] != "--":
                values.append(words[position][0])
                position += 1
                if nargs in ("1", "?") or (nargs.isdigit() and len(values) >= int(nargs)):
                    break
            wanted = int(nargs) if nargs.isdigit() else (1 if nargs in ("1", "+") else 0)
            if len(values) < wanted:
                findings.append({"kind": "no_value", "word": given, "index": origin, "option": option})
        flags.append({"word": given, "option": option, "dest": dest, "values": values})
    return {"flags": flags, "findings": findings}


def _past_values(words, kinds, position):
    """The position after the values of a flag vLLM refuses (its values are not the positional model)."""
    while position < len(words) and kinds[position] == "A" and words[position][0] != "--":
        position += 1
    return position


def _after_dashes(words):
    seen = False
    for item in words:
        yield seen, item
        if item[0] == "--":
            seen = True


def given_dests(args, table_):
    """The destinations the arguments set (a --no-X or --disable-X sets X's)."""
    return set(flag["dest"] for flag in parse(args, table_)["flags"])


def value_of(args, table_, dests):
    """The value the last flag of one of dests gets (argparse: the last one wins); None when none sets it."""
    found = None
    for flag in parse(args, table_)["flags"]:
        if flag["dest"] in dests:
            found = " ".join(flag["values"]) if flag["values"] else ""
    return found


def dest_of(option, table_):
    """The destination of one of vLLM's options (derived from its name when the table lacks it)."""
    known = table_.options.get(option)
    return known[1] if known else _derived_dest(option)
