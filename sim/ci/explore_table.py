"""The table of ``toolcall-sim explore SCENARIO.toml`` over every shipped scenario.

Theory of operation
-------------------
For each shipped scenario (``scenarios/*.toml`` and ``scenarios/explore/*.toml``) and each
variant asked (default ``today`` and ``contract``), one ``toolcall-sim explore FILE
--variant V --json --max-states N`` runs as its own process, one after the other, and
its outcome becomes a cell: refused (the one line it gave, exit 2), exhausted (states
and seconds), or at the cap (states), each with what its expectations came to. The
seconds are the wall clock of that process on the machine that ran it, the only figure
that depends on the machine; the states do not. The table is Markdown on stdout (what
docs/pages/how-to/explore-a-scenario.md holds), and ``--jsonl FILE`` keeps every
run's outcome as a JSON line.

    python -m toolcall_sim.ci.explore_table --max-states 200000 > table.md
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from toolcall_sim.scenarios import SHIPPED_DIR


def scenario_files() -> list[Path]:
    return sorted(SHIPPED_DIR.glob("*.toml")) + sorted((SHIPPED_DIR / "explore").glob("*.toml"))


def explore_one(path: Path, variant: str, max_states: int, out_dir: str) -> dict:
    """One search as its own process: its outcome, and the seconds it took (reported only)."""
    cmd = [sys.executable, "-m", "toolcall_sim", "explore", str(path), "--variant", variant, "--json",
           "--quiet", "--max-states", str(max_states), "--out", out_dir]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    row = {"scenario": path.stem, "variant": variant, "exit": proc.returncode, "seconds": round(seconds, 1)}
    if proc.returncode == 2:
        row["refused"] = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return row
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        row["error"] = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return row
    exp = doc.get("expectations", {})
    row.update(states=doc["states"], exhausted=doc["exhausted"],
               violations=exp.get("violations", []), residual_risks=exp.get("residual_risks", []),
               expectations=("none" if not exp.get("expected") else "MISMATCH" if exp.get("mismatches")
                             else "not decided" if exp.get("undecided") else "met"),
               mismatches=exp.get("mismatches", []))
    return row


def cell(row: dict) -> str:
    if "refused" in row:
        why = row["refused"].split(".toml: ", 1)[-1].replace(" (toolcall-sim explore cannot honour it)", "")
        return f"refused: {why.replace('|', '/')}"
    if "error" in row:
        return f"error: {row['error']}"
    found = ", ".join(row["violations"] + row["residual_risks"]) or "none"
    where = (f"exhausted, {row['states']:,} states, {row['seconds']} s" if row["exhausted"]
             else f"at the cap, {row['states']:,} states")
    return f"{where}; found: {found}; expectations {row['expectations']}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-states", type=int, default=200_000)
    parser.add_argument("--variants", default="today,contract")
    parser.add_argument("--only", default=None, help="comma-separated scenario names (file stems)")
    parser.add_argument("--jsonl", default=None, help="also write each run's outcome here, one JSON line each")
    args = parser.parse_args(argv)
    variants = args.variants.split(",")
    files = scenario_files()
    if args.only:
        files = [f for f in files if f.stem in args.only.split(",")]
    rows = []
    sink = open(args.jsonl, "a") if args.jsonl else None
    with tempfile.TemporaryDirectory() as out_dir:
        for path in files:
            for variant in variants:
                row = explore_one(path, variant, args.max_states, out_dir)
                rows.append(row)
                if sink:
                    sink.write(json.dumps(row) + "\n")
                    sink.flush()
    print(f"| scenario | {' | '.join(variants)} |")
    print("|---|" + "---|" * len(variants))
    by = {(r["scenario"], r["variant"]): r for r in rows}
    for path in files:
        print(f"| `{path.stem}` | " + " | ".join(cell(by[(path.stem, v)]) for v in variants) + " |")
    print()
    for v in variants:
        mine = [r for r in rows if r["variant"] == v]
        print(f"- {v}: {sum(1 for r in mine if r.get('exhausted'))} exhausted, "
              f"{sum(1 for r in mine if 'states' in r and not r['exhausted'])} at the cap of {args.max_states:,} "
              f"states, {sum(1 for r in mine if 'refused' in r)} refused, "
              f"{sum(1 for r in mine if r.get('expectations') == 'MISMATCH')} with an expectation mismatch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
