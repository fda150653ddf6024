"""Scenario files (TOML) that read like stories; see scenarios/README.md."""
