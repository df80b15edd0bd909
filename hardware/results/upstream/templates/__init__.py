"""Scripts copied verbatim into upstream bundles: each runs with the toolchain's own packages and
numpy only (never accel-regress), reads ``bundle.json`` beside it, and exits 1 while the bug is
there, 0 when it is gone, 2 when it could not tell (the toolchain failed)."""
