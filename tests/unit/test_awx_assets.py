# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The AWX assets (awx/) against what they refer to.

- every job template's playbook exists in the project (this repository);
- every survey variable is a role variable (an argument spec option) or a
  variable a playbook reads; its default and choices are the argument spec's,
  and its survey type fits the option's type;
- the credential type injects role variables that the argument specs mark
  no_log, from its own input fields, as extra vars only;
- every option awx/configure.yml gives an awx.awx module is one the installed
  awx.awx module has (its argument spec, read with ansible-doc --json);
- no template asks for extra variables on launch: a launcher gives the
  survey's variables and no other;
- meta/execution-environment.yml is ansible-builder v3 and pins the
  ansible-core of requirements.txt.
Each check is shown to fail on a broken copy of the assets.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import glob
import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import rollout

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
AWX_DIR = os.path.join(REPO, "awx")
# Survey question type for each argument spec type.
SURVEY_TYPES = {"str": ("text", "textarea", "multiplechoice"), "int": ("integer",), "float": ("float",),
                "list": ("multiselect",), "path": ("text",)}


class AnsibleYamlLoader(yaml.SafeLoader):  # pylint: disable=too-many-ancestors
    """Reads Ansible YAML with its !unsafe tag (the injectors are AWX's templates, not Ansible's)."""


AnsibleYamlLoader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


def load_yaml(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.load(handle, Loader=AnsibleYamlLoader)  # nosec - a SafeLoader subclass


def role_options():
    """variable -> [(role, entry point, option spec)] over every role's argument specs."""
    found = {}
    for path in sorted(glob.glob(os.path.join(REPO, "roles", "*", "meta", "argument_specs.yml"))):
        role = path.split(os.sep)[-3]
        for entry, spec in (load_yaml(path) or {}).get("argument_specs", {}).items():
            for name, option in (spec.get("options") or {}).items():
                found.setdefault(name, []).append((role, entry, option))
    return found


def playbook_texts():
    texts = {}
    for path in sorted(glob.glob(os.path.join(REPO, "playbooks", "*.yml"))):
        with open(path, encoding="utf-8") as handle:
            texts[os.path.relpath(path, REPO)] = handle.read()
    return texts


def module_options(modules):
    """awx.awx module -> set of its option names and aliases, from the installed collection."""
    ansible_doc = os.path.join(os.path.dirname(sys.executable), "ansible-doc")
    if not os.path.exists(ansible_doc):
        ansible_doc = "ansible-doc"
    out = subprocess.run([ansible_doc, "--json", "-t", "module"] + sorted(modules), check=True,
                         capture_output=True, text=True, cwd=REPO).stdout
    docs = json.loads(out)
    options = {}
    for module in modules:
        assert module in docs, "ansible-doc does not know %s: is awx.awx installed?" % module
        names = set()
        for name, option in docs[module]["doc"]["options"].items():
            names.add(name)
            names.update(option.get("aliases") or [])
        options[module] = names
    return options


def configure_module_calls(configure):
    """(task name, module, option names) of each awx.awx task of awx/configure.yml."""
    calls = []
    for play in configure:
        for task in play.get("tasks", []):
            for key, value in task.items():
                if key.startswith("awx.awx."):
                    calls.append((task.get("name"), key, sorted(value)))
    return calls


def check_template(template, questions):
    problems = []
    path = os.path.join(REPO, template["playbook"])
    if not os.path.isfile(path):
        problems.append("%s: playbook %s does not exist" % (template["name"], template["playbook"]))
    for group in template["surveys"]:
        if group not in questions:
            problems.append("%s: survey group %s is not defined" % (template["name"], group))
    for field in ("job_slice_count", "forks"):
        if not isinstance(template.get(field), int) or template[field] < 1:
            problems.append("%s: %s must be a positive integer" % (template["name"], field))
    return problems


def playbook_closure(path, playbooks):
    """The playbook and those it imports (import_playbook of a file next to it), as paths of playbooks."""
    seen = []
    todo = [path]
    while todo:
        current = todo.pop()
        if current in seen or current not in playbooks:
            continue
        seen.append(current)
        for name in re.findall(r"import_playbook:\s*([\w./-]+\.yml)", playbooks[current]):
            todo.append(os.path.join(os.path.dirname(current), name))
    return seen


def check_question(question, options, playbooks, readers=None):
    """A survey question against the argument specs, or against the template's playbooks (readers)."""
    problems = []
    name = question["variable"]
    where = options.get(name)
    if not where:
        readers = [p for p in (readers or playbooks) if re.search(r"\b%s\b" % re.escape(name), playbooks[p])]
        if not readers:
            return ["survey variable %s is in no role argument spec and not in the template's playbooks" % name]
        # The playbooks' default: `name | default(VALUE)`, the same in each. Compared as text: an
        # AWX text question gives a string, which the playbook keyword (serial) takes as well.
        defaults = set()
        # rollout.yml only shows the settings, with the default its importer passes in.
        for path in [p for p in readers if p != "playbooks/rollout.yml"]:
            for value in re.findall(r"\b%s\s*\|\s*default\(([^()]*)\)" % re.escape(name), playbooks[path]):
                defaults.add(str(yaml.safe_load(value)))
            # The rollout settings: rollout_setting(hosts, 'name'[, default]), the module's default when none.
            for value in re.findall(r"rollout_setting\(ansible_play_hosts_all, '%s'(?:, ([^()]*))?\)" % re.escape(name),
                                    playbooks[path]):
                defaults.add(str(yaml.safe_load(value)) if value else str(rollout.DEFAULTS[name]))
        if defaults and defaults != {str(question.get("default"))}:
            problems.append("survey variable %s: survey default %r, the playbooks' default(s) %s" % (
                name, question.get("default"), ", ".join(sorted(defaults))))
        return problems
    for role, entry, option in where:
        label = "survey variable %s (role %s, %s)" % (name, role, entry)
        kind = option.get("type", "str")
        if question["type"] not in SURVEY_TYPES.get(kind, ()):
            problems.append("%s: survey type %s does not fit the option's type %s" % (label, question["type"], kind))
        if question.get("default") != option.get("default"):
            problems.append("%s: survey default %r, argument spec default %r" % (
                label, question.get("default"), option.get("default")))
        choices = option.get("choices")
        if choices is not None and (question["type"] != "multiplechoice" or question.get("choices") != choices):
            problems.append("%s: survey choices %r, argument spec choices %r" % (label, question.get("choices"), choices))
        if choices is None and question.get("choices") is not None:
            problems.append("%s: survey choices %r, the argument spec has none" % (label, question.get("choices")))
    return problems


def check_credential_type(credential_type, options):
    problems = []
    fields = {f["id"] for f in credential_type["inputs"]["fields"]}
    for field in credential_type["inputs"]["fields"]:
        if not field.get("secret"):
            problems.append("credential type field %s is not secret" % field["id"])
    injectors = credential_type["injectors"]
    for kind in injectors:
        if kind != "extra_vars":
            problems.append("credential type injects %s: the secrets go in extra_vars only" % kind)
    for name, value in injectors.get("extra_vars", {}).items():
        where = options.get(name)
        if not where:
            problems.append("credential type injects %s, which no role's argument spec has" % name)
        elif not all(option.get("no_log") for _role, _entry, option in where):
            problems.append("credential type injects %s, which an argument spec does not mark no_log" % name)
        for used in re.findall(r"\{\{\s*(\w+)", value):
            if used not in fields:
                problems.append("credential type injector %s uses %s, not an input field" % (name, used))
    return problems


def inventory_groups(path=os.path.join(REPO, "inventories", "gpu", "hosts.yml")):
    """group -> its hosts, of the example inventory the AWX inventory source points at."""
    groups = {}

    def walk(name, node):
        node = node or {}
        groups[name] = sorted(node.get("hosts") or {})
        for child, sub in (node.get("children") or {}).items():
            walk(child, sub)
    walk("all", load_yaml(path)["all"])
    return groups


def check_workflow(workflow, templates, groups):
    """A workflow's graph: real job templates, links to its own nodes, limits that are inventory groups, the cache
    host job first, and every host of the inventory in one site job's limit."""
    problems = []
    label = "workflow %s" % workflow["name"]
    by_name = dict((t["name"], t) for t in templates)
    nodes = workflow.get("nodes") or []
    ids = [node["identifier"] for node in nodes]
    if len(set(ids)) != len(ids):
        problems.append("%s: node identifiers repeat: %s" % (label, ids))
    children = set()
    for node in nodes:
        job = node["unified_job_template"]
        if job.get("type") != "job_template" or job.get("name") not in by_name:
            problems.append("%s: node %s runs %r, not a job template of the assets"
                            % (label, node["identifier"], job.get("name")))
        for kind, links in (node.get("related") or {}).items():
            for link in links:
                children.add(link["identifier"])
                if link["identifier"] not in ids:
                    problems.append("%s: node %s links (%s) to %s, which is no node" % (
                        label, node["identifier"], kind, link["identifier"]))
        limit = node.get("limit")
        if limit is not None and limit not in groups:
            problems.append("%s: node %s limits to %s, not a group of the inventory" % (label, node["identifier"],
                                                                                        limit))
    roots = [node for node in nodes if node["identifier"] not in children]
    if [node["unified_job_template"]["name"] for node in roots] != ["llm_stack cache host"]:
        problems.append("%s: the first node must be the cache host job alone, not %s" % (
            label, [node["identifier"] for node in roots]))
    site = [node for node in nodes if node["unified_job_template"]["name"] == "llm_stack site"]
    if len(site) > 1 and not by_name.get("llm_stack site", {}).get("allow_simultaneous"):
        problems.append("%s: %d site jobs run in parallel, but the site template does not allow simultaneous jobs"
                        % (label, len(site)))
    covered = [host for node in site for host in groups.get(node.get("limit"), [])]
    # The cache host has a job of its own first; the routers are configured by a job over the whole inventory, and
    # the monitoring host by one after it.
    apart = ("all", "llm_cache", "llm_router", "llm_monitoring")
    fleet = sorted(set(host for name, hosts in groups.items() if name not in apart for host in hosts)
                   - set(host for name in apart[1:] for host in groups.get(name, [])))
    if sorted(covered) != fleet:
        problems.append("%s: the site jobs' limits cover %s, the fleet is %s (each host in one limit)" % (
            label, sorted(covered), fleet))
    if groups.get("llm_router"):
        serve = [node for node in nodes if node["unified_job_template"]["name"] == "llm_stack serve"]
        if [node.get("limit") for node in serve] != [None] or not serve[0].get("all_parents_must_converge"):
            problems.append("%s: the inventory has routers (llm_router): one llm_stack serve node without a limit, after"
                            " every site job (all_parents_must_converge), must configure them" % label)
    return problems


def check_launch_prompts(configure):
    """Templates take at launch the survey's variables only: ask_variables_on_launch is false (literally) on each."""
    problems = []
    for play in configure:
        for task in play.get("tasks", []):
            for module in ("awx.awx.job_template", "awx.awx.workflow_job_template"):
                if module in task and task[module].get("ask_variables_on_launch", False) is not False:
                    problems.append("%s: ask_variables_on_launch is %r: a launcher could set any variable (the index "
                                    "URL, the mirror, a token); set it to false, the surveys give what may be asked"
                                    % (task.get("name"), task[module]["ask_variables_on_launch"]))
    return problems


def check_assets(assets, configure, options, playbooks, awx_options):
    problems = []
    questions = assets["llm_stack_awx_questions"]
    names = [t["name"] for t in assets["llm_stack_awx_job_templates"]]
    if len(set(names)) != len(names):
        problems.append("job template names repeat: %s" % names)
    for template in assets["llm_stack_awx_job_templates"]:
        problems.extend(check_template(template, questions))
        variables = [q["variable"] for g in template["surveys"] for q in questions.get(g, [])]
        if len(set(variables)) != len(variables):
            problems.append("%s: a survey variable repeats: %s" % (template["name"], variables))
        readers = playbook_closure(template["playbook"], playbooks)
        for group in template["surveys"]:
            for question in questions.get(group, []):
                problems.extend("%s: %s" % (template["name"], p) for p in check_question(question, options, playbooks, readers))
    used = {g for t in assets["llm_stack_awx_job_templates"] for g in t["surveys"]}
    for group in sorted(set(questions) - used):
        for question in questions[group]:
            problems.extend(check_question(question, options, playbooks))
    problems.extend(check_credential_type(assets["llm_stack_awx_credential_type"], options))
    for workflow in assets.get("llm_stack_awx_workflows", []):
        problems.extend(check_workflow(workflow, assets["llm_stack_awx_job_templates"], inventory_groups()))
    problems.extend(check_launch_prompts(configure))
    for task, module, used in configure_module_calls(configure):
        unknown = sorted(set(used) - awx_options.get(module, set()))
        if unknown:
            problems.append("%s: %s has no option(s) %s" % (task, module, unknown))
    return problems


@pytest.fixture(scope="module")
def world():
    assets = load_yaml(os.path.join(AWX_DIR, "assets.yml"))
    configure = load_yaml(os.path.join(AWX_DIR, "configure.yml"))
    modules = {module for _task, module, _used in configure_module_calls(configure)}
    return {
        "assets": assets, "configure": configure, "options": role_options(), "playbooks": playbook_texts(),
        "awx_options": module_options(modules),
    }


def run_checks(world, assets=None, configure=None):
    return check_assets(assets or world["assets"], configure or world["configure"], world["options"],
                        world["playbooks"], world["awx_options"])


def test_the_assets_refer_to_what_exists(world):
    assert run_checks(world) == []


def test_the_jobs_have_templates(world):
    playbooks = {t["playbook"] for t in world["assets"]["llm_stack_awx_job_templates"]}
    assert {"playbooks/preflight.yml", "playbooks/cache.yml", "playbooks/site.yml", "playbooks/model.yml",
            "playbooks/rebuild.yml", "playbooks/restart_serving.yml", "playbooks/vllm.yml", "playbooks/serve.yml",
            "playbooks/report.yml"} <= playbooks
    report = _template(world["assets"], "llm_stack report")
    # report.yml stops unless it runs in check mode
    assert report["job_type"] == "check"


def test_surveys_cover_the_stack_pins_and_the_model(world):
    site = [t for t in world["assets"]["llm_stack_awx_job_templates"] if t["name"] == "llm_stack site"][0]
    variables = {q["variable"] for g in site["surveys"] for q in world["assets"]["llm_stack_awx_questions"][g]}
    pins = {name for name, where in world["options"].items()
            if any(role == "llm_stack" for role, _e, _o in where) and name.endswith("_version")}
    assert pins | {"llm_stack_model", "llm_stack_model_revision", "llm_stack_torch_cuda"} <= variables


def test_the_workflow_the_docs_recommend_is_defined(world):
    names = [w["name"] for w in world["assets"]["llm_stack_awx_workflows"]]
    assert names == ["llm_stack fleet site"]
    with open(os.path.join(REPO, "docs", "awx.md"), encoding="utf-8") as handle:
        assert "llm_stack fleet site" in handle.read()


def test_the_credential_type_injects_the_token_and_the_api_key(world):
    injected = world["assets"]["llm_stack_awx_credential_type"]["injectors"]["extra_vars"]
    assert {"qwen_model_fetch_token", "vllm_serve_api_key"} <= set(injected)
    # The index takes no uploads: no host needs a password for it.
    assert not [name for name in injected if "index_password" in name]


def test_templates_take_the_surveys_variables_only(world):
    templates = [t for play in world["configure"] for t in play.get("tasks", []) if "awx.awx.job_template" in t]
    assert templates and all(t["awx.awx.job_template"]["ask_variables_on_launch"] is False for t in templates)
    assert check_launch_prompts(world["configure"]) == []


def _template(assets, name):
    return [t for t in assets["llm_stack_awx_job_templates"] if t["name"] == name][0]


def _question(assets, variable):
    return [q for g in assets["llm_stack_awx_questions"].values() for q in g if q["variable"] == variable][0]


def break_playbook(assets, _configure):
    _template(assets, "llm_stack site")["playbook"] = "playbooks/no_such_site.yml"


def break_variable(assets, _configure):
    _question(assets, "llm_stack_torch_version")["variable"] = "llm_stack_torch_release"


def break_default(assets, _configure):
    _question(assets, "llm_stack_cuda_version")["default"] = "12.4.1"


def break_choices(assets, _configure):
    _question(assets, "qwen_model_fetch_checksum")["choices"] = ["auto", "always"]


def break_type(assets, _configure):
    _question(assets, "qwen_model_fetch_checksum")["type"] = "integer"


def break_injector_variable(assets, _configure):
    injected = assets["llm_stack_awx_credential_type"]["injectors"]["extra_vars"]
    injected["vllm_api_key"] = injected.pop("vllm_serve_api_key")


def break_injector_field(assets, _configure):
    assets["llm_stack_awx_credential_type"]["injectors"]["extra_vars"]["vllm_serve_api_key"] = "{{ api_key }}"


def break_injector_env(assets, _configure):
    assets["llm_stack_awx_credential_type"]["injectors"]["env"] = {"HF_TOKEN": "{{ hf_token }}"}


def break_playbook_default(assets, _configure):
    _question(assets, "llm_stack_serial")["default"] = "25%"


def break_workflow_template(assets, _configure):
    assets["llm_stack_awx_workflows"][0]["nodes"][1]["unified_job_template"]["name"] = "llm_stack sight"


def break_workflow_limit(assets, _configure):
    assets["llm_stack_awx_workflows"][0]["nodes"][2]["limit"] = "l4"


def break_workflow_coverage(assets, _configure):
    nodes = assets["llm_stack_awx_workflows"][0]["nodes"]
    nodes[:] = [node for node in nodes if node.get("limit") != "h200"]
    for node in nodes:
        links = (node.get("related") or {}).get("success_nodes") or []
        links[:] = [link for link in links if link["identifier"] != "site h200"]


def break_launch_variables(_assets, configure):
    task = [t for t in configure[0]["tasks"] if "awx.awx.job_template" in t][0]
    task["awx.awx.job_template"]["ask_variables_on_launch"] = True


def break_module_option(_assets, configure):
    task = [t for t in configure[0]["tasks"] if "awx.awx.job_template" in t][0]
    task["awx.awx.job_template"]["slices"] = 3


@pytest.mark.parametrize("breaker, expected", [
    (break_playbook, "playbook playbooks/no_such_site.yml does not exist"),
    (break_variable, "llm_stack_torch_release is in no role argument spec and not in the template's playbooks"),
    (break_default, "survey default '12.4.1', argument spec default '12.8.1'"),
    (break_choices, "survey choices ['auto', 'always'], argument spec choices ['auto', 'always', 'never']"),
    (break_type, "survey type integer does not fit the option's type str"),
    (break_injector_variable, "injects vllm_api_key, which no role's argument spec has"),
    (break_injector_field, "uses api_key, not an input field"),
    (break_injector_env, "injects env: the secrets go in extra_vars only"),
    (break_playbook_default, "survey variable llm_stack_serial: survey default '25%', the playbooks' default(s) 100%"),
    (break_module_option, "awx.awx.job_template has no option(s) ['slices']"),
    (break_launch_variables, "ask_variables_on_launch is True: a launcher could set any variable"),
    (break_workflow_template, "runs 'llm_stack sight', not a job template of the assets"),
    (break_workflow_limit, "limits to l4, not a group of the inventory"),
    (break_workflow_coverage, "the fleet is"),
])
def test_a_broken_copy_fails(world, breaker, expected):
    assets = copy.deepcopy(world["assets"])
    configure = copy.deepcopy(world["configure"])
    breaker(assets, configure)
    problems = run_checks(world, assets, configure)
    assert any(expected in p for p in problems), problems


def test_the_execution_environment_is_builder_v3_with_the_controller_pins():
    ee = load_yaml(os.path.join(REPO, "meta", "execution-environment.yml"))
    assert ee["version"] == 3
    with open(os.path.join(REPO, "requirements.txt"), encoding="utf-8") as handle:
        pins = [line.strip() for line in handle if re.match(r"ansible-core==", line.strip())]
    assert [ee["dependencies"]["ansible_core"]["package_pip"]] == pins
    with open(os.path.join(REPO, "requirements-dev.txt"), encoding="utf-8") as handle:
        runner = [line.strip() for line in handle if re.match(r"ansible-runner==", line.strip())]
    assert [ee["dependencies"]["ansible_runner"]["package_pip"]] == runner
