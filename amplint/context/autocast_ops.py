"""Moved to amplint.torch_api.autocast (the one home of torch facts); this name stays for code in flight."""
from ..torch_api.autocast import *  # noqa: F401,F403
from ..torch_api.autocast import ALIASES, BANNED, FP32, LOWER_PRECISION, MODULE_OPS, OPT_DTYPE, PROMOTE, policy  # noqa: F401
