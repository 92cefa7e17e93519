"""Build step of the mbk Python package: libmbk, built with CMake from the
repository this folder belongs to, goes into mbk/_lib/ (the wheel carries it).

Environment:
  MBK_PREBUILT_LIBRARY  an existing libmbk.so* to package instead of building one
  MBK_SOURCE_DIR        the repository (default: the folder above this one)
  MBK_CMAKE_ARGS        more CMake options, e.g. "-DMBK_NATIVE=OFF"
  MBK_BUILD_JOBS        parallel build jobs (default: the number of CPUs)
"""
import os
import re
import shlex
import shutil
import subprocess

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

try:  # setuptools >= 70.1 has its own
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # pragma: no cover
    from wheel.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.environ.get("MBK_SOURCE_DIR") or os.path.dirname(HERE))


def version():
    path = os.path.join(REPO, "include", "mbk", "version.h")
    with open(path) as f:
        m = re.search(r'#define MBK_VERSION_STRING "([^"]+)"', f.read())
    if not m:
        raise RuntimeError("no MBK_VERSION_STRING in %s" % path)
    return m.group(1)


def build_library(build_temp):
    """Configure and build the shared library; return the path of libmbk.so.N."""
    build_dir = os.path.join(os.path.abspath(build_temp), "cmake")
    args = ["cmake", "-S", REPO, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
            "-DMBK_BUILD_TESTS=OFF", "-DMBK_BUILD_EXAMPLES=OFF", "-DMBK_BUILD_BENCHMARKS=OFF",
            "-DMBK_BUILD_FUZZ=OFF"] + shlex.split(os.environ.get("MBK_CMAKE_ARGS", ""))
    subprocess.check_call(args)
    jobs = os.environ.get("MBK_BUILD_JOBS") or str(os.cpu_count() or 2)
    subprocess.check_call(["cmake", "--build", build_dir, "--target", "mbk", "-j", jobs])
    return os.path.join(build_dir, "libmbk.so")


class BuildPyWithLibrary(build_py):
    """build_py, then libmbk into build_lib/mbk/_lib/ under its SONAME (libmbk.so.N)."""

    def run(self):
        super().run()
        lib = os.environ.get("MBK_PREBUILT_LIBRARY")
        if not lib:
            lib = build_library(self.get_finalized_command("build").build_temp)
        real = os.path.realpath(lib)
        if not os.path.isfile(real):
            raise RuntimeError("libmbk not found at %s" % lib)
        m = re.match(r"(libmbk\.so\.\d+)", os.path.basename(real))
        name = m.group(1) if m else "libmbk.so.0"
        dest = os.path.join(self.build_lib, "mbk", "_lib")
        os.makedirs(dest, exist_ok=True)
        for old in os.listdir(dest):
            os.remove(os.path.join(dest, old))
        shutil.copyfile(real, os.path.join(dest, name))


class BinaryDistribution(Distribution):
    """The package holds a shared library: a platform package (platlib)."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    """The wheel is for one platform, but any Python 3 (ctypes: no extension module)."""

    def get_tag(self):
        _, _, plat = super().get_tag()
        return "py3", "none", plat


setup(version=version(), distclass=BinaryDistribution, cmdclass={"build_py": BuildPyWithLibrary, "bdist_wheel": PlatformWheel})
