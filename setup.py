"""The build: every module of ``model/`` compiled to C by Cython, beside its source.

Theory of operation
-------------------
The model is plain Python and stays so: the same files run as source or compiled, and a
test (tests/test_native.py) checks that both give the same traces, verdicts and state
counts. Cython compiles each module as it is (no type declarations, annotations ignored),
which saves the interpreter's dispatch and attribute lookups on the hot paths of the
explorer and the simulated world (issue 14; the figures are in docs/performance.md,
"The model compiled").

Rule 1. ``pip install -e .`` (or any build of the package) compiles ``model/**/*.py`` but
        the packages' ``__init__.py`` files, in parallel on every core, at ``-O2``
        without debug information. The generated C is mostly calls into the Python
        runtime, so the level hardly matters (the default world's first 8,000 states:
        2.30 G instructions at ``-O1``, 2.27 G at ``-O2``, 2.24 G at ``-O3``, by
        cachegrind), while Python's own ``-O3 -g`` takes about twice as long to build
        (``model/explore_context.c``: 19.7 s, against 10.8 s at ``-O2 -g0``, in one
        run). The whole build took 74 s on the idle 2-core machine.
Rule 2. Beside the compiled modules the build writes ``model/_native.json``: each
        module's name and the SHA-256 of the source it was compiled from.
        ``model/__init__.py`` loads a compiled module only while its source still has
        that digest, so an edited module runs as the source it now is, never as a stale
        binary (run ``pip install -e .`` again to compile it).
Rule 3. ``TOOLCALL_SIM_PURE=1`` (any value but empty or ``0``) at build time builds no
        extension (a machine without a C compiler, or a quick install); at run time it
        makes ``model/__init__.py`` load every module from source.
Rule 4. A build never fails for want of the compiler: a module that does not compile
        (no C compiler, no Python headers) is left out with setuptools' warning, and
        without Cython (a build without pip's isolation) nothing is compiled; what is not
        compiled runs from source, as under Rule 3.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent
PACKAGE = "model"
MANIFEST = "_native.json"
FLAGS = ["-O2", "-g0"]  # Rule 1


def _sources() -> list[pathlib.Path]:
    return sorted(p for p in (ROOT / PACKAGE).rglob("*.py") if p.name != "__init__.py")


def _module(path: pathlib.Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _extensions() -> list:
    if os.environ.get("TOOLCALL_SIM_PURE", "") not in ("", "0"):
        return []  # Rule 3
    try:
        from Cython.Build import cythonize
    except ImportError:  # built without pip's build isolation, where Cython is missing
        print("toolcall-sim: Cython is not installed: model/ is installed as source only", file=sys.stderr)
        return []
    from setuptools import Extension

    extensions = [Extension(_module(p), [str(p.relative_to(ROOT))], extra_compile_args=FLAGS) for p in _sources()]
    compiled = cythonize(
        extensions,
        language_level=3,
        quiet=True,
        nthreads=os.cpu_count() or 1,
        # Annotations are the source's documentation, not C types: a compiled module must
        # accept what its source accepts. Keyword arguments and introspection
        # (inspect.signature, used by tests) keep working as in the source.
        compiler_directives={"annotation_typing": False, "binding": True, "always_allow_keywords": True},
        build_dir=str(ROOT / "build" / "cython"),
    )
    for extension in compiled:
        # A module that fails to compile is left out, to run from source (Rule 4).
        # (Set here: cythonize makes Extensions of its own, without it.)
        extension.optional = True
    return compiled


class BuildNative(build_ext):
    """``build_ext`` on every core, writing Rule 2's manifest beside the modules it built."""

    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None:
            self.parallel = os.cpu_count() or 1

    def run(self):
        super().run()
        if not self.extensions:
            return
        digests = {}
        for ext in self.extensions:
            if not os.path.exists(self.get_ext_fullpath(ext.name)):
                continue  # it failed to compile (Rule 4)
            source = ROOT / ext.name.replace(".", "/")
            digests[ext.name] = hashlib.sha256(source.with_suffix(".py").read_bytes()).hexdigest()
        # In place (an editable install) the modules sit beside their sources; otherwise
        # in the build tree that becomes the wheel.
        where = ROOT if self.inplace else pathlib.Path(self.build_lib)
        target = where / PACKAGE / MANIFEST
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")

    def get_outputs(self):
        outputs = super().get_outputs()
        if self.extensions and not self.inplace:
            outputs.append(str(pathlib.Path(self.build_lib) / PACKAGE / MANIFEST))
        return outputs


setup(ext_modules=_extensions(), cmdclass={"build_ext": BuildNative})
