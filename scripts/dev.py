#!/usr/bin/env python3
"""Set up a local virtual environment (.venv) and run the app or the tests in it.

    python3 scripts/dev.py app  [streamlit options]   # requirements.txt, then `streamlit run app.py`
    python3 scripts/dev.py serve [--workers N --port P] # a class: N workers, Redis, nginx (scripts/serve.py)
    python3 scripts/dev.py test [pytest options]      # requirements-dev.txt, then `pytest` on every core
    python3 scripts/dev.py test --all [options]       # ... with the browser tours (tests marked tour)
    python3 scripts/dev.py run CMD [ARGS]             # requirements-dev.txt, then CMD inside .venv
    python3 scripts/dev.py setup                      # requirements-dev.txt only
    options before the command:
      --gpu        also install requirements-gpu.txt (cupy-cuda12x, for CUDA 12 drivers)
      --gpu=13     the same with cupy-cuda13x (CUDA 13 drivers)
      --reinstall  run pip even if the requirements did not change

On Windows: `py scripts\\dev.py app`. Standard library only; runs on the system Python (3.11 or
newer), which it never installs into (PEP 668). pip runs only when the requirement files (or the
options) changed since the last set-up: a hash of them is kept in .venv/dev-stamp.json.

torch (a test-only reference) is pinned to its CPU build. On Linux x86_64 that build is on
PyTorch's own index, https://download.pytorch.org/whl/cpu; this script adds that index only after a
quick check that it answers, because pip retries an unreachable index for every package it looks up.
If torch cannot be installed the rest is installed and the PyTorch parity tests skip with the reason
(in CI, CI=true, that is an error instead).
"""

import sys

if sys.version_info < (3, 11):  # noqa: UP036 (Python 3.6-3.10 parse this file and stop here)
    sys.exit(
        "Conv Explorer needs Python 3.11 or newer; "
        f"this is Python {sys.version.split()[0]} ({sys.executable}).\n"
        "Ubuntu 22.04 ships 3.10: install python3.11 and python3.11-venv (sudo apt install python3.11 "
        "python3.11-venv) and run this script with python3.11 instead of python3."
    )

import hashlib
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
WINDOWS = os.name == "nt"
BIN = VENV / ("Scripts" if WINDOWS else "bin")
PY = BIN / ("python.exe" if WINDOWS else "python")
STAMP = VENV / "dev-stamp.json"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
# A mirror of it can stand in: CONV_EXPLORER_TORCH_INDEX=URL.
TORCH_CPU_INDEX = (
    os.environ.get("CONV_EXPLORER_TORCH_INDEX", "").rstrip("/") or "https://download.pytorch.org/whl/cpu"
)
USAGE = __doc__.split("\n\n")[1]


def say(msg: str) -> None:
    print(f"[dev] {msg}", file=sys.stderr, flush=True)


def fail(msg: str) -> None:
    sys.exit(f"[dev] error: {msg}")


# ---------------------------------------------------------------- the virtual environment


def venv_works() -> bool:
    if not PY.exists():
        return False
    probe = subprocess.run(
        [str(PY), "-c", "import sys, pip; assert sys.version_info >= (3, 11)"], capture_output=True
    )
    return probe.returncode == 0


def create_venv() -> None:
    if importlib.util.find_spec("venv") is None or importlib.util.find_spec("ensurepip") is None:
        fail(
            f"this Python ({sys.executable}) cannot create virtual environments: its venv/ensurepip module "
            "is missing. On Debian / Ubuntu: sudo apt install python3-venv"
        )
    if VENV.exists():
        say(f"{VENV} is incomplete or was made by a Python that is gone; recreating it")
        shutil.rmtree(VENV)
    say(f"creating {VENV.relative_to(ROOT)} with Python {platform.python_version()} ({sys.executable})")
    made = subprocess.run([sys.executable, "-m", "venv", str(VENV)])
    if made.returncode != 0 or not venv_works():
        shutil.rmtree(VENV, ignore_errors=True)
        fail(
            "could not create the virtual environment (see above). "
            "On Debian / Ubuntu: sudo apt install python3-venv"
        )


# ---------------------------------------------------------------- what to install, and whether it changed


def closure(name: str, seen: dict[str, bytes]) -> None:
    """Read a requirement file and the files it includes with -r / -c."""
    if name in seen:
        return
    data = (ROOT / name).read_bytes()
    seen[name] = data
    for line in data.decode().splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] in ("-r", "--requirement", "-c", "--constraint"):
            closure(parts[1], seen)


def gpu_lines(flavour: str) -> str:
    """requirements-gpu.txt without its -r lines; for CUDA 13 drivers cupy-cuda13x, not cupy-cuda12x."""
    lines = [ln for ln in (ROOT / "requirements-gpu.txt").read_text().splitlines() if not ln.startswith("-r")]
    if flavour == "13":
        lines = ["cupy-cuda13x>=13.6" if ln.startswith("cupy-cuda12x") else ln for ln in lines]
    return "\n".join(lines) + "\n"


def without_torch(name: str) -> str:
    """A requirement file without its torch lines, its -r paths made absolute (the copy lives in .venv)."""
    lines = []
    for ln in (ROOT / name).read_text().splitlines():
        if ln.startswith("-r "):
            ln = f"-r {ROOT / ln[3:].strip()}"
        if not ln.startswith("torch"):
            lines.append(ln)
    return "\n".join(lines) + "\n"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def load_stamp() -> dict:
    try:
        return json.loads(STAMP.read_text())
    except (OSError, ValueError):
        return {}


def torch_index_answers() -> bool:
    """Whether PyTorch's CPU wheel index answers (proxies from the environment apply), in at most ~5 s."""
    t0 = time.monotonic()
    try:
        urllib.request.urlopen(TORCH_CPU_INDEX + "/", timeout=5).close()
        ok = True
    except urllib.error.HTTPError:
        ok = True  # the server answered
    except (OSError, ValueError):
        ok = False
    say(f"{TORCH_CPU_INDEX} {'answers' if ok else 'does not answer'} ({time.monotonic() - t0:.1f} s)")
    return ok


def pip_install(req_files: list[Path], extra: list[str]) -> int:
    cmd = [str(PY), "-m", "pip", "install", "--disable-pip-version-check"]
    for f in req_files:
        cmd += ["-r", str(f)]
    env = {**os.environ, "PIP_USER": "0", "PIP_REQUIRE_VIRTUALENV": "0"}
    return subprocess.run(cmd + extra, cwd=ROOT, env=env).returncode


def ensure(profile: str, gpu: str, reinstall: bool) -> None:
    """Create .venv if needed and install the profile's requirements if they changed since last time."""
    top = "requirements.txt" if profile == "app" else "requirements-dev.txt"
    files: dict[str, bytes] = {}
    closure(top, files)
    want = {name: digest(data) for name, data in files.items()}
    if gpu:
        want[f"requirements-gpu.txt[cuda{gpu}]"] = digest(gpu_lines(gpu).encode())

    stamp = load_stamp() if PY.exists() else {}
    have = stamp.get("files", {})
    if not reinstall and all(have.get(k) == v for k, v in want.items()):
        if profile != "app" and stamp.get("torch_missing"):
            say(
                f"torch is not installed ({stamp['torch_missing']}); the parity tests skip. "
                "--reinstall tries again"
            )
        return

    t0 = time.monotonic()
    if not venv_works():
        create_venv()
        stamp, have = {}, {}
    say(f"installing {top}{' + GPU' if gpu else ''} into .venv (first run, or the requirements changed)")

    # Generated files (GPU flavour, the no-torch fallback) live inside .venv, out of git's way.
    req = [ROOT / top]
    if gpu:
        gpu_file = VENV / "requirements-gpu.generated.txt"
        gpu_file.write_text(gpu_lines(gpu))
        req.append(gpu_file)
        other = "cupy-cuda12x" if gpu == "13" else "cupy-cuda13x"
        subprocess.run([str(PY), "-m", "pip", "uninstall", "-q", "-y", other], capture_output=True)

    extra: list[str] = []
    needs_torch_index = profile != "app" and sys.platform == "linux" and platform.machine() == "x86_64"
    if needs_torch_index and torch_index_answers():
        extra = ["--extra-index-url", TORCH_CPU_INDEX]

    torch_missing = ""
    if pip_install(req, extra) != 0:
        if profile == "app":
            fail("pip could not install the requirements (see above)")
        torch_missing = (
            f"pip found no torch CPU build: {TORCH_CPU_INDEX} did not answer and pip's own sources have none"
            if needs_torch_index and not extra
            else "pip could not install it"
        )
        if IN_CI:
            fail(f"CI needs torch for the parity tests, and {torch_missing} (see above)")
        say(f"{torch_missing}; installing the rest without torch (the PyTorch parity tests will skip)")
        fallback = VENV / "requirements-dev.no-torch.txt"
        fallback.write_text(without_torch(top))
        if pip_install([fallback, *req[1:]], []) != 0:
            fail("pip could not install the requirements (see above)")

    # Everything named in `want` is now installed; what an earlier set-up installed stays valid too,
    # except the other CuPy flavour, which was just uninstalled.
    if gpu:
        have = {k: v for k, v in have.items() if not k.startswith("requirements-gpu.txt[")}
    new = {"files": {**have, **want}}
    if profile != "app":
        new["torch_missing"] = torch_missing
    elif stamp.get("torch_missing"):
        new["torch_missing"] = stamp["torch_missing"]
    STAMP.write_text(json.dumps(new, indent=1))
    say(f"set-up done in {time.monotonic() - t0:.1f} s")


# ---------------------------------------------------------------- running things inside .venv


def run_in_venv(cmd: list[str]) -> None:
    env = {**os.environ, "VIRTUAL_ENV": str(VENV), "PATH": str(BIN) + os.pathsep + os.environ.get("PATH", "")}
    env.pop("PYTHONHOME", None)
    exe = shutil.which(cmd[0], path=env["PATH"]) or cmd[0]
    os.chdir(ROOT)
    if WINDOWS:  # no real exec on Windows: wait for the child and pass its exit code on
        try:
            sys.exit(subprocess.run([exe, *cmd[1:]], env=env).returncode)
        except KeyboardInterrupt:
            sys.exit(130)
    try:
        os.execve(exe, [cmd[0], *cmd[1:]], env)  # the tool replaces this process (signals go straight to it)
    except OSError as exc:
        fail(f"cannot run {cmd[0]}: {exc}")


def parallel(args: list[str]) -> list[str]:
    """pytest-xdist options, unless the caller chose (-n, -p no:xdist): one worker per core, up to
    four; each group of browser tests stays in one worker (tests/conftest.py groups them)."""
    chose = any(a == "-n" or a.startswith(("-n", "--numprocesses")) or "xdist" in a for a in args)
    workers = min(4, os.cpu_count() or 1)
    return [] if chose or workers < 2 else ["-n", str(workers), "--dist", "loadgroup"]


def tiers(args: list[str]) -> list[str]:
    """The quick suite leaves out the browser tours (tests marked tour: every page's controls,
    hover and animations in Chromium, two thirds of the browser time), unless `--all` asks for
    them or the caller chose with -m."""
    if "--all" in args:
        return [a for a in args if a != "--all"]
    if any(a.startswith("-m") for a in args):
        return args
    return ["-m", "not tour", *args]


def main(argv: list[str]) -> None:
    gpu, reinstall = "", False
    while argv and argv[0].startswith("-"):
        opt = argv.pop(0)
        if opt in ("--gpu", "--gpu=12"):
            gpu = "12"
        elif opt == "--gpu=13":
            gpu = "13"
        elif opt == "--reinstall":
            reinstall = True
        elif opt in ("--help", "-h"):
            print(USAGE)
            return
        else:
            fail(f"unknown option {opt}\n{USAGE}")
    if not argv or argv[0] not in ("app", "serve", "test", "run", "setup"):
        fail(f"say what to do\n{USAGE}")
    what, args = argv[0], argv[1:]
    if what == "run" and not args:
        fail("`run` needs a command, e.g. `python3 scripts/dev.py run ruff check .`")

    ensure("app" if what in ("app", "serve") else "dev", gpu, reinstall)
    if what == "app":
        run_in_venv(["python", "-m", "streamlit", "run", "app.py", *args])
    elif what == "serve":
        run_in_venv(["python", "scripts/serve.py", *args])
    elif what == "test":
        args = tiers(args)
        run_in_venv(["python", "-m", "pytest", *parallel(args), *args])
    elif what == "run":
        run_in_venv(args)


if __name__ == "__main__":
    main(sys.argv[1:])
