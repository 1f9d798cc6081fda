"""The "Bring your own Inspect logs" chapter (``inspect_logs``): its findings live in
:mod:`~agentstudies.studies.inspect.findings`; the log reader itself is
:mod:`agentstudies.episodes` (a reader of user data, outside the studies).
"""

from agentstudies.studies.inspect.findings import IDLE_WORKFLOW, log_findings, passk_drop_by_task

__all__ = ["IDLE_WORKFLOW", "log_findings", "passk_drop_by_task"]
