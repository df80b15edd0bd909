"""Each backend's declared memory bound (Backend.memory_bound) is what its isolated runs get.

A GPU driver reserves tens of GiB of virtual addresses when it starts (CUDA's unified address
space), which RLIMIT_AS at 80 % of RAM turns into a failed initialisation: the bound for those
backends is the device's allocator, and the worker's soft address-space limit is lifted for them.
"""
from __future__ import annotations

import mmap
import os
import resource

import pytest

from accel_regress.core import registry
from accel_regress.core.isolation.bounds import MEMORY_BOUNDS, apply_memory_bound

# Chosen per backend, with why: a CPU process bounded by its address space; a GPU runtime by its device.
EXPECTED = {
    "emu": "address-space", "iree-cpu": "address-space", "qemu-rvv": "address-space",
    "iree-vulkan": "device",     # a real GPU's Vulkan driver maps device memory into the process
    "iree-cuda": "device",       # cuInit reserves the unified virtual address range
    "iree-hip": "device",        # HIP's runtime does the same for its address aperture
    "torch-cpu": "address-space",    # torch's CPU device allocates with malloc: the CPU backends' bound
    "torch-cuda": "device", "torch-xpu": "device", "torch-mps": "device", "torch-npu": "device",
    "torch-privateuse1": "device",
}


@pytest.mark.parametrize("name", sorted(registry.names()))
def test_every_backend_declares_a_known_bound(name):
    assert registry.get(name).memory_bound in MEMORY_BOUNDS


@pytest.mark.parametrize("name,kind", sorted(EXPECTED.items()))
def test_bound_chosen_per_backend(name, kind):
    assert registry.get(name).memory_bound == kind


def _in_child(fn) -> int:
    """Run ``fn`` in a forked child (rlimits must not touch the test process); its exit code."""
    pid = os.fork()
    if pid == 0:
        try:
            os._exit(fn())
        except BaseException:
            import traceback
            traceback.print_exc()
            os._exit(99)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _reserve(nbytes: int) -> bool:
    """Reserve address space without memory, as a GPU driver does at start-up."""
    try:
        m = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=0)   # PROT_NONE (not exported by mmap)
    except (OSError, MemoryError):
        return False
    m.close()
    return True


BOUND = 1 << 30
RESERVE = 8 << 30


def test_address_space_bound_refuses_a_driver_sized_reservation():
    def child():
        apply_memory_bound("address-space", BOUND)
        return 0 if not _reserve(RESERVE) else 1
    assert _in_child(child) == 0


def test_device_bound_lets_the_reservation_through_and_the_next_cpu_run_is_bounded_again():
    def child():
        apply_memory_bound("address-space", BOUND)          # as the worker starts
        words = apply_memory_bound("device", BOUND)
        if not _reserve(RESERVE) or "device" not in words:
            return 1
        apply_memory_bound("address-space", BOUND)          # the next case, on a CPU backend
        if resource.getrlimit(resource.RLIMIT_AS)[0] != BOUND:
            return 2
        return 0 if not _reserve(RESERVE) else 3
    assert _in_child(child) == 0


def test_cgroup_bound_without_a_cgroup_says_so():
    def child():
        words = apply_memory_bound("cgroup", BOUND, None)
        return 0 if "no cgroup" in words and _reserve(RESERVE) else 1
    assert _in_child(child) == 0


def test_unknown_bound_is_an_error_naming_the_choices():
    with pytest.raises(ValueError, match="address-space, device, cgroup, none"):
        apply_memory_bound("vram", BOUND)
