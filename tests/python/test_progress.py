"""Progress lines of long measurements: on a terminal's stderr only, blanked at the end, never anywhere else.

Each test runs a child Python whose stderr is a pseudo-terminal (or a pipe) and reads what it wrote. Nothing here
depends on how fast the machine is: measure_latency's blocks add up to at least ``min_run_time`` by construction
(2 s, past the first second after which the line appears), and a single long call (a profile, a child command)
waits until the test has seen its line on the terminal, then ends.
"""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import textwrap

import pytest

from torchscan import _engine
from torchscan._progress import stderr_fd

CLEAR_TAIL = b"\r"  # a blanking ends the output: "\r", spaces over the line, "\r"


def _env(**changes: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TORCHSCAN_PROGRESS", "NO_COLOR")}
    env["TERM"] = "xterm"
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def _run(code: str, *, terminal: bool = True, until: bytes | None = None, then=None, env=None):
    """Runs ``code`` in a child Python with stderr on a terminal (or a pipe); returns (stderr, stdout, status).
    When ``until`` shows up on stderr, ``then(process)`` is called once."""
    env = _env() if env is None else env
    if terminal:
        controller, stderr = pty.openpty()
    else:
        controller, stderr = os.pipe()
    process = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE, stderr=stderr, env=env
    )
    os.close(stderr)
    data = b""
    fired = until is None
    try:
        while True:
            ready, _, _ = select.select([controller], [], [], 120)
            assert ready, f"the child wrote nothing for 2 minutes: {data[-300:]!r}"
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # EIO: the terminal's other side closed, everything read
                break
            if not chunk:
                break
            data += chunk
            if not fired and until in data:
                fired = True
                then(process)
        out = process.stdout.read()
        status = process.wait(timeout=120)
    finally:
        os.close(controller)
        if process.poll() is None:
            process.kill()
            process.wait()
    return data, out, status


def _lines(data: bytes) -> list[str]:
    """The texts the progress line showed, in order (without the blanking spaces)."""
    return [part.decode().rstrip() for part in data.split(b"\r") if part.strip()]


def _assert_blanked(data: bytes) -> None:
    """The output ends with the line blanked: "\r", as many spaces as the last text shown, "\r"."""
    assert data.endswith(CLEAR_TAIL)
    blank = data[: -len(CLEAR_TAIL)].rsplit(b"\r", 1)[1]
    assert blank.strip() == b"" and len(blank) == len(_lines(data)[-1])


LATENCY = """
    import torch
    from torchscan import measure_latency
    x = torch.ones(16)
    report = measure_latency(lambda: x + 1, device="cpu", min_run_time=2.0)
    print("latency", report["totals"]["latency"]["status"])
"""


def test_a_long_measure_latency_shows_its_progress_on_a_terminal_and_blanks_it():
    data, out, status = _run(LATENCY)
    assert status == 0 and out == b"latency complete\n"  # stdout holds the program's own output only
    lines = _lines(data)
    assert lines, data
    assert all(line.startswith("torchscan: measure_latency: ") for line in lines), lines
    assert any("blocks (at least 5)" in line and "of 2.00 s timed" in line for line in lines), lines
    _assert_blanked(data)


@pytest.mark.parametrize(
    "env, terminal",
    [
        (None, False),  # a pipe
        (_env(TORCHSCAN_PROGRESS="0"), True),
        (_env(TORCHSCAN_PROGRESS="off"), True),
        (_env(TERM="dumb"), True),
    ],
    ids=["pipe", "TORCHSCAN_PROGRESS=0", "TORCHSCAN_PROGRESS=off", "TERM=dumb"],
)
def test_no_progress_on_a_pipe_or_when_turned_off(env, terminal):
    data, out, status = _run(LATENCY, terminal=terminal, env=env)
    assert status == 0 and out == b"latency complete\n"
    assert data == b""


def test_progress_is_fine_with_no_color():
    data, _, status = _run(LATENCY, env=_env(NO_COLOR="1"))
    assert status == 0 and _lines(data) and b"\x1b" not in data  # no escape sequence, ever


WAITING_WORKLOAD = """
    import os, time
    import torch
    flag = os.environ["TS_FLAG"]

    def workload():
        deadline = time.monotonic() + 100
        while not os.path.exists(flag) and time.monotonic() < deadline:
            time.sleep(0.01)
        return torch.ones(4) * 2
"""


def _create(path):
    def then(process):
        with open(path, "w"):
            pass

    return then


def test_a_long_profile_pass_shows_its_progress(tmp_path):
    flag = tmp_path / "seen"
    code = WAITING_WORKLOAD + """
    from torchscan import profile_workload
    profile_workload(workload, device="cpu")
    print("profiled")
    """
    data, out, status = _run(
        code, until=b"profile_workload: profiling one call", then=_create(flag), env=_env(TS_FLAG=str(flag))
    )
    assert status == 0 and out == b"profiled\n"
    assert _lines(data)[0].startswith("torchscan: profile_workload: profiling one call, 1.")  # after a second
    _assert_blanked(data)


def test_measure_workload_shows_its_stage_not_the_inner_pass(tmp_path):
    flag = tmp_path / "seen"
    code = WAITING_WORKLOAD + """
    from torchscan import measure_workload
    measure_workload(workload, device="cpu", metrics=(), profile=True, print_summary=False)
    print("measured")
    """
    data, out, status = _run(
        code, until=b"measure_workload: profile pass", then=_create(flag), env=_env(TS_FLAG=str(flag))
    )
    assert status == 0 and out == b"measured\n"
    assert {line.split(",")[0] for line in _lines(data)} == {"torchscan: measure_workload: profile pass"}
    _assert_blanked(data)


def test_a_long_child_command_shows_its_progress(tmp_path):
    flag = tmp_path / "seen"
    child = f"import os, time\nwhile not os.path.exists({str(flag)!r}): time.sleep(0.01)\nprint('child out')"
    code = f"""
    import sys
    from torchscan.process import measure_peak_rss
    result = measure_peak_rss([sys.executable, "-c", {child!r}])
    print(result["status"])
    """
    data, out, status = _run(code, until=b"measure_peak_rss: command running", then=_create(flag))
    # the child's own output is its own (inherited stdout): no progress text in it
    assert status == 0 and out == b"child out\ncomplete\n"
    assert _lines(data)[0].startswith("torchscan: measure_peak_rss: command running, 1.")
    _assert_blanked(data)


def test_ctrl_c_still_interrupts_while_the_line_is_drawn():
    # The drawing thread blocks every signal: SIGINT reaches the thread waiting on the child.
    code = """
    from torchscan.process import measure_peak_rss
    try:
        measure_peak_rss(["sleep", "60"])
    except KeyboardInterrupt:
        print("interrupted")
    """
    data, out, status = _run(code, until=b"command running", then=lambda process: process.send_signal(signal.SIGINT))
    assert status == 0 and out == b"interrupted\n"
    _assert_blanked(data)


def test_the_engine_draws_only_on_a_terminal():
    read_end, write_end = os.pipe()
    try:
        assert _engine.progress_start("x", write_end) is None  # a pipe: silent, whatever the caller says
        assert _engine.progress_start("x", -1) is None
    finally:
        os.close(read_end)
        os.close(write_end)
    controller, terminal = pty.openpty()
    try:
        handle = _engine.progress_start("x", terminal)
        assert handle is not None
        assert _engine.progress_start("y", terminal) is None  # one line at a time
        _engine.progress_stop(handle)
        _engine.progress_stop(handle)  # twice is harmless
        again = _engine.progress_start("y", terminal)  # the line is free again
        assert again is not None
        _engine.progress_stop(again)
    finally:
        os.close(terminal)
        os.close(controller)


def test_stderr_captured_by_pytest_is_not_a_terminal():
    assert stderr_fd() == -1
