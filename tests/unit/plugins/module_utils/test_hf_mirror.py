# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""hf_mirror's input checks (hf_mirror.problems): a message per variable, nothing olah.toml or the unit cannot hold."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.llm_stack.plugins.module_utils import hf_mirror as M

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..")
PASSWORD = "s3cr3t-upstream-pw"


def role_defaults():
    """The role's defaults, rendered for a host named cache-1 (the two templated ones by hand)."""
    with open(os.path.join(REPO, "roles", "hf_mirror", "defaults", "main.yml")) as handle:
        defaults = yaml.safe_load(handle)
    settings = dict((key, defaults["hf_mirror_" + key]) for key in M.OPTIONS)
    settings["venv"] = defaults["hf_mirror_prefix"] + "/venv"
    settings["url"] = "http://cache-1:%s" % defaults["hf_mirror_port"]
    return settings


GOOD = role_defaults()


def problems_for(**changes):
    return M.problems(dict(GOOD, **changes))


def test_the_role_defaults_and_the_test_fleets_settings_pass():
    assert GOOD["upstream_url"] == "https://huggingface.co" and GOOD["offline"] is False
    assert M.problems(GOOD) == []
    # As molecule/qwen_model_fetch and inventories/testfleet set them; numbers may arrive as strings.
    assert problems_for(listen_host="127.0.0.1", port="28918", url="http://127.0.0.1:28918/",
                        upstream_url="http://127.0.0.1:28917", upstream_lfs_netloc="127.0.0.1:28917",
                        metadata_cache_ttl="0", cache_size_limit="2TB") == []
    assert problems_for(offline=True, git_repos_dir="/srv/hf-repos") == []
    assert M.problems(GOOD) == []


@pytest.mark.parametrize("option, value, expect", [
    ("upstream_url", "huggingface.co", "not an http:// or https:// URL"),
    ("upstream_url", "ftp://huggingface.co", "not an http:// or https:// URL"),
    ("upstream_url", "https://huggingface.co/api", "has a path"),
    ("upstream_url", "https://h.example:99999", "not a valid URL"),
    ("upstream_url", "", "empty"),
    ("url", "http://cache-1:8090/hub", "has a path"),
    ("url", "http://cache 1:8090", "spaces or control characters"),
    ("upstream_lfs_netloc", "https://cdn-lfs.huggingface.co", "without a scheme"),
    ("upstream_lfs_netloc", "cdn-lfs.huggingface.co/x", "without a scheme"),
    ("upstream_lfs_netloc", "cdn:70000", "without a scheme"),
    ("listen_host", "0.0.0.0\"\nport = 1", "address olah listens on"),
    ("listen_host", "", "address olah listens on"),
    ("port", 0, "TCP port number"),
    ("port", 65536, "TCP port number"),
    ("port", "80a", "TCP port number"),
    ("port", True, "TCP port number"),
    ("metadata_cache_ttl", -1, "number of seconds"),
    ("user", "Root User", "system user name"),
    ("user", "-x", "system user name"),
    ("service_name", "hf-mirror.service", "without '.service'"),
    ("service_name", "../../x", "systemd unit name"),
    ("cache_size_limit", "2TB\"", "whole number of K, M, G, T"),
    ("cache_size_limit", "lots", "whole number of K, M, G, T"),
    # olah 0.5.4 reads these as no limit at all (None) or fails on them: refused before they reach it.
    ("cache_size_limit", "2TiB", "olah reads no other form"),
    ("cache_size_limit", "1PB", "olah reads no other form"),
    ("cache_size_limit", "1.5TB", "olah reads no other form"),
    ("url", "https://cache-1:8090", "https needs hf_mirror_tls_cert"),
    ("cache_dir", "/var/lib/hf\nExecStartPre=/bin/sh -c id", "absolute path without spaces"),
    ("log_dir", "/var/log/hf mirror", "absolute path without spaces"),
    ("config_dir", "etc/hf-mirror", "absolute path without spaces"),
    ("venv", "/opt/hf-mirror/venv\"", "absolute path without spaces"),
    ("prefix", None, "absolute path without spaces"),
    ("git_repos_dir", "srv/repos", "or leave it empty"),
    ("git_repos_dir", "/srv/repos\"]\nx = [\"", "or leave it empty"),
    ("offline", "yes", "true or false"),
    ("offline", True, "offline mirror needs local git"),
])
def test_each_problem_names_the_variable_and_the_fix(option, value, expect):
    found = problems_for(**{option: value})
    assert len(found) == 1, found
    assert found[0].startswith("hf_mirror_" + option) and expect in found[0]
    assert "\n" not in found[0]


@pytest.mark.parametrize("option", M.UNIT_PATH_OPTIONS)
@pytest.mark.parametrize("value", ["/srv/%h/hf-mirror", "/srv/hf%%mirror", "/srv/hf-mirror%", "/srv/$HOME/hf",
                                   "/srv/${HOME}"])
def test_a_percent_or_a_dollar_in_a_path_of_the_unit_is_refused(option, value):
    """systemd would expand them in hf-mirror.service (%h: the user's home; $HOME on ExecStart=)."""
    found = problems_for(**{option: value})
    assert len(found) == 1, found
    assert found[0].startswith("hf_mirror_%s is '%s'" % (option, value))
    assert "without % or $" in found[0]


def test_the_prefix_is_not_in_the_unit_but_the_venv_under_it_is():
    assert problems_for(prefix="/opt/hf%mirror") == []
    found = problems_for(prefix="/opt/hf%mirror", venv="/opt/hf%mirror/venv")
    assert len(found) == 1 and found[0].startswith("hf_mirror_venv")


def test_every_problem_is_listed_at_once():
    found = problems_for(port=0, user="Root", cache_dir="relative", offline=True)
    assert [p.split(" ")[0].rstrip(":") for p in found] == [
        "hf_mirror_port", "hf_mirror_user", "hf_mirror_cache_dir", "hf_mirror_offline"]


def test_credentials_in_a_url_are_refused_and_never_shown():
    for option in ("upstream_url", "url"):
        found = problems_for(**{option: "http://admin:%s@mirror.example:8080" % PASSWORD})
        assert len(found) == 1 and "holds credentials" in found[0]
        assert PASSWORD not in found[0]


def test_bad_input_to_problems():
    with pytest.raises(TypeError, match="must be a dict"):
        M.problems(["https://huggingface.co"])
    with pytest.raises(TypeError, match="lack log_dir"):
        M.problems(dict((k, v) for k, v in GOOD.items() if k != "log_dir"))


UNSAFE = st.sampled_from(['"', "\\", "\n", "\r", "\x00", "\x1b", "\x7f"])


@settings(max_examples=300, deadline=None)
@given(option=st.sampled_from(M.PATH_OPTIONS + ("listen_host", "git_repos_dir")),
       head=st.text(max_size=20), bad=UNSAFE, tail=st.text(max_size=20))
def test_nothing_that_could_end_a_string_or_start_a_line_passes(option, head, bad, tail):
    value = "/" + head + bad + tail
    found = problems_for(**{option: value})
    assert any(p.startswith("hf_mirror_" + option) for p in found)
    # The message shows the value escaped: it cannot break the play's output either.
    assert all("\n" not in p and "\r" not in p for p in found)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(M.OPTIONS),
                       st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=40),
                                 st.lists(st.text(max_size=5), max_size=2)), max_size=6))
def test_any_input_gives_messages_never_an_exception(changes):
    found = M.problems(dict(GOOD, **changes))
    assert all(isinstance(p, str) and p.startswith("hf_mirror_") for p in found)
    assert len(found) <= len(M.OPTIONS)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=65535))
def test_every_port_number_passes(port):
    assert problems_for(port=port, url="http://cache-1:%d" % port) == []


def olah_convert_to_bytes(size_str):
    """olah 0.5.4's convert_to_bytes (olah/utils/disk_utils.py, from its wheel on PyPI), as it reads cache-size-limit."""
    if size_str is None:
        return None
    if isinstance(size_str, int):
        return size_str
    size_str = str(size_str).strip().upper()
    multipliers = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3, "T": 1024 ** 4,
                   "KB": 1024, "MB": 1024 ** 2, "GB": 1024 ** 3, "TB": 1024 ** 4}
    for unit in multipliers:
        if size_str.endswith(unit):
            size = int(size_str[: -len(unit)])
            return size * multipliers[unit]
    try:
        return int(size_str)
    except ValueError:
        return None


def olah_reads(text):
    try:
        return olah_convert_to_bytes(text)
    except ValueError:
        return None


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.from_regex(r"[0-9]{1,5}(\.[0-9])? ?([KMGTP]i?B?|[kmgt]b?)?", fullmatch=True), st.text(max_size=8)))
def test_a_size_passes_only_when_olah_reads_it_as_written(text):
    """A limit olah would read as no limit (None) or fail on never reaches olah.toml."""
    passes = not problems_for(cache_size_limit=text)
    if text.strip() in ("", "auto"):
        assert passes
    else:
        assert passes == (olah_reads(text) is not None and M.SIZE_RE.fullmatch(text.strip()) is not None)
        if passes:
            assert olah_reads(text) >= 0


@pytest.mark.parametrize("text, size", [("2TB", 2 * 1024 ** 4), ("500 GB", 500 * 1024 ** 3), ("100g", 100 * 1024 ** 3),
                                        ("123456", 123456)])
def test_sizes_olah_reads(text, size):
    assert problems_for(cache_size_limit=text) == [] and olah_reads(text) == size


def test_tls_needs_both_files_on_the_controller_and_an_https_url(tmp_path):
    cert, key = tmp_path / "mirror.crt", tmp_path / "mirror.key"
    cert.write_text("cert")
    key.write_text("key")
    assert problems_for(tls_cert=str(cert), tls_key=str(key), url="https://cache-1:8090") == []
    found = problems_for(tls_cert=str(cert), tls_key=str(key), url="http://cache-1:8090")
    assert len(found) == 1 and found[0].startswith("hf_mirror_url") and "https://host:port" in found[0]
    found = problems_for(tls_cert=str(cert), tls_key="", url="https://cache-1:8090")
    assert len(found) == 1 and "go together" in found[0]
    found = problems_for(tls_cert=str(tmp_path / "missing.crt"), tls_key=str(key), url="https://cache-1:8090")
    assert len(found) == 1 and found[0].startswith("hf_mirror_tls_cert")


MOUNTS = [{"mount": "/", "size_total": 100 * 1024 ** 3}, {"mount": "/var/lib", "size_total": 2000 * 1024 ** 3},
          {"mount": "/var/lib/hf-mirror-other", "size_total": 1}]


def test_cache_size_limit_auto_is_80_percent_of_the_cache_filesystem():
    assert M.cache_size_limit("auto", MOUNTS, "/var/lib/hf-mirror") == "1600G"
    assert M.cache_size_limit("auto", MOUNTS, "/srv/hf") == "80G"
    assert M.cache_size_limit(" 2TB ", MOUNTS, "/var/lib/hf-mirror") == "2TB"
    assert M.cache_size_limit("", MOUNTS, "/var/lib/hf-mirror") == ""
    assert olah_reads(M.cache_size_limit("auto", MOUNTS, "/var/lib/hf-mirror")) == 1600 * 1024 ** 3
    with pytest.raises(TypeError, match="set hf_mirror_cache_size_limit to a size"):
        M.cache_size_limit("auto", [{"mount": "/opt"}], "/var/lib/hf-mirror")


def test_cache_size_limit_refuses_a_setting_that_is_no_string():
    with pytest.raises(TypeError, match="must be a string"):
        M.cache_size_limit(5, MOUNTS, "/var/lib/hf-mirror")


def test_cache_size_limit_auto_reads_the_filesystem_first():
    """A container's root is an overlay, which ansible_facts.mounts leaves out: stat --file-system reads it."""
    # stat --file-system --format '%S %b' / on the test machine's ext4 (4096-byte blocks, 252 GiB)
    assert M.statfs_size("4096 66052064\n") == 4096 * 66052064
    assert M.cache_size_limit("auto", [], "/var/lib/hf-mirror", "4096 66052064\n") == "201G"
    # it wins over the mounts, which may name another filesystem for a bind mount
    assert M.cache_size_limit("auto", MOUNTS, "/var/lib/hf-mirror", "4096 66052064") == "201G"
    for bad in ("", None, "4096", "big 1", "4096 -1", 5):
        assert M.statfs_size(bad) is None
    assert M.cache_size_limit("auto", MOUNTS, "/var/lib/hf-mirror", "") == "1600G"
    with pytest.raises(TypeError, match="set hf_mirror_cache_size_limit to a size"):
        M.cache_size_limit("auto", [], "/var/lib/hf-mirror", "stat: cannot read file system information")
    assert M.cache_size_limit("auto", [], "/x", "512 4194304") == "1G"


# --- Directories are absolute and normalized; the service user is one, and not root ---

@pytest.mark.parametrize("option", M.PATH_OPTIONS + ("git_repos_dir",))
@pytest.mark.parametrize("value, why", [
    ("/var/lib/../../etc", "'..' component"), ("/srv/hf/..", "'..' component"), ("/srv/./hf", "'.' component"),
    ("/srv//hf", "'//'"), ("//srv/hf", "'//'"), ("/srv/hf/", "ends in '/'"), ("/", "it is / itself"),
])
def test_a_path_that_is_not_normalized_or_is_the_root_is_refused(option, value, why):
    found = problems_for(**{option: value})
    assert len(found) == 1, found
    assert found[0].startswith("hf_mirror_%s is '%s': " % (option, value)) and why in found[0].split(". Fix: ")[0]
    assert "Fix: set it to the directory written out in full" in found[0]


def test_normalized_paths_pass():
    assert problems_for(prefix="/srv/hf..mirror", venv="/srv/.venv", cache_dir="/data/hf-mirror/cache.d",
                        git_repos_dir="/srv/hf repos") == []


@pytest.mark.parametrize("user", ["hf-mirror", "_hf", "hf$", "a" * 32, "a" * 31 + "$"])
def test_a_system_user_name_passes(user):
    assert problems_for(user=user) == []


@pytest.mark.parametrize("user", ["a" * 33, "a$b", "hf.mirror", "HF", "7hf", "", None, "hf\n"])
def test_what_no_system_user_can_be_named_is_refused(user):
    found = problems_for(user=user)
    assert len(found) == 1 and found[0].startswith("hf_mirror_user is ") and "system user name" in found[0]
    assert "e.g. hf-mirror" in found[0] and "\n" not in found[0]


def test_the_mirror_does_not_run_as_root():
    found = problems_for(user="root")
    assert found == ["hf_mirror_user is 'root': the service serves files to the whole fleet and must not run as root. "
                     "Fix: set it to a system user of its own, e.g. hf-mirror."]


# --- Listening on every address while the fleet reaches the mirror at one: a warning ---

@pytest.mark.parametrize("listen, url, address", [
    ("0.0.0.0", "http://10.0.0.7:8090", "10.0.0.7"),
    ("::", "https://[fd00::7]:8090", "fd00::7"),
    ("0.0.0.0", "https://127.0.0.1:28918", "127.0.0.1"),
])
def test_listening_everywhere_for_one_address_is_a_warning(listen, url, address):
    found = M.warnings({"listen_host": listen, "url": url})
    assert len(found) == 1 and found[0].startswith("hf_mirror_listen_host is '%s': the mirror listens on every interface"
                                                   % listen)
    assert "at %s only (hf_mirror_url)" % address in found[0] and 'Set hf_mirror_listen_host: "%s"' % address in found[0]
    # it stops nothing
    assert problems_for(listen_host=listen, url=url if url.startswith("http:") else "http://cache-1:8090") == []


@pytest.mark.parametrize("listen, url", [
    ("127.0.0.1", "http://127.0.0.1:28948"),
    ("0.0.0.0", "http://cache-1:8090"),  # the role's default: a host name is not judged
    ("0.0.0.0", "https://cache-01.example.internal:8090"),
    ("10.0.0.7", "http://10.0.0.7:8090"),
    ("0.0.0.0", None),
])
def test_no_warning(listen, url):
    assert M.warnings({"listen_host": listen, "url": url}) == []
    assert M.warnings(dict(GOOD)) == []


def test_bad_input_to_warnings():
    with pytest.raises(TypeError, match="the settings must be a dict"):
        M.warnings("0.0.0.0")
