"""Snapshot of reports, to check that a refactoring of the binding changes no byte of them.

    python tools/report_snapshot.py OUT.jsonl      (run from the repository root, with the package built)

Writes one JSON line per case: {"case": name, "report": json.dumps(report, sort_keys=True)}. Cases: the
demo's reports (``python -m torchscan demo``'s report.json), crawl_module in full and structure mode on the
models of tests/python/test_models.py and on every model of tests/python/zoo.py, measure_flops
of the zoo's inference forwards, and a few crawls through the user-code sites (custom_mapping formulas,
custom_modules handlers) that succeed or fail. Compare two snapshots with ``cmp`` or ``diff``.

Nothing is stripped: every field of these reports is deterministic (the context holds versions, not
times or paths; the demo's report.json holds no timing).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "python"))

import torch  # noqa: E402
from torch import nn  # noqa: E402

from torchscan import ModuleHandler, crawl_module, measure_flops  # noqa: E402


def demo_reports() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.json"
        subprocess.run(
            [sys.executable, "-m", "torchscan", "demo", "--json", str(out)],
            check=True,
            stdout=subprocess.DEVNULL,
            cwd=tmp,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
        return json.loads(out.read_text())


def model_cases():
    import zoo
    import test_models as tm

    for name, factory in (("resnet", tm.TinyResNet), ("mobilenet", tm.TinyMobileNet)):
        torch.manual_seed(0)
        model = factory()
        yield f"models.{name}", model, (torch.rand(2, 3, 32, 32),), {}
    if tm.transformers is not None:
        for name, factory in (("bert", tm._bert), ("gpt2", tm._gpt2)):
            torch.manual_seed(0)
            model = factory()
            input_ids = torch.randint(0, 99, (2, 7))
            mask = torch.ones(2, 7, dtype=torch.long)
            mask[1, 5:] = 0
            yield f"models.{name}", model, (input_ids,), {"attention_mask": mask}
    for name in zoo.WORKLOADS:
        case = zoo.fresh(name)
        yield f"zoo.{name}", case.model, case.args, case.kwargs


class Failing(nn.Module):
    def forward(self, x):
        return torch.sin(x) @ torch.ones(4, 3)


def user_code_cases():
    """Crawls through the user-code sites, successful and failing."""
    x = torch.ones(2, 4)

    def ok_formula(*shapes, out_shape=None):
        return 7

    def bad_formula(*shapes, out_shape=None):
        raise ValueError("no")

    def frac_formula(*shapes, out_shape=None):
        return 0.5

    for name, formula in (("ok", ok_formula), ("raises", bad_formula), ("fraction", frac_formula)):
        yield f"formula.{name}", lambda f=formula: crawl_module(
            Failing(), args=(x,), custom_mapping={torch.ops.aten.sin: f}
        )
        yield f"flops.formula.{name}", lambda f=formula: measure_flops(
            lambda: torch.sin(x), custom_mapping={torch.ops.aten.sin: f}
        )

    def ok_handler(call):
        return {"module_flops": 5, "macs": {"status": "partial", "value": None, "known_value": 2,
                                             "unit": "MACs", "scope": "x", "method": "m"}}

    def bad_handler(call):
        raise RuntimeError("handler failed")

    def wrong_handler(call):
        return [1]

    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    for name, handler in (("ok", ok_handler), ("raises", bad_handler), ("wrong", wrong_handler)):
        yield f"handler.{name}", lambda h=handler: crawl_module(
            model, args=(x,), custom_modules={nn.Linear: ModuleHandler(h)}
        )


def main() -> int:
    out = Path(sys.argv[1])
    lines = []
    for key, report in sorted(demo_reports().items()):
        lines.append({"case": f"demo.{key}", "report": json.dumps(report, sort_keys=True)})
    for name, model, args, kwargs in model_cases():
        for mode in ("full", "structure"):
            report = crawl_module(model, args=args, kwargs=kwargs, mode=mode)
            lines.append({"case": f"{name}.{mode}", "report": json.dumps(report, sort_keys=True)})
        model.eval()

        def forward(model=model, args=args, kwargs=kwargs):
            with torch.no_grad():
                model(*args, **kwargs)

        flops = measure_flops(forward, modules=model)
        lines.append({"case": f"{name}.measure_flops", "report": json.dumps(flops, sort_keys=True)})
    for name, run in user_code_cases():
        lines.append({"case": name, "report": json.dumps(run(), sort_keys=True)})
    out.write_text("".join(json.dumps(line) + "\n" for line in lines))
    print(f"{len(lines)} cases written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
