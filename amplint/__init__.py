"""amplint: a linter for mixed-precision (fp16 / AMP) hazards in PyTorch training code."""
__version__ = "0.1.0"
# Where amplint's repository is published: SARIF's informationUri, and each rule's helpUri (its page,
# rules/CODE.md, on the main branch). One place to change when the project moves.
HOMEPAGE = "https://github.com/amplint/amplint"


def rule_page_url(code: str) -> str:
    return f"{HOMEPAGE}/blob/main/rules/{code}.md"
