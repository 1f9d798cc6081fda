"""Study drivers: one module per study, turning an environment + agent (or a simulation's DGP) into a validated episode table."""

from agentstudies.studies._paper import paper_note, paper_tables, paper_values

__all__ = ["paper_note", "paper_tables", "paper_values"]
