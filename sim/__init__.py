"""The simulated world: the only place where time passes and chance is consulted."""
