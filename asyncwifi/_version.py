"""The package version, read by hatchling and re-exported as ``asyncwifi.__version__``."""

__version__ = "0.1.0"
