"""ONNX models as a kind of per-family program, read by every backend that runs ONNX (onnxruntime)."""
