"""The files ``accel-regress new-family NAME`` writes (hardware/scaffold/__init__.py fills them in).

The operator they hold is a placeholder that works as generated: y = x * w + b elementwise in
f32, so that the first run is green on emu and iree-cpu and its fault is caught; a team replaces
the arithmetic, and each file says what to change. Placeholders: {op} (the family id),
{package} (the importable package the family lives in), {fault} (the fault's name).
"""

INIT = '''"""The {op} operator family, tested with accel-regress (written by `accel-regress new-family`)."""
'''

GOLDEN = '''"""What is right for {op}: inputs, the float64 reference and the error model. Knows no device.

The operator as generated is a placeholder, y = x * w + b elementwise; replace make_inputs,
reference, output_contract and tolerances with your operator's, keeping the names (they are the
family's contract with accel-regress, accel_regress.core.contracts.GoldenModule).

The parts, and why each is there:
- OP: the id this module is registered under (entry point accel_regress.families) and every
  case's ``case.op``; tests select it with ``@pytest.mark.family(OP)``.
- make_case / SHAPES: the cases. A case is (op, id, params, seed); its inputs are a function of it,
  so a fault, a worker process and the golden store all see the same inputs.
- make_inputs(case): the inputs, from the case's seed, in the dtype the device takes.
- reference(case, inputs): the exact answer, in float64 (an oracle more precise than the device).
- output_contract(case): each output's dtype and shape; a backend that returns anything else is a
  FAIL before any comparison.
- tolerances(case, inputs, ref): the error model. Per element, how far the device may be from the
  float64 reference, derived from the device's arithmetic, explainable in two lines:
    the device rounds x*w to f32 (error <= u|x w|), then adds b and rounds again (<= u|y|),
    u = 2**-24; so |y' - y| <= u (|x w| + |y|) + u^2 |x w|.
  ``ErrorModel(tol, "accumulation", k=2)`` also says the error is a sum of k = 2 independent
  roundings to nearest, so accel-regress checks the mean and spread of the error over the whole
  output too (a wrong rounding mode passes every element and fails that check).
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from accel_regress.golden import inputs as gen
from accel_regress.golden.case import Case
from accel_regress.golden.tolerance import ErrorModel

OP = "{op}"
U = 2.0 ** -24                      # f32's unit roundoff
SHAPES = [(64,), (1000,), (4099,)]  # 4099: a length no vector width divides


def shape_id(shape) -> str:
    return "N" + "x".join(str(d) for d in shape)


def make_case(shape, golden_seed: int = 0) -> Case:
    return Case.make(OP, shape_id(shape), {{"shape": list(shape)}}, golden_seed)


def make_inputs(case: Case) -> dict[str, np.ndarray]:
    g = gen.rng(case.seed)
    shape = tuple(case.params["shape"])
    return {{name: gen.uniform(g, shape, -2.0, 2.0).astype(np.float32) for name in ("x", "w", "b")}}


def reference(case: Case, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    x, w, b = (inputs[n].astype(np.float64) for n in ("x", "w", "b"))
    return {{"y": x * w + b}}


def output_contract(case: Case) -> dict[str, tuple[str, tuple[int, ...]]]:
    return {{"y": ("float32", tuple(case.params["shape"]))}}


def tolerances(case: Case, inputs: Mapping[str, np.ndarray], ref: Mapping[str, np.ndarray]) -> dict[str, ErrorModel]:
    """The error model of the module docstring, per output."""
    xw = np.abs(inputs["x"].astype(np.float64) * inputs["w"].astype(np.float64))
    tol = U * (xw + np.abs(ref["y"])) + U * U * xw
    return {{"y": ErrorModel(tol, "accumulation", dtype="f32", k=2.0)}}
'''

EMU = '''"""emu model of {op}: the device's arithmetic in the device's order and formats (numpy, f32), and
the bug the team documented, as a fault.

Replace ``run`` with your device's arithmetic (its rounding, accumulation order, tiling); keep its
signature (accel_regress.core.contracts.EmuModel). Each entry of FAULTS is a bug the suite must
catch: ``pytest --hw emu --inject-fault {fault}`` makes every case FAIL.

Fault ``{fault}``: the kernel forgets the bias (y = x * w): every output is off by b, far outside
the tolerance.
"""
from __future__ import annotations

import numpy as np

from {package} import golden

F32 = np.float32


def run(case, inputs):
    x, w, b = (inputs[n].astype(F32) for n in ("x", "w", "b"))
    return {{"y": x * w + b}}           # f32 multiply, rounded; f32 add, rounded


def drops_bias(case, outputs):
    inputs = golden.make_inputs(case)   # inputs are a function of the case
    return {{**outputs, "y": (inputs["x"] * inputs["w"]).astype(F32)}}


FAULTS = {{"{fault}": drops_bias}}
'''

IREE_PROGRAM = '''"""The linalg program of {op} that accel-regress's IREE backends (iree-cpu, qemu-rvv, the GPU ones)
compile: one elementwise linalg.generic, in the order golden.py's error model assumes.

Replace the body with your operator (accel_regress.core.contracts.IreeProgram: ``program(case)``
returns a Program naming the entry function and which inputs and outputs it takes, by name).
"""
from __future__ import annotations

import math

from accel_regress.toolchains.iree.program import Program


def program(case) -> Program:
    n = math.prod(case.params["shape"])
    t = f"tensor<{{n}}xf32>"
    mlir = f"""
func.func @main(%x: {{t}}, %w: {{t}}, %b: {{t}}) -> {{t}} {{{{
  %empty = tensor.empty() : {{t}}
  %y = linalg.generic {{{{indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>,
                                         affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                        iterator_types = ["parallel"]}}}} ins(%x, %w, %b : {{t}}, {{t}}, {{t}}) outs(%empty : {{t}}) {{{{
  ^bb0(%a: f32, %c: f32, %d: f32, %o: f32):
    %p = arith.mulf %a, %c : f32
    %v = arith.addf %p, %d : f32
    linalg.yield %v : f32
  }}}} -> {{t}}
  return %y : {{t}}
}}}}
"""
    return Program(mlir=mlir, entry="main", inputs=("x", "w", "b"), outputs=("y",))
'''

TORCH_PROGRAM = '''"""{op} as torch ops, for accel-regress's torch devices (torch-cpu in the default run; torch-cuda,
torch-xpu, torch-mps, torch-npu where their device is): the device's arithmetic as a torch user
writes it.

Replace the body with your operator (accel_regress.backends.torch_device.TorchProgram:
``run(case, inputs, device)`` gets the inputs as torch tensors already on ``device``, in the dtypes
make_inputs gives them, and returns torch tensors by output name). Torch is imported here, in the
isolated worker, never at import: the pytest process does not load torch.
"""
from __future__ import annotations


def run(case, inputs, device):
    x, w, b = inputs["x"], inputs["w"], inputs["b"]
    return {{"y": x * w + b}}           # two torch ops: an f32 multiply and an f32 add, each rounded
'''

ONNX_PROGRAM = '''"""{op} as an ONNX graph, for accel-regress's onnxruntime backends (onnxruntime, the CPU execution
provider, in the default run; onnxruntime-cuda, -rocm, -openvino, ... where their provider is): two
nodes, Mul then Add, each an f32 operation rounded once, in the order golden.py's error model assumes.

Replace the graph with your operator (accel_regress.toolchains.onnx.program.OnnxProgram:
``model(case)`` returns an OnnxModel, the serialized ModelProto and each graph input and output by
the name golden.py gives the array). onnx is imported here, in the isolated worker, never at import.
"""
from __future__ import annotations

import importlib.util
import math

from accel_regress.toolchains.onnx.program import OnnxModel

OPSET = 13          # every onnxruntime release since 1.6 runs it
IR_VERSION = 7      # the IR of opset 13 (onnx.helper.VERSION_TABLE): older runtimes read it too


def unsupported(case):
    if importlib.util.find_spec("onnx") is None:
        return "the onnx package builds this family's model (pip install onnx)"
    return None


def model(case) -> OnnxModel:
    from onnx import TensorProto, helper
    n = math.prod(case.params["shape"])
    value = {{name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [n]) for name in ("x", "w", "b", "y")}}
    graph = helper.make_graph([helper.make_node("Mul", ["x", "w"], ["p"]), helper.make_node("Add", ["p", "b"], ["y"])],
                              "{op}", [value["x"], value["w"], value["b"]], [value["y"]])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)
    return OnnxModel(proto.SerializeToString(), (("x", "tensor"), ("w", "tensor"), ("b", "tensor")), (("y", "tensor"),))
'''

TEST = '''"""{op} on every selected backend (``--hw``), against the float64 reference within the error model
(written by `accel-regress new-family`; the cases and checks are yours to extend)."""
import pytest

from accel_regress.golden import assert_close, store
from accel_regress.plugin.ahead import case_fixture
from {package} import golden

pytestmark = pytest.mark.family(golden.OP)


@pytest.fixture(scope="module")
def shape(request):
    return request.param


@case_fixture           # a function of the parameters alone: the session compiles its programs ahead
def case(shape, golden_seed):
    return golden.make_case(shape, golden_seed)


@pytest.fixture
def inputs(case):
    return store.cached("inputs", case, lambda: golden.make_inputs(case))


@pytest.fixture
def expected(case, inputs):
    def compute():
        ref = golden.reference(case, inputs)
        return ref, golden.tolerances(case, inputs, ref)
    return store.cached("expected", case, compute)


@pytest.mark.parametrize("shape", golden.SHAPES, ids=golden.shape_id, indirect=True)
def test_{op}(hw, case, inputs, expected):
    out = hw.run(case, inputs)          # dtype and shape already checked against output_contract
    ref, tol = expected
    assert_close(out["y"], ref["y"], tol=tol["y"], name="y")
'''
