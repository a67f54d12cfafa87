"""Precision settings in a project's configuration files: JSON, YAML, TOML, INI, shell launchers and the shell
commands documented in Markdown files.

Training precision often lives outside the Python code: a DeepSpeed config
(``"fp16": {"enabled": true}``), an accelerate config (``mixed_precision: fp16``), a Lightning /
Hydra config (``trainer: {precision: 16-mixed}``), FSDP's ``param_dtype: float16``, Hugging Face
arguments (``fp16: true``), or a launcher script (``accelerate launch --mixed_precision fp16``,
``python train.py --fp16``). Each found setting is a ``Signal`` like the ones read from code.

YAML is read with PyYAML's ``safe_load`` (a complete, well-kept parser: YAML's grammar is too large
to approximate); JSON with the standard library; TOML with ``tomllib`` / ``tomli``; INI with ``configparser``.
"""
from __future__ import annotations

import json
import re
from typing import Any, Dict, Iterator, List, Optional, Tuple

from .context.evidence import Signal
from .torch_api.trainers import COMPOSER_PRECISIONS

CONFIG_SUFFIXES = (".json", ".yaml", ".yml", ".toml", ".ini", ".sh", ".md")
# the Markdown files whose fenced shell commands document a project's runs (``markdown_commands``): a README anywhere,
# any Markdown page under a documentation or examples directory (tevatron's docs/training.md, examples/example_*.md)
_LAUNCHER_DOC_DIRS = {"doc", "docs", "example", "examples"}


def launcher_doc(rel: str) -> bool:
    """Is the Markdown file at ``rel`` (relative to the project root) one whose commands the project's runs are
    read from?"""
    parts = rel.lower().split("/")
    return parts[-1].endswith(".md") and (parts[-1].startswith("readme") or bool(_LAUNCHER_DOC_DIRS & set(parts[:-1])))
MAX_CONFIG_BYTES = 256 * 1024  # bigger files are data (vocabularies, annotations), not settings
_SKIP_NAMES = {"package.json", "package-lock.json", "tsconfig.json", ".pre-commit-config.yaml",
               "tokenizer.json", "vocab.json", "tokenizer_config.json", "special_tokens_map.json",
               "tox.ini", "pytest.ini", "mypy.ini", "setup.ini"}
_WORDS = re.compile(rb"fp16|bf16|float16|precision|mixed_precision|param_dtype|opt_level|\bamp\b|\bAMP\b")
# Top-level keys of a training run's config (torchtune's recipe YAML: ``dtype: bf16`` beside
# ``optimizer:``, ``epochs:``, ``batch_size:``): its ``dtype`` is the dtype the model trains in.
_TRAINING_KEYS = {"optimizer", "optim", "epochs", "num_epochs", "max_epochs", "max_steps", "max_steps_per_epoch",
                  "lr", "learning_rate", "batch_size", "train_batch_size", "loss", "gradient_accumulation_steps"}
# A config of an inference / generation / evaluation / quantisation run (torchtune's generation.yaml)
_INFERENCE_CONFIG = re.compile(r"(?i)generat|infer|eval|quantiz|chat|serve|predict|export")

Found = Tuple[Signal, int, str]  # (signal, line, what)


def config_signals(text: bytes, name: str) -> List[Found]:
    """The precision settings of one configuration file (its bytes and its file name)."""
    if name in _SKIP_NAMES or len(text) > MAX_CONFIG_BYTES or not _WORDS.search(text):
        return []
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError:
        return []
    if name.endswith(".md"):
        decoded = markdown_commands(decoded)
    if name.endswith((".sh", ".md")):
        return list(_shell_signals(decoded))
    data = _load(decoded, name)
    if data is None:
        # YAML with tags of its own (speechbrain's hyperpyyaml: `!new:`, `!ref`): its top-level scalars still say
        # what the run is
        if name.endswith((".yaml", ".yml")):
            top = dict(m.groups() for m in _TOP_SCALAR.finditer(decoded))
            stated = _run_precision(top, name)
            if stated is not None:
                return [(stated, _line_of(decoded.splitlines(), "precision"), f"`precision: {top['precision']}`")]
        return []
    lines = decoded.splitlines()
    found = [(sig, _line_of(lines, key), what) for sig, key, what in _walk(data, ())]
    dtype = _training_dtype(data, name)
    if dtype is not None:
        found.append((dtype, _line_of(lines, "dtype"), f"`dtype: {data['dtype']}`"))
    stated = _run_precision(data, name)
    if stated is not None:
        found = [f for f in found if not f[0].note.startswith("Lightning precision=")]
        found.append((stated, _line_of(lines, "precision"), f"`precision: {data['precision']}`"))
    return found


def config_strings(text: bytes, name: str) -> set:
    """The short string values of a configuration file (what it may select by name: threestudio's
    ``system_type: "magic123-system"``, mmcv's ``type="..."``); empty for one that does not parse."""
    try:
        data = _load(text.decode("utf-8"), name)
    except UnicodeDecodeError:
        return set()
    out: set = set()
    todo = [data]
    while todo and len(out) < 2000:
        item = todo.pop()
        if isinstance(item, dict):
            todo.extend(list(item.values())[:500])
        elif isinstance(item, list):
            todo.extend(item[:200])
        elif isinstance(item, str) and len(item) <= 100:
            out.add(item)
    return out


_TOP_SCALAR = re.compile(r"(?m)^([A-Za-z_]\w*):[ \t]*([^\s#'\"]*)")
RUN_PRECISION = "in a training config"  # the note of a run's stated precision (``_run_precision``)


# a training setting by its name: physicsnemo's active-learning `fine_tune_epochs`, `fine_tune_lr`
_TRAINING_KEY = re.compile(r"(?:^|_)(?:epochs?|lr|learning_rate)$")


def _training_config(data: dict) -> bool:
    """Does the config hold training settings: at its top (``max_epochs``, ``fine_tune_lr``) or in a section
    one level down (physicsnemo's ``training: {optimizer: ...}`` beside the top-level ``precision``)?"""
    if _TRAINING_KEYS & set(data) or any(isinstance(k, str) and _TRAINING_KEY.search(k) for k in data):
        return True
    return any(isinstance(v, dict) and _TRAINING_KEYS & set(v) for v in data.values())


def _run_precision(data: Any, name: str) -> Optional[Signal]:
    """``precision: fp32 | fp16 | bf16`` at the top of a training config (speechbrain's recipe hparams, read by
    the shared Brain, which runs fp16 / bf16 autocast or none by it; physicsnemo's Hydra recipes, read by their
    ``get_autocast_context(cfg.precision)``): the precision that run states."""
    if not isinstance(data, dict) or _INFERENCE_CONFIG.search(name) or not _training_config(data):
        return None
    value = data.get("precision")
    dtype = {"fp16": "float16", "float16": "float16", "bf16": "bfloat16", "bfloat16": "bfloat16",
             "fp32": "float32", "float32": "float32"}.get(value.lower()) if isinstance(value, str) else None
    if dtype is None:
        return None
    return Signal("flag", dtype, note=f"precision: {value} {RUN_PRECISION}")


def _training_dtype(data: Any, name: str) -> Optional[Signal]:
    """``dtype: fp16`` at the top of a training config (torchtune: the recipe builds the model in
    ``training.get_dtype(cfg.dtype)``, no autocast): the parameters are of that dtype."""
    if not isinstance(data, dict) or _INFERENCE_CONFIG.search(name) or not _TRAINING_KEYS & set(data):
        return None
    value = data.get("dtype")
    dtype = _HALF_NAMES.get(value.lower()) if isinstance(value, str) else None
    if dtype is None:
        return None
    return Signal("half_params", dtype, pure=True, note=f"dtype: {value} in a training config")


def _load(text: str, name: str) -> Any:
    try:
        if name.endswith(".json"):
            return json.loads(text)
        if name.endswith(".toml"):
            try:
                import tomllib  # type: ignore[import-not-found]
            except ImportError:  # Python < 3.11
                import tomli as tomllib  # type: ignore[no-redef]
            return tomllib.loads(text)
        if name.endswith(".ini"):
            return _ini(text)
        import yaml
        return yaml.safe_load(text)
    except Exception:  # a file that is not valid in its format says nothing (and is not ours)
        return None


def _ini(text: str) -> Dict[str, Dict[str, str]]:
    """An INI file (prefigure's defaults.ini in stable-audio-tools: ``[DEFAULTS]`` / ``precision = "16-mixed"``, read
    into the argparse defaults of the program, M16-3) as {section: {key: value}}, values without their quotes."""
    import configparser

    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.read_string(text)
    return {section: {k: v.strip().strip("\"'") for k, v in parser.items(section, raw=True)}
            for section in parser.sections()}


def _line_of(lines: List[str], key: str) -> int:
    pattern = re.compile(r"""(^|[\s{,"'])%s["']?\s*[:=]""" % re.escape(key))
    for i, line in enumerate(lines, 1):
        if pattern.search(line):
            return i
    return 1


def _on(value: Any) -> Optional[bool]:
    """True / False for a setting's value; None for "auto" and other values decided elsewhere."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        v = value.strip().lower()
        if v in ("true", "yes", "on", "1"):
            return True
        if v in ("false", "no", "off", "0", "none", ""):
            return False
        return None
    if isinstance(value, int):
        return bool(value)
    return None


# The keys that switch a whole block on or off.
_SWITCHES = ("enabled", "enable", "use", "active")


def _switched_off(block: dict) -> bool:
    return any(_on(block[k]) is False for k in _SWITCHES if k in block)


_LIGHTNING = {"16": ("float16", False), "16-mixed": ("float16", False), "16-true": ("float16", True),
              "bf16": ("bfloat16", False), "bf16-mixed": ("bfloat16", False), "bf16-true": ("bfloat16", True)}
_HALF_NAMES = {"float16": "float16", "fp16": "float16", "half": "float16", "torch.float16": "float16",
               "torch.half": "float16", "bfloat16": "bfloat16", "bf16": "bfloat16", "torch.bfloat16": "bfloat16"}


def _walk(data: Any, path: Tuple[str, ...]) -> Iterator[Tuple[Signal, str, str]]:
    if isinstance(data, list):
        for item in data[:200]:
            yield from _walk(item, path)
        return
    if not isinstance(data, dict):
        return
    for key, value in list(data.items())[:500]:
        if not isinstance(key, str):
            continue
        where = ".".join((*path, key))
        k = key.lower()
        if k in ("fp16", "bf16", "bfloat16") and isinstance(value, dict):
            # DeepSpeed: a half model, float32 master weights in the optimizer, dynamic loss scaling
            on = _on(value.get("enabled", True if k == "fp16" and "loss_scale" in value else False))
            if on is not False:
                dtype = "float16" if k == "fp16" else "bfloat16"
                note = f'DeepSpeed "{key}": {{"enabled": {json.dumps(value.get("enabled", True))}}}'
                yield Signal("flag", dtype, pure=True, master=True, note=note), key, f"`{where}.enabled` ({note})"
        elif k in ("fp16", "bf16", "amp", "use_amp", "use_fp16", "mixed_precision_training") and _on(value) is True \
                and not isinstance(value, (dict, list)):
            dtype = "bfloat16" if k == "bf16" else "float16"
            yield Signal("flag", dtype, note=f"{where}: {value}"), key, f"`{where}: {value}`"
        elif k == "amp" and isinstance(value, dict) and not any(str(x).lower() == "opt_level" for x in value) \
                and _on(next((v for x, v in value.items() if isinstance(x, str) and x.lower() in ("enabled", "enable")),
                             None)) is True:
            # detectron2 / Mask2Former: ``SOLVER: AMP: ENABLED: True`` (DefaultTrainer then builds AMPTrainer,
            # an fp16 autocast + GradScaler loop, even when that trainer lives in the installed package)
            switch = next(x for x in value if isinstance(x, str) and x.lower() in ("enabled", "enable"))
            yield Signal("flag", "float16", note=f"{where}.{switch}: {value[switch]}"), key, \
                f"`{where}.{switch}: {value[switch]}`"
        elif k == "mixed_precision" and isinstance(value, str) and value.lower() in ("fp16", "bf16"):
            dtype = "float16" if value.lower() == "fp16" else "bfloat16"
            yield Signal("flag", dtype, note=f"mixed_precision: {value}"), key, f"`{where}: {value}`"
        elif k == "precision" and isinstance(value, (str, int)) and not isinstance(value, bool):
            v = str(value).lower()
            lightning_int = isinstance(value, int) and (not path or "trainer" in path[-1].lower())
            if v in _LIGHTNING and (isinstance(value, str) or lightning_int):
                dtype, pure = _LIGHTNING[v]
                yield Signal("flag", dtype, pure=pure, note=f"Lightning precision={value}"), key, f"`{where}: {value}`"
            elif v in COMPOSER_PRECISIONS:
                # composer / llm-foundry YAML ``precision: amp_bf16`` handed to ``Trainer(precision=cfg.precision)``
                # (LLM-Shearing, P22-3): that autocast
                yield Signal("flag", COMPOSER_PRECISIONS[v], note=f"composer precision={value}"), key, \
                    f"`{where}: {value}`"
        elif k == "param_dtype" and isinstance(value, str) and value.lower() in _HALF_NAMES:
            dtype = _HALF_NAMES[value.lower()]
            yield (Signal("half_params", dtype, pure=True, master=True, note=f"FSDP param_dtype: {value}"),
                   key, f"`{where}: {value}`")
        elif k == "opt_level" and isinstance(value, str) and value.upper() in ("O1", "O2", "O3"):
            level = value.upper()
            yield (Signal("flag", "float16", pure=level != "O1", master=level == "O2", note=f"apex opt_level={level}"),
                   key, f"`{where}: {value}`")
        if isinstance(value, dict) and _switched_off(value):
            # a disabled block says nothing: ``"amp": {"enabled": false, "opt_level": "O2"}`` (openfold),
            # ``fsdp: {use: false, param_dtype: float16}`` (audiocraft's base solver config)
            continue
        if isinstance(value, (dict, list)):
            yield from _walk(value, (*path, key))


_SHELL = [
    (re.compile(r"--mixed[_-]precision[= ]+[\"']?(fp16|bf16)\b"), None),
    (re.compile(r"--precision[= ]+[\"']?(16-mixed|16-true|bf16-mixed|bf16-true|16|bf16)\b"), "lightning"),
    (re.compile(r"\b(?:trainer\.)?precision=[\"']?(16-mixed|16-true|bf16-mixed|bf16-true|16|bf16)\b"), "lightning"),
    # apex's level passed as the flag's value (convasr's `python train.py --fp16 O2`): O2 is a half model with
    # float32 master weights, O3 a pure half one, O1 autocast-like, O0 float32
    (re.compile(r"(?<![\w-])--(?:fp16|amp|opt[_-]level)[= ]+[\"']?(O[0-3])\b"), "apex"),
    (re.compile(r"(?<![\w-])--(fp16|bf16|amp)(?![\w-]|=[Ff]alse| +[Ff]alse)"), "flag"),
]


def _shell_signals(text: str) -> Iterator[Found]:
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0]
        for pattern, kind in _SHELL:
            m = pattern.search(line)
            if not m:
                continue
            v = m.group(1)
            if kind == "apex":
                if v == "O0":
                    break  # float32
                sig = Signal("flag", "float16", pure=v != "O1", master=v == "O2", note=f"apex opt_level={v}")
            elif kind == "lightning":
                dtype, pure = _LIGHTNING[v]
                sig = Signal("flag", dtype, pure=pure, note=f"--precision {v}")
            else:
                sig = Signal("flag", "bfloat16" if v == "bf16" else "float16", note=m.group(0).strip())
            yield sig, i, f"`{m.group(0).strip()}`"
            break


# the opening fence of a Markdown code block (```bash, ~~~, ```console ...) and its language
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*\{?\.?([\w+-]*)")
_SHELL_LANGUAGES = {"", "bash", "sh", "shell", "console", "zsh", "shell-session", "shellsession"}
_PROMPT = re.compile(r"^([ \t]*)\$[ \t]+")


def markdown_commands(text: str) -> str:
    """The shell commands of a Markdown file's fenced code blocks (```bash, ```sh, ```shell, ```console, or a block
    naming no language; a ``$ `` prompt dropped), every other line blank so that lines keep their numbers: the
    documented runs of a project whose only launchers are its README's (tevatron: ``deepspeed ... train.py
    --deepspeed ds_zero3_config.json --bf16``), read like a shell script's."""
    out: List[str] = []
    fence: Optional[Tuple[str, bool]] = None  # (the block's fence, whether it holds shell commands)
    for line in text.splitlines():
        if fence is None:
            m = _FENCE.match(line)
            if m:
                fence = (m.group(1), m.group(2).lower() in _SHELL_LANGUAGES)
            out.append("")
            continue
        stripped = line.strip()
        if stripped and set(stripped) == {fence[0][0]} and len(stripped) >= len(fence[0]):
            fence = None
            out.append("")
        else:
            out.append(_PROMPT.sub(r"\1", line) if fence[1] else "")
    return "\n".join(out)


_SHELL_OPTION = re.compile(r"(?<![\w-])--((?:[A-Za-z][\w-]*)?(?:dtype|precision)[\w-]*|adam[_-]epsilon|optim)(?:=| +)[\"']?([\w.-]+)")


def shell_options(text: str) -> List[Tuple[int, str, str]]:
    """The dtype, precision and optimizer options a shell script passes (``--torch_dtype float16``,
    ``--adam_epsilon 1e-6``): (line, option, value), in order. (Read for the programs whose code looks a dtype up by such an option's string.)"""
    out = []
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0]
        out.extend((i, m.group(1), m.group(2)) for m in _SHELL_OPTION.finditer(line))
    return out


def config_leaves(text: bytes, name: str) -> Dict[str, Any]:
    """The scalar settings of a configuration file by their dotted path (``sys.dtype`` -> ``"bfloat16"``,
    ``amp`` -> False): what a Hydra program reads as ``cfg.sys.dtype``. Empty for one that does not parse."""
    if len(text) > MAX_CONFIG_BYTES:
        return {}
    try:
        data = _load(text.decode("utf-8"), name)
    except UnicodeDecodeError:
        return {}
    out: Dict[str, Any] = {}
    todo: List[Tuple[str, Any]] = [("", data)] if isinstance(data, dict) else []
    while todo and len(out) < 5000:
        prefix, item = todo.pop()
        for k, v in list(item.items())[:500]:
            if not isinstance(k, str):
                continue
            if isinstance(v, dict):
                todo.append((prefix + k + ".", v))
            elif isinstance(v, (str, bool, int, float)) or v is None:
                out[prefix + k] = v
    return out
