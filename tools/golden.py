#!/usr/bin/env python3
"""The golden pages of render_report (tests/golden/).

tests/golden/*.json are fixed AnalysisReports, made once by `reports` from
real crawls (a CNN, a transformer text model called with kwargs, structure
mode, a partial report with diagnostics, custom-module subtree ownership,
and a before/after pair) and committed: they do not change when torch or
torchscan versions do. tests/python/test_render_analysis.py renders each to
HTML and SVG and compares the bytes with tests/golden/*.html and *.svg,
from Python and from `torchscan render`.

    python tools/golden.py reports   # re-crawl the fixed reports (rarely)
    python tools/golden.py pages     # rewrite the golden pages after an
                                     # intended change of the renderer;
                                     # review the diff before committing
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent.parent / "tests" / "golden"

# name -> (report file, before file or None, metric for the SVG)
CASES = {
    "cnn": ("cnn.json", None, "module_flops"),
    "text_model": ("text_model.json", None, "macs"),
    "structure": ("structure.json", None, "module_flops"),
    "partial": ("partial.json", None, "module_flops"),
    "subtree": ("subtree.json", None, "module_flops"),
    "before_after": ("cnn_wide.json", "cnn.json", "module_flops"),
}


def _reports() -> dict[str, dict]:
    import torch
    from torch import nn

    from torchscan import ModuleCall, ModuleHandler, crawl_module
    from torchscan._demo import DemoCNN, DemoTextModel

    torch.manual_seed(0)
    out = {"cnn.json": crawl_module(DemoCNN().eval(), (3, 32, 32))}
    wide = DemoCNN().eval()
    wide.features[0] = nn.Conv2d(3, 24, 3, padding=1)
    wide.features[1] = nn.BatchNorm2d(24)
    wide.features[4] = nn.Conv2d(24, 32, 3, padding=1)
    out["cnn_wide.json"] = crawl_module(wide, (3, 32, 32))
    ids = torch.randint(0, 100, (2, 12))
    mask = torch.ones(2, 12, dtype=torch.bool)
    out["text_model.json"] = crawl_module(DemoTextModel().eval(), args=(ids,), kwargs={"attention_mask": mask})
    out["structure.json"] = crawl_module(DemoCNN().eval(), (3, 32, 32), mode="structure")

    class Odd(nn.Module):
        """A module without a formula: its FLOPs stay partial, with a diagnostic."""

        def __init__(self) -> None:
            super().__init__()
            self.scale = nn.Parameter(torch.ones(8))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.special.digamma(x * self.scale) * 2

    out["partial.json"] = crawl_module(nn.Sequential(nn.Linear(8, 8), Odd(), nn.ReLU()), (8,))

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = nn.Linear(8, 16)
            self.outer = nn.Linear(16, 8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.outer(torch.relu(self.inner(x)))

    def estimate(call: ModuleCall) -> dict:
        return {"module_flops": 2 * (8 * 16 + 16 * 8), "macs": 8 * 16 + 16 * 8}

    handler = ModuleHandler(estimate, subtree_metrics=frozenset({"module_flops", "macs"}))
    out["subtree.json"] = crawl_module(
        nn.Sequential(Block(), nn.Linear(8, 8), Block()), (8,), custom_modules={Block: handler}
    )
    return out


def render(name: str, fmt: str) -> str:
    from torchscan import render_report

    report_file, before_file, metric = CASES[name]
    report = json.loads((GOLDEN / report_file).read_text())
    before = json.loads((GOLDEN / before_file).read_text()) if before_file else None
    title = f"Golden {name} <&> \u2028"
    return render_report(report, format=fmt, before=before, title=title, metric=metric)


def main(argv: list[str]) -> int:
    if argv[1:] == ["reports"]:
        for file, report in _reports().items():
            (GOLDEN / file).write_text(json.dumps(report, indent=1) + "\n")
        return 0
    if argv[1:] == ["pages"]:
        for name in CASES:
            for fmt in ("html", "svg"):
                (GOLDEN / f"{name}.{fmt}").write_text(render(name, fmt), encoding="utf-8")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
