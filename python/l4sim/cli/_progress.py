"""The long commands' progress bar, readable in a log file too.

On a terminal rich redraws one live line. Written to a file (``nohup ... > log``, a batch
job) rich draws nothing until the command ends, so an hours-long training's log would say
nothing for hours: there :class:`LoggedProgress` also prints the bar's line as plain text
every :data:`LOG_EVERY_S` seconds and when a task ends.
"""

from __future__ import annotations

import math
import time
from typing import Any

from rich.progress import Progress, TaskID

#: How often a progress line goes to a console that is not a terminal.
LOG_EVERY_S = 60.0


class LoggedProgress(Progress):
    """A :class:`rich.progress.Progress` that, on a console that is not a terminal, prints
    its tasks' line at most every ``log_every_s`` seconds and whenever a task finishes."""

    def __init__(self, *columns: Any, log_every_s: float = LOG_EVERY_S, **kwargs: Any) -> None:
        super().__init__(*columns, **kwargs)
        self._log_every_s = log_every_s
        self._logged_at = -math.inf
        self._logged_done: set[TaskID] = set()

    def update(self, task_id: TaskID, **kwargs: Any) -> None:
        super().update(task_id, **kwargs)
        self._log(task_id)

    def advance(self, task_id: TaskID, advance: float = 1) -> None:
        super().advance(task_id, advance)
        self._log(task_id)

    def _log(self, task_id: TaskID) -> None:
        if self.disable or self.console.is_terminal:
            return
        task = self._tasks[task_id]
        ended = task.finished and task_id not in self._logged_done
        now = time.monotonic()
        if not ended and now - self._logged_at < self._log_every_s:
            return
        if ended:
            self._logged_done.add(task_id)
        self._logged_at = now
        self.console.print(self.make_tasks_table([task]), soft_wrap=True)
