"""What every IREE-based backend (iree-cpu, qemu-rvv, firesim, iree-amd-aie) shares."""
