"""Flows: TCP (bulk or sized), UDP constant bit rate, control flows carrying agent
actions, and command flows (an external program pair that only ``l4sim emulate`` runs);
``to_core`` gives config.rs's ``FlowConfig``.

Adding a flow kind is adding one model class with a ``kind`` literal and listing it in the
``Flow`` union and ``FLOW_KINDS``.
"""

from __future__ import annotations

import string
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, Field, ValidationInfo, field_validator, model_validator

from l4sim.scenario import media
from l4sim.scenario.ccas import Cca
from l4sim.scenario.fields import (
    CoreKey,
    Count,
    Many,
    PacketSize,
    PositiveTime,
    Rate,
    Size,
    Time,
    _at_most,
    _Model,
    writes,
)
from l4sim.units import CORE_U32, U32_MAX, format_time

#: Linux's MSS on a 1500-byte MTU: 1448 with the 12-byte timestamp option (the core's
#: default), 1460 without it.
MSS_TIMESTAMPS, MSS_NO_TIMESTAMPS = 1448, 1460
#: IPv4 (20), UDP (8) and RTP (12) header bytes of a media packet (``app::RTP_HEADER_BYTES``).
RTP_HEADER_BYTES = 40


def _delack_shorthand(v: Any) -> Any:
    """``delack = false`` disables delayed ACKs (ACK every segment); ``true`` keeps defaults."""
    if v is False:
        return {"count": 1}
    if v is True:
        return {}
    return v


class Delack(_Model):
    """Delayed ACKs: ACK every ``count``-th full segment or after ``timeout``."""

    count: Count | None = None
    timeout: PositiveTime | None = None

    _core_keys: ClassVar[dict[str, CoreKey]] = {
        "count": "delack_count",
        "timeout": "delack_timeout_ns",
    }


class _FlowBase(_Model):
    if TYPE_CHECKING:
        kind: str  # each flow model's literal

    src: str | None = Field(None, description="Sending node (default: the preset's s_i / h0).")
    dst: str | None = Field(None, description="Receiving node (default: d_i / h1).")
    start: Time = Field("0s", description="When the flow starts.")  # type: ignore[arg-type]
    stop: Time | None = Field(None, description="When a bulk flow stops (default: the end).")
    size: Size | None = Field(
        None, description="Bytes to send; the flow's completion time is measured (default: bulk)."
    )
    count: Many = Field(1, description="Copies of this flow (each its own pair by default).")
    nqb: Annotated[bool, Field(strict=True)] | None = None

    _core_skip: ClassVar[frozenset[str]] = frozenset(
        {"kind", "src", "dst", "start", "stop", "size", "count", "nqb"}
    )

    def to_core(self, src: int, dst: int) -> dict[str, Any]:
        """config.rs's ``FlowConfig`` from node index ``src`` to ``dst``."""
        flow: dict[str, Any] = {"kind": self.kind, "src": src, "dst": dst, "start_ns": self.start}
        if self.stop is not None:
            flow["stop_ns"] = self.stop
        if self.size is not None:
            flow["size_bytes"] = self.size
        if self.nqb:
            flow["nqb"] = True
        return flow | self.core_params()

    def core_params(self) -> dict[str, Any]:
        """The kind's own table: ``{"tcp": ...}`` or ``{"udp": ...}``."""
        raise NotImplementedError


@writes("cca")
def _cca_core(cca: Any) -> dict[str, Any]:
    """The algorithm's kind and its options, as one table (``ccas.py``)."""
    return {"cca": cca.to_core()}


#: Prague's options under their old flat names on the flow, and their names in the table.
_OLD_PRAGUE_KEYS = {
    "prague_rtt_independence": "rtt_independence",
    "prague_alpha_mode": "alpha_mode",
}


@writes(*sorted(Delack.core_names()))
def _delack_core(delack: Delack) -> dict[str, Any]:
    return delack.core_fields()


class TcpFlow(_FlowBase):
    """A TCP flow: bulk unless ``size`` is given. Unset options take the core's Linux
    defaults (mss 1448 B, initial window 10 segments, no initial ssthresh, min RTO 200 ms,
    delayed ACK every 2 segments / 40 ms, SACK and timestamps on, no pacing, …);
    RACK-TLP loss detection (RFC 8985) and Linux's RTO (at least SRTT + min_rto) are on as
    in Linux (``rack = false`` / ``linux_rto = false``: RFC 6675 and RFC 6298, as ns-3),
    ``quickack = false`` turns off the receiver's Linux quick-ACK mode (on by default: the
    first 16 segments, those after an idle RTO or a duplicate, 2 at the first CE and the
    segment carrying CWR are ACKed at once), ``prr_in_cwr = true`` Linux's
    gradual (PRR) reduction after an ECN echo.
    ``init_cwnd`` / ``init_ssthresh`` are in segments. ``cca`` is a kind or a table of the
    algorithm's options (:mod:`l4sim.scenario.ccas`); ``prague_rtt_independence`` and
    ``prague_alpha_mode`` are the old spelling of Prague's options."""

    kind: Literal["tcp"]
    cca: Cca = "newreno"  # type: ignore[assignment]
    ecn: Annotated[bool, Field(strict=True)] = False
    mss: PacketSize | None = None
    header_size: PacketSize | None = None
    init_cwnd: Count | None = None
    init_ssthresh: Annotated[int, Field(ge=2), _at_most(2, U32_MAX, CORE_U32)] | None = None
    min_rto: PositiveTime | None = None
    max_rto: PositiveTime | None = None
    init_rto: PositiveTime | None = None
    delack: Annotated[Delack, BeforeValidator(_delack_shorthand)] | None = None
    dupack_threshold: Count | None = None
    rwnd: Size | None = None
    rmem_max: Size | None = None
    ect1: Annotated[bool, Field(strict=True)] | None = None
    prague_rtt_independence: Annotated[bool, Field(strict=True)] | None = Field(
        None, description="Old spelling of `cca.rtt_independence` (Prague)."
    )
    prague_alpha_mode: Literal[0, 1] | None = Field(
        None, description="Old spelling of `cca.alpha_mode` (Prague)."
    )
    accecn: Annotated[bool, Field(strict=True)] | None = None
    sack: Annotated[bool, Field(strict=True)] | None = None
    rack: Annotated[bool, Field(strict=True)] | None = None
    quickack: Annotated[bool, Field(strict=True)] | None = None
    prr_in_cwr: Annotated[bool, Field(strict=True)] | None = None
    linux_rto: Annotated[bool, Field(strict=True)] | None = None
    timestamps: Annotated[bool, Field(strict=True)] | None = None
    pacing: Annotated[bool, Field(strict=True)] | None = None

    _core_keys: ClassVar[dict[str, CoreKey]] = {
        "cca": _cca_core,
        "header_size": "header_bytes",
        "min_rto": "min_rto_ns",
        "max_rto": "max_rto_ns",
        "init_rto": "init_rto_ns",
        "rwnd": "rwnd_bytes",
        "rmem_max": "rmem_max_bytes",
        "delack": _delack_core,
    }
    _core_skip: ClassVar[frozenset[str]] = _FlowBase._core_skip | set(_OLD_PRAGUE_KEYS)

    @model_validator(mode="after")
    def _rto_order(self) -> TcpFlow:
        """min_rto at most max_rto, with the core's defaults (200 ms, 120 s) for the one not
        given (tcp/config.rs ``TcpConfig::validate``)."""
        lo = self.min_rto if self.min_rto is not None else 200_000_000
        hi = self.max_rto if self.max_rto is not None else 120_000_000_000
        if lo > hi:
            raise ValueError(
                f"min_rto {format_time(lo)!r} is above max_rto {format_time(hi)!r} (defaults "
                "200ms and 120s); give a min_rto at most the max_rto"
            )
        return self

    @model_validator(mode="after")
    def _one_spelling(self) -> TcpFlow:
        """An option in the ``cca`` table and under its old flat name is an error."""
        for key, option in _OLD_PRAGUE_KEYS.items():
            old = getattr(self, key)
            if old is not None and getattr(self.cca, option, None) is not None:
                raise ValueError(
                    f"cca.{option} and {key} are the same option; give it once, as "
                    f"cca.{option} ({key} is its old spelling)"
                )
        return self

    @model_validator(mode="after")
    def _ecn_the_cca_forces(self) -> TcpFlow:
        """The ECN the congestion control forces (Prague: AccECN and ECT(1); DCTCP: ECN)
        is written into the flow, so the resolved scenario says what the flow does; the core
        gets what it would have chosen anyway. An explicit ``accecn`` / ``ect1`` stays."""
        for key in self.cca.forced_ecn():
            if key == "ecn" or getattr(self, key) is None:
                object.__setattr__(self, key, True)
        return self

    def ecn_mode(self) -> str:
        """What the SYN negotiates (l4sim's receiver grants it): ``"accecn"`` (Accurate
        ECN, RFC 9768), ``"ecn"`` (RFC 3168) or ``"off"``."""
        if self.accecn:
            return "accecn"
        return "ecn" if self.ecn else "off"

    @model_validator(mode="after")
    def _fixed_or_autotuned_window(self) -> TcpFlow:
        """A fixed ``rwnd`` turns autotuning off (Linux ``SO_RCVBUF``), so ``rmem_max``,
        autotuning's ceiling, would be ignored: giving both is an error."""
        if self.rwnd is not None and self.rmem_max is not None:
            raise ValueError(
                "rwnd fixes the receive window and turns autotuning off, so rmem_max (its "
                "ceiling) would be ignored; give one of them"
            )
        # RFC 7323 §2.3: windows up to 2^30 bytes; Linux's buffer starts at tcp_rmem[1].
        mss = self.mss or (MSS_NO_TIMESTAMPS if self.timestamps is False else MSS_TIMESTAMPS)
        if self.rwnd is not None and not mss <= self.rwnd <= 1 << 30:
            raise ValueError(
                f"rwnd must be between one segment ({mss} B) and 1 GiB (RFC 7323), "
                f"not {self.rwnd} B"
            )
        if self.rmem_max is not None and not 128 << 10 <= self.rmem_max <= 2 << 30:
            raise ValueError(
                "rmem_max must be between 128 KiB (Linux's initial buffer, tcp_rmem[1]) and "
                f"2 GiB, not {self.rmem_max} B"
            )
        return self

    @model_validator(mode="after")
    def _rack_needs_sack(self) -> TcpFlow:
        """RACK-TLP asked for without SACK is an error (without SACK the core falls back to
        NewReno recovery, so a default ``rack`` is simply not used)."""
        if self.rack is True and self.sack is False:
            raise ValueError(
                "rack = true needs sack = true: RACK-TLP (RFC 8985) finds losses from SACK "
                "blocks; drop rack or set sack = true"
            )
        return self

    def core_params(self) -> dict[str, Any]:
        tcp = self.core_fields()
        if self.cca.kind == "prague":  # the old flat spelling goes into Prague's table
            old = {o: getattr(self, k) for k, o in _OLD_PRAGUE_KEYS.items()}
            tcp["cca"] |= {o: v for o, v in old.items() if v is not None}
        if self.timestamps is False:
            tcp = {"mss": MSS_NO_TIMESTAMPS, "header_bytes": 40} | tcp
        return {"tcp": tcp}


class UdpFlow(_FlowBase):
    """A UDP flow: constant bit rate of ``packet_size``-byte packets (headers included) at
    ``rate`` by default; with a ``source`` table a video model following ``rate`` as its
    target, a frame-size trace or periodic messages, cut into packets of at most
    ``packet_size`` (40 B of IPv4, UDP and RTP headers each); ``feedback`` adds RFC 8888
    reports (or UDP Prague's ACKs) from the receiver, ``cc`` the sender's congestion
    control (``none``, ``udp_prague``; see docs/media.md)."""

    kind: Literal["udp"]
    # Before `rate`, whose check reads it; unset, it is not written back (a plain UDP
    # flow's table reads as before).
    source: media.Source | None = None
    rate: Rate | None = Field(
        None,
        description="CBR rate (under cc udp_prague: its cap), or a video source's target "
        "(under a cc: its first).",
    )
    packet_size: PacketSize = "1500B"  # type: ignore[assignment]
    ecn: Literal["not_ect", "ect0", "ect1", "ce"] = "not_ect"
    feedback: media.Feedback | None = None
    cc: media.Cc | None = None

    _core_keys: ClassVar[dict[str, CoreKey]] = {
        "rate": "rate_bps",
        "packet_size": "packet_bytes",
        "source": media.source_core,
        "feedback": media.feedback_core,
        "cc": media.cc_core,
    }

    @field_validator("rate")
    @classmethod
    def _rate_for_cbr_and_video(cls, rate: int | None, info: ValidationInfo) -> int | None:
        """A CBR or video source needs its ``rate`` (its bitrate); a trace or periodic
        source has none."""
        source = info.data.get("source")
        kind = source.kind if source is not None else "cbr"
        if rate is None and kind in ("cbr", "video"):
            raise ValueError(
                f'required for a {kind} source (its bitrate); give e.g. rate = "2Mbps"'
            )
        if rate is not None and kind not in ("cbr", "video"):
            raise ValueError(
                f"a {kind} source sets its own rate (its frames' sizes and times); drop rate"
            )
        return rate

    @model_validator(mode="after")
    def _media_needs(self) -> UdpFlow:
        """A frame source's packets need room for a payload after their headers; a
        congestion control needs frames to pace and the receiver's feedback to read."""
        kind = self.source.kind if self.source is not None else "cbr"
        if kind != "cbr" and self.packet_size <= RTP_HEADER_BYTES:
            raise ValueError(
                f"packet_size {self.packet_size} B leaves no payload after the "
                f"{RTP_HEADER_BYTES} B of IPv4, UDP and RTP headers of a {kind} source"
            )
        cc = self.cc.kind if self.cc is not None else "none"
        # UDP Prague drives a cbr source too and defaults its feedback (below).
        if cc not in ("none", "udp_prague") and (kind == "cbr" or self.feedback is None):
            raise ValueError(
                f"cc = \"{cc}\" reads the receiver's reports and sets a source's rate: give "
                'the flow a frame source (e.g. source = "video") and feedback = "rfc8888"'
            )
        return self

    @model_validator(mode="after")
    def _ecn_scream_l4s_uses(self) -> UdpFlow:
        """SCReAM in L4S mode sends ECT(1) (its reference's L4S setting); an explicit
        ``ecn`` stays."""
        l4s = self.cc is not None and getattr(self.cc, "mode", None) == "l4s"
        if l4s and "ecn" not in self.model_fields_set:
            object.__setattr__(self, "ecn", "ect1")
        return self

    @model_validator(mode="after")
    def _udp_prague_needs(self) -> UdpFlow:
        """UDP Prague sets ECT(1) on its packets and reads its own ACKs unless told
        otherwise (written into the flow, so the resolved scenario says what it does)."""
        prague_cc = self.cc is not None and self.cc.kind == "udp_prague"
        if not prague_cc:
            if self.feedback is not None and self.feedback.kind == "prague":
                raise ValueError(
                    'feedback "prague" is UDP Prague\'s own ACKs; it needs cc = "udp_prague"'
                )
            return self
        kind = self.source.kind if self.source is not None else "cbr"
        if kind not in ("cbr", "video"):
            raise ValueError(
                f"udp_prague drives a cbr source (bulk) or a video source (frame mode), not a "
                f"{kind} one"
            )
        if "ecn" not in self.model_fields_set:
            object.__setattr__(self, "ecn", "ect1")
        elif self.ecn in ("ect0", "ce"):
            raise ValueError(
                f"udp_prague sends ECT(1) (or not_ect, as after its fallback when the path "
                f"bleaches ECN), not {self.ecn}"
            )
        if self.feedback is None:
            object.__setattr__(self, "feedback", media.PragueAcks())
        return self

    def core_params(self) -> dict[str, Any]:
        udp = self.core_fields()
        cc = udp.get("cc")
        if cc is not None and cc["kind"] == "scream" and "start_rate_bps" not in cc:
            # SCReAM starts at the flow's rate, within its limits.
            lo, hi = cc["min_rate_bps"], cc["max_rate_bps"]
            cc["start_rate_bps"] = min(max(self.rate or lo, lo), hi)
        return {"udp": udp}


def _flow_default_kind(v: Any) -> Any:
    """A flow without ``kind`` is TCP."""
    if isinstance(v, dict) and "kind" not in v:
        return {"kind": "tcp", **v}
    return v


class ControlFlow(_FlowBase):
    """Carries agent actions as packets to its ``dst`` (``kind = "control"``): each action an
    environment sends is one ``packet_size``-byte packet with the given ECN codepoint, so
    queueing and L4S priority on the path decide when it lands (the remote RL-TCP paper's
    control path)."""

    kind: Literal["control"]
    packet_size: PacketSize = "100B"  # type: ignore[assignment]
    ecn: Literal["not_ect", "ect0", "ect1", "ce"] = "not_ect"

    _core_keys: ClassVar[dict[str, CoreKey]] = {"packet_size": "packet_bytes"}

    def core_params(self) -> dict[str, Any]:
        return {"udp": self.core_fields()}


#: The fields a command flow's argv may name (``{dst}``, ...): see :class:`CommandFlow`.
COMMAND_FIELDS = ("src", "dst", "port", "sport", "duration", "out")


def _check_template(argv: list[str], where: str) -> None:
    """Each ``{name}`` in ``argv`` is one of :data:`COMMAND_FIELDS` (``{{`` is a brace)."""
    for i, arg in enumerate(argv):
        try:
            names = [f for _, f, _, _ in string.Formatter().parse(arg) if f is not None]
        except ValueError as e:
            raise ValueError(f"{where}[{i}] {arg!r} is not a valid template: {e}") from None
        for name in names:
            if name not in COMMAND_FIELDS:
                raise ValueError(
                    f"{where}[{i}] {arg!r} names {{{name}}}, which is not one of "
                    + ", ".join(f"{{{f}}}" for f in COMMAND_FIELDS)
                    + " (write {{ and }} for a literal brace)"
                )


class CommandFlow(_FlowBase):
    """An external program pair as a flow (``kind = "command"``), which only ``l4sim
    emulate`` runs: ``receiver`` in the ``dst`` host's namespace from the start of the run,
    ``sender`` in the ``src`` host's from ``start``, both ended (SIGTERM) at ``stop`` or the
    end. Each argument may name ``{src}`` / ``{dst}`` (the hosts' addresses), ``{port}`` /
    ``{sport}`` (the flow's destination and source UDP ports), ``{duration}`` (the seconds
    the sender runs) and ``{out}`` (the output directory). The router counts the UDP
    packets from ``sport`` to ``port`` as the flow's (drops, CE marks, one-way delay);
    the program measures its own rate (docs/emulation.md)."""

    kind: Literal["command"]
    sender: list[str] = Field(min_length=1, description="The sender's argv (templates).")
    receiver: list[str] | None = Field(
        None, description="The receiver's argv (templates); none: nothing runs there."
    )
    port: Annotated[int, Field(ge=1, le=65535)] | None = Field(
        None, description="The flow's destination UDP port (default: 5000 + flow index)."
    )
    sport: Annotated[int, Field(ge=1, le=65535)] | None = Field(
        None, description="The sender's UDP source port (default: port)."
    )

    @model_validator(mode="after")
    def _templates(self) -> CommandFlow:
        """Every argument's fields are known; a program decides how much it sends."""
        if not self.sender[0].strip():
            raise ValueError("sender[0] is empty; give the program to run")
        _check_template(self.sender, "sender")
        if self.receiver is not None:
            if not self.receiver or not self.receiver[0].strip():
                raise ValueError("receiver is empty; give the program to run or leave it out")
            _check_template(self.receiver, "receiver")
        if self.size is not None:
            raise ValueError("size does not apply to a command flow (the program decides)")
        return self

    def core_params(self) -> dict[str, Any]:
        raise ValueError("a command flow runs an external program, which only `l4sim emulate` runs")


Flow = Annotated[
    TcpFlow | UdpFlow | ControlFlow | CommandFlow,
    Field(discriminator="kind"),
    BeforeValidator(_flow_default_kind),
]
FLOW_KINDS: tuple[str, ...] = ("tcp", "udp", "control", "command")
