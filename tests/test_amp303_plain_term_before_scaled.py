"""AMP303 on a plain backward of one loss term before the scaled backward of the rest, both stepped by one
``scaler.step`` (neosr f342317, real-bug set 16, B16-3: ``l_g_percep.backward(retain_graph=True)`` then
``scaler.scale(l_g_total).backward()`` and ``scaler.step(optimizer_g)``). The step unscales the sum, so the plain
term's gradients are divided by the loss scale, a scaled backward beside them or not."""
import json
import textwrap

from cliutil import run, write_project

STEP = """
    import torch
    import torch.nn.functional as F

    def train(net, loader, opt, percep=None):
        optimizer = torch.optim.AdamW(net.parameters(), lr=1e-4)
        scaler = torch.amp.GradScaler("cuda")
        for lq, gt in loader:
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.float16):
                output = net(lq)
                l_g_total = F.l1_loss(output, gt)
    BODY
            scaler.step(optimizer)
            scaler.update()
    """


def _found(tmp_path, body):
    src = textwrap.dedent(STEP).replace("BODY\n", textwrap.indent(textwrap.dedent(body), "        "))
    root = write_project(tmp_path / "p", {"train.py": src})
    r = run(["check", "--no-cache", "--select", "AMP303", "--output-format", "json", "."], root)
    return [(f["location"]["row"], f["message"].split("`")[1]) for f in json.loads(r.out)]


def test_a_plain_term_backward_before_the_scaled_backward(tmp_path):
    found = _found(tmp_path, """
        l_g_percep = F.mse_loss(output.float(), gt)
        l_g_percep.backward(retain_graph=True)
        scaler.scale(l_g_total).backward()
        """)
    assert found == [(15, "l_g_percep.backward(retain_graph=True)")]


def test_a_conditional_plain_term_backward(tmp_path):
    found = _found(tmp_path, """
        if percep is not None:
            l_g_percep = percep(output.float(), gt)
            l_g_percep.backward(retain_graph=True)
        scaler.scale(l_g_total).backward()
        """)
    assert [code for _, code in found] == ["l_g_percep.backward(retain_graph=True)"]


def test_near_miss_the_term_added_to_the_scaled_loss(tmp_path):
    assert _found(tmp_path, """
        if percep is not None:
            l_g_total = l_g_total + percep(output.float(), gt)
        scaler.scale(l_g_total).backward()
        """) == []


def test_near_miss_a_plain_backward_another_optimizer_steps_first(tmp_path):
    # GAN-style alternation: the discriminator's plain backward is stepped and cleared by its own optimizer
    # before the generator's scaled backward
    assert _found(tmp_path, """
        d_loss = F.mse_loss(output.detach().float(), gt)
        d_loss.backward()
        opt.step()
        opt.zero_grad()
        scaler.scale(l_g_total).backward()
        """) == []

