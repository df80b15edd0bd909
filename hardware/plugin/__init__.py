"""The accel-regress pytest plugin (entry point ``pytest11``: ``hardware.plugin``).

The core, one concern per module:
- ``options``    command-line and ini options, their validation, the backend selection
- ``fixtures``   the ``hw`` and ``golden_seed`` fixtures and which (test, backend) pairs exist
- ``isolation``  the isolated runner, bounds and device locks, stop signals and the session timeout
- ``recording``  one result record per case, results.json / results.jsonl, interrupted cases
- ``terminal``   the family x backend table and the rerun line of every failure
- ``gc_freeze``  the objects alive after collection leave the garbage collector's work
- ``parallel``   under pytest-xdist: each worker's thread pools sized to its share of the CPUs,
  its fork server stopped when its session ends

Features register here as plugins of their own; backends are not plugins: they register through
entry points (hardware/registry.py).
"""
pytest_plugins = [
    "hardware.plugin.fixtures",
    "hardware.plugin.isolation",
    "hardware.plugin.recording",
    "hardware.plugin.terminal",
    "hardware.plugin.gc_freeze",
    "hardware.plugin.parallel",
    "hardware.expectations",            # known bugs: XFAIL / strict XPASS, known hangs not attempted
    "hardware.report.plugin",           # markdown, html and heatmaps after results.json
    "hardware.repeat",                  # --repeat N: mixed outcomes are FLAKY k/N
    "hardware.npu.markers",             # supported_devices, --npu-artifacts, --npu-mode
    "hardware.pypto.pto_cpp_option",    # --pto-cpp: lint ptoas output
    "hardware.qemu_rvv.report_plugin",  # RVV codegen scan in qemu-rvv / firesim records
    "hardware.plugin.hypothesis_setup", # accel-ci (default) and explore profiles, once hypothesis is in use
    "hardware.plugin.options",          # last: it gives every option above an ini twin
]


def pytest_addhooks(pluginmanager):
    from hardware import hookspecs
    pluginmanager.add_hookspecs(hookspecs)
