#!/usr/bin/env python
"""TEST-ONLY: watch every process command line on this machine for a secret.

Containers share the machine's kernel, so /proc here also shows the
processes of the test fleet (and the `docker exec` commands that Ansible
runs on the controller). The watcher samples /proc/*/cmdline until stopped
(at most --max-seconds) and writes a JSON report:

  samples          how many sweeps of /proc it made
  hf_downloads     distinct `hf download` command lines it saw (proof that it
                   watched while downloads ran)
  leaks            command lines that contained the secret, with the secret
                   replaced by <SECRET>

The secret is read from a file (mode 0600), never from the command line.

Usage:
  watch_cmdlines.py start --secret-file F --report F --pidfile F
  watch_cmdlines.py stop --pidfile F
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time

from hub import read_pid  # same directory: run as a script from tests/model


def sweep(secret, me):
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open("/proc/%s/cmdline" % name, "rb") as handle:
                raw = handle.read()
        except OSError:
            continue
        if raw:
            found.append((int(name), raw))
    leaks, downloads = [], []
    for pid, raw in found:
        argv = [part.decode("utf-8", "replace") for part in raw.rstrip(b"\0").split(b"\0")]
        line = " ".join(argv)
        if secret and secret in line:
            leaks.append({"pid": pid, "cmdline": line.replace(secret, "<SECRET>")})
        if "download" in argv and any(os.path.basename(arg) == "hf" for arg in argv):
            downloads.append(line.replace(secret, "<SECRET>") if secret else line)
    return leaks, downloads


def write_report(path, report):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=1, sort_keys=True)
    os.replace(tmp, path)


def run(secret_file, report_path, max_seconds, interval):
    with open(secret_file, encoding="utf-8") as handle:
        secret = handle.read().strip()
    if not secret:
        raise SystemExit("empty secret")
    report = {"samples": 0, "hf_downloads": [], "leaks": [], "started": time.time()}
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    deadline = time.time() + max_seconds
    last_write = 0.0
    me = os.getpid()
    while not stopping and time.time() < deadline:
        leaks, downloads = sweep(secret, me)
        report["samples"] += 1
        dirty = False
        for line in downloads:
            if line not in report["hf_downloads"]:
                report["hf_downloads"].append(line)
                dirty = True
        for leak in leaks:
            if leak not in report["leaks"]:
                report["leaks"].append(leak)
                dirty = True
        if dirty or time.time() - last_write > 2:
            write_report(report_path, report)
            last_write = time.time()
        time.sleep(interval)
    report["stopped"] = time.time()
    write_report(report_path, report)


def is_watcher(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return os.path.basename(__file__).encode() in handle.read()
    except OSError:
        return False


def stop(pidfile):
    pid = read_pid(pidfile)
    if pid and is_watcher(pid):
        os.kill(pid, signal.SIGTERM)
        for _attempt in range(50):
            if not is_watcher(pid):
                break
            time.sleep(0.1)
    if os.path.exists(pidfile):
        os.unlink(pidfile)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["start", "stop", "run"])
    parser.add_argument("--secret-file")
    parser.add_argument("--report")
    parser.add_argument("--pidfile", required=True)
    parser.add_argument("--max-seconds", type=float, default=3600)
    parser.add_argument("--interval", type=float, default=0.05)
    args = parser.parse_args()
    if args.action == "stop":
        stop(args.pidfile)
        return 0
    if args.action == "run":
        run(args.secret_file, args.report, args.max_seconds, args.interval)
        return 0
    stop(args.pidfile)
    if os.path.exists(args.report):
        os.unlink(args.report)
    argv = [sys.executable, os.path.abspath(__file__), "run", "--secret-file", args.secret_file,
            "--report", args.report, "--pidfile", args.pidfile,
            "--max-seconds", str(args.max_seconds), "--interval", str(args.interval)]
    with open(os.devnull, "r+b") as devnull:
        proc = subprocess.Popen(  # pylint: disable=consider-using-with
            argv, stdin=devnull, stdout=devnull, stderr=devnull, start_new_session=True)
    with open(args.pidfile, "w", encoding="utf-8") as handle:
        handle.write("%d\n" % proc.pid)
    for _attempt in range(100):
        if os.path.exists(args.report):
            break
        time.sleep(0.05)
    print("watching process command lines (pid %d), report %s" % (proc.pid, args.report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
