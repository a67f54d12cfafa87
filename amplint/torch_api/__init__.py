"""What amplint knows about torch, as data: one home used by the static model (amplint check) and by
the runtime verifier (amplint verify). No libcst, and no torch import here: each table cites the
torch source it follows and tests/test_torch_api.py checks it against the installed torch.

- ``autocast``: CUDA's autocast policy keyed by aten operator, and the Python spellings reaching it
- ``optimizers``: torch.optim classes and their eps defaults
- ``amp_api``: the deprecated AMP API and what replaces it
"""
