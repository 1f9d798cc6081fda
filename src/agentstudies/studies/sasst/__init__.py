"""The SASST studies (Xu et al., 2026), one public module per chapter or job:

=====================================================  ================================================
:mod:`~agentstudies.studies.sasst.calibration`         Tables 4-5 and Study A4 (chapter ``sasst_calibration``)
:mod:`~agentstudies.studies.sasst.small_clusters`      Tables 6-8 (chapter ``sasst_small_clusters``)
:mod:`~agentstudies.studies.sasst.geometry`            Tables 9-10, Study B (chapter ``sasst_geometry``)
:mod:`~agentstudies.studies.sasst.geometry_audit`      the geometry audit of Study B
:mod:`~agentstudies.studies.sasst.feasibility`         Table 11 (chapter ``sasst_feasibility``)
:mod:`~agentstudies.studies.sasst.real_features`       Study D, Table 12 (chapter ``sasst_real_features``)
:mod:`~agentstudies.studies.sasst.tables`              the paper-table results of Tables 6-11
:mod:`~agentstudies.studies.sasst.findings`            findings of the simulation chapters
:mod:`~agentstudies.studies.sasst.sentences`           the chapters' "What this run shows" sentences
=====================================================  ================================================

Notebooks import a module (``from agentstudies.studies.sasst import feasibility as fz``);
importing this package imports none of them.
"""

__all__: list[str] = []
