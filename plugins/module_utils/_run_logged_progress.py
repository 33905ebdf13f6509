# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: what the end of a run_logged log says about the progress of its command, and the progress line.

``run_logged`` re-exports these (``progress_of``, ``Estimator``, ``describe``...); import them from there.
Standard library only, Python 3.8+ (it runs on the managed host).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re


_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_NINJA_RE = re.compile(r"^\[(?P<done>\d+)/(?P<total>\d+)\]\s*(?P<what>.*)$")
# pip --progress-bar raw: "Progress 1048576 of 16311296" (pip 24.1 to 25.x), "... of 16311296 bytes" (later).
_PIP_RAW_RE = re.compile(r"^\s*Progress (?P<done>\d+) of (?P<total>\d+|\?)(?: bytes)?\s*$")
# pip's bar as written to a file (the end of a download): "━━━━ 16.3/16.3 MB 127.3 MB/s eta 0:00:00"
_PIP_BAR_RE = re.compile(r"(?P<done>\d+(?:\.\d+)?)/(?P<total>\d+(?:\.\d+)?) (?P<unit>[kMGT]?B)\b")
# "  Downloading torch-2.13.0+cpu-cp311-...whl (191.8 MB)"
_PIP_DOWNLOADING_RE = re.compile(r"^\s*Downloading (?P<file>\S+)(?: \((?P<size>\d+(?:\.\d+)?) (?P<unit>[kMGT]?B)\))?")
# tqdm (hf download): "model.safetensors:  42%|####2     | 1.05G/2.50G [00:10<00:14, 103MB/s]"
# and "Fetching 5 files:  40%|####      | 2/5 [00:01<00:01,  1.9it/s]"
_TQDM_RE = re.compile(
    r"^(?P<desc>.*?):?\s*(?P<percent>\d{1,3})%\|[^|]*\|\s*(?P<done>[\d.]+\s*[kMGTP]?B?)/(?P<total>[\d.]+\s*[kMGTP]?B?)"
    r"(?:\s*\[(?P<times>[^\]]*)\])?")
_UNITS = {"": 1, "B": 1, "k": 1000, "kB": 1000, "K": 1000, "KB": 1000, "M": 1000 ** 2, "MB": 1000 ** 2,
          "G": 1000 ** 3, "GB": 1000 ** 3, "T": 1000 ** 4, "TB": 1000 ** 4, "P": 1000 ** 5, "PB": 1000 ** 5}
# "-c -c /src/part1.cpp -o /build/part1.o" (torch's cpp_extension repeats -c)
_SOURCE_RE = re.compile(r"(?:^|\s)-c\s+(?:-c\s+)*(?P<src>[^\s-]\S*)")
_OUTPUT_RE = re.compile(r"(?:^|\s)-o\s+(?P<out>[^\s-]\S*)")
_PROGRESS_LINE_RE = re.compile(r"^\s*Progress \d+ of |%\|")


def _amount(text):
    """'1.05G' / '191.8 MB' / '12' -> a number of bytes (or items); None for junk."""
    match = re.match(r"^\s*(\d+(?:\.\d+)?)\s*([kKMGTP]?B?)\s*$", text or "")
    if not match:
        return None
    unit = match.group(2)
    factor = _UNITS.get(unit, _UNITS.get(unit[:1], 1))
    return int(float(match.group(1)) * factor)


def log_lines(text):
    """Lines of a log as a terminal would have left them: a carriage return starts the line again."""
    lines = []
    for raw in (text or "").split("\n"):
        parts = [part for part in raw.split("\r") if part.strip()]
        if parts:
            lines.append(_ANSI_RE.sub("", parts[-1]).rstrip())
    return [line for line in lines if line.strip()]


def _segments(text):
    """Every carriage-return-separated piece of every line, newest last (tqdm rewrites its line)."""
    out = []
    for raw in (text or "").split("\n"):
        for part in raw.split("\r"):
            part = _ANSI_RE.sub("", part).rstrip()
            if part.strip():
                out.append(part)
    return out


def ninja_step(what):
    """A short name for one ninja step: the source it compiles, else its output, else the text."""
    for regex, group in ((_SOURCE_RE, "src"), (_OUTPUT_RE, "out")):
        match = regex.search(what)
        if match:
            return os.path.basename(match.group(group).strip("'\""))
    return what.strip()


def progress_of(text):
    """What the end of a log says about the progress of the command writing it.

    Returns {ninja, transfer, line}: ninja is {done, total, step} from the
    last ``[N/M]`` line; transfer is {file, done, total, percent, unit}
    from the last pip or hf download progress (done/total in bytes when
    the unit is "B", in items otherwise; any may be None); line is the last
    line of the log. Each is None when the log says nothing of it.
    """
    segments = _segments(text)
    result = {"ninja": None, "transfer": None, "line": None}
    lines = log_lines(text)
    if lines:
        result["line"] = lines[-1].strip()
    current_file = None
    for segment in segments:
        stripped = segment.strip()
        match = _NINJA_RE.match(stripped)
        if match:
            result["ninja"] = {"done": int(match.group("done")), "total": int(match.group("total")),
                               "step": ninja_step(match.group("what"))}
            continue
        match = _PIP_DOWNLOADING_RE.match(segment)
        if match:
            current_file = match.group("file")
            total = _amount("%s %s" % (match.group("size"), match.group("unit"))) if match.group("size") else None
            result["transfer"] = {"file": current_file, "done": 0, "total": total, "percent": 0 if total else None,
                                  "unit": "B"}
            continue
        match = _PIP_RAW_RE.match(segment)
        if match:
            done = int(match.group("done"))
            total = None if match.group("total") == "?" else int(match.group("total"))
            result["transfer"] = {"file": current_file, "done": done, "total": total or None,
                                  "percent": int(100 * done / total) if total else None, "unit": "B"}
            continue
        match = _TQDM_RE.match(stripped)
        if match:
            done_text, total_text = match.group("done"), match.group("total")
            is_bytes = bool(re.search(r"[kMGTP]B?$|B$", total_text.strip()) or "B/s" in (match.group("times") or ""))
            result["transfer"] = {"file": match.group("desc").strip() or None, "done": _amount(done_text),
                                  "total": _amount(total_text), "percent": int(match.group("percent")),
                                  "unit": "B" if is_bytes else "items"}
            continue
        if "━" in segment or " eta " in segment:
            match = _PIP_BAR_RE.search(segment)
            if match:
                done = _amount("%s %s" % (match.group("done"), match.group("unit")))
                total = _amount("%s %s" % (match.group("total"), match.group("unit")))
                result["transfer"] = {"file": current_file, "done": done, "total": total,
                                      "percent": int(100 * done / total) if total else None, "unit": "B"}
    return result


def human_bytes(count):
    """1536000 -> '1.5 MB' (decimal units, as pip and tqdm print them)."""
    if count is None:
        return "?"
    value = float(count)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return ("%d %s" % (value, unit)) if unit == "B" else ("%.1f %s" % (value, unit))
        value /= 1000.0
    return "%d B" % count  # pragma: no cover


def human_seconds(seconds):
    """75 -> '1m15s'; 3725 -> '1h02m05s'."""
    seconds = int(max(seconds or 0, 0))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return "%dh%02dm%02ds" % (hours, minutes, secs)
    if minutes:
        return "%dm%02ds" % (minutes, secs)
    return "%ds" % secs


class Estimator(object):
    """Rate and time left from successive (time, done, total) readings of one counter.

    The counter is ninja's steps or a transfer's bytes; a reading whose
    total or key differs from the last one starts the estimate again.
    """

    def __init__(self):
        self.key = None
        self.first = None
        self.last = None

    def add(self, now, key, done, total):
        if done is None or not total:
            return None
        if key != self.key or self.last is None or done < self.last[1]:
            self.key, self.first, self.last = key, (now, done), (now, done)
            return None
        self.last = (now, done)
        spent = self.last[0] - self.first[0]
        progressed = self.last[1] - self.first[1]
        if spent <= 0 or progressed <= 0:
            return None
        return (total - done) * spent / float(progressed)


def describe(progress, elapsed, eta=None, show_line=True, width=160):
    """The progress line of the play output: elapsed time, then the most telling thing the log says."""
    parts = ["%s elapsed" % human_seconds(elapsed)]
    ninja, transfer = progress.get("ninja"), progress.get("transfer")
    if ninja:
        percent = int(100 * ninja["done"] / ninja["total"]) if ninja["total"] else 0
        parts.append("[%d/%d] %d%% %s" % (ninja["done"], ninja["total"], percent, ninja["step"][:80]))
    elif transfer:
        if transfer.get("unit") == "B":
            amount = "%s of %s" % (human_bytes(transfer.get("done")), human_bytes(transfer.get("total"))) \
                if transfer.get("total") else human_bytes(transfer.get("done"))
        else:
            amount = "%s of %s" % (transfer.get("done"), transfer.get("total"))
        text = amount if transfer.get("percent") is None else "%s (%d%%)" % (amount, transfer["percent"])
        if transfer.get("file"):
            text = "%s: %s" % (shorten(transfer["file"], 60), text)
        parts.append(text)
    if eta is not None and (ninja or transfer):
        parts.append("about %s left" % human_seconds(eta))
    line = progress.get("line")
    if show_line and line and not ninja and not _PROGRESS_LINE_RE.search(line):
        parts.append("last: " + shorten(line, width))
    return "; ".join(parts)


def shorten(text, width):
    """text cut in its middle to width characters at most."""
    if len(text) <= width:
        return text
    keep = width - 3
    return text[:keep - keep // 3] + "..." + text[len(text) - keep // 3:]


def tail_lines(text, count):
    lines = log_lines(text)
    return lines[-count:] if count > 0 else []


# Lines that say what went wrong: compiler and Python errors, ninja's FAILED, assertions.
_ERROR_RE = re.compile(r"\b(?:error|fatal)\b|^FAILED: |Traceback \(most recent call last\)|\b[A-Z][A-Za-z]*(?:Error|Exception):",
                       re.IGNORECASE)
ERROR_LINE_MAX = 400


def error_lines(text, exclude=(), limit=10):
    """The first lines of a log that report an error (short lines only: not command lines), except those in exclude."""
    found = []
    skip = set(exclude)
    for line in log_lines(text):
        stripped = line.strip()
        if len(stripped) > ERROR_LINE_MAX or stripped in skip or stripped in found or stripped.startswith("# "):
            continue
        if _ERROR_RE.search(stripped):
            found.append(stripped)
            if len(found) >= limit:
                break
    return found
