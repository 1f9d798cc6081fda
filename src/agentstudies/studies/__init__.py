"""Study drivers: environment + agent (or a simulation's DGP) into validated episode tables, with each study's paper values."""

from agentstudies.studies._paper import paper_note, paper_tables, paper_values

__all__ = ["paper_note", "paper_tables", "paper_values"]
