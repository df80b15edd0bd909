"""The results history: every run remembered, a new failure told from a flake and a known bug.

One interface, two back ends through SQLAlchemy Core (schema versions by Alembic): a SQLite file
(the default, the project's own: .accel-regress/history.sqlite beside it; `--history user` for the user's one) and a PostgreSQL server for a fleet of runners.

- ``location``    where the history is (``--history``, ``$ACCEL_HISTORY``, the default file); HistoryError
- ``schema``      the tables; ``migrations/`` the Alembic revisions that make them
- ``rows``        a results.json as rows (a run's key: stored once however it is imported)
- ``store``       the engine per back end, the schema check, ingest
- ``questions``   flaky, regressions, show, the gate's inputs, durations, the dashboard's matrix
- ``baseline``    ``gate --baseline history``
- ``dashboard``   history.html
- ``shard``       the ``--shard I/N`` split: a pure function of the selection and a durations snapshot file
- ``plugin``      the pytest options and the ingest at session end
- ``cli``         ``accel-regress history ...``
- ``localserver`` a throwaway PostgreSQL server on a Unix socket (the selftests, the benchmark)
"""
