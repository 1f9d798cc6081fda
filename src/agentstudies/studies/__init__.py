"""Study drivers: each runs an environment + agent (or a simulation) into validated tables."""
