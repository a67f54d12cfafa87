"""amplint: a linter for mixed-precision (fp16 / AMP) hazards in PyTorch training code."""
__version__ = "0.1.0"
