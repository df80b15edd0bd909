"""The accel-regress pytest plugin (entry point ``pytest11``: ``accel_regress.plugin``).

The core, one concern per module:
- ``engagement`` whether a session is the plugin's: installed anywhere, it acts only on its own items
- ``spelling``   every option is ``--accel-NAME``; ``--NAME`` too where the project has no option of that name
- ``options``    command-line and ini options, their validation, the backend selection
- ``run_memo``   each distinct case runs once per session (per xdist worker), whatever the test layout
- ``fixtures``   the ``hw`` and ``golden_seed`` fixtures and which (test, backend) pairs exist
- ``isolation``  the isolated runner, bounds and device locks, stop signals and the session timeout
- ``recording``  one result record per case, results.json / results.jsonl, interrupted cases
- ``terminal``   the family x backend table and the rerun line of every failure
- ``gc_freeze``  the objects alive after collection leave the garbage collector's work
- ``ahead``      compile ahead: the session's programs built on idle cores while the first cases run
- ``parallel``   under pytest-xdist: each worker's thread pools sized to its share of the CPUs,
  its fork server stopped when its session ends

Features register here as plugins of their own; those only a session of the plugin's needs (known
bugs, the report writers, --repeat, the RVV codegen scan, ``unsupported``: a backend's Unsupported
during a test is a SKIP) register when it engages (``engagement.ON_ENGAGEMENT``).
Backends are not plugins: they register through entry points (hardware/core/registry.py).
"""
from accel_regress.core import registry as _registry


def _registered_plugins() -> list[str]:
    try:
        return [reg.value for reg in _registry.registrations("plugin").values()]
    except _registry.RegistrationError:
        return []    # reported where it can be, at configure (the backends' registrations are read there)


pytest_plugins = [
    "accel_regress.plugin.spelling",                # --accel-NAME, and --NAME where the project has none
    "accel_regress.plugin.engagement",
    "accel_regress.plugin.run_memo",                # each distinct case runs once per session (before fixtures: it imports it)
    "accel_regress.plugin.fixtures",
    "accel_regress.plugin.isolation",
    "accel_regress.plugin.recording",
    "accel_regress.plugin.terminal",
    "accel_regress.plugin.gc_freeze",
    "accel_regress.plugin.ahead",                   # the session's compiles start when collection ends
    "accel_regress.plugin.parallel",
    "accel_regress.plugin.history_options",         # --history, --shard (both register on engagement)
    "accel_regress.plugin.hypothesis_setup",         # accel-ci (default) and explore profiles, once hypothesis is in use
    # The plugins backends and families bring (entry-point group accel_regress.plugins), e.g. the
    # NPU's supported_devices marker and options. Those only a session of the plugin's needs
    # (accel_regress.session_plugins, e.g. qemu-rvv's codegen scan in the records) register when it engages.
    *_registered_plugins(),
    "accel_regress.plugin.options",                  # last: it gives every option above an ini twin
]


def pytest_addhooks(pluginmanager):
    from accel_regress.core import hookspecs
    pluginmanager.add_hookspecs(hookspecs)
