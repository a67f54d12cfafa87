"""Hugging Face ``transformers`` models: what their outputs are under CUDA autocast.

Source: transformers' BERT-family encoders (src/transformers/models/bert/modeling_bert.py): every layer
ends in ``BertOutput.forward``, ``hidden_states = self.LayerNorm(hidden_states + input_tensor)``, and
the embeddings end in ``self.LayerNorm(embeddings)``; GPT-2 ends in ``self.ln_f`` (``nn.LayerNorm``),
CLIP's text and vision towers in ``final_layer_norm`` / ``post_layernorm``, T5's encoder in
``T5LayerNorm`` (which computes in float32 and returns ``self.weight * hidden_states`` in the
weight's dtype), Llama's in ``LlamaRMSNorm`` over the residual stream (float32 embeddings plus
float16 sublayer outputs promote to float32). ``layer_norm`` is on CUDA autocast's float32 list
(``autocast.FP32``), so under autocast with float32 parameters a base model's hidden states
(``outputs[0]``, ``last_hidden_state``, ``hidden_states``) are float32, while some other outputs
are not (BERT's ``pooler_output`` is ``tanh(self.dense(...))``: float16). A model with a task head
(``...ForSequenceClassification``, ``...LMHeadModel``) returns logits from an ``nn.Linear``: float16.
No transformers import here: the package names are matched as text.
"""
from __future__ import annotations

import re
from typing import Optional

# The packages whose model classes these facts describe.
HF_PACKAGES = ("transformers",)

# The class methods that build a model of the class (``AutoModel.from_pretrained(name)``).
BUILDERS = frozenset({"from_pretrained", "from_config", "_from_config"})

# A task head on top of the base model: its main output is logits from an ``nn.Linear``
# (``BertForSequenceClassification``, ``AutoModelForCausalLM``, ``GPT2LMHeadModel``,
# ``OpenAIGPTDoubleHeadsModel``).
_TASK_HEAD = re.compile(r"For[A-Z]|Head")


def model_class(qualname: Optional[str]) -> Optional[str]:
    """The class name when ``qualname`` names a class of a Hugging Face package or one of its
    builders (``transformers.AutoModel.from_pretrained`` -> ``AutoModel``,
    ``transformers.models.bert.BertModel`` -> ``BertModel``), else None."""
    if not qualname or qualname.split(".", 1)[0] not in HF_PACKAGES:
        return None
    parts = qualname.split(".")
    if parts[-1] in BUILDERS:
        parts = parts[:-1]
    name = parts[-1]
    return name if len(parts) > 1 and name[:1].isupper() else None


def hidden_states_not_half(qualname: Optional[str]) -> bool:
    """Is ``qualname`` a Hugging Face model (or its builder) whose output under CUDA autocast is not
    known to be float16: a base model (hidden states out of a final LayerNorm: float32; a pooler's
    output float16) or the generic ``PreTrainedModel`` (any model, head or not)? A task-head model's
    logits are an ``nn.Linear``'s: float16, not this."""
    name = model_class(qualname)
    return name is not None and name.endswith("Model") and not _TASK_HEAD.search(name)
