"""The five statuses of a SASST slot and how a slot gets one (public).

:data:`CONFIRMED`, :data:`NOT_CONFIRMED`, :data:`FAILED_DISCOVERY`,
:data:`FAILED_FEASIBILITY`, :data:`ABSTAINED` (all in :data:`STATUSES`, the order the
paper lists them); :func:`slot_status` decides a slot's status from discovery and
confirmation feasibility, stability and support (SASST Table 3 / App. C.5);
:func:`recommendation` gives the audit / control recommendation of a status (Section 5);
:data:`TIE_RULES` are the ways a :class:`~agentstudies.sasst.Slot` breaks ties between
equally scored rules.
Definitions in :mod:`agentstudies.sasst._slots`.
"""

from agentstudies.sasst._slots import (
    ABSTAINED,
    CONFIRMED,
    FAILED_DISCOVERY,
    FAILED_FEASIBILITY,
    NOT_CONFIRMED,
    STATUSES,
    TIE_RULES,
    recommendation,
    slot_status,
)

__all__ = ["STATUSES", "CONFIRMED", "NOT_CONFIRMED", "FAILED_DISCOVERY", "FAILED_FEASIBILITY", "ABSTAINED",
           "slot_status", "recommendation", "TIE_RULES"]
