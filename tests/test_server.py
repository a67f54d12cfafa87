"""``amplint server``: a real LSP exchange over stdio with ``python -m amplint server``.

The client below speaks JSON-RPC with Content-Length framing itself (no pygls on this side), so
the test sees exactly the bytes an editor would. Every wait has a timeout: a hang fails fast.
"""
import json
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from cliutil import subprocess_env, write_project

pytest.importorskip("pygls")

TIMEOUT = 30  # seconds for any one answer (a cold start imports libcst and pygls)

TRAIN = """\
import torch
model = torch.nn.Linear(8, 8).cuda().half()
loss = model(x).sum()
loss.backward()
import opt  # the edited module is this training's code
"""
# AMP101 (safe fix) on line 2; AMP102 (unsafe fix) on line 6.
OPT = """\
import torch
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)


def norm(w):
    return w / (w.amax(dim=-1, keepdim=True) + 1e-8)
"""


class Client:
    def __init__(self, cwd: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "amplint", "server"], cwd=cwd, env=subprocess_env(),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.messages: "queue.Queue[dict]" = queue.Queue()
        self.pending = []  # notifications read while waiting for something else
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            headers = {}
            while True:
                line = out.readline()
                if not line:
                    return
                line = line.decode("ascii").strip()
                if not line:
                    break
                key, _, value = line.partition(":")
                headers[key.strip().lower()] = value.strip()
            body = out.read(int(headers["content-length"]))
            self.messages.put(json.loads(body))

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def notify(self, method: str, params: dict) -> None:
        self.send({"method": method, "params": params})

    def _next(self) -> dict:
        try:
            message = self.messages.get(timeout=TIMEOUT)
        except queue.Empty:
            self.proc.kill()
            raise AssertionError(f"no message from the server in {TIMEOUT} s; stderr: "
                                 f"{self.proc.stderr.read().decode(errors='replace')[-2000:]}")
        if "method" in message and "id" in message:  # a request from the server: accept it
            self.send({"id": message["id"], "result": None})
        return message

    def request(self, method: str, params: dict):
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        while True:
            message = self._next()
            if message.get("id") == self.next_id and "method" not in message:
                assert "error" not in message, message
                return message["result"]
            self.pending.append(message)

    def diagnostics(self, uri: str, version=None) -> list:
        """The next diagnostics published for ``uri`` (for ``version`` when given)."""
        while True:
            for message in list(self.pending):
                params = message.get("params") or {}
                if message.get("method") == "textDocument/publishDiagnostics" and params.get("uri") == uri \
                        and (version is None or params.get("version") == version):
                    self.pending.remove(message)
                    return params["diagnostics"]
            self.pending.append(self._next())


def apply_edit(text: str, edit: dict) -> str:
    """Apply a WorkspaceEdit's text edits (ASCII text: UTF-16 units are characters)."""
    lines = text.splitlines(keepends=True)

    def offset(pos):
        return sum(len(l) for l in lines[:pos["line"]]) + pos["character"]

    [change] = edit["documentChanges"]
    for e in sorted(change["edits"], key=lambda e: offset(e["range"]["start"]), reverse=True):
        text = text[:offset(e["range"]["start"])] + e["newText"] + text[offset(e["range"]["end"]):]
    return text


@pytest.fixture
def project(tmp_path):
    return write_project(tmp_path / "proj", {"train.py": TRAIN, "opt.py": "# on disk: not what the editor shows\n"})


def test_lsp_exchange(project):
    client = Client(project)
    try:
        uri = (project / "opt.py").resolve().as_uri()
        result = client.request("initialize", {"processId": None, "rootUri": project.resolve().as_uri(),
                                               "capabilities": {}})
        caps = result["capabilities"]
        assert caps["codeActionProvider"] and caps["hoverProvider"]
        assert result["serverInfo"]["name"] == "amplint"
        client.notify("initialized", {})

        # didOpen: the buffer is linted as opt.py of the project (train.py's .half() makes the
        # parameters float16), not the file on disk.
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                                "text": OPT}})
        diags = client.diagnostics(uri, 1)
        by_code = {d["code"]: d for d in diags}
        assert set(by_code) == {"AMP101", "AMP102"}
        amp101 = by_code["AMP101"]
        assert amp101["range"] == {"start": {"line": 1, "character": 6}, "end": {"line": 1, "character": 23}}
        assert amp101["source"] == "amplint" and amp101["severity"] == 1
        assert by_code["AMP102"]["severity"] == 2  # a likely finding is a warning

        # codeAction: the safe fix is the preferred quick fix and edits only what it must.
        actions = client.request("textDocument/codeAction", {
            "textDocument": {"uri": uri}, "range": amp101["range"],
            "context": {"diagnostics": [amp101], "only": ["quickfix"]}})
        [action] = actions
        assert action["kind"] == "quickfix" and action["isPreferred"] is True
        assert action["title"].startswith("AMP101: ")
        fixed = apply_edit(OPT, action["edit"])
        assert fixed == OPT.replace("lr=1e-3)", "lr=1e-3, eps=1e-4)")
        [edit] = action["edit"]["documentChanges"][0]["edits"]
        assert edit["range"]["start"]["line"] == edit["range"]["end"]["line"] == 1

        # The unsafe fix is offered, marked as such and not preferred.
        amp102 = by_code["AMP102"]
        [unsafe] = client.request("textDocument/codeAction", {
            "textDocument": {"uri": uri}, "range": amp102["range"], "context": {"diagnostics": [amp102]}})[:1]
        assert "unsafe" in unsafe["title"] and not unsafe.get("isPreferred")
        assert "1e-4" in apply_edit(OPT, unsafe["edit"]).splitlines()[5]

        # hover over the finding: its rule's page.
        hover = client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                      "position": {"line": 1, "character": 10}})
        assert "# AMP101 optimizer-eps-underflow" in hover["contents"]["value"]
        assert client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                     "position": {"line": 0, "character": 0}}) is None

        # didChange to the fixed text: AMP101 is gone.
        client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                                 "contentChanges": [{"text": fixed}]})
        assert [d["code"] for d in client.diagnostics(uri, 2)] == ["AMP102"]

        # didSave of train.py without .half(): nothing in the project is float16 any more, and the
        # open opt.py is re-linted against it.
        train_uri = (project / "train.py").resolve().as_uri()
        (project / "train.py").write_text(TRAIN.replace(".half()", ""))
        client.notify("textDocument/didOpen", {"textDocument": {"uri": train_uri, "languageId": "python",
                                                                "version": 1, "text": TRAIN.replace(".half()", "")}})
        client.diagnostics(train_uri, 1)
        client.notify("textDocument/didSave", {"textDocument": {"uri": train_uri}})
        assert client.diagnostics(uri, 2) == []

        # Columns are UTF-16 code units on the wire: the emoji before the constant counts twice.
        emoji_uri = (project / "emoji.py").resolve().as_uri()
        line = '        x = "\U0001F680"; scores = scores.masked_fill(mask, -1e9)\n'
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": emoji_uri, "languageId": "python", "version": 1,
            "text": "import torch\n\ndef attention(q, k, mask):\n    with torch.autocast('cuda'):\n"
                    "        scores = q @ k.transpose(-1, -2)\n" + line}})
        [overflow] = client.diagnostics(emoji_uri, 1)
        assert overflow["code"] == "AMP103"
        assert overflow["range"]["start"] == {"line": 5, "character": line.index("-1e9") + 1}

        # didClose clears the file's diagnostics.
        client.notify("textDocument/didClose", {"textDocument": {"uri": emoji_uri}})
        assert client.diagnostics(emoji_uri) == []

        # A broken [tool.amplint] is shown to the user, naming the key, and nothing is published.
        bad = write_project(project / "bad", {"pyproject.toml": "[tool.amplint]\nselct = ['AMP1']\n"})
        bad_uri = (bad / "m.py").resolve().as_uri()
        client.notify("textDocument/didOpen", {"textDocument": {"uri": bad_uri, "languageId": "python",
                                                                "version": 1, "text": OPT}})
        assert client.diagnostics(bad_uri, 1) == []
        shown = [m for m in client.pending if m.get("method") == "window/showMessage"]
        assert shown and "selct" in shown[0]["params"]["message"]

        assert client.request("shutdown", None) is None
        client.notify("exit", None)
        assert client.proc.wait(timeout=TIMEOUT) == 0
    finally:
        if client.proc.poll() is None:
            client.proc.kill()


def test_server_without_pygls_says_how_to_install_it(monkeypatch, capsys):
    from amplint.cli import main

    monkeypatch.setitem(sys.modules, "amplint.server", None)  # as if pygls could not be imported
    assert main(["server"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "pip install 'amplint[lsp]'" in captured.err
