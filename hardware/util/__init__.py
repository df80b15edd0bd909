"""Small utilities the core and the backends share: atomic writes, paths, globs, derived caches."""
