"""``torch.nn.Module`` and the methods of a subclass that its own machinery calls.

``MODULE_CLASSES``: the spellings of ``torch.nn.Module`` a class statement's base resolves to.

``MODULE_SELF_CALLS``: methods ``nn.Module`` calls on itself, so that a subclass overriding one has it
run with no call of its name in the project's code: ``__call__`` runs ``forward`` (``_call_impl``),
``repr()`` runs ``extra_repr`` and ``_get_name``, ``state_dict()`` runs ``_save_to_state_dict``,
``load_state_dict()`` runs ``_load_from_state_dict``, ``.to()`` / ``.cuda()`` / ``.half()`` run
``_apply``, ``DataParallel`` runs ``_replicate_for_data_parallel`` (torch/nn/modules/module.py).
tests/test_torch_api.py checks each is an attribute of the installed torch's ``nn.Module``.
"""
from __future__ import annotations

MODULE_CLASSES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})

MODULE_SELF_CALLS = frozenset({
    "forward", "extra_repr", "_get_name", "_save_to_state_dict", "_load_from_state_dict", "_apply",
    "_replicate_for_data_parallel", "_call_impl", "_wrapped_call_impl",
})
