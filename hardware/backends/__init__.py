"""The built-in backends, one folder each, registered in pyproject.toml like any other."""
