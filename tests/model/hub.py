#!/usr/bin/env python
"""TEST-ONLY: run olah in offline mode on 127.0.0.1 as the stand-in for the Hugging Face hub.

The CPU test fleet has no internet. This serves the git repositories written
by make_tiny_qwen.py the way the hub serves model repositories, with an
access log (one line per request) that the scenarios read to count upstream
transfers.

olah 0.5.4 answers ``/api/models/ORG/NAME`` (no revision), the route a
caching mirror uses to probe that a repository exists, only from its cache,
never from its git mirrors, so a caching olah in front of an offline one
would call every repository missing. The real hub answers that route; to
stand in for it, ``start`` records the newest commit of each served
repository in the offline cache the way olah itself records it, through
olah's own functions.

Usage:
  hub.py start --fixture DIR --port PORT   (logs to DIR/hub-access.log, pid in DIR/hub.pid)
  hub.py stop --fixture DIR
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request


def seed_repo_metadata(repos_root, cache_root):
    from olah.mirror.repos import LocalMirrorRepo
    from olah.utils.repo_utils import get_meta_save_dir

    seeded = []
    models = os.path.join(repos_root, "models")
    for org in sorted(os.listdir(models)):
        for name in sorted(os.listdir(os.path.join(models, org))):
            repo = LocalMirrorRepo(os.path.join(models, org, name), "models", org, name)
            meta = repo.get_meta("main")
            target = os.path.join(get_meta_save_dir(cache_root, "models", org, name), meta["sha"])
            os.makedirs(target, exist_ok=True)
            with open(os.path.join(target, "meta_head.json"), "w", encoding="utf-8") as handle:
                json.dump({"sha": meta["sha"], "lastModified": meta["lastModified"]}, handle)
            seeded.append("%s/%s@%s" % (org, name, meta["sha"]))
    return seeded


def read_pid(pidfile):
    try:
        with open(pidfile, encoding="utf-8") as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return None


def is_our_hub(pid, config):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            argv = handle.read().split(b"\0")
    except OSError:
        return False
    return config.encode() in argv


def stop(fixture):
    pidfile = os.path.join(fixture, "hub.pid")
    config = os.path.join(fixture, "hub.toml")
    pid = read_pid(pidfile)
    if pid and is_our_hub(pid, config):
        os.kill(pid, signal.SIGTERM)
        for _attempt in range(50):
            if not is_our_hub(pid, config):
                break
            time.sleep(0.1)
        else:
            os.kill(pid, signal.SIGKILL)
        print("stopped the test hub (pid %d)" % pid)
    if os.path.exists(pidfile):
        os.unlink(pidfile)


def wait_ready(url, proc, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    # It answered; make sure it was this process, not another one on the port.
                    time.sleep(0.5)
                    return proc.poll() is None
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.3)
    return False


def port_free(port):
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        probe.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        probe.close()


def start(fixture, port):
    stop(fixture)
    if not port_free(port):
        sys.stderr.write("127.0.0.1:%d is already in use by another process; stop it or pick another port\n" % port)
        return 1
    repos = os.path.join(fixture, "repos")
    cache = os.path.join(fixture, "hub-cache")
    shutil.rmtree(cache, ignore_errors=True)
    os.makedirs(cache)
    seeded = seed_repo_metadata(repos, cache)
    config = os.path.join(fixture, "hub.toml")
    with open(config, "w", encoding="utf-8") as handle:
        handle.write(
            "[basic]\n"
            'host = "127.0.0.1"\n'
            "port = %d\n"
            'repos-path = "%s"\n'
            'mirror-netloc = "127.0.0.1:%d"\n'
            'mirror-lfs-netloc = "127.0.0.1:%d"\n'
            'mirrors-path = ["%s"]\n'
            "\n[accessibility]\noffline = true\n" % (port, cache, port, port, repos)
        )
    log_path = os.path.join(fixture, "hub-access.log")
    olah = os.path.join(os.path.dirname(sys.executable), "olah-cli")
    with open(log_path, "wb") as log, open(os.devnull, "rb") as devnull:
        proc = subprocess.Popen(  # pylint: disable=consider-using-with
            [olah, "--config", config, "--log-path", os.path.join(fixture, "hub-logs")],
            stdin=devnull, stdout=log, stderr=subprocess.STDOUT, cwd=fixture, start_new_session=True,
        )
    with open(os.path.join(fixture, "hub.pid"), "w", encoding="utf-8") as handle:
        handle.write("%d\n" % proc.pid)
    first = seeded[0].split("@")[0]
    if not wait_ready("http://127.0.0.1:%d/api/models/%s/revision/main" % (port, first), proc):
        stop(fixture)
        with open(log_path, encoding="utf-8", errors="replace") as handle:
            sys.stderr.write(handle.read()[-4000:])
        sys.stderr.write("the test hub did not come up on 127.0.0.1:%d\n" % port)
        return 1
    print("test hub on http://127.0.0.1:%d (pid %d) serving %s; access log %s" % (
        port, proc.pid, ", ".join(seeded), log_path))
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["start", "stop"])
    parser.add_argument("--fixture", required=True)
    parser.add_argument("--port", type=int, default=28917)
    args = parser.parse_args()
    fixture = os.path.abspath(args.fixture)
    if args.action == "start":
        return start(fixture, args.port)
    stop(fixture)
    return 0


if __name__ == "__main__":
    sys.exit(main())
