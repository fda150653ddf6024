"""Drivers that run many worlds: the swarm, the parallel explorer, the Hypothesis search, the minimizer and counterexamples."""
