"""The papers beside the book's own numbers, one job per module:

==========================================  ==================================================
:mod:`agentstudies.book.paper.map`          the paper-quantity map: paper item -> chapter,
                                            builder, artifact, paper CSV
:mod:`agentstudies.book.paper.compare`      our table beside the paper's (beside_paper,
                                            stack_paper, compare_tables, results-index rows)
:mod:`agentstudies.book.paper.runs`         archived paper-profile runs (``python -m
                                            agentstudies.book.paper.runs archive NAME``)
==========================================  ==================================================

Importing this package imports none of them.
"""

__all__: list[str] = []
