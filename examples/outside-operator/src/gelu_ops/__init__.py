"""GELU, tested with accel-regress from outside its repository (see README.md)."""
