"""Simulation studies of the SASST paper (Xu et al., 2026, Section 3 and Appendix D).

Each module builds one study's data-generating process on top of the engine in
:mod:`agentstudies.sasst` (never a fork of it) and runs its trials through
:func:`agentstudies.parallel.seeded_map`, one ``SeedSequence`` child per trial, so every
table is the same for any ``n_jobs``.
"""
