"""What one file contributes to the project's facts: its summary.

A summary is a function of the file's bytes and its module name only (never of where amplint runs
from, nor of the other files), small and plain, so it can be cached by content hash and a run in a
large project re-reads nothing that did not change. Paths are attached at project level.

It holds the file's precision facts (``precision_facts.file_facts``: evidence with roles, training
entry points, imported project modules), its functions, classes and calls (``file_graph``: the
project index's call graph and class hierarchy), its numeric module constants (for
``Project.constant``) and the lines the project-wide text questions look at (``project_text``). It is a function of the file's
bytes, its path relative to the project root and its module name.
Bump ``SCHEMA`` whenever what a summary holds, or how it is computed, changes: cached summaries of
another schema are ignored.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from .constants import module_constants
from .file_graph import check_graph, file_graph
from .parsing import DEFAULT_LIMITS, Limits, TooComplex, python_ast

SCHEMA = 103  # 103: precision facts: module-level evidence of a script named for inference whose module-level code steps an optimizer is training (P22-6's real shape); 102: precision facts: attr_dicts (the file turns its settings dicts into attribute dicts: edict / EasyDict / Munch / a dict subclass whose __getattr__ reads its items; T21-3), sacred_configs (@ex.config / @ex.named_config precision literals) and a trainer's precision=_config["key"] as a precision call (P21-2), an else-branch evidence's condition is the negated test (if not (<test>)); an FSDP MixedPrecision(param_dtype=float16) in accelerate's FullyShardedDataParallelPlugin is accelerate's fp16 autocast (T22-1); a precision keyword naming a module constant bound once takes its literal (P22-6); composer precision amp_fp16 / amp_bf16 in configs and Trainer(precision=...) (P22-3); 101: precision facts: refuses_half (a module-level validator refusing every dtype but float32 / float64, T19-6); 100: precision facts: self_option also for an autocast whose enabled switch reads a constructor option (autocast(self.fp16 > 0), through a local assigned once), with its comparison (T16-5 a); 99: precision facts: py_config (the settings a Python configuration module under configs/ assigns, config.fp16 = 0), T16-5; 98: precision facts: .fit / .train() on what a function named for returning a trainer gives (get_pl_trainer(cfg).fit(model)) is a training call; 97: precision facts: amp.initialize(opt_level=<a conditional expression, also through a local>) is one of its branches (T16-1 leftover); 96: precision facts: option_branch (the switch test under which float16 evidence is taken, read against the runs' switch values) and switch_defaults (boolean precision switches' defaults; a store_true defaulting to True), T17-1; 95: precision facts: an annotated dict of dtypes (torch_dtype_map: dict[str, torch.dtype] = {...}) is a dtype table (T15-4 real shape); 94: precision facts: param_branch also for a local read from the options by a key (dtype = model_args_dict["dtype"]), and for a half load recorded as a flag (T14-2 real shape); 93: precision facts: setting_fields (structured-config dataclasses' precision defaults) and a trainer's precision=<config section setting> as a precision call (M16-2); 92: precision facts: keyed_settings (dtype / precision keys the code reads by a string, for an autocast whose dtype the code leaves open, nanuGPT); 91: precision facts: dynamic_imports (modules loaded by a literal name, importlib.import_module("pkg.trainer"): import edges whose functions the call graph cannot pick, M16-4); 90: precision facts: json_names (the JSON file names the code writes as strings: a DeepSpeed config named by other programs only is not this one's); 89: precision facts: a top-level package named <name>_benchmark is the project's code, not a benchmark directory (T16-1); 88: precision facts: param_branch (a half load taken only when a string parameter of its function compares so, read at the callers, T14-2); 87: precision facts: a `dict(fp16=torch.float16, ...)` call is a dict of dtypes (an option lookup `dict(...)[args.model_dtype]`, M14-2); 86: precision facts: an autocast whose dtype is looked up in a dict of dtypes by a setting (`dtype_map[cfg.x]`, also through a name assigned that lookup) notes that setting, read against the program's own YAML (T15-4); 85: precision facts: a file written for another framework (Paddle, OneFlow: `framework`) gives no entry points or evidence (T16-3); 81: precision facts: a half load under `if inference_mode:` (a flag named for inference) is inference (T12-3's AutoLoader); 80: precision facts: self_option / wrapper_class / conditional_builds (a constructor option deciding `if self.fp16:` casts, T12-3); mm_config_fp16 (an mmcv Python config's fp16 = dict(...), T11-10) and runner.run(data_loaders, workflow) as training; yaml_paths (a program's own YAML); an autocast replaying the caller's state (is_autocast_enabled / get_autocast_dtype) is no evidence, a module-level partial(autocast) alias is read at its calls (T11-11); setting_dicts (precision settings in dict literals, T12-5); a dtype dict looked up by an option is an option_cast per key (T11-9); 79: precision facts: evidence in a training function of a file that steps an optimizer is training whatever the file's name (an `eval_*.py` fine-tuning, M13-1); 78: file graph: "loose" calls (a method called on a for target, for calls_named: T10-3); 77: file graph: instances of a script's module-level names and through `.cuda()` / `.to()` / `.eval()` chains (T12-1); 76: precision facts: loads_modules (the file loads modules or builds classes by name: importlib, a registry, a target string) and runs_at_top (a script doing its work at module level); 75: precision facts: deepspeed (the code names DeepSpeed); FSDP2 MixedPrecisionPolicy(param_dtype=...) and param_dtype read through a config field default, a parameter defaulting to an instance (T11-7); precision facts: peft_classes (a class whose __init__ hands a model parameter to PEFT) and a half cast's passed_on (its model passed to a call after it), T11-6; precision facts: an autocast / GradScaler in a dict literal looked up by an option (`{"bf16": autocast(...), ...}[args.precision]`) is an option_cast with its key (option_key), picked by the launchers or the default (T11-3); 74: derived regimes: code no training run reaches, in a project whose own training runs say their precision, is not run (no library look); 73: precision facts: a half cast of the modules a loop walks (`for m in x.modules(): m.half()`); a cast of a local a helper returns names what its callers bind; a name holding "bench" inside a word is no benchmark file; 72: precision facts: hydra_config_names (a Hydra program's primary config, read for the settings that switch its autocast / GradScaler), also for files naming no precision; an autocast's `dtype=getattr(torch, <setting>)` noted; 71: precision facts: `enabled=<comparison>` of an autocast / GradScaler is its condition (T10-8); 70: precision facts: an import under `if TYPE_CHECKING:` is no import; lazy (the names a lazy package loads on first use, L1); 69 (67 unused): precision facts: option_casts (a load whose dtype is getattr(torch, <option>), resolved by the launcher scripts or the option default) and option_defaults; a trainable-parameter float32 recast; a DeepSpeed config no launcher script of a program passes is not its run (B43); a module frozen then partly re-enabled is not frozen (B45); a function calling the file's training loop is training (T9-1); `.data = .data.half()` casts (T9-3); a half cast after get_peft_model is no frozen module's (B51); hydra_config_paths (a Hydra program reads the YAMLs of its config_path only, T9-6); derived: nested sub-directories apart (T8-2); 68: precision facts: mmengine AmpOptimWrapper(...) built directly is fp16 autocast evidence (B49); 66: precision facts: fallback_imports (a library's class with the project's as its ImportError fallback) and mmcv's Fp16OptimizerHook as fp16 autocast evidence (B38); 65: precision facts: registered (the names a file's classes register under for configs, T8-3); 64: derived regimes: an unreached file in a top directory no entry point lives in, reaches or takes evidence from is library code (T8-2); 63: precision facts: dtype_defaults (a class attribute's half default) and a loader's dtype= read through a config object's attribute (default_of: its class in another file), B40; 62: derived regimes: a configuration file's autocast switch is not read by an entry point whose own loop has no autocast, GradScaler, half evidence or trainer (T7-3); 61: precision facts: master_optimizers include a library master-weights optimizer the file calls (apex FP16_Optimizer); 60: derived regimes: a training config's own `precision: fp32|fp16|bf16` (T6-6; config evidence read at run time, regimes cached under the schema); 59: precision facts: a config dict literal records the function building it; 58: precision facts: a dtype looked up in a dict of dtypes is read for autocast only; 57: precision facts: a learning-rate scheduler's step is no optimizer step; 56: precision facts: a dtype looked up in a dict of dtypes is one of its values (55: unused); 54: precision facts: a trainer precision from a function called with training=False is inference; 53: a half model with a named part cast back to float32 after it trains that part (fp16-master); 52: precision facts: a dtype variable assigned float16 under one test names it in the cast's condition; a trainer flag `fp16=True if <test> else False` records <test> as its condition (51: reserved by lead); 50: precision facts: config_runs (a run config's mixed_precision switch and the classes it names) and config_defaults; 49: an mmengine runner's --amp / conditional AmpOptimWrapper is the launch's precision; 48: torch_dtype=p or torch.float16 with p defaulting to None is float16; 47: a framework's backward(loss) is no given-gradients backward; a precision keyword from literals assigned per branch is one of them; 46: a model loader called with dtype=float16 is a half model; 45: a loss scaler called with (loss, optimizer, ...) is a training step; 44: mmengine runner.train() entry points, AmpOptimWrapper evidence, a backward given gradients alone is no entry point; 43: precision facts: a plugin precision from a helper parameter (param, alternatives) and the string precision keywords calls pass (literal_args); 42: a config / arguments call with mixed_precision=True or use_amp=True is fp16 autocast; 41: a module put in eval mode and never back in training mode nor optimized is frozen; 40: a cast of an activation named with a model word (encoder_hidden_states) is no half model; 39: a DeepSpeed block enabled by `param == "lit"` is read at the parameter's string default; 38: precision facts: an autocast / GradScaler(enabled=a and b) records that condition; 37: ColossalAI plugin precision from a config default; 36: autocast keywords from a helper with a dict per branch; 35: precision facts: the switch of a conditional dtype keyword and of autocast / GradScaler(enabled=flag); 34: config evidence: an `AMP: {ENABLED: true}` block (detectron2); 33: a frozen module cast to a literal float16 is inference evidence; 32: precision facts mark evidence under `if __name__ == "__main__":` ("main"); 31: precision facts: a half cast under a torch-version test is conditional; 30: a cast before trainer.train() is no saved copy; 29: ColossalAI plugin precision facts; 28: autocast keywords from a same-file helper returning a dict; 27: a config block with use / enable: false is no evidence; 26: a half cast that the same chain casts back to float32 is no evidence; 25: a CLI flag read only into a DeepSpeed config dict is marked so (facts note); 24: file_graph names record star imports ("*<module>")
#   23: a precision keyword held in a local is read through its assignment
#   22: facts["trains"]; an inference CLI flag (its help text) is inference evidence
#   21: a saved name skips only half casts (a Fabric passed to a checkpoint save stays evidence)
#   20: half casts of what the optimizer trains; re-exported GradScaler
#   19: facts["script"] (the file runs as a program)
#   18: a DeepSpeed dict literal under an if on a dtype flag is "one of"; 17: a Lightning Trainer built from the
#   function's **kwargs (the caller's precision); 16: `(A if c else B)(...)` calls each branch, `**params` dict
#   keywords; 15: a function named for evaluation that trains (or that training calls) holds training evidence;
#   14: a PEFT-wrapped float16 task model is half parameters; 13: calls through an instance held in an attribute
#   or local (file_graph); 12: launcher evidence (Accelerator() without a literal mixed_precision)
#   11: no entry point in an autograd.Function backward; 10: a cast seen through device moves (model.cuda().half()); 9: precision functions and calls; 8: master-weights optimizer classes, frozen half casts; 7: the file's functions,
#    classes and calls (``graph``, amplint.file_graph)
# A module-level line that may bind a number (``EPS = 1e-8``, ``NEG = -2 ** 30``, ``INF = float("inf")``,
# ``BIG = math.inf``, ``B = A``): only files with one are parsed for their constants.
CONSTANT_LINE = re.compile(rb"^[A-Za-z_]\w*\s*(?::[^=\n]*)?=\s*[-+(\s]*(?:\.?\d|float\s*\(|[\w.]*\binf\b)", re.M)
# The lines kept for project-wide text questions (``project_text.grep``): a pattern asked there must
# only match lines that match this one.
INDEXED_LINE = re.compile(rb"clamp|clip|update|GradScaler", re.I)
# The same words searched in the lower-cased text (at the same positions: ``bytes.lower`` changes
# ASCII letters only, as a bytes pattern's IGNORECASE matches them): ~5x faster than with re.I,
# which a search of every file's text pays (INDEXED_LINE is plain words, so lower-casing it is exact).
_INDEXED_LOWER = re.compile(INDEXED_LINE.pattern.lower())


@dataclass
class FileSummary:
    facts: Optional[Dict[str, Any]] = None  # precision_facts.file_facts (None: the file could not be read)
    constants: Dict[str, float] = field(default_factory=dict)
    lines: List[Tuple[int, str]] = field(default_factory=list)  # (1-based line, text) matching INDEXED_LINE
    # functions, classes, import bindings and calls (amplint.file_graph); None: the file was not parsed
    graph: Optional[Dict[str, Any]] = None

    # ---- plain data (JSON) ------------------------------------------------------------------------
    def to_data(self) -> dict:
        return {
            "facts": self.facts,
            "constants": {k: _float_data(v) for k, v in self.constants.items()},
            "lines": [[n, t] for n, t in self.lines],
            "graph": self.graph,
        }

    @classmethod
    def from_data(cls, data) -> "FileSummary":
        """The summary in ``data``; ValueError when it is not one (a cache entry from elsewhere)."""
        if not isinstance(data, dict):
            raise ValueError("not a summary")
        facts = data.get("facts")
        if facts is not None:
            _check_facts(facts)
        constants = data.get("constants")
        if not isinstance(constants, dict):
            raise ValueError("bad constants")
        consts = {k: _float_from(v) for k, v in constants.items() if isinstance(k, str)}
        if len(consts) != len(constants):
            raise ValueError("bad constants")
        lines = []
        for item in _list(data.get("lines")):
            n, t = _list(item, 2)
            if not (_is_int(n) and isinstance(t, str)):
                raise ValueError("bad line")
            lines.append((n, t))
        graph = data.get("graph")
        if graph is not None:
            check_graph(graph)
        return cls(facts, consts, lines, graph)


# The shape of ``file_facts``' result, checked when it is read back from a cache file.
_SIGNAL_FIELDS = {"kind": str, "dtype": str, "enabled": bool, "pure": bool, "master": bool, "note": str,
                  "role": str, "why": (str, type(None)), "one_of": (str, type(None)), "text": str, "line": int}


def _check_facts(facts) -> None:
    if not (isinstance(facts, dict) and isinstance(facts.get("module"), (str, type(None)))
            and all(isinstance(i, str) for i in _list(facts.get("imports")))
            and all(isinstance(c, str) for c in _list(facts.get("master_optimizers")))):
        raise ValueError("bad facts")
    lazy = facts.get("lazy", {})
    if not (isinstance(lazy, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in lazy.items())):
        raise ValueError("bad lazy names")
    for s in _list(facts.get("signals")):
        if not isinstance(s, dict) or any(not isinstance(s.get(k), t) for k, t in _SIGNAL_FIELDS.items()):
            raise ValueError("bad signal")
    for e in _list(facts.get("entry_points")):
        if not (isinstance(e, dict) and isinstance(e.get("function"), str) and _is_int(e.get("line"))
                and all(isinstance(w, str) for w in _list(e.get("why")))):
            raise ValueError("bad entry point")


def _list(v, n: Optional[int] = None) -> list:
    if not isinstance(v, list) or (n is not None and len(v) != n):
        raise ValueError("bad list")
    return v


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _float_data(v: float):
    return v if v == v and v not in (float("inf"), float("-inf")) else repr(v)  # JSON has no inf / nan


def _float_from(v) -> float:
    if isinstance(v, str) and v in ("inf", "-inf", "nan"):
        return float(v)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    raise ValueError("bad constant")


# ---- extraction ---------------------------------------------------------------------------------
def summarise(source: bytes, path: str = "", module_name: Optional[str] = None,
              limits: Limits = DEFAULT_LIMITS) -> FileSummary:
    """The summary of one file (``path`` relative to the project root): a single stdlib ``ast``
    parse, shared by the precision facts and the constants."""
    from .precision_facts import _Parents, file_facts  # noqa: PLC0415 (precision_facts imports project, which imports this)

    summary = FileSummary()
    lowered = source.lower()
    if _INDEXED_LOWER.search(lowered):
        summary.lines = _indexed_lines(source, lowered)
    try:
        tree = python_ast(source, limits)  # screened: a file over the limits is never parsed here
    except TooComplex:
        summary.facts = file_facts(b"", path, module_name)  # no facts from a file that is not linted
        return summary
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    parents = _Parents(tree) if tree is not None else None  # one walk, for the facts and the graph
    summary.facts = file_facts(source, path, module_name, tree=tree, parents=parents)
    if tree is not None:
        summary.graph = file_graph(tree, module_name, source, parents, path.endswith("__init__.py"))
    if tree is not None and CONSTANT_LINE.search(source):
        summary.constants = module_constants(tree.body)
    # The facts go to JSON and back; let the live summary be exactly what a cached one would be.
    summary.facts = json.loads(json.dumps(summary.facts))
    return summary


def _indexed_lines(source: bytes, lowered: Optional[bytes] = None) -> List[Tuple[int, str]]:
    """The (line, text) of the lines matching INDEXED_LINE, as ``source.splitlines()`` numbers them:
    found by searching the whole text (at C speed) and taking the lines of the matches, not by
    searching each line (a Python-level loop over every line of the file)."""
    if b"\r" in source:  # line ends other than \n: splitlines' own numbering
        return [(i, line.decode("utf-8", "replace"))
                for i, line in enumerate(source.splitlines(), 1) if INDEXED_LINE.search(line)]
    out = []
    line, counted, end = 1, 0, -1
    for m in _INDEXED_LOWER.finditer(source.lower() if lowered is None else lowered):
        at = m.start()
        if at < end:
            continue  # on the line taken last
        start = source.rfind(b"\n", 0, at) + 1
        line += source.count(b"\n", counted, start)
        counted = start
        end = source.find(b"\n", at)
        if end < 0:
            end = len(source)
        out.append((line, source[start:end].decode("utf-8", "replace")))
    return out
