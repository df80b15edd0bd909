"""The package list: one import package, accel_regress, from the repository's folders.

hardware/ is accel_regress itself, golden/ and families/ its subpackages (see pyproject.toml).
setup.py only because a package list computed from folders cannot be written in pyproject.toml.
"""
from setuptools import find_packages, setup

ROOTS = {"accel_regress": "hardware", "accel_regress.golden": "golden", "accel_regress.families": "families"}
packages = []
for name, folder in ROOTS.items():
    packages += [name] + [f"{name}.{sub}" for sub in find_packages(folder)]
setup(packages=packages, package_dir=ROOTS)
