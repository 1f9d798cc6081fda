"""Study drivers: one module per study, turning an environment + agent (or a simulation's DGP) into a validated episode table."""
