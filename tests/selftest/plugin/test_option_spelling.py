"""Options that clash with no one (issue 37 item 1): a project whose conftest.py declares --hw,
--shard, --history and --report-dir runs unchanged with the plugin installed, and the plugin's
options still work there as --accel-NAME (plugin/spelling.py says how the clash is found); a
project that never engages the plugin has none of its frames in its tracebacks.

Checked failing on e6e33d9: the project's own options made pytest die with argparse's
"conflicting option string: --hw" before collection; --fulltrace showed plugin/fixtures.py."""
import json

import pytest

pytest_plugins = ["pytester"]

PROJECT = '''
import pytest

def pytest_addoption(parser):
    parser.addoption("--hw", default="cpu")
    parser.addoption("--shard", default=None)
    parser.addoption("--history", action="store_true")
    parser.addoption("--report-dir", default="out")
    parser.addoption("--isolation", default="thread")

@pytest.fixture
def hw(request):
    return request.config.getoption("hw")
'''

THEIRS = '''
def test_their_options(hw, request):
    c = request.config
    assert (hw, c.getoption("shard"), c.getoption("history"), c.getoption("report_dir")) == ("gpu", "2/3", True, "here")
'''

OURS = '''
def test_our_seed(golden_seed):
    assert golden_seed == 3

def test_our_seed_failing(golden_seed):
    assert golden_seed == 4
'''


@pytest.fixture
def project(pytester):
    pytester.makeconftest(PROJECT)
    pytester.makepyfile(test_theirs=THEIRS)
    return pytester


def test_a_projects_own_options_are_its_own(project):
    res = project.runpytest("--hw", "gpu", "--shard", "2/3", "--history", "--report-dir", "here")
    res.assert_outcomes(passed=1)
    assert not (project.path / "here").exists() and not (project.path / "reports").exists()
    assert "accel-regress:" not in res.stdout.str() and "accel-regress summary" not in res.stdout.str()


def test_our_options_work_there_prefixed(project, tmp_path):
    project.makepyfile(test_ours=OURS)
    ours = tmp_path / "ours"
    res = project.runpytest("--hw", "gpu", "--shard", "2/3", "--history", "--report-dir", "here",
                            "--accel-golden-seed", "3", "--accel-report-dir", str(ours), "--accel-hw", "emu",
                            "--accel-history", "none", "--accel-isolation", "none")
    res.assert_outcomes(passed=2, failed=1)
    res.stdout.fnmatch_lines(["accel-regress: backends emu*",
                              "accel-regress: --history, --shard, --hw, --report-dir, --isolation are this project's own options; "
                              "ours are spelled --accel-history, --accel-shard, --accel-hw, --accel-report-dir, "
                              "--accel-isolation here"])
    data = json.loads((ours / "results.json").read_text())
    assert data["session"]["golden_seed"] == 3
    rerun = [c["rerun"] for c in data["cases"] if c["verdict"] == "FAIL"]
    assert len(rerun) == 1 and "--golden-seed 3 --accel-isolation none" in rerun[0], rerun


def test_short_spellings_where_the_project_has_none(pytester):
    pytester.makepyfile(test_ours=OURS)
    res = pytester.runpytest("--golden-seed", "3", "--hw", "emu", "--history", "none", "--isolation", "none",
                             "--report-dir", "r")
    res.assert_outcomes(passed=1, failed=1)
    assert "project's own options" not in res.stdout.str()
    res = pytester.runpytest("--help")
    res.stdout.fnmatch_lines(["*--accel-hw=NAME*"])


def test_no_plugin_frame_in_a_guests_traceback(pytester):
    pytester.makepyfile(test_a="def test_a():\n    raise ValueError('theirs')\n")
    res = pytester.runpytest_subprocess("--fulltrace", "-p", "no:cacheprovider")
    res.assert_outcomes(failed=1)
    assert "accel_regress" not in res.stdout.str() and "/hardware/" not in res.stdout.str(), res.stdout.str()


def test_no_code_reads_an_option_by_its_short_dest():
    """Our options' dests are accel_NAME: ``config.getoption("hw")`` would read a project's own
    ``--hw`` (or fail). Catches code written against the old dests (e.g. merged from elsewhere)."""
    import re
    from pathlib import Path

    import accel_regress
    from accel_regress.plugin import options

    repo = Path(accel_regress.__file__).resolve().parents[1]
    names = {o.name for o in options.OPTIONS} | {"history", "history_revision", "history_runner", "shard",
                                                 "npu_artifacts", "npu_mode", "pto_cpp"}
    pattern = re.compile(r"""getoption\(\s*["'](%s)["']""" % "|".join(sorted(names)))
    found = [f"{p.relative_to(repo)}:{n}: {line.strip()}"
             for folder in ("hardware", "golden", "families", "tests", "repros", "benchmarks", "scripts")
             for p in sorted((repo / folder).rglob("*.py")) if p.name != "test_option_spelling.py"
             for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1) if pattern.search(line)]
    assert not found, "read as getoption('accel_NAME'):\n" + "\n".join(found)


def test_short_spellings_take_no_argparse_internals(pytester, monkeypatch):
    """pytest 9.1's ``Argument`` wraps the argparse Action its group created, and ``attrs()`` is that
    Action's ``__dict__`` (``container``, ``option_strings``, ...: _pytest/config/argparsing.py:288-292
    at 9.1.1), which ``add_argument`` refuses. Seen on the first GPU machine (pytest 9.1.1): every
    session died with "_StoreAction.__init__() got an unexpected keyword argument 'container'" while
    the short spellings were added. On a pytest before 9.1 it is modelled (an option, once added,
    answers ``attrs()`` as 9.1.1's does); failed so on ffe9dcb."""
    from _pytest.config import argparsing

    if hasattr(argparsing.OptionGroup, "_addoption_instance"):     # before 9.1: model 9.1's Argument
        add_instance, declared = argparsing.OptionGroup._addoption_instance, argparsing.Argument.attrs

        def adding(self, option, *args, **kwargs):
            add_instance(self, option, *args, **kwargs)
            option._action = self._arggroup._group_actions[-1]

        def as_9_1(self):
            return vars(self._action) if hasattr(self, "_action") else declared(self)

        monkeypatch.setattr(argparsing.OptionGroup, "_addoption_instance", adding)
        monkeypatch.setattr(argparsing.Argument, "attrs", as_9_1)
    pytester.makepyfile(test_ours=OURS)
    res = pytester.runpytest_inprocess("--golden-seed", "3", "--hw", "emu", "--history", "none",
                                       "--isolation", "none", "--report-dir", "r")
    res.assert_outcomes(passed=1, failed=1)
