"""What ``toolcall-sim drift`` prints, and check's drift section (issue 38).

Theory of operation
-------------------
sim/drift/compare.py ``compare`` gives plain values; this module only renders them. The
text: a heading line with the counts, one line per rule that follows Go code (its status
and its files), under it each declaration that changed, moved or is gone (where it now
is), under each changed one its unified diff (or why there is none) and under each rule whose code
changed, moved or is gone what covers it (compare.py Rule 5); then the new items, the unverified symbols, the rules with no
code and the unmapped ones by ID. ``drift_markdown`` is check's small section: the counts
and the rules whose code changed, moved or is gone. Nothing here reads a clock.
"""

from __future__ import annotations

from toolcall_sim.reports.json_text import json_text


def counts_line(result: dict) -> str:
    r, n = result["counts"]["rules"], result["counts"]["new"]
    return (f"rules: {r['unchanged']} unchanged, {r['changed']} changed, {r['moved']} moved, {r['gone']} gone, "
            f"{r['unverified']} unverified, {r['unmapped']} unmapped, {r['no code']} follow no Go code; "
            f"new items: {n}")


def _symbol_text(s: dict) -> str:
    if s["status"] in ("moved", "changed") and s.get("from"):
        return f"{s['symbol']} -> now {s['now']}"
    if s.get("renamed_to"):
        return f"{s['symbol']} (renamed to {s['renamed_to']}?)"
    return s["symbol"]


def format_drift(result: dict, manifest: str, checkout: str, head: str | None) -> str:
    base = f"--since {result['since']}" if result["since"] else manifest
    lines = [f"drift of {checkout} ({'HEAD ' + head[:12] if head else 'not a git work tree'}) against {base}",
             counts_line(result), ""]
    symbols = result["symbols"]
    for r in result["rules"]:
        if "symbols" not in r:
            continue
        files = sorted({k.split(":", 1)[0] for k in r["symbols"]})
        unverified = sum(1 for k in r["symbols"] if symbols[k]["status"] == "unverified")
        lines.append(f"  {r['rule']:<11} {r['status']:<10} {len(r['symbols'])} declaration(s)"
                     + (f" ({unverified} unverified)" if unverified else "") + " in " + ", ".join(files))
        for k in r["symbols"]:
            s = symbols[k]
            if s["status"] in ("unchanged", "unverified"):
                continue
            lines.append(f"      {s['status']:<9} {_symbol_text(s)}")
            if s["status"] == "changed":
                if s.get("diff"):
                    lines += ["        " + d for d in s["diff"].splitlines()]
                elif s.get("no_diff"):
                    lines.append(f"        no diff: {s['no_diff']}")
        if "covered_by" in r:
            lines.append("      covered by: " + _coverage_text(r["covered_by"]))
    if result["new"]:
        lines += ["", f"new in the modelled packages, cited by no rule ({len(result['new'])}):"]
        lines += [f"  {x['file']}: {x['item']}" for x in result["new"]]
    unverified = [s for s in symbols.values() if s["status"] == "unverified"]
    if unverified:
        lines += ["", f"unverified (no digest to compare; never counted as a change) ({len(unverified)}):"]
        lines += [f"  {s['symbol']}" + (f" (now at {s['now']})" if s["now"] else "") + f": {s['reason']}"
                  for s in unverified]
    if result["not_inventoried"]:
        lines += ["", f"{len(result['not_inventoried'])} file(s) of the modelled packages the manifest has not "
                      "inventoried (drift --update records them): " + ", ".join(result["not_inventoried"][:8])
                  + (" ..." if len(result["not_inventoried"]) > 8 else "")]
    unmapped = [r["rule"] for r in result["rules"] if r["status"] == "unmapped"]
    if unmapped:
        lines += ["", "unmapped (follow Go code no entry names yet; the manifest says why): " + ", ".join(unmapped)]
    none = [r["rule"] for r in result["rules"] if r["status"] == "no code"]
    if none:
        lines += ["", f"follow no Go code ({len(none)}): " + ", ".join(none)]
    lines += ["", "changed: exit 1" if result["changed"] else "nothing changed: exit 0"]
    return "\n".join(lines) + "\n"


def _coverage_text(c: dict) -> str:
    parts = [f"{name} {', '.join(c[key])}" for key, name in
             (("probes", "probes"), ("tests", "tests"), ("scenarios", "scenarios"), ("go_tests", "Go tests"))
             if c[key]]
    return "; ".join(parts) or "nothing in this repository cites it"


def drift_json(result: dict) -> str:
    return json_text(result)


def drift_summary(result: dict) -> dict:
    """check's part of report.json: the counts and the rules whose code changed, moved or is gone."""
    return {"counts": result["counts"], "changed": result["changed"], "since": result["since"],
            "rules": [{"rule": r["rule"], "status": r["status"], "symbols": r.get("symbols", [])}
                      for r in result["rules"] if r["status"] in ("gone", "changed", "moved")],
            "new": result["new"]}


def drift_markdown(summary: dict) -> list[str]:
    """check's ``## Go drift`` section (``--coder PATH``): small, the details are drift's."""
    out = ["## Go drift", "", counts_line(summary) + ".", ""]
    if summary["rules"]:
        out += ["| rule | status | Go declarations |", "|---|---|---|"]
        out += [f"| {r['rule']} | {r['status']} | " + ", ".join(f"`{s}`" for s in r["symbols"]) + " |"
                for r in summary["rules"]]
    if summary["new"]:
        out += ["", "New, cited by no rule: " + ", ".join(f"`{x['item']}` ({x['file']})" for x in summary["new"]) + "."]
    if not summary["changed"]:
        out.append("No modelled rule's Go code changed.")
    out += ["", "`toolcall-sim drift --coder PATH` shows the diffs and what covers each rule "
                "(informational here: check's verdict is its own)."]
    return out


def updated(path: str, manifest, commit: str) -> str:
    """``drift --update``'s one line: what it recorded, and where."""
    rules = sum("follows" in e for e in manifest.rules.values())
    return f"{path}: {len(manifest.symbols)} declarations of {rules} rules and {len(manifest.files)} files recorded " \
           f"at {commit[:12]}\n"
