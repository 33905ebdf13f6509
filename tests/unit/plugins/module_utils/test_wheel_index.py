# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""wheel_index: the key's wheel name on the index, reading the simple page, the upload's answer, the settings."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import wheel_index as W

ENTRY = "flash-attn-2.8.3-torch2.13.0_cpu-cp311-cxx11abiTRUE-sm80-python-only-ef7beb2c6e35"
OTHER = "flash-attn-2.8.3-torch2.13.0_cpu-cp311-cxx11abiTRUE-sm90-python-only-7a9a2270d831"
BUILT = "flash_attn-2.8.3-cp311-cp311-linux_x86_64.whl"
SHA = "54058201ac7087911181bfec4af6091bb59380360f069276601256a76af08193"

# What pypiserver 2.4.2 answers for /simple/flash-attn/.
PAGE = """<!DOCTYPE html>
<html lang="en"><head><title>Links for flash-attn</title></head><body><h1>Links for flash-attn</h1>
<a href="/packages/flash_attn-2.8.3-0ef7beb2c6e35-cp311-cp311-linux_x86_64.whl#sha256=%s">flash_attn-2.8.3-0ef7beb2c6e35-cp311-cp311-linux_x86_64.whl</a><br>
<a href="/packages/flash_attn-2.8.3-07a9a2270d831-cp311-cp311-linux_x86_64.whl#sha256=%s">x</a><br>
<a href="/packages/flash_attn-2.8.3.tar.gz#sha256=%s">flash_attn-2.8.3.tar.gz</a><br>
</body></html>""" % (SHA, "1" * 64, "2" * 64)


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
    assert W.key_wheels([{"filename": tagged, "url": "u", "sha256": SHA}], name.replace("_", "-"), entry)


def test_parse_links_gives_absolute_urls_and_sha256():
    files = W.parse_links(PAGE, "http://cache-1:8080/simple/flash-attn/")
    assert files[0] == {"filename": "flash_attn-2.8.3-0ef7beb2c6e35-cp311-cp311-linux_x86_64.whl",
                        "url": "http://cache-1:8080/packages/flash_attn-2.8.3-0ef7beb2c6e35-cp311-cp311-linux_x86_64.whl",
                        "sha256": SHA}
    assert len(files) == 3


def test_key_wheels_keeps_the_key_only():
    files = W.parse_links(PAGE, "http://cache-1:8080/simple/flash-attn/")
    assert [f["filename"] for f in W.key_wheels(files, "flash-attn", OTHER)] == \
        ["flash_attn-2.8.3-07a9a2270d831-cp311-cp311-linux_x86_64.whl"]
    assert W.key_wheels(files, "vllm", OTHER) == []


def pages(mapping):
    return lambda url: mapping.get(url, (404, "not found"))


def test_lookup_found_missing_and_404():
    url = "http://cache-1:8080/simple/flash-attn/"
    found = W.lookup("http://cache-1:8080/", "flash_attn", ENTRY, pages({url: (200, PAGE)}))
    assert found["found"] and found["wheel"]["sha256"] == SHA and found["problem"] == ""
    missing = W.lookup("http://cache-1:8080", "flash-attn", "x-" + "a" * 12, pages({url: (200, PAGE)}))
    assert missing["found"] is False and missing["problem"] == ""
    none = W.lookup("http://cache-1:8080", "flash-attn", ENTRY, pages({}))
    assert none == {"found": False, "wheel": None, "url": url, "problem": ""}


def test_lookup_problems():
    url = "http://cache-1:8080/simple/flash-attn/"
    down = W.lookup("http://cache-1:8080", "flash-attn", ENTRY, pages({url: (-1, "")}))
    assert "answered -1" in down["problem"] and "llm_stack_wheel_index_url" in down["problem"]
    twice = PAGE.replace("cp311-cp311-linux", "cp311-cp311-manylinux", 1) + PAGE
    assert "2 wheels" in W.lookup("http://cache-1:8080", "flash-attn", ENTRY, pages({url: (200, twice)}))["problem"]
    nosha = PAGE.replace("#sha256=" + SHA, "")
    assert "no sha256" in W.lookup("http://cache-1:8080", "flash-attn", ENTRY, pages({url: (200, nosha)}))["problem"]


@pytest.mark.parametrize("url", ["", "cache-1:8080", "ftp://cache-1", "http://user:pw@cache-1:8080", "http://a b"])
def test_bad_index_urls(url):
    assert "llm_stack_wheel_index_url" in W.check_index_url(url)
    with pytest.raises(W.WheelIndexError):
        W.simple_url(url, "flash-attn")


@pytest.mark.parametrize("status, present, changed, ok", [
    (200, None, True, True), (201, None, True, True), (409, SHA, False, True), (409, "0" * 64, False, False),
    (409, None, False, False), (401, None, False, False), (403, None, False, False), (500, None, False, False)])
def test_upload_verdict(status, present, changed, ok):
    verdict = W.upload_verdict(status, "w.whl", present, SHA)
    assert (verdict["ok"], verdict["changed"]) == (ok, changed)
    if status in (401, 403):
        assert "llm_stack_wheel_index_password" in verdict["msg"]


def test_config_problems():
    hosts = ["cache-1", "gpu-1"]
    assert W.config_problems("http://cache-1:8080", "cache-1", hosts, "fleet", "pw") == []
    # No index: the controller cache is used, and nothing else of the index settings matters.
    assert W.config_problems("", "", hosts, "", "") == []
    assert W.config_problems(None, "cache-9", hosts, "u", "") == []
    assert W.config_problems(" ", "cache-1", hosts, "u", "p")[0].startswith("llm_stack_wheel_index_url=' '")
    problems = W.config_problems("http://cache-1:8080", "", hosts, "fleet", "")
    assert len(problems) == 2 and "llm_stack_cache_host" in problems[0] and "password" in problems[1]
    assert "not a host" in W.config_problems("http://cache-1:8080", "cache-9", hosts, "u", "p")[0]
    # preflight reads no secret: a password of None is not judged, an empty one is refused
    assert W.config_problems("http://cache-1:8080", "cache-1", hosts, "fleet", None) == []
    assert "llm_stack_wheel_index_password" in W.config_problems("http://cache-1:8080", "cache-1", hosts, "fleet", "")[0]
    assert "llm_stack_wheel_index_username" in W.config_problems("http://cache-1:8080", "cache-1", hosts, "", None)[0]
    assert "llm_stack_wheel_index_url" in W.config_problems("cache-1", "cache-1", hosts, "u", "p")[0]


def test_cache_host_outside_the_jobs_inventory():
    # an AWX job slice holds only its own hosts: fine when the connection variables are given
    assert W.config_problems("http://cache-1:8080", "cache-1", ["gpu-1"], "fleet", "pw", {"ansible_host": "10.0.0.5"}) == []
    problem = W.config_problems("http://cache-1:8080", "cache-1", ["gpu-1"], "fleet", "pw", {})
    assert len(problem) == 1 and "llm_stack_cache_host_vars" in problem[0]


SERVER = {"port": 8080, "username": "fleet", "password": "s3cret-pw", "data_dir": "/var/lib/fleet-cache",
          "wheelhouse": "", "service_mgr": "systemd"}


def test_server_settings_of_the_test_fleet_pass():
    assert W.server_problems(SERVER) == []
    # as the inventory gives them: the port as a string, facts not gathered, a controller wheelhouse
    assert W.server_problems(dict(SERVER, port="8080", service_mgr=None, wheelhouse="/srv/wheelhouse")) == []


@pytest.mark.parametrize("change, variable", [
    ({"port": 0}, "fleet_cache_index_port is 0"),
    ({"port": "70000"}, "fleet_cache_index_port is '70000'"),
    ({"port": "80 80"}, "fleet_cache_index_port"),
    ({"port": True}, "fleet_cache_index_port is True"),
    ({"port": None}, "fleet_cache_index_port is None"),
    ({"username": ""}, "llm_stack_wheel_index_username"),
    ({"password": None}, "llm_stack_wheel_index_password"),
    ({"data_dir": "var/lib"}, "fleet_cache_data_dir (llm_stack_cache_data_dir) is 'var/lib'"),
    ({"data_dir": ""}, "fleet_cache_data_dir (llm_stack_cache_data_dir) is ''"),
    ({"data_dir": "/var/lib/fleet cache"}, "fleet_cache_data_dir"),
    ({"wheelhouse": "wheels"}, "fleet_cache_wheelhouse is 'wheels'"),
    ({"service_mgr": "sysvinit"}, "PID 1 of this host is sysvinit"),
])
def test_server_problems_name_the_variable(change, variable):
    problems = W.server_problems(dict(SERVER, **change))
    assert len(problems) == 1 and variable in problems[0]
    assert all("s3cret-pw" not in problem for problem in problems)


def test_server_problems_are_all_listed():
    problems = W.server_problems({"port": "x", "data_dir": "rel", "service_mgr": "openrc"})
    assert len(problems) == 4
    with pytest.raises(W.WheelIndexError):
        W.server_problems(["port", 8080])
