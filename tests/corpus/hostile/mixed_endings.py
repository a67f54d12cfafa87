import torch
scaler = torch.cuda.amp.GradScaler()
x = 1