"""Build the software tester's C data path; all other metadata lives in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "natbench.testers.software._engine",
            sources=["natbench/testers/software/_engine.c"],
            extra_compile_args=["-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers"],
        )
    ]
)
