"""``accel-regress upstream``: a finding as a bundle an upstream maintainer runs with the toolchain
alone. cli.py is the command (run the test, reduce the case, write, check); families.py knows each
family's expected values and how to shrink a case; bundle.py writes the folder; templates/reproduce.py
is the script every bundle carries (numpy and the toolchain only)."""
