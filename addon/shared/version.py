"""The one place the version is written: pyproject.toml reads it from here, and the startup line shows the version of
the code that runs, installed or not."""

__version__ = "0.1.0"
