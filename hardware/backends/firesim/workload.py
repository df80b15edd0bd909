"""The FireSim workload of one case, and the runtime config that runs it.

The manager reads ``workloads/<file>.json`` relative to the deploy folder
(deploy/runtools/workload.py:131) with these keys (workload.py:136-161): ``benchmark_name``
(names the results folder and the input folder ``workloads/<benchmark_name>/``, line 156),
``common_bootbinary`` (a path inside that folder, line 85), ``common_rootfs`` (present and null:
no rootfs, lines 136-141; absent would make the manager derive ``<job>.ext2``, lines 66-72),
``common_simulation_outputs`` (files copied back from the simulation folder), ``workloads`` (the
jobs: ``name``, ``bootbinary``, ``rootfs``, ``outputs``, ``simulation_outputs``, lines 36-81) and
``post_run_hook``. The example deploy/workloads/null.json has the same bare-metal shape.

The run farm keeps the boot binary as ``sim_slot_N/<job>-<basename>`` (firesim_topology_elements.py:
677-682) and only infrasetup refreshes it, so each case's binary gets a name of its own
(``<sha256 prefix>-<basename>``): a slot that still holds another case's binary cannot be mistaken
for this one. ``heartbeat.csv`` (written by the driver in the slot, heartbeat.cc:27) is copied back
with the logs as progress evidence.
"""
from __future__ import annotations

import hashlib
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from accel_regress.util.atomic import copy_atomic, write_atomic

JOB = "job0"
SIM_OUTPUTS = ["uartlog", "metasim_stderr.out", "heartbeat.csv"]
# one simulation: runworkload then ends with the one job, and `firesim kill` ends exactly it
# (user_topology.py:574-575 no_net_config builds no_net_num_nodes server nodes)
TOPOLOGY = {"topology": "no_net_config", "no_net_num_nodes": 1}


def safe_name(text: str, limit: int = 60) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.")[:limit] or "case"


@dataclass(frozen=True)
class Workload:
    name: str                 # benchmark_name (and the file name, without .json)
    json_path: Path           # <deploy>/workloads/<name>.json
    input_dir: Path           # <deploy>/workloads/<name>/
    boot_name: str = ""       # the boot binary's name in input_dir
    boot_sha256: str = ""
    job: str = JOB

    @property
    def slot_boot_name(self) -> str:
        """The boot binary's name in the run farm's sim_slot_N (firesim_topology_elements.py:677-682)."""
        return f"{self.job}-{self.boot_name}"

    @property
    def file_name(self) -> str:
        return self.json_path.name

    def remove(self) -> None:
        self.json_path.unlink(missing_ok=True)
        shutil.rmtree(self.input_dir, ignore_errors=True)


def workload_json(name: str, bootbinary: str, rootfs: Optional[str]) -> dict:
    return {
        "benchmark_name": name,
        "common_bootbinary": bootbinary,
        "common_rootfs": rootfs,                      # null: bare metal
        "common_outputs": [],
        "common_simulation_outputs": list(SIM_OUTPUTS),
        "workloads": [{"name": JOB, "bootbinary": bootbinary, "rootfs": rootfs,
                       "outputs": [], "simulation_outputs": []}],
        "post_run_hook": None,
    }


def build(deploy_dir: Path, name: str, boot_binary: Path, rootfs: Optional[Path] = None) -> Workload:
    """Copy the boot binary (and rootfs) into ``workloads/<name>/`` and write ``workloads/<name>.json``."""
    workloads = deploy_dir / "workloads"
    input_dir = workloads / name
    digest = hashlib.sha256(Path(boot_binary).read_bytes()).hexdigest()
    boot_name = f"{digest[:16]}-{safe_name(Path(boot_binary).name, 80)}"
    copy_atomic(Path(boot_binary), input_dir / boot_name)
    rootfs_name = None
    if rootfs is not None:
        rootfs_name = safe_name(Path(rootfs).name, 100)
        copy_atomic(Path(rootfs), input_dir / rootfs_name)
    json_path = workloads / f"{name}.json"
    write_atomic(json_path, json.dumps(workload_json(name, boot_name, rootfs_name), indent=2) + "\n")
    return Workload(name, json_path, input_dir, boot_name, digest)


def _strip(plusargs: str, ours: tuple) -> str:
    return " ".join(t for t in str(plusargs or "").split() if not t.startswith(ours))


def runtime_config(base: dict, workload_file: str, max_cycles: int, metasimulation: Optional[bool],
                   fesvr_step_size: Optional[int] = None) -> dict:
    """The user's config_runtime.yaml with this case's workload, cycle bound and fesvr step size,
    on a one-node topology.

    ``+max-cycles=N`` and ``+fesvr-step-size=S`` go into ``target_config.plusarg_passthrough``,
    which reaches the driver in FPGA simulation and metasimulation alike
    (firesim_topology_elements.py:372-374, runtime_config.py:876-877); the driver's scheduler stops
    at N (sim/midas/src/main/cc/core/systematic_scheduler.cc:10-11) and prints ``*** FAILED ***
    simulation timed out``; the TSI bridge lets fesvr run every S cycles (hardware/backends/firesim/console.py).
    The same plusargs elsewhere in the config are removed so ours are the ones in force.
    """
    cfg = json.loads(json.dumps(base))          # a deep copy of plain YAML data
    for section in ("workload", "target_config", "metasimulation"):
        if not isinstance(cfg.get(section), dict):
            raise ValueError(f"the runtime config has no {section}: section")
    cfg["workload"]["workload_name"] = workload_file
    cfg["workload"]["suffix_tag"] = None
    # with it, runworkload terminates the run farm's instances once the job ends
    # (run_farm_deploy_managers.py:499-502), and the next case would have no run farm
    cfg["workload"]["terminate_on_completion"] = False
    target = cfg["target_config"]
    target.update(TOPOLOGY)
    ours = {"+max-cycles=": int(max_cycles)}
    if fesvr_step_size:
        ours["+fesvr-step-size="] = int(fesvr_step_size)
    names = tuple(ours)
    target["plusarg_passthrough"] = " ".join([_strip(target.get("plusarg_passthrough", ""), names)]
                                             + [f"{k}{v}" for k, v in ours.items()]).strip()
    meta = cfg["metasimulation"]
    meta["metasimulation_only_plusargs"] = _strip(meta.get("metasimulation_only_plusargs", ""), names)
    if metasimulation is not None:
        meta["metasimulation_enabled"] = bool(metasimulation)
    return cfg
