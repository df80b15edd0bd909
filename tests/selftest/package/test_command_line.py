"""``accel-regress --version`` and ``--help`` (issue 48): the version says which accel-regress and where
it is, in one line, as pytest's and pip's do; the help says what the tool is and lists every
registered command with its summary. Failed on 60769d1: ``--version`` printed the 80-line backend
list, ``--help`` the module's raw docstring and the bare command names."""
import subprocess
import sys

import accel_regress
from accel_regress import __main__ as cli
from accel_regress.core.contracts import CONTRACT_VERSION


def accel_regress_cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "accel_regress", *args], capture_output=True, text=True, timeout=120)


def test_version_is_one_line_naming_the_version_the_contracts_and_the_place():
    res = accel_regress_cli("--version")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) == 1, res.stdout
    assert lines[0].startswith(f"accel-regress {accel_regress.__version__} (contracts {CONTRACT_VERSION}) from "), lines


def test_help_says_what_it_is_and_lists_every_command_with_its_summary():
    res = accel_regress_cli("--help")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert out.startswith("accel-regress: a hardware-correctness regression suite"), out
    listed = out[out.index("commands (entry-point group accel_regress.commands):"):].splitlines()[1:]
    names = [line.split()[0] for line in listed if not line.startswith("    ")]
    assert names == list(cli.commands()), names
    assert all(len(line) <= 100 for line in out.splitlines()), [line for line in out.splitlines() if len(line) > 100]
    new_family = next(line for line in listed if line.split()[0] == "new-family")
    assert "Write a working operator family into your own package." in new_family
    assert "cannot be loaded" not in out, out


def test_an_unknown_option_or_an_argument_to_list_is_a_usage_error():
    for args in (["--verbose"], ["list", "extra"]):
        res = accel_regress_cli(*args)
        assert res.returncode == 2 and "--help" in res.stderr and not res.stdout, (args, res.stdout, res.stderr)


def test_a_command_whose_module_is_missing_is_named_in_the_help_not_a_traceback():
    assert cli.summary("gone", "no_such_module_xyz:main").startswith("(cannot be loaded")
