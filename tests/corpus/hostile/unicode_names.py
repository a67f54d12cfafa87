import torch
ñ = torch.cuda.amp.GradScaler()
变量 = 1
