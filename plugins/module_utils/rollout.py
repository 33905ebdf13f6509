# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rollout settings of a play (``serial``, ``max_fail_percentage``), read from the inventory.

Ansible templates a play's keywords with the play's variables only: extra
vars, play vars and role defaults. Inventory variables (``group_vars/all``)
are host variables, which a play keyword sees only through ``hostvars``.
So the changing plays of the collection read ``llm_stack_serial`` and
``llm_stack_max_fail_percentage`` from the ``hostvars`` of the play's hosts
with :func:`setting` (extra vars and AWX surveys are in every host's
variables too, with their precedence), and the first play of each playbook
checks the settings of every host with :func:`problems`: they are play
settings, so every host of the play must give the same value.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# The variables, with the play keyword each sets.
SETTINGS = {
    "llm_stack_serial": "serial",
    "llm_stack_max_fail_percentage": "max_fail_percentage",
}
DEFAULTS = {
    "llm_stack_serial": "100%",
    "llm_stack_max_fail_percentage": 0,
}

_COUNT_RE = re.compile(r"[0-9]{1,9}", re.ASCII)
_PERCENT_RE = re.compile(r"(?P<number>[0-9]{1,3}(?:\.[0-9]+)?)%", re.ASCII)
_FIX = {
    "llm_stack_serial": "set it to a number of hosts (2), a percentage of the play's hosts (\"25%\") or a list of"
                        " them ([1, \"10%\", \"100%\"])",
    "llm_stack_max_fail_percentage": "set it to a percentage from 0 to 100 (0: any failed host stops the rollout)",
}


class RolloutError(ValueError):
    """A rollout setting that Ansible would reject, or hosts of a play that disagree on one."""


def _one_serial(value):
    """One batch size: a positive int, or a percentage string above 0 and at most 100; None when invalid."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value > 0 else None
    if not isinstance(value, str):
        return None
    text = value.strip()
    if _COUNT_RE.fullmatch(text):
        number = int(text)
        return number if number > 0 else None
    match = _PERCENT_RE.fullmatch(text)
    if match and 0 < float(match.group("number")) <= 100:
        return text
    return None


def normalize(name, value):
    """A setting as the play keyword takes it; raises RolloutError naming the variable and the fix."""
    if name not in SETTINGS:
        raise RolloutError("%s is not a rollout setting; use one of %s" % (name, ", ".join(sorted(SETTINGS))))
    if name == "llm_stack_serial":
        items = value if isinstance(value, (list, tuple)) else [value]
        found = [_one_serial(item) for item in items]
        if not items or any(item is None for item in found):
            raise RolloutError("%s=%r is not a batch size. Fix: %s" % (name, value, _FIX[name]))
        return found if isinstance(value, (list, tuple)) else found[0]
    text = "" if isinstance(value, bool) else str(value).strip().rstrip("%")
    try:
        number = float(text)
    except ValueError:
        number = -1.0
    if not 0 <= number <= 100:
        raise RolloutError("%s=%r is not a percentage. Fix: %s" % (name, value, _FIX[name]))
    return int(number) if number == int(number) else number


def _value_of(host_vars, name):
    """(given, value) of a variable in one host's variables (a mapping, or Ansible's lazy hostvars entry, which
    renders the value when it is read)."""
    if name in host_vars:
        return True, host_vars[name]
    return False, None


def setting(hostvars, hosts, name, default=None):
    """The value of a rollout variable for a play: the first host's, normalised; ``default`` (the playbook's own
    default) when no host gives it. ``problems`` checks that the others agree, once per playbook.

    hostvars: Ansible's ``hostvars`` (or a dict of host -> variables); hosts: the play's hosts
    (``ansible_play_hosts_all``).
    """
    if default is None:
        default = DEFAULTS.get(name)
    for host in list(hosts or [])[:1]:
        given, value = _value_of(hostvars[host], name)
        if given and value is not None and value != "":
            return normalize(name, value)
    return normalize(name, default)


def problems(hostvars, hosts):
    """Every problem with the rollout settings of these hosts: values Ansible rejects, and hosts that disagree.

    Each message names the variable, the hosts and the fix. [] when the settings are good.
    """
    found = []
    hosts = list(hosts or [])
    for name in sorted(SETTINGS):
        values = {}
        for host in hosts:
            given, value = _value_of(hostvars[host], name)
            if not given or value is None or value == "":
                shown = "not set"
            else:
                try:
                    value = normalize(name, value)
                except RolloutError as exc:
                    message = "%s (on %s)" % (exc, host)
                    if message not in found:
                        found.append(message)
                    continue
                shown = repr(value)
            values.setdefault(shown, []).append(host)
        if len(values) > 1:
            groups = "; ".join("%s on %s" % (value, _hosts(names)) for value, names in sorted(values.items()))
            found.append("%s differs between the hosts of the play (%s): it sets the play's %s, one value for every"
                         " host. Fix: set %s once, in group_vars/all of the inventory or as an extra var"
                         " (-e %s=...)" % (name, groups, SETTINGS[name], name, name))
    return found


def _hosts(names, limit=5):
    shown = ", ".join(names[:limit])
    return shown if len(names) <= limit else "%s and %d more" % (shown, len(names) - limit)
