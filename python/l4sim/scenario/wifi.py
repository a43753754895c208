"""A Wi-Fi BSS on a dumbbell's receiver side (``[topology.wifi]``, docs/links.md "Wi-Fi"):
r1 is the access point, each receiver d_i a station; the links r1—d_i share one channel
through the 802.11 EDCA MAC (``crates/l4sim-core/src/net/wifi``), which holds the rules
and their sources."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from l4sim.scenario.fields import PositiveTime, Probability, _Model
from l4sim.scenario.qdiscs import FqCodel, Qdisc

MAX_STATIONS = 127
"""Most stations in one BSS (``net::wifi::bss::MAX_STATIONS``)."""

# Data subcarriers per channel width (N_SD) and bits per subcarrier x coding rate of each
# MCS, for the links' nominal rates (what route summaries report; the MAC's airtime comes
# from the core's ``phy.rs``, which cites the standard's tables).
_SUBCARRIERS = {"n": {20: 52, 40: 108}, "ac": {20: 52, 40: 108, 80: 234, 160: 468}}
_SUBCARRIERS["ax"] = {20: 234, 40: 468, 80: 980, 160: 1960}
_BITS = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 4.5, 5.0, 6.0, 20 / 3, 7.5, 25 / 3)
_MAX_MCS = {"n": 7, "ac": 9, "ax": 11}
_SYMBOL_S = {"n": 4e-6, "ac": 4e-6, "ax": 13.6e-6}


def mac80211_fq_codel() -> FqCodel:
    """Linux mac80211's per-station queue: FQ with CoDel on each flow, CoDel target 20 ms
    and interval 100 ms with ECN (``net/mac80211/sta_info.c``, ``sta->cparams``), quantum
    300 bytes, 8192 packets and 4096 flows (``include/net/fq_impl.h`` ``fq_init``,
    ``net/mac80211/tx.c`` ``ieee80211_txq_setup_flows``)."""
    return FqCodel.model_validate(
        {"target": "20ms", "interval": "100ms", "ecn": True, "quantum": "300B", "limit": "8192p"}
        | {"flows": 4096}
    )


class WifiStation(_Model):
    """One station: its MCS and spatial streams (both directions), and the probability
    that an MPDU to or from it is received in error."""

    mcs: Annotated[int, Field(ge=0, le=11)]
    nss: Annotated[int, Field(ge=1, le=8)] = 1
    fer: Probability = 0.0


class Wifi(_Model):
    """The BSS: 802.11n/ac/ax at ``width`` MHz in the 5 GHz band, EDCA with the access
    category's parameters (best effort: AIFSN 3, CW 15..1023, 802.11-2020 Table 9-155),
    A-MPDU with Block Acks, the AP's per-station ``qdisc`` served by airtime fairness
    (mac80211)."""

    standard: Literal["n", "ac", "ax"] = "ac"
    width: Literal[20, 40, 80, 160] | None = Field(
        None, description="Channel width in MHz (default 80; 40 for 802.11n)."
    )
    mcs: Annotated[int, Field(ge=0, le=11)] = Field(
        9, description="Every station's MCS, unless stations gives each its own."
    )
    stations: list[WifiStation] | None = Field(
        None, description="One entry per receiver d_i (default: all at mcs, one stream)."
    )
    ac: Literal["bk", "be", "vi", "vo"] = Field(
        "be",
        description="The access category of every frame, with its default EDCA parameters "
        "(802.11-2020 Table 9-155).",
    )
    aggregation: bool = Field(True, description="A-MPDU with Block Acks; off: one MPDU each.")
    max_mpdus: Annotated[int, Field(ge=1, le=1024)] = Field(
        64, description="Most MPDUs per A-MPDU (the Block Ack window)."
    )
    retry_limit: Annotated[int, Field(ge=1, le=255)] = Field(
        7, description="Transmission attempts per frame (dot11ShortRetryLimit)."
    )
    airtime_fairness: bool = Field(
        True, description="The AP serves its stations by airtime deficit (mac80211); off: turns."
    )
    rts_threshold: Annotated[int, Field(ge=0, le=2**32 - 1)] | None = Field(
        None,
        description="dot11RTSThreshold in bytes: a PSDU (an MPDU or an A-MPDU) longer than "
        "this is preceded by RTS/CTS at the basic rate (802.11-2020 10.3.2.9); unset: RTS "
        "off, mac80211's default.",
    )
    driver_queue: Annotated[int, Field(ge=0, le=65536)] = Field(
        0,
        description="Frames the AP's driver (hardware or firmware queue) takes ahead of the "
        "MAC per station; 0: none, the MAC takes from the station's queue at each access.",
    )
    aql: bool = Field(
        True,
        description="mac80211's Airtime Queue Limits on what the driver takes (on by "
        "default in Linux, for drivers that report airtime); binds with a driver_queue.",
    )
    aql_txq_limit_low: PositiveTime = Field(  # type: ignore[assignment]
        "5ms",
        description="AQL: airtime a station may always have pending in the driver "
        "(IEEE80211_DEFAULT_AQL_TXQ_LIMIT_L).",
    )
    aql_txq_limit_high: PositiveTime = Field(  # type: ignore[assignment]
        "12ms",
        description="AQL: a station's limit while the interface is under aql_threshold "
        "(IEEE80211_DEFAULT_AQL_TXQ_LIMIT_H).",
    )
    aql_threshold: PositiveTime = Field(  # type: ignore[assignment]
        "24ms",
        description="AQL: the interface's pending airtime under which stations may use "
        "the high limit (IEEE80211_AQL_THRESHOLD).",
    )
    qdisc: Qdisc = Field(
        default_factory=mac80211_fq_codel,
        description="Each station's queue, at the AP and at the station (default: "
        "mac80211's FQ-CoDel, target 20 ms).",
    )

    @property
    def width_mhz(self) -> int:
        return self.width or (40 if self.standard == "n" else 80)

    @model_validator(mode="after")
    def _modes(self) -> Wifi:
        if self.width_mhz not in _SUBCARRIERS[self.standard]:
            raise ValueError(f"802.11{self.standard} has no {self.width_mhz} MHz channel")
        if self.aql_txq_limit_high < self.aql_txq_limit_low:
            raise ValueError("wifi aql_txq_limit_high must be at least aql_txq_limit_low")
        us = (self.aql_txq_limit_low, self.aql_txq_limit_high, self.aql_threshold)
        if any(v % 1000 or v // 1000 > 2**32 - 1 for v in us):
            raise ValueError("wifi AQL limits are whole microseconds, at most 2^32 - 1 us")
        for i, s in enumerate(self.station_list(1)):
            if s.mcs > _MAX_MCS[self.standard]:
                raise ValueError(
                    f"wifi station {i}: MCS {s.mcs} does not exist in 802.11{self.standard} "
                    f"(0..{_MAX_MCS[self.standard]})"
                )
        return self

    def station_list(self, n: int) -> list[WifiStation]:
        """The stations of a BSS with ``n`` receivers."""
        return self.stations if self.stations is not None else [WifiStation(mcs=self.mcs)] * n

    def check_stations(self, n: int) -> None:
        if self.stations is not None and len(self.stations) != n:
            raise ValueError(
                f"wifi.stations has {len(self.stations)} entries but there are {n} "
                "receivers; give one station per receiver"
            )
        if n > MAX_STATIONS:
            raise ValueError(f"{n} Wi-Fi stations: at most {MAX_STATIONS} per BSS")

    def rate_bps(self, s: WifiStation) -> int:
        """A station's PHY data rate (the link's nominal rate)."""
        bits = _SUBCARRIERS[self.standard][self.width_mhz] * _BITS[s.mcs] * s.nss
        return max(1, int(bits / _SYMBOL_S[self.standard]))

    def to_core(self, links: list[int]) -> dict[str, Any]:
        """config.rs's ``WifiLinkConfig`` over the link indices ``links`` (AP first)."""
        stations = [
            {"mcs": s.mcs, "nss": s.nss, "fer": s.fer} for s in self.station_list(len(links))
        ]
        bss = {
            "standard": self.standard,
            "width_mhz": self.width_mhz,
            "ac": self.ac,
            "aggregation": self.aggregation,
            "ampdu": {"max_mpdus": self.max_mpdus},
            "retry_limit": self.retry_limit,
            "airtime_fairness": self.airtime_fairness,
            "driver_queue": self.driver_queue,
            # Only when set, so a BSS without it keeps the core configuration it had.
            **({"rts_threshold": self.rts_threshold} if self.rts_threshold is not None else {}),
            "aql": {
                "enabled": self.aql,
                "txq_limit_low_us": self.aql_txq_limit_low // 1000,
                "txq_limit_high_us": self.aql_txq_limit_high // 1000,
                "threshold_us": self.aql_threshold // 1000,
            },
            "stations": stations,
        }
        return {"bss": bss, "links": links}
