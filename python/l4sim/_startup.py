"""Imported first by the package: for the ``l4sim`` command only, a stop signal while the
package imports is one line and an exit code, not a traceback of the import
(:func:`l4sim.processes.quiet_while_importing`)."""

from l4sim.processes import quiet_while_importing

quiet_while_importing()
