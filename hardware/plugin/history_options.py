"""The history's options, declared whatever the session: given, they engage the plugin (plugin/engagement.py)."""


from accel_regress.plugin import spelling


def pytest_addoption(parser):
    spelling.add(parser, "history", default=None, metavar="PATH|URL|none",
                 help="results history this run is stored in: a SQLite file, a postgresql:// URL, user (this "
                      "user's one history, in the user data folder) or none (default: $ACCEL_HISTORY, else the "
                      "project's own, .accel-regress/history.sqlite in the rootdir)")
    spelling.add(parser, "history_revision", default=None, metavar="REV",
                 help="revision of the code under test, stored with the run (default: $GITHUB_SHA, "
                      "$CI_COMMIT_SHA, $BUILDKITE_COMMIT or $GIT_COMMIT)")
    spelling.add(parser, "history_runner", default=None, metavar="LABEL",
                 help="runner label stored with the run (default: $RUNNER_NAME, $CI_RUNNER_DESCRIPTION, ...)")
    spelling.add(parser, "history_project", default=None, metavar="NAME",
                 help="project stored with the run; flakiness evidence counts only runs of the same project "
                      "(default: the name in the rootdir's pyproject.toml, else the rootdir's folder name)")
    spelling.add(parser, "history_branch", default=None, metavar="REF",
                 help="branch or ref stored with the run; flakiness evidence counts only runs of the same "
                      "branch (default: $GITHUB_HEAD_REF, $GITHUB_REF_NAME, $CI_COMMIT_REF_NAME, ..., else "
                      "the checkout's .git/HEAD)")
    spelling.add(parser, "shard", default=None, metavar="I/N",
                 help="run only shard I of N of the selection (N <= 1000), balanced by --shard-durations")
    spelling.add(parser, "shard_durations", default=None, metavar="FILE",
                 help="durations snapshot the --shard split balances, {node id: seconds} as pytest-split's "
                      ".test_durations (default: .test_durations in the rootdir if there, else by test count)")
