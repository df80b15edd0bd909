"""The f32_reduction family: golden.py (what is right), emu.py (the emu model), iree_program.py."""
