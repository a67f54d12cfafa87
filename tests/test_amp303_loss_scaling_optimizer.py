"""AMP303 on a plain ``loss.backward()`` that goes around the agent's own ``backward(loss)``, which hands the
loss to the project's loss-scaling fp16 optimizer (ParlAI before 27f22d50e: ``TorchClassifierAgent.train_step``
did ``loss.backward(); self.update_params()`` while ``TorchAgent.backward`` runs ``self.optimizer.backward(loss)``
under ``--fp16``, whose ``SafeFP16Optimizer`` scales the loss there and divides the gradients by the scale in
its step). The optimizer, the base agent and the subclass each live in a file of their own, as in ParlAI."""
import json
import textwrap

from cliutil import run, write_project

FP16 = """
    import torch

    class LossScalingOptimizer(torch.optim.Optimizer):
        def __init__(self, optimizer, init_scale=2.0 ** 15):
            self.optimizer = optimizer
            self.loss_scale = init_scale

        def backward(self, loss):
            loss = loss * self.loss_scale
            loss.backward()

        def step(self):
            for group in self.optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.grad.div_(self.loss_scale)
            self.optimizer.step()
    """

AGENT = """
    import torch
    from torch import nn
    from .fp16 import LossScalingOptimizer

    class Agent:
        def __init__(self, fp16=True):
            self.fp16 = fp16
            self.model = nn.Linear(32, 4).cuda()
            if fp16:
                self.model = self.model.half()
            self.optimizer = torch.optim.Adam(self.model.parameters())
            if fp16:
                self.optimizer = LossScalingOptimizer(self.optimizer)

        def backward(self, loss):
            if self.fp16:
                self.optimizer.backward(loss)
            else:
                loss.backward()

        def update_params(self):
            self.optimizer.step()
            self.optimizer.zero_grad()
    """

CLASSIFIER = """
    from torch import nn
    from .agent import Agent

    class ClassifierAgent(Agent):
        def train_step(self, x, y):
            scores = self.model(x)
            loss = nn.functional.cross_entropy(scores.float(), y)
            loss.backward()
            self.update_params()
            return loss
    """

TRAIN = """
    import torch
    from agents.classifier import ClassifierAgent

    def main():
        agent = ClassifierAgent(fp16=True)
        for _ in range(10):
            agent.train_step(torch.randn(16, 32, device="cuda").half(), torch.randint(0, 4, (16,), device="cuda"))

    if __name__ == "__main__":
        main()
    """


def _findings(tmp_path, **replace):
    files = {"agents/__init__.py": "", "agents/fp16.py": FP16, "agents/agent.py": AGENT,
             "agents/classifier.py": CLASSIFIER, "train.py": TRAIN}
    files.update(replace)
    root = write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items()})
    r = run(["check", "--no-cache", "--select", "AMP303", "--output-format", "json", "."], root)
    return root, [(f["filename"].replace("\\", "/").split("/p/", 1)[-1], f["location"]["row"], f)
                  for f in json.loads(r.out)]


def test_a_plain_backward_around_the_agents_scaling_route_is_reported(tmp_path):
    _, found = _findings(tmp_path)
    assert [(path, row) for path, row, _ in found] == [("agents/classifier.py", 9)]
    finding = found[0][2]
    assert "Agent.backward" in finding["message"] and "LossScalingOptimizer" in finding["message"]
    related = {(r["filename"].replace("\\", "/").split("/p/", 1)[-1], r["row"]) for r in finding["related"]}
    assert ("agents/agent.py", 16) in related and ("agents/fp16.py", 9) in related


def test_the_fix_routes_the_loss_through_the_agent(tmp_path):
    root, before = _findings(tmp_path)
    assert before
    run(["fix", "--no-cache", "--select", "AMP303", "."], root)
    text = (root / "agents" / "classifier.py").read_text()
    assert "self.backward(loss)\n" in text and "loss.backward()" not in text
    assert json.loads(run(["check", "--no-cache", "--select", "AMP303", "--output-format", "json", "."], root).out) == []


def test_near_miss_the_upstream_fix_calls_self_backward(tmp_path):
    _, found = _findings(tmp_path, **{"agents/classifier.py": CLASSIFIER.replace("loss.backward()", "self.backward(loss)")})
    assert found == []


def test_near_miss_a_wrapper_whose_backward_does_not_scale(tmp_path):
    # an optimizer wrapper whose backward only calls loss.backward(): nothing to go around
    plain = FP16.replace("loss = loss * self.loss_scale\n", "")
    _, found = _findings(tmp_path, **{"agents/fp16.py": plain})
    assert found == []


def test_near_miss_the_plain_backward_is_the_fp32_branch(tmp_path):
    branched = CLASSIFIER.replace("loss.backward()\n", "if self.fp16:\n"
                                  "                self.optimizer.backward(loss)\n"
                                  "            else:\n"
                                  "                loss.backward()\n")
    _, found = _findings(tmp_path, **{"agents/classifier.py": branched})
    assert found == []


def test_near_miss_a_plain_backward_stepping_another_optimizer(tmp_path):
    # a discriminator with its own plain Adam: its backward never went through the scaling optimizer
    other = CLASSIFIER.replace("self.update_params()", "self.disc_optimizer.step()")
    _, found = _findings(tmp_path, **{"agents/classifier.py": other})
    assert found == []
