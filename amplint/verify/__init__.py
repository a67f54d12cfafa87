"""``amplint verify``: run the user's step as a float32 reference and in float16 (CUDA autocast, or
CUDA's policy emulated on CPU), record what float16 did op by op at the user's source lines, forward,
backward and over optimizer steps, and match it to the static findings. Imports torch: only the
``verify`` command and this API load it (``pip install "amplint[verify]"``)."""
from .report import Report
from .run import UserCodeError, verify

__all__ = ["verify", "Report", "UserCodeError"]
