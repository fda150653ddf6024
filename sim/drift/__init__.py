"""``toolcall-sim drift`` (issue 38): keep the model true as coder/coder's Go code moves.

Theory of operation
-------------------
docs/drift-manifest.toml says, for every rule of docs/contract.md, which Go declarations of
coder/coder it follows and a digest of each at the commit it was last verified against
(sim/drift/manifest.py). ``drift --coder PATH`` parses the Go files of a checkout with
tree-sitter (sim/drift/goparse.py; the checkout: sim/drift/checkout.py), compares every
cited declaration with its digest, finds what is new in the modelled packages, and names
for each changed rule what covers it in this project (sim/drift/compare.py). This is I/O
about Go source, so it lives in sim/, never in model/.
"""
