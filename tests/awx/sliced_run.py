#!/usr/bin/env python
"""TEST ONLY: run llm_stack's AWX jobs with ansible-runner, as AWX runs them, and the site job as concurrent slices.

Each job gets a private data dir laid out as AWX lays it out:
  project/          the project checkout (the files git sees), with the
                    collection installed in project/collections as AWX's
                    project update installs it from collections/requirements.yml
                    (here from the tarball built from the same tree: no Galaxy)
  inventory/hosts   the whole inventory, as the script AWX writes
  env/extravars     the survey answers (and the awx_* variables AWX adds)
  env/envvars       the collections path and the job id
  env/settings      ansible-runner's settings
The controller cache (llm_stack_controller_cache, by default under the
project checkout) lives in the job's private data dir and is removed with it
when the job ends, as an execution environment container is thrown away.

Slice k of n of a sliced job works on hosts[k::n] of the inventory in name
order, the way AWX job slicing splits an inventory, given here as --limit.

Sequence (each phase's jobs run at the same time):
  cache   one job: the cache host (package index and model mirror)
  slices  the site job in --first-slices slices (default 3): asserts one
          compile per distinct build key over all slices (from the cache
          host's ledger and from the jobs' flash_attn_build_result facts),
          and one upstream download per model file (the stand-in hub's
          access log)
  again   the site job in --second-slices slices (default 2): asserts
          changed=0 for every host of every slice (ansible-runner's stats),
          no compile and no upstream download
Writes build/awx/report.json and each job's output under build/awx/.
"""

import argparse
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import threading
import time
from collections import Counter

import ansible_runner
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# The test stack: the site job's survey answers for this CPU-only fleet
# (the same pins as inventories/testfleet). The revision is the fixture's.
TEST_ANSWERS = {
    "llm_stack_cuda_version": "13.0.2",
    "llm_stack_torch_version": "2.13.0",
    "llm_stack_torch_cuda": "cu130",
    "llm_stack_python_version": "3.11",
    "llm_stack_flash_attn_version": "2.8.3",
    "llm_stack_vllm_version": "0.28.0",
    "llm_stack_transformers_version": "5.24.0",
    "llm_stack_model": "Qwen/Qwen3.5-0.8B",
}
PRINT_LOCK = threading.Lock()


def say(line):
    with PRINT_LOCK:
        print(line, flush=True)


class AnsibleYamlLoader(yaml.SafeLoader):  # pylint: disable=too-many-ancestors
    """Reads awx/assets.yml, whose injectors carry Ansible's !unsafe tag."""


AnsibleYamlLoader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


def load_assets():
    with open(os.path.join(ROOT, "awx", "assets.yml"), encoding="utf-8") as handle:
        return yaml.load(handle, Loader=AnsibleYamlLoader)  # nosec - a SafeLoader subclass


def survey_variables(assets, template_name):
    template = [t for t in assets["llm_stack_awx_job_templates"] if t["name"] == template_name][0]
    questions = [q for group in template["surveys"] for q in assets["llm_stack_awx_questions"][group]]
    return template, {q["variable"]: q.get("default") for q in questions}


def read_inventory(path, fixtures):
    out = subprocess.run(["ansible-inventory", "-i", path, "--list"], check=True, capture_output=True, text=True,
                         cwd=ROOT).stdout
    data = json.loads(out)
    data.setdefault("all", {}).setdefault("vars", {})["awx_test_fixtures"] = fixtures
    hosts = set(data.get("_meta", {}).get("hostvars", {}))
    for group in data.values():
        if isinstance(group, dict):
            hosts.update(group.get("hosts", []))
    groups = {}
    for name, group in data.items():
        if isinstance(group, dict) and name != "_meta":
            groups[name] = sorted(group.get("hosts", []))
    return data, sorted(hosts), groups


def pared_inventory(inventory, keep):
    """The inventory AWX's job slicing hands a slice: only the slice's hosts, in the same groups."""
    pared = json.loads(json.dumps(inventory))
    for name, group in pared.items():
        if isinstance(group, dict) and name != "_meta" and "hosts" in group:
            group["hosts"] = [h for h in group["hosts"] if h in keep]
    hostvars = pared.get("_meta", {}).get("hostvars", {})
    for host in list(hostvars):
        if host not in keep:
            del hostvars[host]
    return pared


def slices(hosts, count):
    """AWX job slicing: slice k (0-based) of n holds hosts[k::n]."""
    return [hosts[k::count] for k in range(count)]


def git_files():
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], check=True,
                         capture_output=True, cwd=ROOT).stdout
    return [p.decode() for p in out.split(b"\0") if p and os.path.lexists(os.path.join(ROOT, p.decode()))]


def build_project_template(work, tarball):
    """The project checkout with the collection installed, made once and copied into each job.

    The collection comes from collections/requirements.yml, run in the checkout as AWX's project update runs it
    (ansible-galaxy collection install -r, in the project's directory, into the project's collections cache): the
    project installs itself. The tarball (ansible-galaxy collection build) must hold the same files.
    """
    template = os.path.join(work, "project-template")
    shutil.rmtree(template, ignore_errors=True)
    for path in git_files():
        dest = os.path.join(template, path)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, path), dest, follow_symlinks=False)
    cache = os.path.join(work, "requirements_collections")
    shutil.rmtree(cache, ignore_errors=True)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=cache)
    subprocess.run(["ansible-galaxy", "collection", "install", "--offline", "-r", "collections/requirements.yml",
                    "-p", cache], check=True, capture_output=True, cwd=template, env=env)
    installed = os.path.join(cache, "ansible_collections")
    with tarfile.open(tarball) as archive:
        built = sorted(member.name for member in archive.getmembers()
                       if member.isfile() and member.name not in ("MANIFEST.json", "FILES.json"))
    collection = os.path.join(installed, "gpufleet", "llm_stack")
    copied = sorted(os.path.relpath(os.path.join(top, name), collection) for top, dummy, names in os.walk(collection)
                    for name in names if os.path.relpath(os.path.join(top, name), collection) not in
                    ("MANIFEST.json", "FILES.json"))
    if built != copied:
        raise SystemExit("collections/requirements.yml installs other files than the built collection: %s"
                         % sorted(set(built) ^ set(copied))[:20])
    shutil.copytree(installed, os.path.join(template, "collections", "ansible_collections"))
    return template


class Job:
    """One AWX job: its private data dir, its ansible-runner run and what its events said."""

    def __init__(self, job_id, name, playbook, limit, label, extravars, forks, skip_tags):
        self.job_id = job_id
        self.name = name
        self.playbook = playbook
        self.limit = limit
        self.label = label
        self.extravars = extravars
        self.forks = forks
        self.skip_tags = skip_tags
        self.pdd = None
        self.runner = None
        self.thread = None
        self.last_task = ""
        self.events = 0
        self.facts = {}
        self.artifact_data = {}
        self.failures = []
        self.compile_events = []
        self.task_starts = []
        self.cache_seen = False
        self.stats = {}

    def prepare(self, work, project_template, inventory):
        self.pdd = os.path.join(work, "job%d" % self.job_id)
        shutil.rmtree(self.pdd, ignore_errors=True)
        shutil.copytree(project_template, os.path.join(self.pdd, "project"), symlinks=True)
        os.makedirs(os.path.join(self.pdd, "inventory"))
        os.makedirs(os.path.join(self.pdd, "env"))
        # AWX writes the inventory as a script that prints it.
        script = os.path.join(self.pdd, "inventory", "hosts")
        with open(script, "w", encoding="utf-8") as handle:
            handle.write("#!/bin/sh\ncat <<'EOF'\n%s\nEOF\n" % json.dumps(inventory, indent=1, sort_keys=True))
        os.chmod(script, stat.S_IRWXU)
        extravars = dict(self.extravars)
        extravars.update({"awx_job_id": self.job_id, "awx_job_template_name": self.name,
                          "tower_job_id": self.job_id, "tower_job_template_name": self.name})
        self._write_env("extravars", extravars)
        self._write_env("envvars", {
            "ANSIBLE_COLLECTIONS_PATH": os.path.join(self.pdd, "project", "collections"),
            "JOB_ID": str(self.job_id),
            "ANSIBLE_NOCOLOR": "1",
            # Fewer round trips per task, as AWX_TASK_ENV can set for every job.
            "ANSIBLE_PIPELINING": "True",
        })
        self._write_env("settings", {"idle_timeout": 0, "job_timeout": 0, "pexpect_timeout": 5,
                                     "suppress_ansible_output": True})

    def _write_env(self, name, data):
        with open(os.path.join(self.pdd, "env", name), "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1, sort_keys=True)

    def on_event(self, event):
        self.events += 1
        data = event.get("event_data", {})
        kind = event.get("event")
        if kind in ("playbook_on_task_start", "playbook_on_stats"):
            self.task_starts.append((time.time(), data.get("task", "")))
        if kind == "playbook_on_task_start":
            self.last_task = data.get("task", "")
            say("[%s] TASK %s" % (self.label, self.last_task))
        elif kind in ("runner_on_failed", "runner_on_unreachable") and not data.get("ignore_errors"):
            res = data.get("res", {})
            msg = res.get("msg") or res.get("stderr") or ""
            self.failures.append("%s: %s: %s" % (data.get("host"), data.get("task"), str(msg)[:2000]))
            say("[%s] FAILED %s on %s: %s" % (self.label, data.get("task"), data.get("host"), str(msg)[:500]))
        elif kind == "runner_on_ok":
            res = data.get("res", {})
            # A compile: the long build step of wheel_build, run with run_logged, that changed something.
            if res.get("changed") and data.get("task_action", "").endswith("run_logged") \
                    and data.get("task", "").startswith("Build flash-attn"):
                self.compile_events.append({"host": data.get("host"), "task": data.get("task")})
            facts = res.get("ansible_facts", {})
            for key, value in facts.items():
                if key.endswith("_result"):
                    self.facts.setdefault(data.get("host"), {})[key] = value
        elif kind == "playbook_on_stats":
            self.artifact_data = data.get("artifact_data") or {}
        return True

    def start(self):
        self.thread, self.runner = ansible_runner.run_async(
            private_data_dir=self.pdd, playbook=self.playbook, limit=",".join(self.limit), forks=self.forks,
            skip_tags=self.skip_tags or None, ident="job%d" % self.job_id, quiet=True, event_handler=self.on_event)

    def finish(self, keep):
        """Keep the job's artifacts, check its controller cache was its own, and remove its private data dir."""
        self.cache_seen = os.path.isdir(os.path.join(self.pdd, "project", ".cache"))
        try:
            self.stats = self.runner.stats or {}
        except ansible_runner.exceptions.AnsibleRunnerException:
            self.stats = {}
        artifacts = os.path.join(self.pdd, "artifacts", "job%d" % self.job_id)
        os.makedirs(keep, exist_ok=True)
        stdout = os.path.join(artifacts, "stdout")
        if os.path.exists(stdout):
            shutil.copy(stdout, os.path.join(keep, "job%d.log" % self.job_id))
        for name in ("extravars", "envvars"):
            shutil.copy(os.path.join(self.pdd, "env", name), os.path.join(keep, "job%d.%s.json" % (self.job_id, name)))
        shutil.rmtree(self.pdd)

    def slowest_tasks(self, count=8):
        spans = [(round(b[0] - a[0]), a[1]) for a, b in zip(self.task_starts, self.task_starts[1:])]
        return sorted(spans, reverse=True)[:count]

    def summary(self):
        stats = self.stats
        return {
            "job": self.job_id, "name": self.name, "playbook": self.playbook, "limit": self.limit,
            "status": self.runner.status, "rc": self.runner.rc, "stats": stats,
            "changed": {h: n for h, n in (stats.get("changed") or {}).items() if n},
            "failures": self.failures, "compile_events": self.compile_events, "results": self.facts, "set_stats": self.artifact_data,
            "controller_cache_in_job_dir": self.cache_seen, "slowest_tasks": self.slowest_tasks(),
        }


def run_phase(phase, jobs, work, project_template, inventory, out, pared=False):
    say("==> %s: %d job(s) at the same time: %s" % (
        phase, len(jobs), "; ".join("%s -> %s" % (j.label, ",".join(j.limit)) for j in jobs)))
    start = time.time()
    for job in jobs:
        job.prepare(work, project_template, pared_inventory(inventory, job.limit) if pared else inventory)
    for job in jobs:
        job.start()
    last = time.time()
    while any(j.thread.is_alive() for j in jobs):
        time.sleep(2)
        if time.time() - last >= 30:
            last = time.time()
            say("... %s, %ds: %s" % (phase, last - start, "; ".join(
                "%s %s (%d events, at %r)" % (j.label, j.runner.status, j.events, j.last_task) for j in jobs)))
    for job in jobs:
        job.thread.join()
    elapsed = time.time() - start
    results = []
    for job in jobs:
        job.finish(os.path.join(out, phase))
        results.append(job.summary())
        say("<== %s: %s rc=%s ok=%s changed=%s failed=%s unreachable=%s" % (
            phase, job.label, job.runner.rc, sum((job.stats.get("ok") or {}).values()),
            sum((job.stats.get("changed") or {}).values()), sum((job.stats.get("failures") or {}).values()),
            sum((job.stats.get("dark") or {}).values())))
    say("<== %s took %ds" % (phase, elapsed))
    for job, result in zip(jobs, results):
        if result["rc"] != 0:
            log = os.path.join(out, phase, "job%d.log" % job.job_id)
            tail = ""
            if os.path.exists(log):
                with open(log, encoding="utf-8", errors="replace") as handle:
                    tail = "".join(handle.readlines()[-60:])
            say("---- %s output (last 60 lines of %s) ----\n%s" % (job.label, log, tail))
    return results, elapsed


def hub_gets(log_path, repo):
    """Upstream transfers at the stand-in hub: (commit, file) -> GET count."""
    if not os.path.exists(log_path):
        return Counter()
    with open(log_path, encoding="utf-8", errors="replace") as handle:
        return Counter(re.findall(r'"GET /%s/resolve/([0-9a-f]{40})/(\S+) HTTP' % re.escape(repo), handle.read()))


def ledger_lines(container, path):
    if not path:
        return None
    found = subprocess.run(["docker", "exec", container, "cat", path], capture_output=True, text=True, check=False)
    if found.returncode != 0:
        return []
    return [json.loads(line) for line in found.stdout.splitlines() if line.strip()]


def build_results(results):
    """flash_attn_build_result of every host over the given jobs."""
    found = {}
    for result in results:
        for host, facts in result["results"].items():
            if "flash_attn_build_result" in facts:
                found[host] = facts["flash_attn_build_result"]
    return found


def report_summaries(results):
    """The fleet report summaries the jobs gave AWX with set_stats: dicts holding compiles and build_keys."""
    found = []

    def walk(value):
        if isinstance(value, dict):
            if "compiles" in value and "build_keys" in value:
                found.append(value)
                return
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for result in results:
        walk(result["set_stats"])
    return found


def main():  # pylint: disable=too-many-locals,too-many-statements
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tarball", required=True, help="the collection tarball (ansible-galaxy collection build)")
    parser.add_argument("--fixtures", default=os.path.join(ROOT, ".cache"))
    parser.add_argument("--model-fixture", default=os.path.join(ROOT, ".cache", "awx-model"))
    parser.add_argument("--inventory", default=os.path.join(ROOT, "tests", "awx", "inventory"))
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "awx"))
    parser.add_argument("--first-slices", type=int, default=3)
    parser.add_argument("--second-slices", type=int, default=2)
    parser.add_argument("--cache-group", default="llm_cache")
    parser.add_argument("--cache-playbook", default="playbooks/cache.yml")
    parser.add_argument("--ledger", default="/var/lib/fleet-cache/ledger.jsonl",
                        help="the build ledger on the cache host (llm_stack_cache_data_dir/ledger.jsonl); empty: not read")
    # TEST ONLY: the vLLM install and serving are left out of this test (time budget); make site runs them.
    parser.add_argument("--skip-tags", default="vllm,serve")
    parser.add_argument("--extra", action="append", default=[], help="KEY=JSON, added to every job's extra vars")
    parser.add_argument("--pared-inventory", action="store_true",
                        help="give each slice only its own hosts, as AWX's job_slice_count does, instead of --limit "
                             "over the whole inventory (docs/awx.md: slices then lack the cache host)")
    args = parser.parse_args()

    out = args.out
    shutil.rmtree(out, ignore_errors=True)
    work = os.path.join(out, "jobs")
    os.makedirs(work)
    assets = load_assets()
    site_template, survey = survey_variables(assets, "llm_stack site")
    with open(os.path.join(args.model_fixture, "revisions.json"), encoding="utf-8") as handle:
        fixture = json.load(handle)
    answers = dict(survey)
    answers.update(TEST_ANSWERS)
    answers["llm_stack_model_revision"] = fixture["commits"]["v1"]
    # The survey answers are exactly the site template's questions.
    assert set(answers) == set(survey), sorted(set(answers) ^ set(survey))
    for item in args.extra:
        key, _sep, value = item.partition("=")
        answers[key] = json.loads(value)

    inventory, hosts, groups = read_inventory(args.inventory, args.fixtures)
    cache_hosts = groups.get(args.cache_group) or []
    if not cache_hosts:
        sys.exit("no host in group %s of %s" % (args.cache_group, args.inventory))
    cache_host = cache_hosts[0]
    project_template = build_project_template(out, os.path.abspath(args.tarball))
    cache_playbook = args.cache_playbook
    skip_tags = args.skip_tags
    forks = site_template["forks"]
    hub_log = os.path.join(args.model_fixture, "hub-access.log")
    repo = answers["llm_stack_model"]
    commit = answers["llm_stack_model_revision"]
    files = sorted(subprocess.run(["git", "-C", os.path.join(args.model_fixture, "repos", "models", repo),
                                   "ls-tree", "--name-only", "-r", commit],
                                  check=True, capture_output=True, text=True).stdout.split())
    report = {"hosts": hosts, "cache_host": cache_host, "survey_answers": answers, "skip_tags": skip_tags,
              "model_files": files, "phases": {}}
    problems = []
    job_ids = iter(range(101, 1000))

    # 1. The cache host, one job (an AWX workflow's first node).
    # Its template has no survey: no answers.
    cache_template = [t for t in assets["llm_stack_awx_job_templates"] if t["playbook"] == cache_playbook]
    cache_forks = cache_template[0]["forks"] if cache_template else forks
    jobs = [Job(next(job_ids), "llm_stack cache host", cache_playbook, cache_hosts, "cache", {}, cache_forks, "")]
    results, elapsed = run_phase("cache", jobs, work, project_template, inventory, out)
    report["phases"]["cache"] = {"jobs": results, "seconds": round(elapsed)}
    if any(r["rc"] != 0 for r in results):
        problems.append("the cache host job failed")
    ledger_before = ledger_lines(cache_host, args.ledger) or []
    gets_before = hub_gets(hub_log, repo)

    # 2. and 3. The site job sliced.
    failed_jobs = bool(problems)
    for phase, count in (("slices", args.first_slices), ("again", args.second_slices)):
        if failed_jobs:
            break
        parts = slices(hosts, count)
        jobs = [Job(next(job_ids), "llm_stack site", "playbooks/site.yml", part,
                    "slice %d/%d" % (k + 1, count), answers, forks, skip_tags) for k, part in enumerate(parts)]
        results, elapsed = run_phase(phase, jobs, work, project_template, inventory, out, args.pared_inventory)
        ledger_now = ledger_lines(cache_host, args.ledger)
        gets_now = hub_gets(hub_log, repo)
        new_gets = gets_now - gets_before
        builds = build_results(results)
        keys = sorted({b.get("build_key") for b in builds.values() if b.get("build_key")})
        compiled = sorted(h for h, b in builds.items() if b.get("compiled"))
        compile_events = [e for r in results for e in r["compile_events"]]
        summaries = report_summaries(results)
        stats_compiles = sum(int(x.get("compiles") or 0) for x in summaries) if summaries else None
        new_ledger = None if ledger_now is None else ledger_now[len(ledger_before):]
        phase_report = {
            "slices": parts, "seconds": round(elapsed), "jobs": results,
            "build_keys": keys, "hosts_that_compiled": compiled, "compile_events": compile_events,
            "set_stats_compiles": stats_compiles,
            "ledger_new_lines": new_ledger,
            "upstream_gets": {"%s/%s" % k: n for k, n in sorted(new_gets.items())},
            "changed": {r["job"]: r["changed"] for r in results},
        }
        report["phases"][phase] = phase_report
        ledger_text = "n/a" if new_ledger is None else "%d new line(s)" % len(new_ledger)
        say("==> %s: build keys %s; compiled on %s (flash_attn_build_result), %d build task(s) changed, "
            "set_stats compiles %s; ledger %s; upstream GETs %d for %d files" % (
                phase, keys, compiled, len(compile_events), "n/a" if stats_compiles is None else stats_compiles,
                ledger_text, sum(new_gets.values()), len(files)))
        failed = [r for r in results if r["rc"] != 0]
        if failed:
            problems.append("%s: job(s) %s failed" % (phase, [r["job"] for r in failed]))
            failed_jobs = True
            continue
        gpu_hosts = [h for h in hosts if h not in cache_hosts and h not in groups.get("hf_mirror", [])]
        missing = sorted(set(gpu_hosts) - set(builds))
        if missing:
            problems.append("%s: no flash_attn_build_result from %s" % (phase, missing))
        if phase == "slices":
            if len(compiled) != len(keys) or len(compile_events) != len(keys) or \
                    stats_compiles not in (None, len(keys)):
                problems.append("slices: %d compile(s) (%d build tasks changed) for %d distinct build key(s): %s" % (
                    len(compiled), len(compile_events), len(keys), compile_events))
            if new_ledger is not None:
                ledger_keys = Counter(line.get("build_key") for line in new_ledger if line.get("result") == "built")
                if sorted(ledger_keys) != keys or set(ledger_keys.values()) != {1}:
                    problems.append("slices: the ledger shows %s for build keys %s" % (dict(ledger_keys), keys))
            want = {(commit, name) for name in files}
            if set(new_gets) != want or set(new_gets.values()) != {1}:
                problems.append("slices: upstream GETs %s, want one per file %s" % (dict(new_gets), files))
        else:
            changed = {r["job"]: r["changed"] for r in results if r["changed"]}
            if changed:
                problems.append("again: changed tasks where none were expected: %s" % changed)
            if compiled or new_ledger or compile_events or stats_compiles:
                problems.append("again: compiled again: %s %s %s" % (compiled, new_ledger, compile_events))
            if new_gets:
                problems.append("again: upstream downloads again: %s" % dict(new_gets))
        ledger_before = ledger_now or []
        gets_before = gets_now

    report["problems"] = problems
    with open(os.path.join(out, "report.json"), "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=1, sort_keys=True, default=str)
    shutil.rmtree(project_template, ignore_errors=True)
    for problem in problems:
        say("PROBLEM: %s" % problem)
    say("==> report: %s" % os.path.join(out, "report.json"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
