"""The gemm_partition_n family: golden.py (what is right), emu.py (the emu model), iree_program.py."""
