"""One world: a scenario file loaded and checked, the simulation that runs it, its stories and traces."""
