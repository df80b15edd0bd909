"""The record and the commands over it: merge, gate, expectations (the data model), reports, trend, bisect,
upstream. Their pytest plugins are in accel_regress.plugin; the matmul sweep is families/matmul/sweep.py."""
