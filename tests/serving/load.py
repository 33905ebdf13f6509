#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bounded load of a serving test scenario: N workers send OpenAI completions (or chat completions) to a URL
until told to stop, and the counts are written as JSON at the end. Python 3.6 or newer, standard library only (run it
with ``python3`` where ``python`` is not that).

    python3 load.py --url http://127.0.0.1:8080 --model qwen3-chat --key-file /etc/llm-stack/client.key \\
        --stop-file /tmp/load.stop --out /tmp/load.json --pid-file /tmp/load.pid --daemon

Requests: ``POST <url>/v1/completions`` with {"model", "prompt", "max_tokens"} (``--api chat``:
``POST <url>/v1/chat/completions`` with {"model", "messages", "max_tokens"}), ``Authorization: Bearer <key>``, the key
read from ``--key-file`` (a line ``VLLM_API_KEY=...`` of an environment file, or else the file's whole content,
stripped); never through a proxy. ``--url`` may also end in the full path (``.../v1/completions``).

When it stops (the first that holds):
- ``--max-requests`` (default 2000) requests have been sent;
- ``--max-seconds`` have passed (a hard bound: in-flight requests are not waited for past it, beyond their
  ``--request-timeout``);
- the stop file (``--stop-file``) exists AND at least ``--min-requests`` (default 200) requests have been sent: after
  the stop file appears it keeps going until min-requests have completed (max-requests still bounds it);
- SIGTERM or SIGINT: the counts so far are written at once (``in_flight`` says how many were still on their way) and
  it exits.
Without a stop file, max-seconds or max-requests ends the run.

Counts (``--out``, JSON, written atomically at the end: a temporary file renamed; the file appears only once the run
is over): total, ok (answered 200), failed (any other status, or no answer), statuses (count per status;
``"error"`` for no answer), first_failures (the first 20: status, error, t seconds since the start, at UTC), by_backend
(when a response names its backend in one of the ``--backend-header`` headers, default X-Served-By and
X-Backend-Server: per backend total, ok, failed; absent when no response did), latency (seconds, p50, p95 and max,
of the ok requests and of all), stopped_by (stop-file, max-requests, max-seconds, signal), stop_seen_after (seconds,
or null) and total_at_stop (the requests completed when the stop file was first seen), elapsed, workers, in_flight.
A one-line summary goes to stdout. The exit status is 0 whatever the failures (the caller asserts on the counts);
2 on bad arguments or an unreadable key file (the counts file is then written with ``error`` set).

Detached: ``--daemon`` forks into the background (a new session, stdio to ``--log``, default /dev/null) and returns
once the background process has written ``--pid-file`` (its own pid; required with --daemon); the pid file is removed
at the end, after the counts are written. A caller waits for ``--out`` to appear (or for the pid file to go), and
stops the run early with the stop file or with SIGTERM to the pid in the pid file.
"""

from __future__ import print_function

import argparse
import datetime
import json
import os
import signal
import sys
import threading
import time
from urllib.error import HTTPError
from urllib.request import ProxyHandler, Request, build_opener

FAILURES_KEPT = 20
BACKEND_HEADERS = ("X-Served-By", "X-Backend-Server")
OPENER = build_opener(ProxyHandler({}))


def read_key(path):
    """The API key of a key file: its VLLM_API_KEY= line (quotes stripped), or else its whole content, stripped."""
    with open(path, "r") as handle:
        text = handle.read()
    for line in text.split("\n"):
        if line.startswith("VLLM_API_KEY="):
            value = line[len("VLLM_API_KEY="):].strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            return value
    return text.strip()


def endpoint(url, api):
    """The URL requests go to: url itself when it already ends in the API's path, else url + that path."""
    path = "/v1/chat/completions" if api == "chat" else "/v1/completions"
    url = url.rstrip("/")
    return url if url.endswith(path) else url + path


def body_of(args):
    if args.api == "chat":
        body = {"model": args.model, "messages": [{"role": "user", "content": args.prompt}],
                "max_tokens": args.max_tokens}
    else:
        body = {"model": args.model, "prompt": args.prompt, "max_tokens": args.max_tokens}
    return json.dumps(body).encode("utf-8")


def percentile(values, share):
    """The nearest-rank percentile (share in 0..1) of values; None when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, int(-(-share * len(ordered) // 1)))  # ceil
    return round(ordered[min(rank, len(ordered)) - 1], 4)


def latency(values):
    return {"count": len(values), "p50": percentile(values, 0.50), "p95": percentile(values, 0.95),
            "max": round(max(values), 4) if values else None}


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Run(object):
    """The shared state of one run: what may be sent next, and the counts."""

    def __init__(self, args, clock=time.monotonic):
        self.args = args
        self.clock = clock
        self.lock = threading.Lock()
        self.start = clock()
        self.claimed = 0
        self.in_flight = 0
        self.total = 0
        self.ok = 0
        self.statuses = {}
        self.first_failures = []
        self.by_backend = {}
        self.latency_ok = []
        self.latency_all = []
        self.stopped_by = None
        self.stop_seen_after = None
        self.total_at_stop = None
        self.error = None

    def _stop_file_there(self):
        return bool(self.args.stop_file) and os.path.exists(self.args.stop_file)

    def claim(self):
        """Whether a worker may send one more request (and counts it as sent)."""
        with self.lock:
            if self.stopped_by:
                return False
            elapsed = self.clock() - self.start
            if self.args.max_seconds and elapsed >= self.args.max_seconds:
                self.stopped_by = "max-seconds"
                return False
            if self.claimed >= self.args.max_requests:
                self.stopped_by = "max-requests"
                return False
            if self.stop_seen_after is None and self._stop_file_there():
                self.stop_seen_after = round(elapsed, 3)
                self.total_at_stop = self.total
            if self.stop_seen_after is not None and self.claimed >= self.args.min_requests:
                self.stopped_by = "stop-file"
                return False
            self.claimed += 1
            self.in_flight += 1
            return True

    def halt(self, why):
        with self.lock:
            self.stopped_by = self.stopped_by or why

    def record(self, status, error, seconds, backend):
        with self.lock:
            self.in_flight -= 1
            self.total += 1
            good = status == 200
            self.ok += 1 if good else 0
            key = str(status) if status else "error"
            self.statuses[key] = self.statuses.get(key, 0) + 1
            self.latency_all.append(seconds)
            if good:
                self.latency_ok.append(seconds)
            elif len(self.first_failures) < FAILURES_KEPT:
                self.first_failures.append({"status": status or None, "error": error,
                                            "t": round(self.clock() - self.start, 3), "at": utc_now()})
            if backend:
                entry = self.by_backend.setdefault(backend, {"total": 0, "ok": 0, "failed": 0})
                entry["total"] += 1
                entry["ok" if good else "failed"] += 1

    def counts(self):
        with self.lock:
            found = {
                "url": self.args.target, "model": self.args.model, "api": self.args.api,
                "total": self.total, "ok": self.ok, "failed": self.total - self.ok,
                "statuses": dict(sorted(self.statuses.items())), "first_failures": list(self.first_failures),
                "latency": {"ok": latency(self.latency_ok), "all": latency(self.latency_all)},
                "stopped_by": self.stopped_by, "stop_seen_after": self.stop_seen_after,
                "total_at_stop": self.total_at_stop, "elapsed": round(self.clock() - self.start, 3),
                "workers": self.args.workers, "in_flight": self.in_flight,
                "min_requests": self.args.min_requests, "max_requests": self.args.max_requests,
                "max_seconds": self.args.max_seconds, "finished_at": utc_now(),
            }
            if self.by_backend:
                found["by_backend"] = dict(sorted(self.by_backend.items()))
            if self.error:
                found["error"] = self.error
            return found


def send(args, body, key):
    """(status, error, backend) of one request; status 0 when there was no answer."""
    request = Request(args.target, data=body, headers={"Content-Type": "application/json"})
    if key:
        request.add_unredirected_header("Authorization", "Bearer %s" % key)
    try:
        response = OPENER.open(request, timeout=args.request_timeout)
        try:
            response.read()
            return response.getcode(), "", backend_of(response.headers, args.backend_header)
        finally:
            response.close()
    except HTTPError as exc:
        try:
            detail = exc.read(300).decode("utf-8", "replace").strip() if exc.fp else ""
        except Exception:  # pylint: disable=broad-except
            detail = ""
        return exc.code, detail or str(exc.reason or ""), backend_of(exc.headers, args.backend_header)
    except Exception as exc:  # pylint: disable=broad-except
        # No answer: refused, reset, timed out, a broken answer.
        return 0, "%s: %s" % (type(exc).__name__, getattr(exc, "reason", exc)), None


def backend_of(headers, names):
    if headers is None:
        return None
    for name in names:
        value = headers.get(name)
        if value:
            return value.strip()[:200]
    return None


def worker(run, body, key):
    while run.claim():
        began = time.monotonic()
        status, error, backend = send(run.args, body, key)
        run.record(status, error, time.monotonic() - began, backend)
        if run.args.interval > 0:
            # A paced load: a steady trickle through a long change rather than as many requests as the CPU allows.
            time.sleep(run.args.interval)


def write_json(path, data):
    """Written atomically: a temporary file in the same directory, renamed."""
    directory = os.path.dirname(os.path.abspath(path))
    temporary = os.path.join(directory, ".%s.%d.tmp" % (os.path.basename(path), os.getpid()))
    with open(temporary, "w") as handle:
        json.dump(data, handle, indent=2, sort_keys=True)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def summary(found):
    lat = found["latency"]["ok"]
    return ("load: %d requests, %d ok, %d failed, statuses %s, p50 %ss p95 %ss, stopped by %s after %ss"
            % (found["total"], found["ok"], found["failed"], json.dumps(found["statuses"], sort_keys=True),
               lat["p50"], lat["p95"], found["stopped_by"], found["elapsed"]))


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True, help="base URL (the API path is added) or the full endpoint")
    parser.add_argument("--model", required=True, help="the served model name asked for")
    parser.add_argument("--key-file", help="file with the API key (VLLM_API_KEY= line, or the key alone)")
    parser.add_argument("--out", required=True, help="where the counts (JSON) are written at the end")
    parser.add_argument("--stop-file", help="stop once this exists and min-requests have completed")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--max-requests", type=int, default=2000)
    parser.add_argument("--min-requests", type=int, default=200)
    parser.add_argument("--max-seconds", type=float, default=0, help="hard bound on the run (0: none)")
    parser.add_argument("--max-tokens", type=int, default=8)
    parser.add_argument("--interval", type=float, default=0, help="seconds each worker waits between its requests")
    parser.add_argument("--prompt", default="Write one short sentence about the sea.")
    parser.add_argument("--api", choices=["completions", "chat"], default="completions")
    parser.add_argument("--request-timeout", type=float, default=60)
    parser.add_argument("--backend-header", action="append",
                        help="response header naming the backend (repeatable; default: %s)"
                        % ", ".join(BACKEND_HEADERS))
    parser.add_argument("--pid-file", help="written with this process's pid; removed at the end")
    parser.add_argument("--daemon", action="store_true", help="run detached in the background (needs --pid-file)")
    parser.add_argument("--log", default=os.devnull, help="stdout and stderr of the detached run")
    args = parser.parse_args(argv)
    args.backend_header = args.backend_header or list(BACKEND_HEADERS)
    if args.workers < 1 or args.max_requests < 0 or args.min_requests < 0 or args.max_seconds < 0:
        parser.error("--workers must be at least 1; --max-requests, --min-requests, --max-seconds at least 0")
    if args.daemon and not args.pid_file:
        parser.error("--daemon needs --pid-file")
    args.target = endpoint(args.url, args.api)
    return args


def daemonize(args):
    """Double fork; the first process returns (True) once the background one has written the pid file."""
    if os.path.exists(args.pid_file):
        os.unlink(args.pid_file)
    first = os.fork()
    if first:
        os.waitpid(first, 0)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if os.path.exists(args.pid_file):
                with open(args.pid_file) as handle:
                    print("load: running in the background, pid %s" % handle.read().strip())
                return True
            time.sleep(0.05)
        print("load: the background process wrote no pid file in 30 s", file=sys.stderr)
        sys.exit(2)
    os.setsid()
    if os.fork():
        os._exit(0)  # pylint: disable=protected-access
    sys.stdout.flush()
    sys.stderr.flush()
    with open(os.devnull, "r") as null:
        os.dup2(null.fileno(), 0)
    log = os.open(args.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    return False


def write_pid(path):
    directory = os.path.dirname(os.path.abspath(path))
    temporary = os.path.join(directory, ".%s.%d.tmp" % (os.path.basename(path), os.getpid()))
    with open(temporary, "w") as handle:
        handle.write("%d\n" % os.getpid())
    os.replace(temporary, path)


def remove_pid(path):
    try:
        with open(path) as handle:
            if handle.read().strip() == str(os.getpid()):
                os.unlink(path)
    except (IOError, OSError):
        pass


def finish(run, code=0):
    found = run.counts()
    write_json(run.args.out, found)
    if run.args.pid_file:
        remove_pid(run.args.pid_file)
    print(summary(found) if not found.get("error") else "load: %s" % found["error"])
    sys.stdout.flush()
    return code


def main(argv=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    if args.daemon and daemonize(args):
        return 0
    run = Run(args)
    halted = threading.Event()

    def on_signal(number, frame):  # pylint: disable=unused-argument
        run.halt("signal")
        halted.set()

    # Before the pid file is there: a caller that reads it may signal at once.
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if args.pid_file:
        write_pid(args.pid_file)
    try:
        key = read_key(args.key_file) if args.key_file else ""
    except (IOError, OSError) as exc:
        run.error = "cannot read the key file %s: %s" % (args.key_file, exc)
        run.stopped_by = "error"
        return finish(run, 2)
    body = body_of(args)
    threads = [threading.Thread(target=worker, args=(run, body, key), name="load-%d" % i) for i in range(args.workers)]
    for thread in threads:
        thread.daemon = True
        thread.start()
    while not halted.is_set() and any(thread.is_alive() for thread in threads):
        halted.wait(0.1)
        if args.max_seconds and time.monotonic() - run.start >= args.max_seconds + args.request_timeout + 5:
            break  # a request that overruns its own timeout: the counts as they are
    return finish(run)


if __name__ == "__main__":
    sys.exit(main())
