"""What CI runs: check and its suites, the planted-bug table, design comparison, sweeps and the bench."""
