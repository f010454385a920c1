"""PEP 517 build backend for foxhunt (pyproject.toml): configures the CMake project in
build-wheel/ beside this checkout (git-ignored), builds the `python` target (the extension and
the package files in build-wheel/python/foxhunt) and zips that folder into a wheel. Standard
library only, so `pip install .` works without network. CMake options can be added through the
environment: FOXHUNT_CMAKE_ARGS="-DFXT_CUDA=OFF"."""

from __future__ import annotations

import base64
import hashlib
import os
import shlex
import subprocess
import sys
import sysconfig
import zipfile

NAME = "foxhunt"
VERSION = "0.1.0"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _tag() -> str:
    impl = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{impl}-{impl}-{platform}"


def _metadata() -> str:
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n"
            "Summary: Limit-order-book research: snapshot stores, features, models and backtests\n"
            "Requires-Dist: numpy\nRequires-Dist: pandas\n")


def _build_tree() -> str:
    build = os.path.join(ROOT, "build-wheel")
    args = ["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DFXT_PYTHON=ON",
            "-DFXT_BENCH=OFF", f"-DPython3_EXECUTABLE={sys.executable}"]
    args += shlex.split(os.environ.get("FOXHUNT_CMAKE_ARGS", ""))
    subprocess.run(args, check=True, stdout=sys.stderr)
    jobs = str(os.cpu_count() or 2)
    subprocess.run(["cmake", "--build", build, "--target", "python", "-j", jobs], check=True,
                   stdout=sys.stderr)
    return os.path.join(build, "python", NAME)


def _record_line(arcname: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist_info = os.path.join(metadata_directory, f"{NAME}-{VERSION}.dist-info")
    os.makedirs(dist_info, exist_ok=True)
    with open(os.path.join(dist_info, "METADATA"), "w") as f:
        f.write(_metadata())
    return os.path.basename(dist_info)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    package = _build_tree()
    wheel_name = f"{NAME}-{VERSION}-{_tag()}.whl"
    dist_info = f"{NAME}-{VERSION}.dist-info"
    records = []
    path = os.path.join(wheel_directory, wheel_name)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as whl:
        def add(arcname: str, data: bytes) -> None:
            whl.writestr(arcname, data)
            records.append(_record_line(arcname, data))

        for name in sorted(os.listdir(package)):
            full = os.path.join(package, name)
            if os.path.isfile(full) and (name.endswith(".py") or name.endswith(".so")):
                with open(full, "rb") as f:
                    add(f"{NAME}/{name}", f.read())
        add(f"{dist_info}/METADATA", _metadata().encode())
        add(f"{dist_info}/WHEEL", (f"Wheel-Version: 1.0\nGenerator: foxhunt_build\n"
                                   f"Root-Is-Purelib: false\nTag: {_tag()}\n").encode())
        record = "\n".join(records + [f"{dist_info}/RECORD,,"]) + "\n"
        whl.writestr(f"{dist_info}/RECORD", record)
    return wheel_name
