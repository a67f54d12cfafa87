"""``amplint server``: a language server (LSP over stdio, on pygls) for editors.

It lints the text of each open Python document as if it were the file at its path (the text
stands in for the file in its project's regime; the configuration and per-file ignores of that
path apply): diagnostics are published on open, change and save. A code action applies one
finding's fix (safe ones are preferred; unsafe ones say so in their title), and "fix all" applies
every safe fix of the document. Hovering over a diagnostic shows its rule's page.

Each project's facts (its files and regime) are computed once and kept; saving a file drops
them for its project (other files' view of the project changed) and re-lints the project's open
documents. pygls is an optional dependency (the ``lsp`` extra): ``amplint check`` never needs it.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.workspace import ServerTextPosition, ServerTextRange

from . import __version__
from .api import settings_for_path
from .config import ConfigError, RuleSelection, Settings
from .discovery import project_root
from .engine import analyse, build_context, lint_buffer, reportable
from .findings import Finding
from .outcome import cache_options
from .overlay import OverlayProject
from .project import Project
from .rules import all_rules, rule_codes

SOURCE = "amplint"
FIX_ALL = "source.fixAll.amplint"
log = logging.getLogger(__name__)


class Session:
    """What the server keeps between requests: projects by (root, config), and per document the
    findings of the version last linted."""

    def __init__(self) -> None:
        self.projects: Dict[Tuple[Path, Optional[Path]], Project] = {}
        self.findings: Dict[str, Tuple[Optional[int], List[Finding]]] = {}  # uri -> (version, findings)

    def context(self, path: Path) -> Tuple[Settings, RuleSelection, Project]:
        """The settings, rule selection and (cached) project of the file at ``path``."""
        settings = settings_for_path(path)
        selection = RuleSelection(settings, rule_codes())
        root = project_root(path)
        key = (root, settings.config_path)
        if key not in self.projects:
            # The on-disk cache (as the command line uses it, unless AMPLINT_NO_CACHE): a project's
            # files are summarised again only where they changed since the last run.
            from argparse import Namespace

            from .api import project_for_path
            project = project_for_path(path, settings, **cache_options(Namespace()))
            project.regime
            project.save_cache()
            self.projects[key] = project
        return settings, selection, self.projects[key]

    def forget_project_of(self, path: Path) -> None:
        root = project_root(path)
        for key in [k for k in self.projects if k[0] == root]:
            del self.projects[key]


class AmplintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("amplint", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental)
        self.session = Session()


server = AmplintServer()


def _path(doc) -> Optional[Path]:
    return Path(doc.path) if doc.uri.startswith("file:") else None


def _lintable(doc) -> bool:
    path = _path(doc)
    return path is not None and (path.suffix in (".py", ".pyi") or doc.language_id == "python")


def lint_document(ls: AmplintServer, uri: str) -> List[Finding]:
    doc = ls.workspace.get_text_document(uri)
    path = _path(doc)
    if path is None or not _lintable(doc):
        return []
    try:
        settings, selection, project = ls.session.context(path)
    except ConfigError as e:
        ls.window_show_message(lsp.ShowMessageParams(lsp.MessageType.Error, f"amplint: {e}"))
        return []
    result = lint_buffer(path, path.as_posix(), doc.source.encode("utf-8"), project, selection.for_file(path),
                         settings)
    for error in result.errors:
        ls.window_log_message(lsp.LogMessageParams(lsp.MessageType.Error, f"amplint: {error}"))
    ls.session.findings[uri] = (doc.version, result.findings)
    return result.findings


def publish(ls: AmplintServer, uri: str) -> None:
    findings = lint_document(ls, uri)
    doc = ls.workspace.get_text_document(uri)
    diagnostics = [diagnostic(doc, f) for f in findings]
    ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, version=doc.version,
                                                                       diagnostics=diagnostics))


def _range(doc, f: Finding) -> lsp.Range:
    """The finding's span in the client's units (UTF-16 by default; amplint counts code points)."""
    start = ServerTextPosition(max(f.line - 1, 0), max(f.column - 1, 0))
    end = ServerTextPosition(max(f.end_line - 1, 0), max(f.end_column - 1, 0))
    return doc.range_to_client_units(ServerTextRange(start, end))


def diagnostic(doc, f: Finding) -> lsp.Diagnostic:
    message = f.message
    if getattr(f, "help", ""):
        message += f"\nhelp: {f.help}"
    severity = lsp.DiagnosticSeverity.Error if f.severity == "error" else lsp.DiagnosticSeverity.Warning
    return lsp.Diagnostic(
        range=_range(doc, f), message=message, severity=severity, code=f.code, source=SOURCE,
        data={"fix": None if f.fix is None else {"message": f.fix.message, "applicability": f.fix.applicability}},
    )


# ---- document sync ------------------------------------------------------------------------------
@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: AmplintServer, params: lsp.DidOpenTextDocumentParams) -> None:
    publish(ls, params.text_document.uri)


@server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: AmplintServer, params: lsp.DidChangeTextDocumentParams) -> None:
    publish(ls, params.text_document.uri)


@server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: AmplintServer, params: lsp.DidSaveTextDocumentParams) -> None:
    doc = ls.workspace.get_text_document(params.text_document.uri)
    path = _path(doc)
    if path is not None:
        # The saved file is part of the other files' project view: recompute it, re-lint them.
        ls.session.forget_project_of(path)
        root = project_root(path)
        for uri, other in list(ls.workspace.text_documents.items()):
            other_path = _path(other)
            if uri != params.text_document.uri and other_path is not None and project_root(other_path) == root:
                publish(ls, uri)
    publish(ls, params.text_document.uri)


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: AmplintServer, params: lsp.DidCloseTextDocumentParams) -> None:
    ls.session.findings.pop(params.text_document.uri, None)
    ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))


# ---- code actions -------------------------------------------------------------------------------
def _fixed_text(ls: AmplintServer, uri: str, code: str, line: int, column: int) -> Optional[str]:
    """The document with the fix of one finding (code at line:column, 1-based) applied."""
    from .fixes import FixError, Plan, _parses

    doc = ls.workspace.get_text_document(uri)
    path = _path(doc)
    settings, selection, project = ls.session.context(path)
    data = doc.source.encode("utf-8")
    ctx = build_context(path, path.as_posix(), data, OverlayProject(project, path, data), settings)
    violations, _ = analyse(ctx, {code} & selection.for_file(path))
    for v, pos in reportable(ctx, violations):
        if v.code == code and pos[:2] == (line, column) and v.fix is not None:
            plan = Plan(ctx)
            try:
                plan.add(v.fix)
                new = plan.apply().bytes
            except (FixError, Exception) as e:  # a fix that cannot be applied is no action
                log.warning("fix of %s at %s:%s not applicable: %s", code, line, column, e)
                return None
            if _parses(new) is not None:
                return None
            return new.decode("utf-8")
    return None


def _edit(doc, new_text: str) -> lsp.WorkspaceEdit:
    """One text edit replacing the part of the document that differs (the common head and tail
    stay put, so the editor keeps the cursor and the rest of the undo history sensible)."""
    old = doc.source
    start = 0
    limit = min(len(old), len(new_text))
    while start < limit and old[start] == new_text[start]:
        start += 1
    end_old, end_new = len(old), len(new_text)
    while end_old > start and end_new > start and old[end_old - 1] == new_text[end_new - 1]:
        end_old -= 1
        end_new -= 1
    rng = ServerTextRange(_position(old, start), _position(old, end_old))
    edit = lsp.TextEdit(range=doc.range_to_client_units(rng), new_text=new_text[start:end_new])
    return lsp.WorkspaceEdit(document_changes=[lsp.TextDocumentEdit(
        text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=doc.uri, version=doc.version),
        edits=[edit])])


def _position(text: str, offset: int) -> ServerTextPosition:
    before = text[:offset]
    line = before.count("\n")
    return ServerTextPosition(line, offset - (before.rfind("\n") + 1))


@server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION,
                lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=False))
def code_action(ls: AmplintServer, params: lsp.CodeActionParams) -> List[lsp.CodeAction]:
    uri = params.text_document.uri
    doc = ls.workspace.get_text_document(uri)
    if not _lintable(doc):
        return []
    only = params.context.only
    actions: List[lsp.CodeAction] = []
    if not only or lsp.CodeActionKind.QuickFix in only:
        for d in params.context.diagnostics:
            fix = (d.data or {}).get("fix") if isinstance(d.data, dict) else None
            if d.source != SOURCE or not fix:
                continue
            start = doc.position_from_client_units(d.range.start)
            new = _fixed_text(ls, uri, str(d.code), start.line + 1, start.character + 1)
            if new is None:
                continue
            safe = fix["applicability"] == "safe"
            title = f"{d.code}: {fix['message']}" + ("" if safe else " (unsafe: review the change)")
            actions.append(lsp.CodeAction(title=title, kind=lsp.CodeActionKind.QuickFix, diagnostics=[d],
                                          is_preferred=safe, edit=_edit(doc, new)))
    if not only or any(k in (FIX_ALL, lsp.CodeActionKind.SourceFixAll, lsp.CodeActionKind.Source) for k in only):
        fixed = _fix_all(ls, uri)
        if fixed is not None:
            actions.append(lsp.CodeAction(title="amplint: fix all safe fixes", kind=FIX_ALL, edit=_edit(doc, fixed)))
    return actions


def _fix_all(ls: AmplintServer, uri: str) -> Optional[str]:
    from .api import fix_text

    doc = ls.workspace.get_text_document(uri)
    path = _path(doc)
    settings, selection, project = ls.session.context(path)
    state = fix_text(doc.source, path, settings, project=project, selection=selection)
    if not state.changed or state.errors:
        return None
    return state.output().decode("utf-8")


# ---- hover --------------------------------------------------------------------------------------
@server.feature(lsp.TEXT_DOCUMENT_HOVER)
def hover(ls: AmplintServer, params: lsp.HoverParams) -> Optional[lsp.Hover]:
    """Over a finding: its message and its rule's page."""
    from .docs import read_page

    uri = params.text_document.uri
    doc = ls.workspace.get_text_document(uri)
    version, findings = ls.session.findings.get(uri, (None, []))
    if version != doc.version:
        findings = lint_document(ls, uri)
    pos = doc.position_from_client_units(params.position)
    line, column = pos.line + 1, pos.character + 1
    parts = []
    for f in findings:
        if (f.line, f.column) <= (line, column) <= (f.end_line, f.end_column):
            rules = all_rules()
            name = rules[f.code].name if f.code in rules else f.name
            page = read_page(f.code) or f"Run `amplint rule {f.code}` for the full explanation."
            parts.append(f"**{f.code}** `{name}`: {f.message}\n\n---\n\n{page}")
    if not parts:
        return None
    return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value="\n\n".join(parts)))


def main() -> int:
    server.start_io()
    return 0
