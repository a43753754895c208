"""A link direction's DOCSIS 3.1 upstream (``docsis`` / ``docsis_reverse`` on a link): the
cable modem at the near end sends only in the minislots the CMTS grants it, after
requesting them (request-grant with MAP intervals, piggy-backed requests, a service flow's
token bucket, optionally proactive grants). The link's ``rate`` is the channel's rate and
its qdisc the cable modem's queue (docs/links.md). The core's ``net/docsis.rs`` holds the
rules and their sources."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from l4sim.scenario.fields import PositiveTime, Rate, Size, Time, _Model

MAX_DOCSIS_NS = 100 * 10**6
"""Longest MAP interval or MAP lead (config.rs ``net::docsis::MAX_DOCSIS_NS``): 100 ms."""


class Docsis(_Model):
    """Request-grant upstream. Defaults: a 2 ms MAP interval and a 1 ms MAP lead (the
    CableLabs ns-3 docsis model's MAP timing), requests that take the link's delay to
    reach the CMTS, no rate shaping, the MULPI Maximum Traffic Burst of 3044 bytes."""

    map_interval: PositiveTime = Field(  # type: ignore[assignment]
        "2ms", description="MAP interval: grants are given per interval."
    )
    map_lead: Time = Field(  # type: ignore[assignment]
        "1ms",
        description="How long before its interval the CMTS builds a MAP: a request must "
        "reach it by then to be granted in that interval.",
    )
    request_delay: Time | None = Field(
        None, description="From a request's sending to its reaching the CMTS (default: delay)."
    )
    max_sustained_rate: Rate | None = Field(
        None,
        description="Maximum Sustained Traffic Rate of the service flow (default: the channel "
        "rate, no shaping); a docsis_dualq here estimates its delays at it.",
    )
    peak_rate: Rate | None = Field(None, description="Peak Traffic Rate (default: none).")
    max_burst: Size = Field(  # type: ignore[assignment]
        "3044B", description="Maximum Traffic Burst: the token bucket's depth."
    )
    pgs: Size | None = Field(
        None,
        description=(
            "Proactive Grant Service: bytes granted every interval, unasked (with a "
            "docsis_dualq as the modem's queue, to its low-latency service flow only)."
        ),
    )

    @model_validator(mode="after")
    def _bounds(self) -> Docsis:
        for key in ("map_interval", "map_lead"):
            if getattr(self, key) > MAX_DOCSIS_NS:
                raise ValueError(f"docsis {key} is more than 100ms (a sane bound)")
        return self

    def to_core(self) -> dict[str, Any]:
        """config.rs's ``DocsisConfig``."""
        out: dict[str, Any] = {
            "map_interval_ns": self.map_interval,
            "map_lead_ns": self.map_lead,
            "max_burst_bytes": self.max_burst,
            "pgs_bytes": self.pgs or 0,
        }
        for key, core in (
            ("request_delay", "request_delay_ns"),
            ("max_sustained_rate", "max_sustained_rate_bps"),
            ("peak_rate", "peak_rate_bps"),
        ):
            if getattr(self, key) is not None:
                out[core] = getattr(self, key)
        return out
