# SPDX-License-Identifier: MIT
"""The package as a user gets it: mypy --strict over the package and the examples, a wheel
and an sdist built without network (Debian's python3-build), the wheel installed into a
fresh venv and imported there, and doc/PYTHON.md documenting every public name."""

from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
import zipfile

from harness import REPO, SDK_SRC

import roost

SDK = os.path.join(REPO, "sdk", "python")


def test_mypy_strict_package_and_examples() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", os.path.join(SDK, "src", "roost"),
         os.path.join(REPO, "examples", "python")],
        env=dict(os.environ, MYPYPATH=SDK_SRC), capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_wheel_and_sdist_build_and_install(tmp_dir: str) -> None:
    dist = os.path.join(tmp_dir, "dist")
    out = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", dist, SDK],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    wheels = glob.glob(os.path.join(dist, "roost-*.whl"))
    sdists = glob.glob(os.path.join(dist, "roost-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1
    names = zipfile.ZipFile(wheels[0]).namelist()
    assert "roost/py.typed" in names and "roost/_agent.py" in names
    meta = [n for n in names if n.endswith("METADATA")][0]
    text = zipfile.ZipFile(wheels[0]).read(meta).decode()
    assert "Requires-Dist: httpx" in text and "Requires-Dist: cryptography" in text
    assert "Requires-Python: >=3.9" in text
    # pip install into a fresh venv (the dependencies from the system's site-packages).
    venv = os.path.join(tmp_dir, "venv")
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv], check=True)
    py = os.path.join(venv, "bin", "python")
    subprocess.run([py, "-m", "pip", "install", "--no-index", "--no-deps", "-q", wheels[0]],
                   check=True)
    got = subprocess.run([py, "-c", "import roost, os; print(roost.__version__, "
                          "os.path.dirname(roost.__file__))"],
                         capture_output=True, text=True, check=True, cwd=tmp_dir).stdout.split()
    assert got[0] == roost.__version__ and got[1].startswith(venv)


def test_every_public_name_is_documented() -> None:
    with open(os.path.join(REPO, "doc", "PYTHON.md")) as f:
        doc = f.read()
    missing = [n for n in roost.__all__ if not re.search(r"`(roost\.)?%s\b" % re.escape(n), doc)]
    assert not missing, f"doc/PYTHON.md does not document {missing}"
    # And every public method of the clients and the agent.
    for cls in (roost.Client, roost.AsyncClient, roost.Agent):
        for name in dir(cls):
            if not name.startswith("_") and callable(getattr(cls, name)):
                assert re.search(r"\b%s\(" % re.escape(name), doc), \
                    f"doc/PYTHON.md does not document {cls.__name__}.{name}()"
