"""Build hook for the C kernel of the tree edit distance.

All metadata lives in pyproject.toml; this file only declares the extension.
It is optional: without a working C compiler the install still succeeds and
``tree_edit`` falls back (with a warning) to its pure-Python kernel.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "tree_edit._ted",
            sources=["tree_edit/_ted.c"],
            extra_compile_args=["-O3"],
            optional=True,
        )
    ]
)
