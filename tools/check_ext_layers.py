"""Checks the layering of the CPython binding (src/ext) and where engine statuses become exceptions.

    python tools/check_ext_layers.py [--cc CC]      (from the repository root; exit status 1 on a violation)

1. Layers. Every src/ext/*.c is compiled on its own (``cc -c``, into a temporary directory) and ``nm`` lists
   the symbols each object defines and the ones it needs. A file that needs a symbol another file defines
   calls that file. The check fails when a file calls a file at its own layer or above it in LAYERS (so the
   call graph between files has no cycle), when a file is missing from LAYERS, or when a tsx_ symbol is
   needed but defined by no file (the extension links with undefined symbols allowed: such a mistake would
   only show when Python imports it). LAYERS is the order src/ext/state.h describes.

2. Engine statuses. An engine function (ts_*) reports failure with a TS_E* status, a negative index or a
   NULL result. Outside convert.c, no exception may be raised (PyErr_NoMemory, PyErr_SetString,
   PyErr_Format, PyErr_SetNone, PyErr_SetObject) under a condition that tests an engine result: a condition
   that calls a ts_* function, names a TS_OK/TS_E* status, or tests a variable the function assigned from a
   ts_* call. Those go through convert.c's tsx_raise / tsx_raise_status, the one translation. The condition
   of a raise is that of the innermost `if`/`else if`/`while` block around it (an `else` block takes its
   `if`'s), or the part before `?` of a conditional expression in the same statement. Raises that follow a
   failed Python or jansson allocation, or an argument check, are not about engine statuses and stay where
   they are.

3. One helper for every other raise. Outside convert.c, an exception with a message is raised only through
   tsx_fail (src/ext/fail.h): PyErr_SetString, PyErr_Format, PyErr_FormatV, PyErr_SetNone and
   PyErr_SetObject appear nowhere else. (PyErr_NoMemory after our own failed allocation stays where it is.)
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXT = ROOT / "src" / "ext"

# Bottom to top; a file may call only files listed before it. Files on one line are one layer apart too
# (the list is a total order), which is stricter than needed and keeps the rule simple.
LAYERS = [
    "state",  # module state, interned names
    "convert",  # JSON/reports -> Python; engine status -> exception
    "describe",  # metadata of Python values
    "callbacks",  # the only place user code runs
    "module_family",  # native families (class table), module tree
    "module_desc",  # one reader per family
    "masks",  # mask arguments of attention calls: shape and value summary
    "module_call",  # the parts of a call the formulas need
    "phase",  # the phase of the running operator (autograd engine, optimizer steps)
    "memsim",  # the memory simulator's storages, weak references, roles
    "op_resolve",  # which operator a call is, and its arguments as a ts_op_call
    "counter",  # the operator counter (type Counter)
    "saved",  # bytes saved for backward: the saved-tensor hooks' bodies (pause the counter)
    "handlers",  # custom module handlers: matching, normalising
    "attribution",  # parameters/buffers of layer calls, model totals
    "observe",  # what one module call records
    "hooks",  # the observer objects, install/uninstall, flags
    "crawl",  # the crawl (type Crawl) and its report
    "reports",  # module functions on reports
    "tables",  # module functions: the summary table, 0.2.0's table-text helpers
    "checkpoints",  # module functions: checkpoint inspection and matching
    "formulas",  # module function: one call's module formulas (torchscan.modules)
    "progress",  # the progress line of long measurements on a terminal
    "timing",  # measure_latency's loop
    "measure",  # module functions of workload measurements
    "module",  # the module definition and method table (the top)
]

RAISES = re.compile(r"\b(PyErr_NoMemory|PyErr_SetString|PyErr_Format|PyErr_SetNone|PyErr_SetObject|tsx_fail)\s*\(")
# Raising with a message: convert.c (engine statuses) and fail.h's tsx_fail (every other check) only.
DIRECT_RAISES = re.compile(r"\b(PyErr_SetString|PyErr_Format|PyErr_FormatV|PyErr_SetNone|PyErr_SetObject)\s*\(")
ENGINE_CALL = re.compile(r"\bts_\w+\s*\(")
ENGINE_STATUS = re.compile(r"\bTS_(?:OK|E[A-Z]+)\b")


def compile_objects(cc: str, out: Path) -> dict[str, Path]:
    include = sysconfig.get_paths()["include"]
    objects = {}
    for source in sorted(EXT.glob("*.c")):
        obj = out / (source.stem + ".o")
        cmd = [cc, "-std=c11", "-O0", "-c", "-D_GNU_SOURCE", f"-I{ROOT / 'include'}", f"-I{include}"]
        cmd += ["-o", str(obj), str(source)]
        subprocess.run(cmd, check=True)
        objects[source.stem] = obj
    return objects


def symbols(obj: Path) -> tuple[set[str], set[str]]:
    defined, needed = set(), set()
    text = subprocess.run(["nm", "-P", str(obj)], check=True, capture_output=True, text=True).stdout
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            needed.add(name)
        elif kind.isupper():  # global definitions (T, D, B, R, ...)
            defined.add(name)
    return defined, needed


def check_layers(cc: str) -> list[str]:
    errors = []
    with tempfile.TemporaryDirectory() as tmp:
        objects = compile_objects(cc, Path(tmp))
        table = {name: symbols(obj) for name, obj in objects.items()}
    definer = {}
    for name, (defined, _) in table.items():
        for sym in defined:
            definer[sym] = name
    for name in table:
        if name not in LAYERS:
            errors.append(f"src/ext/{name}.c is not in LAYERS (tools/check_ext_layers.py): give it a layer")
    rank = {name: i for i, name in enumerate(LAYERS)}
    edges: dict[str, set[str]] = {name: set() for name in table}
    for name, (_, needed) in table.items():
        for sym in sorted(needed):
            callee = definer.get(sym)
            if callee is None:
                if sym.startswith("tsx_"):
                    errors.append(f"src/ext/{name}.c needs {sym}, which no src/ext file defines")
                continue
            edges[name].add(callee)
            if name in rank and callee in rank and rank[callee] >= rank[name]:
                errors.append(
                    f"src/ext/{name}.c calls {sym} of src/ext/{callee}.c, which is not a lower layer"
                )
    print("src/ext call graph (file -> files it calls), bottom to top:")
    for name in sorted(table, key=lambda n: rank.get(n, len(LAYERS))):
        print(f"  {name:14} -> {', '.join(sorted(edges[name], key=lambda n: rank.get(n, 0))) or '-'}")
    return errors


def strip_code(text: str) -> str:
    """Comments and string/char literals blanked out, newlines and offsets kept."""

    def blank(m: re.Match[str]) -> str:
        s = m.group(0)
        if s.startswith(('"', "'")):
            return s[0] + re.sub(r"[^\n]", " ", s[1:-1]) + s[-1]
        return re.sub(r"[^\n]", " ", s)

    pattern = r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'"
    return re.sub(pattern, blank, text, flags=re.S)


def match_back(code: str, close: int, opening: str, closing: str) -> int:
    """Index of the bracket that opens the one at `close`."""
    depth = 0
    for i in range(close, -1, -1):
        if code[i] == closing:
            depth += 1
        elif code[i] == opening:
            depth -= 1
            if depth == 0:
                return i
    return -1


def block_condition(code: str, brace: int) -> str | None:
    """The condition guarding the block that opens at `brace`, or None when it is not a conditional block."""
    before = code[:brace].rstrip()
    if before.endswith("else"):
        # an else block: its if's condition decides it too
        end = before[:-4].rstrip()
        if end.endswith("}"):
            return block_condition(code, match_back(code, len(end) - 1, "{", "}"))
        return None
    if not before.endswith(")"):
        return None
    start = match_back(code, len(before) - 1, "(", ")")
    keyword = code[:start].rstrip()
    if re.search(r"\b(if|while)$", keyword):
        return code[start + 1 : len(before) - 1]
    return None


def conditions_of(code: str, pos: int) -> list[str]:
    """The conditions that decide whether the raise at `pos` runs (innermost block and conditional expression)."""
    found = []
    # the statement's conditional expression: text since the statement began, up to a '?'
    stmt_start = max(code.rfind(";", 0, pos), code.rfind("{", 0, pos), code.rfind("}", 0, pos)) + 1
    statement = code[stmt_start:pos]
    if "?" in statement:
        found.append(statement[: statement.rfind("?")])
    # the innermost enclosing block
    depth = 0
    for i in range(pos, -1, -1):
        if code[i] == "}":
            depth += 1
        elif code[i] == "{":
            if depth == 0:
                condition = block_condition(code, i)
                if condition is not None:
                    found.append(condition)
                break
            depth -= 1
    return found


def engine_variables(function: str) -> set[str]:
    """Variables a function assigns from an engine call (x = ts_...(...), int x = ts_...)."""
    return set(re.findall(r"\b(\w+)\s*=\s*(?:\(\w+\s*\*?\)\s*)?ts_\w+\s*\(", function))


def check_statuses() -> list[str]:
    errors = []
    for source in sorted(EXT.glob("*.c")):
        if source.name == "convert.c":
            continue
        code = strip_code(source.read_text())
        for m in RAISES.finditer(code):
            function_start = code.rfind("\n{\n", 0, m.start())
            assigned = engine_variables(code[function_start : m.start()])
            for condition in conditions_of(code, m.start()):
                names = set(re.findall(r"\b\w+\b", condition))
                why = (
                    "calls an engine function"
                    if ENGINE_CALL.search(condition)
                    else "names an engine status"
                    if ENGINE_STATUS.search(condition)
                    else f"tests {', '.join(sorted(names & assigned))}, an engine result"
                    if names & assigned
                    else None
                )
                if why:
                    line = code.count("\n", 0, m.start()) + 1
                    errors.append(
                        f"src/ext/{source.name}:{line}: {m.group(1)} under a condition that {why}: "
                        "raise engine statuses with tsx_raise/tsx_raise_status (convert.c)"
                    )
                    break
    return errors


def check_direct_raises() -> list[str]:
    errors = []
    for source in sorted([*EXT.glob("*.c"), *EXT.glob("*.h")]):
        if source.name in ("convert.c", "fail.h"):
            continue
        code = strip_code(source.read_text())
        for m in DIRECT_RAISES.finditer(code):
            line = code.count("\n", 0, m.start()) + 1
            errors.append(
                f"src/ext/{source.name}:{line}: {m.group(1)}: raise through tsx_fail (fail.h), or "
                "tsx_raise/tsx_raise_status (convert.c) for an engine status"
            )
    return errors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cc", default=os.environ.get("CC", "cc"))
    args = parser.parse_args()
    errors = check_layers(args.cc) + check_statuses() + check_direct_raises()
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    print(f"check_ext_layers: {len(errors)} violation(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
