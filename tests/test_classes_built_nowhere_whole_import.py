"""A class nothing builds, in a module the programs import whole (triage set 17, T17-5: CAME's
``BertNonFusedLayerNorm``, whose one use is a commented-out alias, in ``modeling.py``, which run_glue.py /
run_squad.py / run_pretraining.py bind with ``import modeling`` and use as ``modeling.BertForX(...)``):
its code runs in no training, yet AMP102 fired on its ``eps=1e-12`` under the apex-O2 program, because a
module imported whole "may be looked into any way". When every whole import uses its name only for
attributes written out, none of them the class, the module is wired statically, as with ``from modeling
import ...``. Near misses (AMP102 stays): a program that builds the class through the module
(``modeling.BertNonFusedLayerNorm``), one that looks a class up by string (``getattr(modeling, name)``),
one that hands the module on (``vars(m)``)."""
import pytest
from cliutil import hazard_findings, write_project

MODELING = '''
import torch
from torch import nn


class BertNonFusedLayerNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-12):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.bias = nn.Parameter(torch.zeros(hidden_size))
        self.variance_epsilon = eps

    def forward(self, x):
        u = x.mean(-1, keepdim=True)
        s = (x - u) * (x - u)
        s = s.mean(-1, keepdim=True)
        x = (x - u) / torch.sqrt(s + self.variance_epsilon)
        return self.weight * x + self.bias


try:
    from apex.normalization.fused_layer_norm import FusedLayerNormAffineFunction
    APEX_IS_AVAILABLE = True
except ImportError:
    # BertLayerNorm = BertNonFusedLayerNorm
    APEX_IS_AVAILABLE = False


class BertLayerNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-12):
        super().__init__()
        self.shape = torch.Size((hidden_size,))
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.bias = nn.Parameter(torch.zeros(hidden_size))

    def forward(self, x):
        return FusedLayerNormAffineFunction.apply(x, self.weight, self.bias, self.shape, self.eps)


class Model(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        self.LayerNorm = BertLayerNorm(hidden)
        self.out = nn.Linear(hidden, 2)

    def forward(self, x, labels):
        return nn.functional.cross_entropy(self.out(self.LayerNorm(self.dense(x))).float(), labels)
'''

RUN = '''
import torch
from apex import amp
from apex.optimizers import FusedAdam

{imp}


def main(name="Model"):
    model = {build}.cuda()
    optimizer = FusedAdam(model.parameters(), lr=1e-4, bias_correction=False)
    model, optimizer = amp.initialize(model, optimizers=optimizer, opt_level="O2", loss_scale="dynamic")
    for _ in range(10):
        loss = model(torch.randn(8, 64).cuda(), torch.randint(0, 2, (8,)).cuda())
        with amp.scale_loss(loss, optimizer) as scaled_loss:
            scaled_loss.backward()
        optimizer.step()
        optimizer.zero_grad()


if __name__ == "__main__":
    main()
'''

SILENT = {
    "import modeling": ("import modeling", "modeling.Model()"),
    "import modeling as m": ("import modeling as m", "m.Model()"),
}
KEPT = {
    "built through the module": ("import modeling", "torch.nn.Sequential(modeling.Model(), "
                                 "modeling.BertNonFusedLayerNorm(2))"),
    "looked up by string": ("import modeling", "getattr(modeling, name)()"),
    "module handed on": ("import modeling as m", "dict(vars(m))[name]()"),
    # an import used for nothing is made for what importing it does (a registry filled as the module loads)
    "imported for its side effects": ("import modeling\nfrom modeling import Model as Built", "Built()"),
}


def findings(tmp_path, imp, build):
    return hazard_findings(write_project(tmp_path / "p", {"modeling.py": MODELING,
                                                          "run_glue.py": RUN.replace("{imp}", imp).replace("{build}", build)}))


@pytest.mark.parametrize("name", sorted(SILENT))
def test_a_class_no_whole_import_names_is_built_nowhere(tmp_path, name):
    assert findings(tmp_path, *SILENT[name]) == [], name


@pytest.mark.parametrize("name", sorted(KEPT))
def test_near_miss_the_whole_import_may_build_it(tmp_path, name):
    assert ("modeling.py", "AMP102") in findings(tmp_path, *KEPT[name]), name
