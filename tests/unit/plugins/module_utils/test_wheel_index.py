# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""wheel_index: the key's wheel name on the index, the download's check against the ledger, the settings."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_index as W

ENTRY = "flash-attn-2.8.3-torch2.13.0_cpu-cp311-cxx11abiTRUE-sm80-python-only-ef7beb2c6e35"
OTHER = "flash-attn-2.8.3-torch2.13.0_cpu-cp311-cxx11abiTRUE-sm90-python-only-7a9a2270d831"
BUILT = "flash_attn-2.8.3-cp311-cp311-linux_x86_64.whl"
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
SHA = "54058201ac7087911181bfec4af6091bb59380360f069276601256a76af08193"


def test_tagged_filename_adds_the_key_build_tag():
    assert W.tagged_filename(BUILT, ENTRY) == "flash_attn-2.8.3-0ef7beb2c6e35-cp311-cp311-linux_x86_64.whl"
    # a build tag already there is replaced, so the name never grows
    assert W.tagged_filename("flash_attn-2.8.3-0ef7beb2c6e35-cp311-cp311-linux_x86_64.whl", OTHER) == \
        "flash_attn-2.8.3-07a9a2270d831-cp311-cp311-linux_x86_64.whl"


@pytest.mark.parametrize("bad", ["flash-attn", "x-1234", "label-EF7BEB2C6E35", ""])
def test_build_tag_needs_an_entry(bad):
    with pytest.raises(W.WheelIndexError):
        W.build_tag(bad)


def test_tagged_filename_refuses_what_is_no_wheel():
    with pytest.raises(W.WheelIndexError):
        W.tagged_filename("flash_attn-2.8.3.tar.gz", ENTRY)


@given(st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True), st.from_regex(r"[0-9]{1,3}(\.[0-9]{1,3}){0,2}", fullmatch=True),
       st.from_regex(r"[0-9a-f]{12}", fullmatch=True))
def test_tagged_name_parses_back_with_the_tag(name, version, digest):
    entry = "label-" + digest
    tagged = W.tagged_filename("%s-%s-cp312-cp312-linux_x86_64.whl" % (name, version), entry)
    parts = W.parse_wheel(tagged)
    assert (parts["name"], parts["version"], parts["build"], parts["plat"]) == (name, version, "0" + digest, "linux_x86_64")


@pytest.mark.parametrize("url", ["", "cache-1:8080", "ftp://cache-1", "http://user:pw@cache-1:8080", "http://a b", None, 8080])
def test_bad_index_urls(url):
    assert "llm_stack_wheel_index_url" in W.check_index_url(url)


@pytest.mark.parametrize("filename, entry", [(8, ENTRY), (BUILT, 5), (None, ENTRY), (BUILT, ["x-ef7beb2c6e35"])])
def test_wrong_types_are_refused_as_such(filename, entry):
    """A clear WheelIndexError, never a TypeError or AttributeError (the filter turns it into an error naming it)."""
    with pytest.raises(W.WheelIndexError):
        W.tagged_filename(filename, entry)


def test_config_problems(tmp_path):
    hosts = ["cache-1", "gpu-1"]
    assert W.config_problems("http://cache-1:8080", "cache-1", hosts) == []
    # No index: the controller cache is used, and nothing else of the index settings matters.
    assert W.config_problems("", "", hosts) == []
    assert W.config_problems(None, "cache-9", hosts) == []
    assert W.config_problems(" ", "cache-1", hosts)[0].startswith("llm_stack_wheel_index_url=' '")
    problems = W.config_problems("http://cache-1:8080", "", hosts)
    assert len(problems) == 1 and "llm_stack_cache_host" in problems[0]
    assert "not a host" in W.config_problems("http://cache-1:8080", "cache-9", hosts)[0]
    assert "llm_stack_wheel_index_url" in W.config_problems("cache-1", "cache-1", hosts)[0]
    # https with the CA certificate the hosts verify the index with, a controller file
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    assert W.config_problems("https://cache-1:8443", "cache-1", hosts, None, str(ca)) == []
    assert "plain http" in W.config_problems("http://cache-1:8080", "cache-1", hosts, None, str(ca))[0]
    assert "llm_stack_wheel_index_ca_cert" in W.config_problems("https://cache-1:8443", "cache-1", hosts, None,
                                                                str(tmp_path / "none.pem"))[0]


def test_cache_host_outside_the_jobs_inventory():
    # an AWX job slice holds only its own hosts: fine when the connection variables are given
    assert W.config_problems("http://cache-1:8080", "cache-1", ["gpu-1"], {"ansible_host": "10.0.0.5"}) == []
    problem = W.config_problems("http://cache-1:8080", "cache-1", ["gpu-1"], {})
    assert len(problem) == 1 and "llm_stack_cache_host_vars" in problem[0]


SERVER = {"port": 8080, "listen_host": "10.0.0.5", "data_dir": "/var/lib/fleet-cache", "wheelhouse": "",
          "tls_cert": "", "tls_key": "", "workers": 2, "threads": "16", "service_mgr": "systemd",
          "venv": "/opt/fleet-cache/venv", "config_dir": "/etc/fleet-cache", "log_dir": "/var/log/fleet-cache"}
UNIT_DIRS = {"data_dir": "fleet_cache_data_dir (llm_stack_cache_data_dir)", "venv": "fleet_cache_venv",
             "config_dir": "fleet_cache_config_dir", "log_dir": "fleet_cache_log_dir"}


def test_server_settings_of_the_test_fleet_pass(tmp_path):
    assert W.server_problems(SERVER) == []
    # as the inventory gives them: the port as a string, facts not gathered, a controller wheelhouse
    assert W.server_problems(dict(SERVER, port="8080", service_mgr=None, wheelhouse="/srv/wheelhouse")) == []
    for listen in ("0.0.0.0", "::", "127.0.0.1", "cache-01.example.internal", "fd00::5"):
        assert W.server_problems(dict(SERVER, listen_host=listen)) == []
    cert, key = tmp_path / "index.crt", tmp_path / "index.key"
    cert.write_text("c")
    key.write_text("k")
    assert W.server_problems(dict(SERVER, tls_cert=str(cert), tls_key=str(key))) == []


@pytest.mark.parametrize("change, variable", [
    ({"port": 0}, "fleet_cache_index_port is 0"),
    ({"port": "70000"}, "fleet_cache_index_port is '70000'"),
    ({"port": "80 80"}, "fleet_cache_index_port"),
    ({"port": True}, "fleet_cache_index_port is True"),
    ({"port": None}, "fleet_cache_index_port is None"),
    # it goes on the service's command line: nothing that adds an argument
    ({"listen_host": "0.0.0.0 --overwrite"}, "fleet_cache_index_listen_host is '0.0.0.0 --overwrite'"),
    ({"listen_host": ""}, "fleet_cache_index_listen_host"),
    ({"listen_host": None}, "fleet_cache_index_listen_host"),
    ({"workers": 0}, "fleet_cache_index_workers is 0"),
    ({"threads": "many"}, "fleet_cache_index_threads is 'many'"),
    ({"tls_cert": "/no/such/index.crt", "tls_key": "/no/such/index.key"}, None),
    ({"tls_cert": "", "tls_key": "/etc/passwd"}, "go together"),
    ({"data_dir": "var/lib"}, "fleet_cache_data_dir (llm_stack_cache_data_dir) is 'var/lib'"),
    ({"data_dir": ""}, "fleet_cache_data_dir (llm_stack_cache_data_dir) is ''"),
    ({"data_dir": "/var/lib/fleet cache"}, "fleet_cache_data_dir"),
    ({"wheelhouse": "wheels"}, "fleet_cache_wheelhouse is 'wheels'"),
    ({"service_mgr": "sysvinit"}, "PID 1 of this host is sysvinit"),
])
def test_server_problems_name_the_variable(change, variable):
    problems = W.server_problems(dict(SERVER, **change))
    if variable is None:
        assert len(problems) == 2 and "fleet_cache_index_tls_cert" in problems[0] and "fleet_cache_index_tls_key" in problems[1]
    else:
        assert len(problems) == 1 and variable in problems[0]


@pytest.mark.parametrize("key", sorted(UNIT_DIRS))
@pytest.mark.parametrize("value", [
    "/srv/%h/x",  # a specifier: the service user's home
    "/srv/x%", "/srv/100%%", "/srv/$HOME/x", "/srv/${HOME}",
    "/srv/x\nExecStartPre=/bin/sh -c id", "/srv/x\r", "/srv/\x1bx", "/srv/x\x7f",
    "/srv/fleet cache", "/srv/x\t", '/srv/"x"', "/srv/'x'", "/srv/x\\y", "srv/x", "",
])
def test_a_directory_the_unit_names_is_refused_with_what_systemd_would_change(key, value):
    problems = W.server_problems(dict(SERVER, **{key: value}))
    assert len(problems) == 1, problems
    assert problems[0].startswith("%s is %r: set it to an absolute directory" % (UNIT_DIRS[key], value))
    assert "without white space, quotes, backslashes, % or $" in problems[0] and "\n" not in problems[0]


def test_the_role_defaults_pass_and_left_out_directories_are_not_checked():
    with open(os.path.join(REPO, "roles", "fleet_cache", "defaults", "main.yml")) as handle:
        defaults = yaml.safe_load(handle)
    settings = dict(SERVER, config_dir=defaults["fleet_cache_config_dir"], log_dir=defaults["fleet_cache_log_dir"],
                    venv=defaults["fleet_cache_venv"].replace("{{ fleet_cache_prefix }}", defaults["fleet_cache_prefix"]))
    assert W.server_problems(settings) == []
    assert W.server_problems(dict((k, v) for k, v in SERVER.items() if k not in ("venv", "config_dir", "log_dir"))) == []
    # the data directory is always needed
    assert "fleet_cache_data_dir" in W.server_problems(dict((k, v) for k, v in SERVER.items() if k != "data_dir"))[0]


def test_server_problems_are_all_listed():
    problems = W.server_problems({"port": "x", "listen_host": "1.2.3.4", "data_dir": "rel", "service_mgr": "openrc"})
    assert len(problems) == 3
    with pytest.raises(W.WheelIndexError):
        W.server_problems(["port", 8080])


LEDGER_WHEEL = {"filename": "flash_attn-2.8.3-0ef7beb2c6e35-cp311-cp311-linux_x86_64.whl", "sha256": SHA,
                "path": "/var/lib/fleet-cache/packages/flash_attn-2.8.3-0ef7beb2c6e35-cp311-cp311-linux_x86_64.whl",
                "built_on": "gpu-a100-01"}


def test_check_download_refuses_what_the_builder_did_not_build():
    assert W.check_download(ENTRY, LEDGER_WHEEL, SHA) == ""
    evil = "e" * 64
    message = W.check_download(ENTRY, LEDGER_WHEEL, evil, "cache-01")
    for part in (ENTRY, SHA, evil, "gpu-a100-01", LEDGER_WHEEL["path"], "cache-01", "nothing was installed"):
        assert part in message
    for bad in (None, {}, {"sha256": "not-hex"}, dict(LEDGER_WHEEL, sha256=SHA.upper())):
        with pytest.raises(W.WheelIndexError):
            W.check_download(ENTRY, bad, SHA)


# --- The cache host's directories are absolute and normalized; its service user is one, and not root ---

ALL_DIRS = dict(UNIT_DIRS, prefix="fleet_cache_prefix", wheelhouse_dest="fleet_cache_wheelhouse_dest")


@pytest.mark.parametrize("key", sorted(ALL_DIRS))
@pytest.mark.parametrize("value, why", [
    ("/var/lib/../../etc", "'..' component"), ("/srv/..", "'..' component"), ("/srv/./cache", "'.' component"),
    ("/srv/cache/.", "'.' component"), ("/srv//cache", "'//'"), ("//srv/cache", "'//'"), ("/srv/cache/", "ends in '/'"),
    ("/", "it is / itself"),
])
def test_a_directory_that_is_not_normalized_or_is_the_root_is_refused(key, value, why):
    problems = W.server_problems(dict(SERVER, **{key: value}))
    assert len(problems) == 1, problems
    assert problems[0].startswith("%s is %r: " % (ALL_DIRS[key], value)) and why in problems[0].split(". Fix: ")[0]
    assert "Fix: set it to the directory written out in full" in problems[0]
    assert "'..' or '.'" in problems[0] and "not / itself" in problems[0]


@pytest.mark.parametrize("path", ["/var/lib/fleet-cache", "/srv/..cache/x..", "/srv/.cache", "/opt/fleet-cache/venv",
                                  "/a", "/srv/cache.d/x.y"])
def test_normalized_directories_pass(path):
    assert W.path_abnormality(path) == ""
    assert W.server_problems(dict(SERVER, data_dir=path, venv=path, prefix=path, wheelhouse_dest=path)) == []


@pytest.mark.parametrize("path", [None, 7, "", "relative/x", "./x", "../x"])
def test_a_relative_path_is_not_absolute(path):
    assert W.path_abnormality(path) == "it is not an absolute path"


@given(st.lists(st.sampled_from(["a", "b.c", "..", ".", "", "x-y"]), min_size=1, max_size=6))
def test_path_abnormality_agrees_with_normpath(parts):
    path = "/" + "/".join(parts)
    assert (W.path_abnormality(path) == "") == (path != "/" and os.path.normpath(path) == path and "//" not in path)


@pytest.mark.parametrize("user", ["fleet-index", "_index", "fleet_index2", "idx$", "a" * 32, "a" * 31 + "$"])
def test_a_system_user_name_passes(user):
    assert W.server_problems(dict(SERVER, user=user)) == []


@pytest.mark.parametrize("user", ["Fleet", "-x", "1index", "fleet index", "fleet.index", "a" * 33, "a$b", "idx$$",
                                  "", None, 7, ["fleet-index"], "fleet-index\n", "fleet$\n"])
def test_what_no_system_user_can_be_named_is_refused(user):
    problems = W.server_problems(dict(SERVER, user=user))
    assert len(problems) == 1 and problems[0].startswith("fleet_cache_user is %r: set it to a system user name" % (user,))
    assert "at most 32 characters" in problems[0] and "e.g. fleet-index" in problems[0]


def test_the_index_does_not_run_as_root():
    problems = W.server_problems(dict(SERVER, user="root"))
    assert len(problems) == 1 and problems[0].startswith("fleet_cache_user is 'root'")
    assert "must not run as root" in problems[0] and "Fix: set it to a system user of its own" in problems[0]


# --- Listening on every address while the fleet reaches the index at one: a warning ---

@pytest.mark.parametrize("listen, url, address", [
    ("0.0.0.0", "https://10.0.0.5:8080", "10.0.0.5"),
    ("0.0.0.0", "http://127.0.0.1:28949", "127.0.0.1"),
    ("::", "https://[fd00::5]:8080/", "fd00::5"),
    ("::", "http://10.0.0.5:8080", "10.0.0.5"),
])
def test_listening_everywhere_for_one_address_is_a_warning(listen, url, address):
    warnings = W.server_warnings({"listen_host": listen, "index_url": url})
    assert len(warnings) == 1 and warnings[0].startswith("fleet_cache_index_listen_host is '%s': the index listens on every "
                                                         "interface" % listen)
    assert "at %s only (llm_stack_wheel_index_url)" % address in warnings[0]
    assert 'Set fleet_cache_index_listen_host: "%s"' % address in warnings[0]
    # a warning stops nothing: the same settings have no problem
    assert W.server_problems(dict(SERVER, listen_host=listen)) == []


@pytest.mark.parametrize("listen, url", [
    ("10.0.0.5", "https://10.0.0.5:8080"),  # listens on the one address
    ("127.0.0.1", "http://127.0.0.1:28949"),
    ("0.0.0.0", "https://cache-01.example.internal:8080"),  # a host name may stand for several addresses
    ("0.0.0.0", "https://[fd00::5]:8080"),  # 0.0.0.0 is IPv4 only: not this warning's business
    ("0.0.0.0", "http://0.0.0.0:8080"),
    ("0.0.0.0", ""),  # no index: the controller cache
    ("0.0.0.0", None),
    ("0.0.0.0", "not a url"),
])
def test_no_warning(listen, url):
    assert W.server_warnings({"listen_host": listen, "index_url": url}) == []


def test_server_warnings_needs_a_dict():
    assert W.server_warnings({}) == []
    with pytest.raises(W.WheelIndexError):
        W.server_warnings("0.0.0.0")


# The calls gpufleet.llm_stack.wheel_build_state and gpufleet.llm_stack.fleet_cache_state make, with the roles' shapes.

def test_role_filename():
    assert W.tagged_filename("flash_attn-2.8.3-py3-none-any.whl", "x-ef7beb2c6e35") == \
        "flash_attn-2.8.3-0ef7beb2c6e35-py3-none-any.whl"
    with pytest.raises(W.WheelIndexError):
        W.tagged_filename("flash_attn-2.8.3.tar.gz", "x-ef7beb2c6e35")


def test_role_problems():
    assert W.config_problems("http://c:8080", "c", ["c", "g"]) == []
    assert len(W.config_problems("http://c:8080", "", ["c"])) == 1


def test_role_server_problems():
    settings = {"port": 8080, "listen_host": "0.0.0.0", "data_dir": "/var/lib/fleet-cache", "wheelhouse": "",
                "tls_cert": "", "tls_key": "", "service_mgr": ""}
    assert W.server_problems(settings) == []
    assert "fleet_cache_index_port" in W.server_problems(dict(settings, port=99999))[0]
    with pytest.raises(W.WheelIndexError):
        W.server_problems("8080")


def test_role_server_problems_of_the_user_and_the_directories():
    settings = {"port": 8080, "listen_host": "0.0.0.0", "data_dir": "/var/lib/fleet-cache", "wheelhouse": "",
                "tls_cert": "", "tls_key": "", "service_mgr": "", "user": "fleet-index", "prefix": "/opt/fleet-cache",
                "wheelhouse_dest": "/opt/fleet-cache/wheelhouse"}
    assert W.server_problems(settings) == []
    found = W.server_problems(dict(settings, user="root", data_dir="/var/lib/../fleet-cache"))
    assert [p.split(" ")[0] for p in found] == ["fleet_cache_data_dir", "fleet_cache_user"]


def test_role_server_warnings():
    assert W.server_warnings({"listen_host": "0.0.0.0", "index_url": "https://cache-1:8080"}) == []
    found = W.server_warnings({"listen_host": "0.0.0.0", "index_url": "https://10.0.0.5:8080"})
    assert len(found) == 1 and "fleet_cache_index_listen_host" in found[0] and "10.0.0.5" in found[0]
    with pytest.raises(W.WheelIndexError):
        W.server_warnings(["0.0.0.0"])
