"""iree-cpu's part of an upstream bundle (accel-regress upstream, hardware/results/upstream): the
exact iree-compile command for this host and the run through IREE's Python runtime (and the
equivalent iree-run-module line), as reproduce.py's "iree-runtime" kind runs them."""
from __future__ import annotations

from accel_regress.backends.iree_cpu import HOST_FLAGS

DRIVER = "local-task"


def spec(case, program, values, versions):
    compile_argv = ["iree-compile", "program.mlir", *HOST_FLAGS, *getattr(program, "compile_flags", ()),
                    "-o", "module.vmfb"]
    run_argv = ["iree-run-module", f"--device={DRIVER}", "--module=module.vmfb", f"--function={program.entry}",
                *(f"--input=@inputs/{n}.npy" for n in program.inputs)]
    v = versions.get("iree-runtime", "VERSION")
    out = {"compile": compile_argv, "run_argv": run_argv,
           "run": {"kind": "iree-runtime", "driver": DRIVER, "entry": program.entry,
                   "inputs": list(program.inputs), "outputs": list(program.outputs)}}
    how = [f"    pip install iree-base-compiler=={v} iree-base-runtime=={v} numpy",
           "    python reproduce.py     # exit 1 while the bug is there, 0 when fixed", "",
           "Compile: `" + " ".join(compile_argv) + "`  ", "Run: `" + " ".join(run_argv) + "`"]
    return out, {}, how
