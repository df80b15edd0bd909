"""ONNX's backend node cases as one family (issue 45): corpus.py generates and keeps them, golden.py judges them."""
