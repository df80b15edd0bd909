"""``accel-regress bisect``: which released toolchain version broke a case.

versions.py lists a package's versions on the index pip is configured with; envs.py builds one
environment per version (uv or pip, a shared download cache) into a bounded LRU cache guarded by
file locks; step.py runs the one case in such an environment through pytest (isolated as usual,
the same golden seed) and reads its verdict from results.json; search.py is the binary search
with ``git bisect skip`` semantics and the journal an interrupted bisect resumes from;
upstream_range.py turns the two versions into release tags and a compare link; cli.py is the
command.
"""
