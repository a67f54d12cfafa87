"""Code written for another framework whose API mirrors torch's (insightface keeps PaddlePaddle and
OneFlow ports of its recognition training beside the PyTorch one; set-16 triage T16-3): Paddle's
``GradScaler`` subclass that updates inside ``step`` was reported by AMP303, and the port was a
PyTorch fp16-mixed training entry point. A file importing another framework and nothing of torch's
is not PyTorch code: no findings, no entry point, no precision evidence. Near misses: a file
importing both (TensorFlow's data pipeline feeding a torch model) is PyTorch code."""
from cliutil import entry_point_reach, hazard_findings, write_project

from amplint.torch_api.frameworks import other_framework

PADDLE_SCALER = '''
import paddle


class LSCGradScaler(paddle.amp.GradScaler):
    def step(self, optimizer):
        optimizer.step()
        self.update()
'''

PADDLE_TRAIN = '''
import paddle

from .amp import LSCGradScaler


def train(args, backbone, classifier, optimizer, train_loader):
    scaler = LSCGradScaler(enable=args.fp16, init_loss_scaling=27648.0)
    for img, label in train_loader:
        with paddle.amp.auto_cast(enable=args.fp16):
            features = backbone(img)
            loss_v = classifier(features, label)
        scaler.scale(loss_v).backward()
        scaler.step(optimizer)
        optimizer.clear_grad()
'''

TORCH_TRAIN = '''
import torch
{extra}

def train(model, optimizer, loader):
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x, y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)


if __name__ == "__main__":
    train(None, None, [])
'''


def project(tmp_path, extra=""):
    return write_project(tmp_path / "p", {
        "paddle_port/__init__.py": "", "paddle_port/amp.py": PADDLE_SCALER, "paddle_port/train.py": PADDLE_TRAIN,
        "torch_train.py": TORCH_TRAIN.replace("{extra}", extra)})


def test_a_paddle_port_has_no_findings_and_no_entry_point(tmp_path):
    root = project(tmp_path)
    # (the PyTorch program's missing update() is still reported: it is torch code)
    assert sorted(hazard_findings(root)) == [("torch_train.py", "AMP303")]
    assert set(entry_point_reach(root)) == {"torch_train.py"}


def test_near_miss_a_file_importing_both_is_pytorch_code(tmp_path):
    root = project(tmp_path, extra="import tensorflow as tf")
    assert ("torch_train.py", "AMP303") in hazard_findings(root)
    assert "torch_train.py" in entry_point_reach(root)


def test_which_files_are_another_frameworks():
    assert other_framework(["paddle", "paddle.nn"]) == "paddle"
    assert other_framework(["oneflow", "numpy"]) == "oneflow"
    assert other_framework(["tensorflow", "torch.utils.data"]) is None
    assert other_framework(["numpy", "pkg.models"]) is None
