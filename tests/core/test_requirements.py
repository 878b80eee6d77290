"""The requirement files (what scripts/dev.py installs) and pyproject.toml's dependency lists (what
`pip install .[gpu,dev]` installs) name the same packages with the same version ranges."""

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def normalised(lines: list[str]) -> set[str]:
    return {str(Requirement(line)) for line in lines}


def file_requirements(name: str) -> tuple[list[str], set[str]]:
    """(the files it includes with -r, its requirements), comments and blank lines left out."""
    includes, requirements = [], []
    for raw in (ROOT / name).read_text(encoding="utf-8").splitlines():
        line = raw.split(" #")[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-r "):
            includes.append(line[3:].strip())
        else:
            requirements.append(line)
    return includes, normalised(requirements)


@pytest.mark.parametrize(
    "name,declared",
    [
        ("requirements.txt", PROJECT["dependencies"]),
        ("requirements-gpu.txt", PROJECT["optional-dependencies"]["gpu"]),
        ("requirements-dev.txt", PROJECT["optional-dependencies"]["dev"]),
    ],
)
def test_requirement_files_match_pyproject(name, declared):
    includes, requirements = file_requirements(name)
    assert requirements == normalised(declared), f"{name} and pyproject.toml differ"
    assert includes == ([] if name == "requirements.txt" else ["requirements.txt"])
