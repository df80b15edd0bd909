"""The built-in operator families, one folder each: golden module, emu model, IREE program."""
