"""The one compiled part: the explorer's copy and fingerprint walks in C (``model/_native.c``).

Everything else is declared in pyproject.toml. The extension is optional: where it cannot be
compiled, ``model.statecopy`` and ``model.fingerprint`` use their Python walks (the reference
the C walks follow) and the explorer is slower.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("model._native", sources=["model/_native.c"], optional=True)])
