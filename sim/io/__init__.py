"""Reading a user's input files and writing outputs safely, signals, progress: what every layer uses."""
