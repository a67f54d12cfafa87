"""AMP204 on the perspective divide of a float16 projection: OpenPCDet's BEVFusion view transform
(unseen set 14, M14-3) projects lidar points with ``lidar2image[:3, :3].matmul(coords)`` under
--use_amp autocast and divides by the depth row afterwards; before the divide each row is a pixel
coordinate times the depth (fx·x + cx·z), past 65504 for points tens of metres away. Near misses: the
projection in float32, a divide by another tensor, the same rows, a value that is no product."""
import textwrap

import pytest

from amplint.api import lint_source

TRAIN = textwrap.dedent("""
    import torch
    from view import DepthTransform
    def main(loader):
        model = DepthTransform().cuda()
        opt = torch.optim.AdamW(model.parameters())
        scaler = torch.amp.GradScaler("cuda")
        for img, points, lidar2image in loader:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = model(img, points, lidar2image).mean()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
    """)


def view(body):
    return textwrap.dedent("""
    import torch
    from torch import nn
    class DepthTransform(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Conv2d(1, 8, 3)
        def forward(self, img, points, lidar2image):
            depth = torch.zeros(img.shape[0], 1, 32, 88, device=img.device)
            for b in range(img.shape[0]):
    {body}
            return self.net(depth)
    """).replace("{body}", textwrap.indent(textwrap.dedent(body), " " * 12))


def found(body):
    return [(f.line, f.message) for f in lint_source(view(body), filename="view.py", extra_files={"train.py": TRAIN})
            if f.code == "AMP204"]


PROJECT = """
coords = lidar2image[b, :3, :3].matmul(points[b].transpose(1, 0))
coords += lidar2image[b, :3, 3].reshape(3, 1)
coords[:2, :] /= coords[2:3, :]
"""


@pytest.mark.parametrize("body", [
    PROJECT,
    "uvz = lidar2image[b, :3, :3] @ points[b].T\nuv = uvz[:2] / uvz[2:3]\n",
    "uvz = torch.bmm(lidar2image[:, :3, :3], points.transpose(1, 2))\nuv = uvz[:, :2] / uvz[:, 2:3]\n",
])
def test_the_projection_before_a_perspective_divide_is_reported_at_the_product(body):
    [(line, message)] = found(body)
    assert "perspective divide" in message and "65504" in message
    assert "matmul" in view(body).splitlines()[line - 1] or "@" in view(body).splitlines()[line - 1] \
        or "bmm" in view(body).splitlines()[line - 1]


@pytest.mark.parametrize("name, body", [
    ("projected in float32", PROJECT.replace("lidar2image[b, :3, :3].matmul(points[b].transpose(1, 0))",
                                             "lidar2image[b, :3, :3].float().matmul(points[b].transpose(1, 0).float())")
     .replace("coords = ", "with torch.autocast('cuda', enabled=False):\n    coords = ", 1)),
    ("divided by another tensor", "uvz = lidar2image[b, :3, :3] @ points[b].T\nuv = uvz[:2] / img.shape[-1]\n"),
    ("the same rows", "uvz = lidar2image[b, :3, :3] @ points[b].T\nuv = uvz[:2] / uvz[:2].norm()\n"),
    ("no product", "uvz = points[b].T.clone()\nuv = uvz[:2] / uvz[2:3]\n"),
])
def test_near_misses(name, body):
    assert found(body) == [], name
