import torch
scaler = torch.cuda.amp.GradScaler()
