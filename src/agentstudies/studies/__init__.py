"""Study drivers: environment + agents (or a simulation DGP) into validated episode tables."""
