"""ALFWorld on the real engine: generated problems, env wrapper, clones, frontier checks."""
