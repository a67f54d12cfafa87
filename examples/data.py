"""Token streams stored as flat uint16 arrays (one file per split), sampled as random windows."""
import os

import numpy as np
import torch


class TokenWindows(torch.utils.data.IterableDataset):
    def __init__(self, data_dir: str, split: str, seq_len: int, pad_id: int = 0):
        self.tokens = np.memmap(os.path.join(data_dir, f"{split}.bin"), dtype=np.uint16, mode="r")
        self.seq_len = seq_len
        self.pad_id = pad_id

    def __iter__(self):
        while True:
            start = np.random.randint(0, len(self.tokens) - self.seq_len - 1)
            chunk = torch.from_numpy(self.tokens[start:start + self.seq_len + 1].astype(np.int64))
            yield chunk[:-1], chunk[1:]


def loader(data_dir: str, split: str, batch_size: int, seq_len: int, device: str):
    batches = torch.utils.data.DataLoader(TokenWindows(data_dir, split, seq_len), batch_size=batch_size,
                                          num_workers=2, pin_memory=True)
    for x, y in batches:
        yield x.to(device, non_blocking=True), y.to(device, non_blocking=True)
