"""Model and training hyper-parameters."""
from dataclasses import dataclass


@dataclass
class ModelConfig:
    vocab_size: int = 32000
    max_len: int = 512
    dim: int = 512
    n_layers: int = 8
    n_heads: int = 8
    dropout: float = 0.1
    linear_attention: bool = False  # O(T) attention for long contexts


@dataclass
class TrainConfig:
    data_dir: str = "data/tokens"
    out_dir: str = "checkpoints"
    batch_size: int = 32
    seq_len: int = 512
    lr: float = 3e-4
    min_lr: float = 3e-5
    warmup_steps: int = 2000
    max_steps: int = 100_000
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    label_smoothing: float = 0.1
    aux_weight: float = 0.1
    eval_every: int = 1000
    device: str = "cuda"
