"""The project index: call graph and class hierarchy from the files' summaries, across modules."""
import json
import textwrap
from pathlib import Path

import pytest

from amplint.project import Project
from amplint.summary import FileSummary, summarise

FILES = {
    "pkg/__init__.py": "from .losses import nll_loss as exported_loss\n",
    "pkg/losses.py": """
        import torch
        def nll_loss(p, eps=1e-8, *, reduce=True):
            return -torch.log(p + eps).mean()
        """,
    "pkg/base.py": """
        from torch import nn
        class Base(nn.Module):
            def helper(self, x, scale):
                return x * scale
        """,
    "pkg/model.py": """
        from torch import nn
        from . import base
        from .losses import nll_loss as nl
        class Net(base.Base):
            def __init__(self, width):
                super().__init__()
                self.fc = nn.Linear(width, width)
            def forward(self, x):
                h = self.helper(self.fc(x), 0.5)
                return nl(h.sigmoid(), eps=1e-3)
        class Deeper(Net):
            pass
        """,
    "train.py": """
        import torch
        import pkg
        from pkg.model import Net
        from pkg.losses import nll_loss
        def build():
            return Net(8)
        def main():
            model = build()
            opt = torch.optim.AdamW(model.parameters())
            loss = pkg.exported_loss(model(torch.randn(2, 8)))
            nll_loss(loss, 1e-5)
            nll_loss(*loss)
            loss.backward()
        if __name__ == "__main__":
            main()
        """,
}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("proj")
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    return Project(root)


def where(sites):
    return [(s.path.name, s.line, s.caller) for s in sites]


def test_callers_across_files_through_an_alias_and_a_package_reexport(project):
    sites = project.callers("pkg.losses.nll_loss")
    assert where(sites) == [("model.py", 11, "pkg.model.Net.forward"),
                            ("train.py", 11, "train.main"), ("train.py", 12, "train.main"), ("train.py", 13, "train.main")]
    assert [s.callee for s in sites] == ["pkg.losses.nll_loss", "pkg.exported_loss", "pkg.losses.nll_loss",
                                         "pkg.losses.nll_loss"]


def test_what_each_call_passes(project):
    fn = project.index.symbol("pkg.losses.nll_loss")
    assert (fn.params, fn.kwonly) == (("p", "eps"), ("reduce",))
    model_call, reexported, positional, starred = project.callers(fn.name)
    known, arg = model_call.argument_for(fn, "eps")
    assert known and (arg.how, arg.text, arg.kind) == ("eps", "1e-3", "number")
    assert model_call.argument_for(fn, "p")[1].text == "h.sigmoid()"
    assert reexported.argument_for(fn, "eps") == (True, None)  # the default
    assert positional.argument_for(fn, "eps")[1].text == "1e-5"
    assert starred.argument_for(fn, "eps") == (False, None)  # *loss may carry it


def test_a_method_called_on_self_in_a_subclass_resolves_to_the_base(project):
    helper = project.index.symbol("pkg.base.Base.helper")
    (site,) = project.callers(helper.name)
    assert where([site]) == [("model.py", 10, "pkg.model.Net.forward")]
    assert site.on_self and site.argument_for(helper, "scale")[1].text == "0.5"  # self is not an argument


def test_subclasses_across_modules(project):
    assert [c.name for c in project.subclasses("pkg.base.Base")] == ["pkg.model.Net", "pkg.model.Deeper"]
    assert [c.name for c in project.index.subclasses("pkg.base.Base", transitive=False)] == ["pkg.model.Net"]
    assert "pkg.base.Base" in [c.name for c in project.index.subclasses("torch.nn.Module")]
    assert [b.name for b in project.index.bases("pkg.model.Deeper")] == ["pkg.model.Net"]


def test_instantiations_calls_and_what_an_entry_point_reaches(project):
    index = project.index
    assert [s.name for s in index.instantiates("train.build")] == ["pkg.model.Net"]
    assert [s.name for s in index.callees("train.main")] == ["train.build", "pkg.losses.nll_loss"]
    assert "torch.optim.AdamW" in [s.callee for s in index.calls_from("train.main")]
    (init,) = index.callers("pkg.model.Net.__init__")  # Net(8) runs __init__
    assert init.argument_for(index.symbol("pkg.model.Net.__init__"), "width")[1].text == "8"
    reached = index.reachable(["train.main"])
    assert {"train.build", "pkg.model.Net", "pkg.model.Net.forward", "pkg.base.Base.helper",
            "pkg.losses.nll_loss"} <= reached
    assert "pkg.model.Deeper" not in reached
    assert [s.name for s in index.callees("train")] == ["train.main"]  # the script's module-level code
    assert "pkg.model.Net.forward" in index.reachable(["train"])


def test_calls_of_a_method_through_an_instance_held_in_an_attribute_or_a_local(tmp_path):
    files = {
        "coder.py": "class BoxCoder:\n    def encode(self, h, ha):\n        return h / ha\n",
        "head.py": textwrap.dedent("""
            import torch
            from coder import BoxCoder
            class Head:
                def __init__(self):
                    self.coder = BoxCoder()
                    self.opt = torch.optim.AdamW([])
                    self.either = BoxCoder()
                def forward(self, h, ha):
                    self.opt.step()
                    self.either.encode(h, ha)
                    return self.coder.encode(h, ha)
                def swap(self):
                    self.either = None
            def local(h, ha):
                coder = BoxCoder()
                return coder.encode(h, ha)
            """),
    }
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    project = Project(tmp_path)
    method = project.index.symbol("coder.BoxCoder.encode")
    sites = project.callers(method.name)
    # self.either is also set to None elsewhere: which class it holds is unknown, so it is no call
    assert where(sites) == [("head.py", 12, "head.Head.forward"), ("head.py", 17, "head.local")]
    assert all(s.on_self and s.argument_for(method, "ha")[1].text == "ha" for s in sites)
    assert "coder.BoxCoder.encode" in project.index.reachable(["head.local"])
    # torch objects held in attributes are values, not project classes the graph follows
    assert not any("AdamW" in s.callee for s in project.index.calls_from("head.Head.forward"))


def test_the_graph_survives_the_cache_round_trip():
    source = textwrap.dedent(FILES["pkg/model.py"]).encode()
    live = summarise(source, "pkg/model.py", "pkg.model")
    back = FileSummary.from_data(json.loads(json.dumps(live.to_data())))
    assert back.graph == live.graph and live.graph["calls"]
    bad = live.to_data()
    bad["graph"]["calls"][0][2] = "line"
    with pytest.raises(ValueError):
        FileSummary.from_data(bad)


def test_a_file_that_does_not_parse_has_no_graph():
    assert summarise(b"def broken(:\n", "x.py", "x").graph is None


def test_the_indexed_lines_are_those_a_search_of_each_line_finds():
    from amplint.summary import INDEXED_LINE
    sources = [b"x = y.CLAMP(0)\nz = 1\nscaler = amp.gradscaler()  # Update\ns.update(); s.update()",
               b"a = 1\r\nb = x.Clip(2)\r\n", b"\xff\xfeclamp \xc4\xb0update\n\nGRADSCALER\n", b"no words\n", b"clip"]
    for source in sources:
        want = [(i, line.decode("utf-8", "replace")) for i, line in enumerate(source.splitlines(), 1)
                if INDEXED_LINE.search(line)]
        assert summarise(source, "m.py", "m").lines == want, source
    assert summarise(sources[0], "m.py", "m").lines[0] == (1, "x = y.CLAMP(0)")


def test_a_function_mapped_over_a_sequence_is_called_on_each_element(tmp_path):
    # audiolm-pytorch soundstream.py: `log_orig, log_recon = map(log, (orig_mel, recon_mel))`
    files = {
        "helpers.py": "import torch\ndef log(t, eps=1e-20):\n    return torch.log(t.clamp(min=eps))\n",
        "loss.py": textwrap.dedent("""
            import helpers
            class Loss:
                def scale(self, t):
                    return t * 2
                def forward(self, a, b, xs):
                    la, lb = map(helpers.log, (a, b))
                    doubled = list(map(self.scale, xs))
                    return la, lb, doubled
            def shadowed(a, map=None):
                return map(helpers.log, (a,))
            """),
    }
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    project = Project(tmp_path)
    log = project.index.symbol("helpers.log")
    sites = project.callers(log.name)
    assert where(sites) == [("loss.py", 7, "loss.Loss.forward")] * 2
    assert sorted(s.argument_for(log, "t")[1].text for s in sites) == ["a", "b"]
    scale = project.index.symbol("loss.Loss.scale")
    [site] = project.callers(scale.name)
    assert site.on_self and site.argument_for(scale, "t")[0] is False  # `*xs`: which element is unknown
    assert "helpers.log" in project.index.reachable(["loss.Loss.forward"])
