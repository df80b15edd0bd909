"""The history's options, declared whatever the session: given, they engage the plugin (plugin/engagement.py)."""


def pytest_addoption(parser):
    g = parser.getgroup("accel-regress")
    g.addoption("--history", default=None, metavar="PATH|URL|none",
                help="results history this run is stored in: a SQLite file, a postgresql:// URL, or none "
                     "(default: $ACCEL_HISTORY, else the user data folder's accel-regress/history.sqlite)")
    g.addoption("--history-revision", default=None, metavar="REV",
                help="revision of the code under test, stored with the run (default: $GITHUB_SHA, "
                     "$CI_COMMIT_SHA, $BUILDKITE_COMMIT or $GIT_COMMIT)")
    g.addoption("--history-runner", default=None, metavar="LABEL",
                help="runner label stored with the run (default: $RUNNER_NAME, $CI_RUNNER_DESCRIPTION, ...)")
    g.addoption("--shard", default=None, metavar="I/N",
                help="run only shard I of N, balanced by the durations the history holds")
