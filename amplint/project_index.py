"""The project's call graph and class hierarchy, built from the files' summaries (``file_graph``).

Who calls a function (across files) and with what arguments, which classes subclass a class,
which functions a function calls and which classes it builds, what an entry point reaches: the
answers come from the cached summaries, never from reading other files.

Names are full dotted names of project definitions: ``pkg.model.Net``, ``pkg.model.Net.forward``,
``losses.nll_loss`` (module name as ``Project.module_name`` gives it, then the qualname inside the
module). A callee written in a file (``nll_loss`` after ``from .losses import nll_loss``, resolved
through that file's imports) is matched to a definition by ``resolve``: the module as written or
relative to the calling file's package (scripts that put their own directory on ``sys.path``;
in a directory that holds a program, ``import utils`` is its sibling ``utils.py`` first, as Python
puts the running script's directory first on ``sys.path``), names re-exported by a package's ``__init__`` followed, and a method looked up through the bases
of its class (``self.helper()`` in a subclass calls the base's ``helper`` when it does not define
its own). Calls on local values (``model.fit()``, ``x.view()``) are not resolved: their receiver's
class is not known here.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Set, Tuple


@dataclass(frozen=True)
class Symbol:
    """A function, method or class defined in a project module."""
    name: str  # full dotted name: module + "." + qualname
    module: str
    qualname: str  # inside the module: "Net.forward"
    kind: str  # "function" | "class"
    path: Path  # the defining file (resolved)
    line: int
    params: Tuple[str, ...] = ()  # positional parameters in order (functions; ``self`` included)
    kwonly: Tuple[str, ...] = ()
    varargs: bool = False  # takes ``*args``
    varkw: bool = False  # takes ``**kwargs``
    bases: Tuple[str, ...] = ()  # classes: base names as resolved in the defining file

    @property
    def is_method(self) -> bool:
        return "." in self.qualname


@dataclass(frozen=True)
class Argument:
    """One argument of a call: ``how`` is "" (positional), a keyword, "*" or "**"; ``text`` its
    source (shortened to 60 characters); ``kind`` "number" | "string" | "constant" | "name" |
    "attribute" | "call" | "other"."""
    how: str
    text: str
    kind: str


@dataclass(frozen=True)
class CallSite:
    """A call in a project file: where, from which function, of what, with which arguments."""
    path: Path  # the calling file (resolved)
    caller: str  # full dotted name of the enclosing function; the module's name at module level
    callee: str  # the callee as the calling file resolves it through its imports ("losses.nll_loss")
    line: int
    col: int  # 0-based column of the call's start (``ast``'s UTF-8 offset)
    args: Tuple[Argument, ...]
    on_self: bool = False  # ``self.m(...)`` / ``cls.m(...)``
    content: str = ""  # the calling file's content key: a result that read this site depends on it

    def argument_for(self, fn: Symbol, param: str) -> Tuple[bool, Optional[Argument]]:
        """(known, argument): what this call passes for ``param`` of ``fn``; known is False when
        ``*args`` / ``**kwargs`` may carry it, argument None when the default is used. A call of a
        method through ``self.m`` / an instance does not pass ``self``."""
        for a in self.args:
            if a.how == param:
                return True, a
        names = list(fn.params)
        if fn.is_method and names and (names[0] == "cls" or (names[0] == "self" and self._bound(fn))):
            names = names[1:]
        positional = [a for a in self.args if a.how in ("", "*")]
        for i, a in enumerate(positional):
            if a.how == "*":
                return False, None
            if i < len(names) and names[i] == param:
                return True, a
        if any(a.how == "**" for a in self.args):
            return False, None
        return True, None

    def _bound(self, fn: Symbol) -> bool:
        # ``self.method(...)`` and ``Class(...)`` (its ``__init__``) pass self implicitly;
        # ``Class.method(obj, ...)`` passes it as the first argument
        return self.on_self or (fn.qualname.endswith(".__init__") and not self.callee.endswith(".__init__"))


class ProjectIndex:
    """The call graph and class hierarchy of one project (see the module docstring).

    ``files`` maps each project file (resolved path) to (module name, summary graph, content key);
    files without a module name (outside the root) or without a graph (unparsable) are left out.
    """

    def __init__(self, files: Dict[Path, Tuple[Optional[str], Optional[dict], str]],
                 program_packages: Iterable[str] = ()) -> None:
        # the packages (dotted directories below the root) that hold a program: their files' top-level
        # imports name a sibling module first (``sibling_first``)
        self._program_packages = frozenset(program_packages)
        self._modules: Dict[str, Path] = {}
        self._graphs: Dict[Path, dict] = {}
        self._module_of: Dict[Path, str] = {}
        self._content: Dict[Path, str] = {}
        self._symbols: Dict[str, Symbol] = {}
        self._by_last: Optional[Dict[str, List[Tuple[Path, list]]]] = None
        self._loose_by_last: Optional[Dict[str, List[Tuple[Path, list]]]] = None
        self._aliases: Optional[Dict[str, Set[str]]] = None
        self._resolved: Dict[Tuple[str, str], Optional[Symbol]] = {}
        self._subclasses: Optional[Dict[str, List[str]]] = None
        self._by_path: Optional[Dict[Path, List[Symbol]]] = None
        self._raw_by_caller: Dict[Path, Dict[str, list]] = {}
        self._methods: Optional[Dict[str, List[Symbol]]] = None
        self._by_method_name: Optional[Dict[str, List[Symbol]]] = None
        self._stars: Dict[Path, List[str]] = {}
        self._imported: Optional[Set[str]] = None  # what the files' imports bind, resolved (``_imports``)
        self._named_from: Set[str] = set()
        self._whole: Set[str] = set()
        self._whole_at: Dict[str, List[Tuple[Path, str]]] = {}  # module -> (file, local name) binding it whole
        for path, (module, graph, content) in files.items():
            if not module or graph is None:
                continue
            self._modules[module] = path
            self._graphs[path] = graph
            self._module_of[path] = module
            self._content[path] = content
            for q, line, params, kwonly, varargs, varkw in graph["functions"]:
                self._symbols.setdefault(f"{module}.{q}", Symbol(f"{module}.{q}", module, q, "function", path, line,
                                                                 tuple(params), tuple(kwonly), varargs, varkw))
            for q, line, bases in graph["classes"]:
                self._symbols[f"{module}.{q}"] = Symbol(f"{module}.{q}", module, q, "class", path, line,
                                                        bases=tuple(bases))

    # ---- definitions ------------------------------------------------------------------------------
    def symbol(self, name: str) -> Optional[Symbol]:
        """The project definition with the full dotted name ``name`` exactly (no resolution)."""
        return self._symbols.get(name)

    def symbols_in(self, path: Path) -> List[Symbol]:
        """The functions and classes a file defines, in source order."""
        if self._by_path is None:  # once: entry points ask it of many files (a scan each was quadratic)
            by_path: Dict[Path, List[Symbol]] = {}
            for sym in self._symbols.values():
                by_path.setdefault(sym.path, []).append(sym)
            self._by_path = {p: sorted(syms, key=lambda s: (s.line, s.qualname)) for p, syms in by_path.items()}
        return list(self._by_path.get(path, ()))

    def resolve(self, dotted: str, from_module: str = "") -> Optional[Symbol]:
        """The project definition a dotted name (as a file of module ``from_module`` resolves it
        through its imports) refers to, or None (not a project definition)."""
        key = (dotted, from_module)
        if key not in self._resolved:
            self._resolved[key] = None  # a cycle of re-exports ends here
            found = None
            package = from_module.rpartition(".")[0]
            for candidate in _candidates(dotted, package, self._sibling_first(dotted, package)):
                found = self._lookup(candidate, 0)
                if found is not None:
                    break
            self._resolved[key] = found
        return self._resolved[key]

    def _sibling_first(self, name: str, package: str) -> bool:
        """Is ``name``, imported in a module of ``package``, first a module beside it (``_candidates``)?"""
        return package in self._program_packages and f"{package}.{name.partition('.')[0]}" in self._modules

    def _lookup(self, dotted: str, depth: int) -> Optional[Symbol]:
        if depth > 8:
            return None
        found = self._symbols.get(dotted)
        if found is not None:
            return found
        parts = dotted.split(".")
        for i in range(len(parts) - 1, 0, -1):  # the longest module prefix
            module = ".".join(parts[:i])
            path = self._modules.get(module)
            if path is None:
                continue
            rest = parts[i:]
            names = self._graphs[path]["names"]
            target = names.get(rest[0])
            if target is not None and target != dotted:  # re-exported: ``from .losses import nll_loss``
                return self._lookup(".".join([target, *rest[1:]]), depth + 1)
            if target is None:  # ``from .train_loop import *``: a name the starred module defines
                for star in self._star_modules(path):
                    if star != module:
                        found = self._lookup(".".join([star, *rest]), depth + 1)
                        if found is not None:
                            return found
            if len(rest) >= 2:  # Class.method not defined on the class: its bases'
                cls = self._symbols.get(f"{module}.{'.'.join(rest[:-1])}")
                if cls is not None and cls.kind == "class":
                    return self._inherited(cls, rest[-1], depth + 1)
            return None
        return None

    def outside_name(self, dotted: str) -> Optional[str]:
        """The name outside the project that ``dotted`` stands for, through the project modules that
        re-export it (HanLP's ``hanlp.layers.transformers.pt_imports.PreTrainedModel``, imported there
        from transformers, -> ``transformers.PreTrainedModel``); ``dotted`` itself when no project
        module holds it; None when it is the project's own (or not known)."""
        for _ in range(8):
            parts = dotted.split(".")
            for i in range(len(parts) - 1, 0, -1):  # the longest module prefix
                path = self._modules.get(".".join(parts[:i]))
                if path is not None:
                    break
            else:
                return None if dotted in self._modules else dotted
            target = self._graphs[path]["names"].get(parts[i])
            if target is None or target.startswith("*") or target == ".".join(parts[:i + 1]):
                return None
            dotted = ".".join([target, *parts[i + 1:]])
        return None

    def _star_modules(self, path: Path) -> List[str]:
        """The modules a file imports with ``*``, in its names' order (listed once per file: a
        package ``__init__`` holds thousands of names, and every lookup through it scanned them)."""
        stars = self._stars.get(path)
        if stars is None:
            stars = self._stars[path] = [star for key, star in self._graphs[path]["names"].items()
                                         if key.startswith("*")]
        return stars

    def _inherited(self, cls: Symbol, attr: str, depth: int) -> Optional[Symbol]:
        for base in self.bases(cls.name):
            own = self._symbols.get(f"{base.name}.{attr}")
            if own is not None:
                return own
            found = self._inherited(base, attr, depth + 1) if depth < 8 else None
            if found is not None:
                return found
        return None

    # ---- class hierarchy ----------------------------------------------------------------------------
    def bases(self, cls: str) -> List[Symbol]:
        """The project classes ``cls`` derives from directly (bases outside the project are left
        out; ``Symbol.bases`` has every base's name)."""
        sym = self._symbols.get(cls)
        if sym is None or sym.kind != "class":
            return []
        out = []
        for b in sym.bases:
            found = self.resolve(b, sym.module)
            if found is not None and found.kind == "class" and found.name != cls:
                out.append(found)
        return out

    def subclasses(self, cls: str, transitive: bool = True) -> List[Symbol]:
        """The project classes deriving from ``cls`` (a project class, or an outside one such as
        ``torch.nn.Module`` named as files resolve it), directly or through other project classes."""
        if self._subclasses is None:
            self._subclasses = {}
            for sym in self._symbols.values():
                if sym.kind != "class":
                    continue
                for b in sym.bases:
                    found = self.resolve(b, sym.module)
                    key = found.name if found is not None else b
                    self._subclasses.setdefault(key, []).append(sym.name)
        out: List[Symbol] = []
        seen = {cls}
        todo = [cls]
        while todo:
            for name in self._subclasses.get(todo.pop(0), ()):
                if name not in seen:
                    seen.add(name)
                    out.append(self._symbols[name])
                    if transitive:
                        todo.append(name)
        return out

    # ---- call graph -------------------------------------------------------------------------------
    def callers(self, name: str) -> List[CallSite]:
        """Every call in the project whose callee resolves to the definition ``name`` (a function,
        a method, or a class: its instantiations), in file and source order."""
        target = self._symbols.get(name)
        if target is None:
            return []
        by_last = self._sites_by_last()
        out = [self._site(path, raw) for last in self._spellings(target.qualname.rsplit(".", 1)[-1])
               for path, raw in by_last.get(last, ()) if self.resolve(raw[1], self._module_of[path]) == target]
        if target.kind == "function" and target.qualname.endswith(".__init__"):
            cls = self._symbols.get(target.name.rsplit(".", 1)[0])
            if cls is not None:
                out.extend(self.callers(cls.name))
        return sorted(out, key=lambda s: (str(s.path), s.line, s.col))

    def calls_named(self, last: str) -> List[CallSite]:
        """Every call in the project written with the last name ``last`` that the file graphs keep,
        resolved to a definition or not, in file and source order: the calls that may run a method
        whose receiver the index does not follow. Kept are calls through a name the file imports or
        defines, through ``self`` / ``cls`` (``self.model.f(...)``, ``pipeline.model.f(...)`` after
        an import), through an instance the file holds, and (the graphs' "loose" calls) a method
        called on a ``for`` target (``for name, metric_fn in self.metrics.items():
        metric_fn.update(preds, target)``). Calls on any other local or parameter (``x.f(...)`` after
        ``def g(x):``) are not among them."""
        if self._loose_by_last is None:
            self._loose_by_last = {}
            for path, graph in self._graphs.items():
                for raw in graph.get("loose", ()):
                    self._loose_by_last.setdefault(raw[1].rpartition(".")[2], []).append((path, raw))
        found = [*self._sites_by_last().get(last, ()), *self._loose_by_last.get(last, ())]
        return sorted((self._site(path, raw) for path, raw in found), key=lambda s: (str(s.path), s.line, s.col))

    def calls_from(self, name: str) -> List[CallSite]:
        """The calls written in the body of the function ``name`` (lambdas and comprehensions in
        it included, nested defs not), resolved to the project or not (``torch.optim.AdamW``).
        ``name`` may be a module's name: the calls of its module-level code."""
        sym = self._symbols.get(name)
        path = sym.path if sym is not None else self._modules.get(name)
        if path is None:
            return []
        by_caller = self._raw_by_caller.get(path)
        if by_caller is None:  # once per file: the sites of one caller, not all the file's, are built
            module = self._module_of[path]
            by_caller = self._raw_by_caller[path] = {}
            for raw in self._graphs[path]["calls"]:
                by_caller.setdefault(f"{module}.{raw[0]}" if raw[0] else module, []).append(raw)
        return [self._site(path, raw) for raw in by_caller.get(name, ())]

    def callees(self, name: str) -> List[Symbol]:
        """The project functions, methods and classes the function (or module-level code of the
        module) ``name`` calls or builds (each once, in source order)."""
        sym = self._symbols.get(name)
        module = sym.module if sym is not None else name
        out: List[Symbol] = []
        for s in self.calls_from(name):
            found = self.resolve(s.callee, module)
            if found is not None and found not in out:
                out.append(found)
        return out

    def imported(self, name: str) -> bool:
        """Does a project file import the definition ``name`` (``from .eva_model import Attention``,
        a re-export included), or import ``*`` from its module?"""
        self._imports()
        symbol = self._symbols.get(name)
        return name in self._imported or (symbol is not None and f"{symbol.module}.*" in self._imported)

    def imported_by_name_only(self, module: str) -> bool:
        """Do project files import names from ``module`` (``from eva_model import EVA_CLIP``), and none
        the module itself (``import pkg.mod``, whose attributes may be looked up any way) nor ``*``?"""
        self._imports()
        return module in self._named_from and module not in self._whole and f"{module}.*" not in self._imported

    def imported_by_name_or_star(self, module: str) -> bool:
        """Do project files import names from ``module``, none the module itself, and some ``*`` from it
        (RITM's ``exp_imports/default.py``: ``from ...model.losses import *``)? What a star import binds is
        used by its names, as written."""
        self._imports()
        return module in self._named_from and module not in self._whole and f"{module}.*" in self._imported

    def whole_imports(self, module: str) -> List[Tuple[Path, str]]:
        """(file, local name) of each import binding ``module`` whole (``import modeling``, ``import modeling as
        m``, ``from pkg import modeling``)."""
        self._imports()
        return list(self._whole_at.get(module, ()))

    def _imports(self) -> None:
        """What the files' imports bind, resolved: definitions (``_imported``; ``<module>.*`` for a star
        import), the modules names are imported from (``_named_from``), and modules bound whole."""
        if self._imported is not None:
            return
        names: Set[str] = set()
        named_from: Set[str] = set()
        whole: Set[str] = set()
        for path, graph in self._graphs.items():
            module = self._module_of[path]
            package = module.rpartition(".")[0]
            for local, target in graph["names"].items():
                if local.startswith("*"):
                    names.add(f"{target}.*")
                    continue
                found = self.resolve(target, module)
                if found is not None:
                    names.add(found.name)
                    named_from.add(found.module)
                    continue
                for candidate in _candidates(target, package, self._sibling_first(target, package)):
                    if candidate in self._modules:
                        whole.add(candidate)
                        self._whole_at.setdefault(candidate, []).append((path, local))
                        break
        self._imported, self._named_from, self._whole = names, named_from, whole

    def instantiates(self, name: str) -> List[Symbol]:
        """The project classes the function ``name`` builds (``Net(...)``)."""
        return [s for s in self.callees(name) if s.kind == "class"]

    def methods(self, cls: str) -> List[Symbol]:
        """The methods a project class defines itself (not inherited)."""
        if self._methods is None:  # once: by the name of what defines them (the symbols' order kept)
            self._methods = {}
            for sym in self._symbols.values():
                if sym.kind == "function":
                    self._methods.setdefault(sym.name.rpartition(".")[0], []).append(sym)
        return list(self._methods.get(cls, ()))

    def methods_named(self, last: str) -> List[Symbol]:
        """Every method of a project class (a class directly in a module) named ``last``."""
        if self._by_method_name is None:
            self._by_method_name = {}
            for sym in self._symbols.values():
                if sym.kind == "function" and sym.qualname.count(".") == 1:
                    self._by_method_name.setdefault(sym.qualname.rpartition(".")[2], []).append(sym)
        return list(self._by_method_name.get(last, ()))

    def reachable(self, names: Iterable[str], exclude: Iterable[str] = ()) -> Set[str]:
        """Every project definition reached from ``names`` through calls: a called function, a
        built class and then all its methods and those of its project bases (an instance's
        methods are called through names the index does not follow: ``model(x)`` runs
        ``forward``). ``names`` (definitions, or modules for their module-level code) are
        included; the definitions in ``exclude`` are not followed (a fallback that never runs)."""
        seen: Set[str] = set(exclude)
        todo = [n for n in names if n in self._symbols or n in self._modules]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            sym = self._symbols.get(name)
            if sym is not None and sym.kind == "class":
                todo.extend(m.name for m in self.methods(name))
                todo.extend(b.name for b in self.bases(name))
            else:
                todo.extend(s.name for s in self.callees(name))
        return seen - set(exclude)

    def module_level(self, path: Path) -> str:
        """The name standing for a file's module-level code in ``CallSite.caller`` (its module)."""
        return self._module_of.get(path, "")

    # ---- sites ------------------------------------------------------------------------------------
    def _site(self, path: Path, raw: list) -> CallSite:
        caller, callee, line, col, args, on_self = raw
        module = self._module_of[path]
        return CallSite(path, f"{module}.{caller}" if caller else module, callee, line, col,
                        tuple(Argument(*a) for a in args), on_self, self._content[path])

    def _spellings(self, last: str) -> Set[str]:
        """The last names a call of a definition named ``last`` may be written with: its own and
        the names it is imported as (``from .losses import nll_loss as nl``), transitively."""
        if self._aliases is None:
            self._aliases = {}
            for graph in self._graphs.values():
                for local, target in graph["names"].items():
                    if local.startswith("*"):
                        continue
                    original = target.rsplit(".", 1)[-1]
                    if local != original:
                        self._aliases.setdefault(original, set()).add(local)
        out, todo = {last}, [last]
        while todo:
            for alias in self._aliases.get(todo.pop(), ()):
                if alias not in out:
                    out.add(alias)
                    todo.append(alias)
        return out

    def _sites_by_last(self) -> Dict[str, List[Tuple[Path, list]]]:
        """Every call of the project as (path, its raw graph entry), by the callee's last name:
        a CallSite is made only for the calls a question matches."""
        if self._by_last is None:
            self._by_last = {}
            for path, graph in self._graphs.items():
                for raw in graph["calls"]:
                    self._by_last.setdefault(raw[1].rpartition(".")[2], []).append((path, raw))
        return self._by_last


def _candidates(name: str, package: str, sibling_first: bool = False):
    """Where a dotted name may live: as written, then relative to the importing module's package
    and its parents (scripts that put their own directory on sys.path). ``sibling_first``: the
    importing file's directory holds a program, which Python runs with that directory first on
    ``sys.path``: ``import utils`` in ``evaluation/ft/engine.py`` beside ``evaluation/ft/run_ft.py``
    is ``evaluation/ft/utils.py`` when it exists, not the root's ``utils.py`` (ibot, T13-1)."""
    if sibling_first and package:
        yield package + "." + name
    yield name
    parts = package.split(".") if package else []
    while parts:
        yield ".".join(parts) + "." + name
        parts.pop()
    if name.startswith("src."):
        # a script beside src/ importing ``src.trainer`` (RWKV-LM): modules under src/ are named without it
        yield name[4:]
