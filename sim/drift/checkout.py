"""A coder/coder checkout as ``toolcall-sim drift`` reads it: its Go files now, or at a commit.

Theory of operation
-------------------
Rule 1. A checkout is a folder with a ``go.mod`` naming the module
        ``github.com/coder/coder`` (any major version suffix) and at least one of the
        modelled packages (``PACKAGES``). Anything else is bad input, said in one line
        (``BadFlag``, exit 2) before a file is parsed.
Rule 2. The files read are the non-test ``.go`` files of the modelled packages (a package
        is its folder; ``coderd/x/chatd`` with every subfolder, the others without theirs)
        plus any other file the manifest cites. Each is parsed by sim/drift/goparse.py;
        the first file that does not parse stops the run with its file and line (exit 2).
Rule 3. Git is asked only what it is asked for: whether the folder is the top of a work
        tree, its ``HEAD``, whether a commit is there, the modelled files at a commit
        (``git ls-tree``) and a file's bytes at a commit (``git show COMMIT:PATH``). The working tree's files are read from the disk, so
        uncommitted edits count. A checkout that is no git work tree still works for
        everything but ``--since`` and the diffs (which need the verified commit's text).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from toolcall_sim.drift.goparse import GoFile, parse
from toolcall_sim.world.inputs import BadFlag

# The modelled packages (issue 38): the agent, its SDK and chatd with its subpackages.
PACKAGES = ("agent/agenttoolcall", "agent/agentproc", "agent/agentfiles", "codersdk/workspacesdk", "coderd/x/chatd")
RECURSIVE = ("coderd/x/chatd",)
_MODULE = re.compile(r"^module\s+github\.com/coder/coder(/v\d+)?\s*$", re.M)


def package_of(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def modelled(path: str) -> bool:
    """Rule 2: a non-test Go file of a modelled package."""
    if not path.endswith(".go") or path.endswith("_test.go"):
        return False
    pkg = package_of(path)
    return pkg in PACKAGES or any(pkg.startswith(r + "/") for r in RECURSIVE)


@dataclass
class Snapshot:
    """The parsed files of one side of a comparison, by path."""

    files: dict[str, GoFile] = field(default_factory=dict)

    def find(self, package: str, name: str) -> list[GoFile]:
        """The files of ``package`` declaring ``name`` (in path order)."""
        return [f for p, f in sorted(self.files.items()) if package_of(p) == package and name in f.symbols]

    def locate(self, path: str, name: str) -> GoFile | None:
        """The file declaring ``name``: ``path`` itself, else the first other file of its package."""
        here = self.files.get(path)
        if here is not None and name in here.symbols:
            return here
        elsewhere = self.find(package_of(path), name)
        return elsewhere[0] if elsewhere else None


class Checkout:
    """Rule 1 and 3: a checked coder/coder folder."""

    def __init__(self, path: str):
        root = Path(path)
        is_dir, mod = False, None
        try:
            is_dir = root.is_dir()
            mod = (root / "go.mod").read_text(encoding="utf-8", errors="replace") if is_dir else None
        except (OSError, ValueError):  # unreadable, or a path the file system cannot look up
            pass
        if not is_dir:
            raise BadFlag(f"--coder {path!r}: not a folder")
        if mod is None or not _MODULE.search(mod):
            raise BadFlag(f"--coder {path}: not a coder/coder checkout (no go.mod naming module github.com/coder/coder)")
        if not any((root / p).is_dir() for p in PACKAGES):
            raise BadFlag(f"--coder {path}: a coder/coder checkout without any modelled package ({', '.join(PACKAGES)})")
        self.root = root
        self.path = path
        top = self._git("rev-parse", "--show-toplevel")
        self.git = top is not None and Path(top.strip()).resolve() == root.resolve()

    # -- git (Rule 3) --------------------------------------------------------------
    def _git(self, *args: str, binary: bool = False):
        try:
            done = subprocess.run(["git", "-C", str(self.root), *args], capture_output=True, check=False, timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if done.returncode != 0:
            return None
        return done.stdout if binary else done.stdout.decode("utf-8", "replace")

    def head(self) -> str | None:
        out = self._git("rev-parse", "HEAD") if self.git else None
        return out.strip() if out else None

    def resolve(self, commit: str) -> str | None:
        """The full hash of ``commit`` if it is a commit of this checkout."""
        if not self.git or not commit or commit.startswith("-"):
            return None
        out = self._git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}")
        return out.strip() if out else None

    def show(self, commit: str, path: str) -> bytes | None:
        return self._git("show", f"{commit}:{path}", binary=True)

    # -- files (Rule 2) ------------------------------------------------------------
    def paths(self, commit: str | None = None) -> list[str]:
        """The modelled files now (on disk) or at ``commit``."""
        if commit is None:
            found = []
            for pkg in PACKAGES:
                base = self.root / pkg
                if not base.is_dir():
                    continue
                pattern = "**/*.go" if pkg in RECURSIVE else "*.go"
                found += [p.relative_to(self.root).as_posix() for p in base.glob(pattern) if p.is_file()]
            return sorted(p for p in found if modelled(p))
        out = self._git("ls-tree", "-r", "--name-only", commit, "--", *PACKAGES) or ""
        return sorted(p for p in out.splitlines() if modelled(p))

    def read(self, path: str, commit: str | None = None) -> bytes | None:
        if commit is not None:
            return self.show(commit, path)
        try:
            return (self.root / path).read_bytes()
        except OSError:
            return None

    def snapshot(self, extra: tuple[str, ...] = (), commit: str | None = None) -> Snapshot:
        """Rule 2: every modelled file and each of ``extra`` that exists, parsed."""
        snap = Snapshot()
        for path in sorted(set(self.paths(commit)) | set(extra)):
            source = self.read(path, commit)
            if source is not None:
                snap.files[path] = parse(path, source)
        return snap
