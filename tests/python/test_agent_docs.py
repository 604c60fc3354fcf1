"""The agent pages run as written: docs/agent-quickstart.md, docs/SKILL.md and docs/extending.md.

Each page's ```python blocks run in order, in one fresh namespace per page (``__name__ == "__main__"``, as a
script), with the working directory in a temporary folder. A ```text block that follows a python block is that
block's printed output and must match it exactly. No other kind of fence is allowed, so nothing a page shows
goes unchecked; a python block may start with ``# not run: <reason>`` only with a stated reason. Every relative
link (and its #anchor), and every repository path a page names in backticks, must exist.
extending.md's printed numbers are derived again here by hand.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
PAGES = ("agent-quickstart.md", "SKILL.md", "extending.md")

FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)
NOT_RUN = re.compile(r"#\s*not run\b:?\s*(.*)", re.I)


@dataclass
class Block:
    lang: str
    code: str
    line: int
    expected: str | None = None  # the ```text block that follows, if any


def fences(text: str) -> list[tuple[str, str, int, int, int]]:
    """(info, body, first line, start offset, end offset) of every fenced block."""
    return [
        (m.group(1).strip(), m.group(2), text.count("\n", 0, m.start()) + 1, m.start(), m.end())
        for m in FENCE.finditer(text)
    ]


def python_blocks(page: str) -> list[Block]:
    text = (DOCS / page).read_text(encoding="utf-8")
    blocks: list[Block] = []
    previous_end = None
    for info, body, line, start, end in fences(text):
        if info == "python":
            blocks.append(Block("python", body, line))
        elif info == "text":
            assert blocks and previous_end is not None and not text[previous_end:start].strip(), (
                f"{page}:{line}: a text block must directly follow the python block whose output it is"
            )
            assert blocks[-1].expected is None, f"{page}:{line}: two output blocks for one python block"
            blocks[-1].expected = body
        previous_end = end
    return blocks


def prose(page: str) -> str:
    """The page without its fenced blocks and its front matter."""
    text = (DOCS / page).read_text(encoding="utf-8")
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)
    return FENCE.sub("", text)


def run_page(page: str, workdir: Path) -> list[tuple[Block, str]]:
    """Runs the page's python blocks in order in one namespace; returns each block with what it printed."""
    namespace: dict[str, object] = {"__name__": "__main__"}
    results = []
    cwd, threads = Path.cwd(), torch.get_num_threads()
    os.chdir(workdir)
    try:
        for block in python_blocks(page):
            if NOT_RUN.match(block.code.lstrip()):
                continue
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(block.code, f"{DOCS / page}:{block.line}", "exec"), namespace)  # noqa: S102
            results.append((block, out.getvalue()))
    finally:
        os.chdir(cwd)
        torch.set_num_threads(threads)  # the quickstart sets the caller's threads, as a user would
    return results


@pytest.fixture(scope="module")
def page_runs(tmp_path_factory):
    cache: dict[str, list[tuple[Block, str]]] = {}

    def get(page: str) -> list[tuple[Block, str]]:
        if page not in cache:
            cache[page] = run_page(page, tmp_path_factory.mktemp(page.replace(".", "_")))
        return cache[page]

    return get


# ---------------------------------------------------------------------------------------------------------------
# Every block runs; every shown output is what the block prints
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("page", PAGES)
def test_page_blocks_run_and_print_what_is_shown(page, page_runs):
    results = page_runs(page)
    assert results, f"{page} has no python block"
    for block, printed in results:
        if block.expected is not None:
            assert printed == block.expected, f"{page}:{block.line}: printed output differs from the page"


@pytest.mark.parametrize("page", PAGES)
def test_only_python_blocks_and_their_outputs(page):
    text = (DOCS / page).read_text(encoding="utf-8")
    for info, body, line, _, _ in fences(text):
        assert info in ("python", "text"), f"{page}:{line}: a ```{info} block is not run by this test"
        marker = NOT_RUN.match(body.lstrip()) if info == "python" else None
        if marker:
            assert len(marker.group(1).strip()) >= 10, f"{page}:{line}: '# not run' needs its reason"
    python_blocks(page)  # asserts every text block follows a python block


# ---------------------------------------------------------------------------------------------------------------
# Links and paths
# ---------------------------------------------------------------------------------------------------------------

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
PATHLIKE = re.compile(r"[\w.\-]+(?:/[\w.\-]+)+/?")


def github_anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives the headings of a page (duplicates get -1, -2, ...)."""
    anchors: set[str] = set()
    counts: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", FENCE.sub("", markdown), flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower()).replace(" ", "-")
        n = counts.get(slug, 0)
        counts[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


@pytest.mark.parametrize("page", PAGES)
def test_relative_links_and_anchors_exist(page):
    links = LINK.findall(prose(page))
    assert links, f"{page} links nowhere"
    for target in links:
        if re.match(r"[a-z][a-z0-9+.\-]*:", target):  # https:, mailto:, ...
            continue
        path_part, _, anchor = target.partition("#")
        path = (DOCS / path_part).resolve() if path_part else DOCS / page
        assert path.exists(), f"{page}: link to {target} points at nothing"
        assert path.is_relative_to(REPO), f"{page}: link to {target} leaves the repository"
        if anchor:
            assert path.suffix == ".md", f"{page}: anchor on a non-Markdown target {target}"
            anchors = github_anchors(path.read_text(encoding="utf-8"))
            assert anchor in anchors, f"{page}: {target}: no heading gives #{anchor}"


@pytest.mark.parametrize("page", PAGES)
def test_repository_paths_named_in_backticks_exist(page):
    top_level = {entry.name for entry in REPO.iterdir() if not entry.name.startswith(".")}
    checked = 0
    for span in CODE_SPAN.findall(prose(page)):
        span = span.strip()
        if PATHLIKE.fullmatch(span) and span.split("/")[0] in top_level:
            assert (REPO / span).exists(), f"{page}: `{span}` does not exist in the repository"
            checked += 1
        elif re.fullmatch(r"[\w.\-]+\.md", span):  # a bare page name: a sibling of the page
            assert (DOCS / span).exists(), f"{page}: `{span}` is not a page in docs/"
            checked += 1
    assert checked, f"{page} names no repository path: the check would be vacuous"


def test_skill_file_front_matter():
    text = (DOCS / "SKILL.md").read_text(encoding="utf-8")
    match = re.match(r"\A---\n(.*?)\n---\n", text, flags=re.S)
    assert match, "SKILL.md must start with YAML front matter"
    fields = dict(line.split(": ", 1) for line in match.group(1).splitlines())
    assert set(fields) == {"name", "description"}
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", fields["name"]) and len(fields["name"]) <= 64
    assert 0 < len(fields["description"]) <= 1024
    assert ":" not in fields["description"], "an unquoted ':' would break the YAML value"
    body = prose("SKILL.md")
    for target in ("agent-quickstart.md", "report-schema.md"):
        assert f"]({target})" in body, f"SKILL.md must link {target}"


def test_readme_links_the_agent_pages():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for page in PAGES:
        assert f"](docs/{page})" in readme, f"README.md does not link docs/{page}"


# ---------------------------------------------------------------------------------------------------------------
# extending.md: the printed numbers, derived by hand
# ---------------------------------------------------------------------------------------------------------------


def _linear(rows: int, n_in: int, n_out: int) -> tuple[int, int, int]:
    """Module formula of Linear with bias (docs/module-formulas.md): FLOPs, MACs, DMAs."""
    outputs = rows * n_out
    params = n_in * n_out + n_out
    return outputs * 2 * n_in, outputs * n_in, rows * n_in + params + outputs


def test_extending_prints_the_hand_derived_numbers(page_runs):
    printed = [out for _, out in page_runs("extending.md")]
    rows, dim, hidden = 3, 4, 6

    up, down, head = _linear(rows, dim, 2 * hidden), _linear(rows, hidden, dim), _linear(rows, dim, 2)
    assert up == (288, 144, 108) and down == (144, 72, 58) and head == (48, 24, 28)
    known = [u + d + h for u, d, h in zip(up, down, head, strict=True)]  # Swish contributes 0 known

    # operator FLOPs: three addmm (2 per multiply-add), sigmoid 4 and a multiply per Swish element, the gate multiply
    gated = rows * hidden
    operator = 2 * rows * 2 * hidden * dim + 4 * gated + gated + gated + 2 * rows * dim * hidden + 2 * rows * 2 * dim
    assert operator == 588

    before = printed[0]
    assert f"module_flops: partial, at least {known[0]} FLOPs\n" in before  # 480
    assert f"macs: partial, at least {known[1]} MACs\n" in before  # 240
    assert f"dmas: partial, at least {known[2]} DMAs\n" in before  # 194
    assert f"operator_flops: {operator} FLOPs\n" in before

    block_flops = rows * (2 * hidden * 2 * dim + 5 * hidden + hidden + dim * 2 * hidden)
    block_macs = rows * (2 * hidden * dim + dim * hidden)
    block_params = dim * 2 * hidden + 2 * hidden + hidden * dim + dim
    block_dmas = rows * dim + block_params + rows * dim
    assert (block_flops, block_macs, block_params, block_dmas) == (540, 216, 88, 112)
    owned = printed[1]
    assert f"module_flops: {block_flops + head[0]} FLOPs\n" in owned  # 588
    assert f"macs: {block_macs + head[1]} MACs\n" in owned  # 240
    assert f"dmas: {block_dmas + head[2]} DMAs\n" in owned  # 140
    assert f"block      complete {block_flops} (subtree)\n" in owned
    assert f"head       complete {head[0]} (module_call)\n" in owned
    for child in ("block.up", "block.act", "block.down"):
        assert f"{child:<11}covered by block (call 0)\n" in owned
    assert "diagnostic:" not in owned

    own_work = printed[3]
    assert f"module_flops: partial, at least {known[0] + gated} FLOPs\n" in own_work  # 498

    # custom_mapping: (8, 5) @ (5, 3), the sum of 24 elements, digamma on 40 elements at 1 each
    mm, total_sum, digamma = 2 * 8 * 3 * 5, 8 * 3 - 1, 8 * 5
    assert f"total: partial, known {mm + total_sum} FLOPs\n" in printed[4]  # 263
    assert "uncounted_operator: aten.digamma\n" in printed[4]
    assert f"total: complete, known {mm + total_sum + digamma} FLOPs\n" in printed[5]  # 303
    assert f"  aten.digamma: {digamma}\n" in printed[5]

    linear_flops, _, _ = _linear(8, 5, 3)
    crawl = printed[6]
    assert f"0      operator_flops complete {2 * 8 * 3 * 5}\n" in crawl
    assert f"1      operator_flops complete {8 * 3}\n" in crawl
    assert f"operator_flops: complete, known {2 * 8 * 3 * 5 + 8 * 3}\n" in crawl  # 264
    assert f"module_flops: partial, known {linear_flops}\n" in crawl  # 240
