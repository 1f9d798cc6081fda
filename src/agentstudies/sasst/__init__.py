"""Selection-Aware Semantic Stress Testing (SASST; Xu et al., 2026).

Choose a task-reweighting rule from pre-execution features on discovery clusters,
freeze it, and confirm the same paired workflow comparison on separate clusters with
support checks (density, ESS, radius), stability, joint one-sided bounds and five
statuses. Entry point: :class:`SASST` (``SASST(plan, slots, families).run(episodes,
features)``, or ``discover`` then :func:`preregister` then ``confirm``).

This package exports what a user calls (16 names): the engine and its results
(:class:`SASST`, :class:`Discovery`, :class:`SASSTReport`), the design
(:class:`ComparisonPlan`, :class:`Slot`, :data:`SELECTED`), the data
(:class:`ClusterData`, :func:`cluster_data`, :func:`split_clusters`, :data:`DISCOVERY`,
:data:`CONFIRMATION`), pre-registration (:func:`preregister`, :class:`Preregistration`,
:class:`PreregistrationError`), :data:`STATUSES` and :class:`SharedWork` (work several engine calls
on the same clusters share, the ``shared=`` argument). The rest is in public submodules:

rules       rules, rule families, rule scores, stability of top-weighted sets
geometry    geometries, radius calibration, support and feature-shift screens
planning    power and coverage planning of a user's own design
statuses    the five statuses, how a slot gets one, recommendations
plots       the chapters' figures
"""

from agentstudies.sasst._data import CONFIRMATION, DISCOVERY, ClusterData, cluster_data, split_clusters
from agentstudies.sasst._engine import SASST
from agentstudies.sasst._report import SASSTReport
from agentstudies.sasst._results import Discovery
from agentstudies.sasst._plan import SELECTED, ComparisonPlan
from agentstudies.sasst._prereg import Preregistration, PreregistrationError, preregister
from agentstudies.sasst._shared import SharedWork
from agentstudies.sasst._slots import STATUSES, Slot

__all__ = [
    "SASST", "Discovery", "SASSTReport",
    "ComparisonPlan", "Slot", "SELECTED",
    "ClusterData", "cluster_data", "split_clusters", "DISCOVERY", "CONFIRMATION",
    "preregister", "Preregistration", "PreregistrationError",
    "STATUSES", "SharedWork",
]
