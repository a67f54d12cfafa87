"""The prefilter (amplint.prefilter): a file none of whose enabled rules' needs match its text skips
the parse and the rules, and that never changes the findings. (The whole suite also checks every
finding it produces against its rule's needs: conftest.py, AMPLINT_AUDIT_NEEDS.)"""
import json
import shutil

import pytest

import amplint.engine as engine
from amplint import prefilter
from amplint.rules import all_rules

from cliutil import ROOT, run, write_project


def check(root, *extra) -> str:
    r = run(["check", "--no-cache", "--output-format", "json", *extra, "."], root)
    assert r.rc in (0, 1), r.err
    return r.out


@pytest.fixture
def prefilter_on(monkeypatch):
    monkeypatch.setattr(prefilter, "ENABLED", True)
    monkeypatch.setattr(prefilter, "AUDIT_LOG", "")


def test_examples_and_hostile_corpus_same_findings_with_and_without_prefilter(tmp_path, monkeypatch, prefilter_on):
    for name, folder in (("examples", ROOT / "examples"), ("hostile", ROOT / "tests" / "corpus" / "hostile")):
        root = tmp_path / name
        shutil.copytree(folder, root)
        (root / "pyproject.toml").exists() or (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
        monkeypatch.setattr(prefilter, "ENABLED", True)
        on = check(root, "--select", "ALL", "-j", "1")
        on_parallel = check(root, "--select", "ALL", "-j", "2")
        monkeypatch.setattr(prefilter, "ENABLED", False)
        off = check(root, "--select", "ALL", "-j", "1")
        assert json.loads(off), name  # both have findings (the hostile corpus: its syntax errors)
        assert on == off == on_parallel, name


CONFIG = '''
from dataclasses import dataclass

@dataclass
class Config:
    hidden_size: int = 768
    layer_norm_eps: float = 1e-12

    @property
    def head_dim(self):
        return self.hidden_size // 12
'''


def test_a_file_no_rule_can_report_in_is_not_parsed_but_still_counts_for_the_project(tmp_path, monkeypatch,
                                                                                      prefilter_on):
    # train.py casts the model to half: the config's constants are read from its summary all the same
    root = write_project(tmp_path / "p", {
        "config.py": CONFIG,
        "train.py": "import torch\nfrom config import Config\nmodel = Net().half()\n"
                    "def f(x):\n    return x / (x.sum() + Config.layer_norm_eps)\n",
    })
    parsed = []
    build = engine.build_context
    monkeypatch.setattr(engine, "build_context", lambda path, *a, **k: parsed.append(path.name) or build(path, *a, **k))
    out = json.loads(check(root, "-j", "1"))
    assert parsed == ["train.py"]
    assert {f["filename"].rsplit("/", 1)[-1] for f in out} <= {"train.py"}


def test_a_rule_whose_needs_a_file_does_not_match_is_not_run_on_it(tmp_path, monkeypatch, prefilter_on):
    # train.py can hold an AMP301 finding (a backward) but no AMP302 one (it clips nothing)
    root = write_project(tmp_path / "p", {
        "train.py": "import torch\nmodel = Net().half()\ndef step(x):\n    loss = model(x).sum()\n    loss.backward()\n",
        "clip.py": "import torch\ndef step(model, loss):\n    loss.backward()\n"
                   "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n",
    })
    rules = all_rules()
    ran = []
    for code in ("AMP301", "AMP302"):
        rule_check = rules[code].check
        monkeypatch.setattr(rules[code], "check",
                            lambda ctx, _code=code, _check=rule_check: ran.append((_code, ctx.path.rsplit("/", 1)[-1]))
                            or _check(ctx))
    on = check(root, "-j", "1")
    assert sorted(set(ran)) == [("AMP301", "clip.py"), ("AMP301", "train.py"), ("AMP302", "clip.py")]
    ran.clear()
    monkeypatch.setattr(prefilter, "ENABLED", False)
    assert check(root, "-j", "1") == on
    assert ("AMP302", "train.py") in ran


def test_a_file_that_does_not_parse_is_reported_even_when_no_rule_could_report_in_it(tmp_path, monkeypatch,
                                                                                      prefilter_on):
    root = write_project(tmp_path / "p", {"bad.py": "x = (1,\n", "deep.py": "x = " + "(" * 400 + ")" * 400 + "\n"})
    on = check(root, "-j", "1")
    assert {f["filename"].rsplit("/", 1)[-1] for f in json.loads(on)} == {"bad.py", "deep.py"}
    monkeypatch.setattr(prefilter, "ENABLED", False)
    assert check(root, "-j", "1") == on


@pytest.mark.parametrize("source, matmul", [
    (b"@property\ndef f(self):\n    pass\n", False),
    (b"class A:\n    @torch.no_grad()\n\n    # why\n    def f(self):\n        pass\n", False),
    (b"@dataclass(frozen=True)\n@other\nclass A:\n    pass\n", False),
    (b"y = a @ b\n", True),
    (b"y = a@b\n", True),
    (b"y = (a\n     @ b)\n", True),
    (b"y = (a\n     @b\n)\n", True),  # looks like a decorator, but the expression goes on
    (b"y = (a\n     @b)\ndef f():\n    pass\n", True),  # a bracket closed on the line
    (b"y = a \\\n    @b\ndef f():\n    pass\n", True),  # a continued line
    (b"@dec(\n    1)\ndef f():\n    pass\n", True),  # unbalanced on its line: counted (never hides one)
    (b"x = 1\n", False),
])
def test_matmul_operator_tells_decorators_apart_and_never_misses_an_operator(source, matmul):
    assert prefilter.matmul_operator(source) is matmul


def test_needs_of_each_rule_compile_and_a_foreign_encoding_is_never_skipped():
    rules = list(all_rules().values())
    for rule in rules:
        prefilter.may_fire(rule, b"x = 1\n")  # compiles every rule's needs
    assert not prefilter.may_hold_findings(b"x = 1\n", rules)
    assert prefilter.may_hold_findings(b"# -*- coding: cp037 -*-\nx = 1\n", rules)
    assert not prefilter.may_hold_findings(b"# -*- coding: latin-1 -*-\nx = 1\n", rules)
    # one group of a rule with two groups is not enough (AMP204: a product and its scaling)
    amp204 = all_rules()["AMP204"]
    assert not prefilter.may_fire(amp204, b"y = torch.einsum('ij,jk->ik', a, b)\n")
    assert prefilter.may_fire(amp204, b"y = torch.einsum('ij,jk->ik', a, b) / 8\n")


def test_a_bracket_before_a_banner_of_comment_signs_is_read_in_linear_time():
    # pykoi's example/comparator demos: `# questions = [...]` then a line of 33 '#': AMP103's
    # `]`-then-comments-then-`=` need split each '#' run every way (2^n), and the run never ended
    from amplint.prefilter import may_fire
    from amplint.rules import all_rules
    source = b"x = 1\n# questions = [...]\n" + b"#" * 200 + b"\nprint(x)\n"
    assert may_fire(all_rules()["AMP103"], source) is False
    assert may_fire(all_rules()["AMP103"], b"a[0]  # note\n" + b"#" * 200 + b"\n= 1\n") is True


def _needs_patterns():
    for rule in all_rules().values():
        needs = getattr(rule, "needs", None)
        if needs is None:
            continue
        for group in (needs,) if isinstance(needs, str) else needs:
            yield from (a for a in ((group,) if isinstance(group, str) else group) if a != prefilter.MATMUL)


# Patterns the fast paths must get right or leave to ``re``: classes holding ``|`` and ``)``, optional
# and repeated groups, ``\w*`` before a possessive or lazy quantifier, case-insensitive choices.
TRICKY = [r"[|)]x|y", r"\b(?:ab)?c", r"\b(?:a|b)*z", r"\b(?:|ab)\b", r"\w*?Args\b", r"\w*x", r"(?i:NoQa|x\+)",
          r"(?i:a.b)", r"\b_x\b", r"\ba?b", r"(?:ab|ac|d)\b", r"\b(?:ab|ac|d)e", r"\]\s*=", r"\+|/|\*", r"\b\d+x"]


def test_the_needs_searches_answer_as_the_regular_expressions_do():
    import random
    import re
    from amplint.precision_facts import PRECISION_WORDS, TRAINING_WORDS  # (the summaries search them alike)
    patterns = [*_needs_patterns(), *TRICKY, PRECISION_WORDS.pattern.decode(), TRAINING_WORDS.pattern.decode()]
    words = sorted({w for p in patterns for w in re.findall(r"[A-Za-z_0-9]+", p)} | {"NOQA", "Amplint:", "logits"})
    pieces = [*words, " ", "_", "x", "0", ".", "(", ")", "]", "=", "==", "#", "\n", "/", "*", "+", "@", "|", "\\",
              "-", "'", '"', ":"]
    rng = random.Random(7)
    texts = [b"", b"x"] + ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 8))).encode() for _ in range(3000)]
    for pattern in patterns:
        rx, fast = re.compile(pattern.encode()), prefilter.searcher(pattern)
        for text in texts:
            assert fast(text) == (rx.search(text) is not None), (pattern, text)
