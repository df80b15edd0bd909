"""Where FireSim is and how a case may use it: environment variables, or a config file.

Environment (each wins over the file):

``ACCEL_FIRESIM_DEPLOY_DIR``     firesim/deploy: the manager chdirs there (deploy/firesim:481) and
                                 reads ``workloads/`` from it (deploy/runtools/workload.py:113,131,156)
``ACCEL_FIRESIM_RUNTIME_CONFIG`` the config_runtime.yaml every case starts from (run farm, hardware
                                 config, metasimulation); default ``<deploy>/config_runtime.yaml``
``ACCEL_FIRESIM_EXE``            the manager; default ``firesim`` on PATH, else ``<deploy>/firesim``
``ACCEL_FIRESIM_METASIM``        1/0: force ``metasimulation.metasimulation_enabled``
``ACCEL_FIRESIM_MAX_CYCLES``     the ``+max-cycles`` bound per case (default 2000000000, at most 2147483647:
                                 the driver reads it with ``atoi`` (systematic_scheduler.cc:10-11), so a
                                 larger number wraps to another bound or to none)
``ACCEL_FIRESIM_WALL_S``         wall-clock bound of ``firesim runworkload`` (default 1800)
``ACCEL_FIRESIM_INFRASETUP_S``   wall-clock bound of ``firesim infrasetup`` (default 900)
``ACCEL_FIRESIM_COPYBACK_S``     after ``firesim kill`` at the wall-clock bound, how long runworkload may take
                                 to notice and copy the logs back (default 120; it polls every 10 s,
                                 firesim_topology_with_passes.py:1159)
``ACCEL_FIRESIM_INFRASETUP``     must stay 1: ``firesim infrasetup`` runs before every case. Simulations
                                 run from the run farm's ``sim_slot_N`` folder
                                 (run_farm_deploy_managers.py:309-334) and only infrasetup copies the boot
                                 binary there (copy_sim_slot_infrastructure, :185-219, with
                                 firesim_topology_elements.py:615-633); without it a case runs whatever
                                 binary the previous case left in the slot. 0 is refused with that reason.
``ACCEL_FIRESIM_ROOTFS``         a rootfs image for the job (default: none, bare metal)
``ACCEL_FIRESIM_KEEP``           1: keep the generated workload folder after the run
``ACCEL_FIRESIM_CONFIG``         a TOML or JSON file with the same settings under the keys
                                 deploy_dir, runtime_config, executable, metasimulation, max_cycles,
                                 wall_s, infrasetup_s, copyback_s, infrasetup, rootfs, keep (TOML: a
                                 [firesim] table)

FireSim's own manager also insists on ``FIRESIM_SOURCED`` (deploy/firesim:441-449: "You must
source firesim/sourceme-manager.sh", checked at line 523).
"""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

SETUP = ("set ACCEL_FIRESIM_DEPLOY_DIR=<firesim>/deploy (or ACCEL_FIRESIM_CONFIG=<file>) after "
         "`source sourceme-manager.sh`, `firesim managerinit`, and a run farm + hardware config in "
         "config_runtime.yaml (https://docs.fires.im); for metasimulation set "
         "metasimulation_enabled: true there or ACCEL_FIRESIM_METASIM=1")

KEYS = {"deploy_dir": "ACCEL_FIRESIM_DEPLOY_DIR", "runtime_config": "ACCEL_FIRESIM_RUNTIME_CONFIG",
        "executable": "ACCEL_FIRESIM_EXE", "metasimulation": "ACCEL_FIRESIM_METASIM",
        "max_cycles": "ACCEL_FIRESIM_MAX_CYCLES", "wall_s": "ACCEL_FIRESIM_WALL_S",
        "infrasetup_s": "ACCEL_FIRESIM_INFRASETUP_S", "infrasetup": "ACCEL_FIRESIM_INFRASETUP",
        "copyback_s": "ACCEL_FIRESIM_COPYBACK_S",
        "rootfs": "ACCEL_FIRESIM_ROOTFS", "keep": "ACCEL_FIRESIM_KEEP"}


class ConfigError(Exception):
    """FireSim is not configured or its configuration is wrong; the message says how to fix it."""


def _flag(value, name: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ConfigError(f"{name}={value!r} is not a yes/no value (use 1 or 0)")


def _number(value, name: str, kind=int):
    try:
        number = kind(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name}={value!r} is not a number") from None
    if number <= 0:
        raise ConfigError(f"{name}={value!r} must be positive")
    return number


INT_MAX = 2**31 - 1
INFRASETUP_REQUIRED = (
    "ACCEL_FIRESIM_INFRASETUP=0 is refused: simulations run from the run farm's sim_slot_N folder and "
    "only `firesim infrasetup` copies the boot binary there (FireSim deploy/runtools/"
    "run_farm_deploy_managers.py:185-219, firesim_topology_elements.py:615-633), so without it this case "
    "would run the previous case's binary; unset it")


def _max_cycles(value) -> int:
    number = _number(value, "ACCEL_FIRESIM_MAX_CYCLES")
    if number > INT_MAX:
        raise ConfigError(f"ACCEL_FIRESIM_MAX_CYCLES={number} is above {INT_MAX}: FireSim's driver parses "
                          f"+max-cycles with atoi (sim/midas/src/main/cc/core/systematic_scheduler.cc:11), "
                          f"which wraps it to {_atoi_wrap(number)}; use at most {INT_MAX}")
    return number


def _atoi_wrap(number: int) -> str:
    # glibc atoi is (int) strtol: the low 32 bits, signed; stored into an optional<uint64_t>
    low = number & 0xFFFF_FFFF
    signed = low - 2**32 if low >= 2**31 else low
    return f"{signed} ({signed % 2**64} as the uint64 bound)" if signed < 0 else str(signed)


@dataclass(frozen=True)
class Settings:
    deploy_dir: Path
    runtime_config: Path
    executable: str
    metasimulation: Optional[bool]
    max_cycles: int
    wall_s: float
    infrasetup_s: float
    copyback_s: float
    rootfs: Optional[Path]
    keep: bool


def _file_values(env: Mapping[str, str]) -> dict:
    path = env.get("ACCEL_FIRESIM_CONFIG")
    if not path:
        return {}
    file = Path(path)
    try:
        text = file.read_text()
    except OSError as exc:
        raise ConfigError(f"ACCEL_FIRESIM_CONFIG={path}: cannot read: {exc.strerror or exc}") from None
    try:
        if file.suffix == ".json":
            data = json.loads(text)
        else:
            import tomllib
            data = tomllib.loads(text)
            data = data.get("firesim", data)
    except Exception as exc:
        raise ConfigError(f"ACCEL_FIRESIM_CONFIG={path}: not valid {file.suffix or 'TOML'}: {exc}") from None
    unknown = set(data) - set(KEYS)
    if unknown:
        raise ConfigError(f"ACCEL_FIRESIM_CONFIG={path}: unknown key(s) {', '.join(sorted(unknown))}; "
                          f"known: {', '.join(KEYS)}")
    return dict(data)


def load(env: Optional[Mapping[str, str]] = None) -> Settings:
    """The settings, or ConfigError naming exactly what is missing and how to set it up."""
    env = os.environ if env is None else env
    values = _file_values(env)
    for key, var in KEYS.items():
        if env.get(var, "") != "":
            values[key] = env[var]
    if not values.get("deploy_dir"):
        raise ConfigError(f"FireSim is not configured: ACCEL_FIRESIM_DEPLOY_DIR is not set; {SETUP}")
    deploy = Path(values["deploy_dir"]).expanduser().resolve()
    if not (deploy / "workloads").is_dir():
        raise ConfigError(f"ACCEL_FIRESIM_DEPLOY_DIR={deploy} has no workloads/ folder: it is not a "
                          f"firesim/deploy folder; {SETUP}")
    runtime = Path(values.get("runtime_config") or deploy / "config_runtime.yaml").expanduser()
    if not runtime.is_absolute():
        runtime = deploy / runtime
    if not runtime.is_file():
        raise ConfigError(f"no FireSim runtime config at {runtime} (`firesim managerinit` writes "
                          f"config_runtime.yaml; or set ACCEL_FIRESIM_RUNTIME_CONFIG)")
    exe = values.get("executable") or shutil.which("firesim", path=env.get("PATH")) or (
        str(deploy / "firesim") if (deploy / "firesim").is_file() else None)
    if not exe:
        raise ConfigError(f"the `firesim` manager is not on PATH and {deploy}/firesim does not exist "
                          f"(source firesim/sourceme-manager.sh, or set ACCEL_FIRESIM_EXE)")
    if os.sep in str(exe) and not os.access(exe, os.X_OK):
        raise ConfigError(f"ACCEL_FIRESIM_EXE={exe} is not an executable file")
    rootfs = values.get("rootfs")
    if rootfs and not Path(rootfs).is_file():
        raise ConfigError(f"ACCEL_FIRESIM_ROOTFS={rootfs}: no such file")
    metasim = values.get("metasimulation")
    if not _flag(values.get("infrasetup", True), "ACCEL_FIRESIM_INFRASETUP"):
        raise ConfigError(INFRASETUP_REQUIRED)
    return Settings(
        deploy_dir=deploy, runtime_config=runtime.resolve(), executable=str(exe),
        metasimulation=None if metasim in (None, "") else _flag(metasim, "ACCEL_FIRESIM_METASIM"),
        max_cycles=_max_cycles(values.get("max_cycles", 2_000_000_000)),
        wall_s=_number(values.get("wall_s", 1800), "ACCEL_FIRESIM_WALL_S", float),
        infrasetup_s=_number(values.get("infrasetup_s", 900), "ACCEL_FIRESIM_INFRASETUP_S", float),
        copyback_s=_number(values.get("copyback_s", 120), "ACCEL_FIRESIM_COPYBACK_S", float),
        rootfs=Path(rootfs).resolve() if rootfs else None,
        keep=_flag(values.get("keep", False), "ACCEL_FIRESIM_KEEP"))
