"""Congestion controls of a TCP flow: one model per ``kind`` with that algorithm's options.

``cca = "cubic"`` is short for ``cca = { kind = "cubic" }``; options go in the table,
``cca = { kind = "prague", rtt_independence = true }``. ``to_core`` gives the core's
``CcaConfig`` (tcp/cc/mod.rs): the same table, ``{"kind": "prague", "rtt_independence":
true}``, whose options are the algorithm's own config struct (``PragueConfig`` in
tcp/cc/prague.rs); unset options are left to the core's (Linux) defaults.

Adding a congestion control is adding one model class with a ``kind`` literal and listing
it in the ``Cca`` union; adding an option is adding one field to its model, named as in
the Rust config struct (``tests/test_contract.py`` compares the two).
"""

from __future__ import annotations

import functools
import operator
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from l4sim.scenario.fields import Flag, Fraction, _Model


class _CcaBase(_Model):
    """A congestion control: its ``kind`` and options; unset options take the core's
    defaults. Written back as just the kind when no option is set."""

    kind: str
    #: The ECN the algorithm forces on its connection whatever the flow's ``ecn`` says
    #: (the core's ``CongestionOps::ecn_needs``, after Linux's ``TCP_CONG_NEEDS_ECN``,
    #: ``TCP_CONG_NEEDS_ACCECN`` and ``TCP_CONG_WANTS_ECT_1``): keys of the flow set to true.
    ecn_needs: ClassVar[tuple[str, ...]] = ()

    def forced_ecn(self) -> tuple[str, ...]:
        """The keys of :attr:`ecn_needs` this instance forces (an option may add some)."""
        return type(self).ecn_needs

    def to_core(self) -> dict[str, Any]:
        """The core's ``CcaConfig`` table: the kind and the options set."""
        return {"kind": self.kind, **self.core_fields()}

    @model_serializer(mode="wrap")
    def _kind_alone(self, handler: SerializerFunctionWrapHandler) -> Any:
        if all(getattr(self, f) is None for f in type(self).model_fields if f != "kind"):
            return self.kind
        return handler(self)


class NewReno(_CcaBase):
    """NewReno (Linux's Reno window rules; RFC 6582 loss recovery)."""

    kind: Literal["newreno"] = "newreno"


class Cubic(_CcaBase):
    """CUBIC (RFC 9438, Linux ``tcp_cubic``): ``hystart`` (Linux's HyStart ends slow start on
    an ACK train or a delay increase), ``linux_alpha`` (Linux's constant Reno-friendly
    alpha 8/15 instead of RFC 9438's switch to 1) and ``initial_cap`` (Linux's 5 % per RTT
    before the first loss); each on by default, as in Linux (``false``: RFC 9438 as
    written). ``fast_convergence`` (RFC 9438 §4.7, Linux's module parameter) is on in both."""

    kind: Literal["cubic"] = "cubic"
    hystart: Flag | None = None
    linux_alpha: Flag | None = None
    initial_cap: Flag | None = None
    fast_convergence: Flag | None = None


class Bic(_CcaBase):
    """BIC (Linux ``tcp_bic``)."""

    kind: Literal["bic"] = "bic"


class Bbr(_CcaBase):
    """BBR v1 (Linux ``tcp_bbr``)."""

    kind: Literal["bbr"] = "bbr"


class Vegas(_CcaBase):
    """Vegas (Linux ``tcp_vegas``)."""

    kind: Literal["vegas"] = "vegas"


class Dctcp(_CcaBase):
    """DCTCP (RFC 8257)."""

    kind: Literal["dctcp"] = "dctcp"
    ecn_needs: ClassVar[tuple[str, ...]] = ("ecn",)  # TCP_CONG_NEEDS_ECN


class Prague(_CcaBase):
    """TCP Prague (L4S): ``rtt_independence`` (L4STeam's RTT independence, 25 ms target;
    default off), ``alpha_mode`` (1: alpha starts at 1, the default; 0: it starts at 0
    and the first CE mark halves the window) and ``ecn_fallback`` (classic-ECN detection:
    0 off, the default; 1 detect an RFC 3168 bottleneck and fall back towards a classic
    response there; 2 detect only). ``tree`` picks the L4STeam tree whose rules apply:
    ``"l4steam-2025"`` (today's, the default) or ``"l4steam-2020"`` (August 2020, as the
    l4s-tests testbed ran: integer cwnd with a carry, RTT independence after 500 rounds, no
    classic-ECN detection)."""

    kind: Literal["prague"] = "prague"
    # TCP_CONG_NEEDS_ECN | TCP_CONG_NEEDS_ACCECN | TCP_CONG_WANTS_ECT_1
    ecn_needs: ClassVar[tuple[str, ...]] = ("ecn", "accecn", "ect1")
    rtt_independence: Flag | None = None
    alpha_mode: Literal[0, 1] | None = None
    ecn_fallback: Literal[0, 1, 2] | None = None
    tree: Literal["l4steam-2020", "l4steam-2025"] | None = None

    @model_validator(mode="after")
    def _tree_has_the_options(self) -> Prague:
        # The core's PragueConfig::validate says the same; here it names the scenario's keys.
        if self.tree == "l4steam-2020" and (self.alpha_mode == 0 or self.ecn_fallback):
            raise ValueError(
                'tree = "l4steam-2020" takes neither alpha_mode = 0 nor ecn_fallback: that '
                "tree's Prague had neither"
            )
        return self


class Bbr3(_CcaBase):
    """BBRv3 (draft-ietf-ccwg-bbr; google/bbr ``v3`` ``tcp_bbr.c``). Unset options take
    that code's constants: ``loss_thresh`` 0.02, ``beta`` 0.3, ``ecn_thresh`` 0.5,
    ``ecn_factor`` 1/3, ``ecn_alpha_gain`` 1/16, ``ecn_reprobe_gain`` 0.5,
    ``inflight_headroom`` 0.15, ``ecn_max_rtt_us`` 5000, ``full_loss_cnt`` 6,
    ``full_ecn_cnt`` 2, ``bw_probe_max_rounds`` 63, ``probe_rtt_win_ms`` 5000.
    ``ecn_low`` (Linux's ``ecn_low`` route feature; default off) makes the flow negotiate
    ECN and act on CE marks while min_rtt ≤ ``ecn_max_rtt_us``; with the flow's
    ``ect1 = true`` its data goes to an L4S queue."""

    kind: Literal["bbr3"] = "bbr3"
    ecn_low: Flag | None = None
    ecn_max_rtt_us: Annotated[int, Field(ge=0, le=4_294_967_295)] | None = None
    ecn_thresh: Fraction | None = None
    ecn_factor: Fraction | None = None
    ecn_alpha_gain: Fraction | None = None
    ecn_reprobe_gain: Fraction | None = None
    loss_thresh: Annotated[float, Field(gt=0.0, lt=1.0, allow_inf_nan=False)] | None = None
    beta: Fraction | None = None
    inflight_headroom: Fraction | None = None
    full_loss_cnt: Annotated[int, Field(ge=0, le=15)] | None = None
    full_ecn_cnt: Annotated[int, Field(ge=0, le=3)] | None = None
    bw_probe_max_rounds: Annotated[int, Field(ge=1, le=255)] | None = None
    probe_rtt_win_ms: Annotated[int, Field(ge=1, le=10_000)] | None = None

    def forced_ecn(self) -> tuple[str, ...]:
        # tcp_bbr.c v3 bbr_init: an ecn_low path uses ECN on every segment.
        return ("ecn",) if self.ecn_low else ()


class External(_CcaBase):
    """No algorithm: an agent sets the window (see ``l4sim.envs``)."""

    kind: Literal["external"] = "external"


CCA_MODELS: tuple[type[_CcaBase], ...] = (
    NewReno,
    Cubic,
    Bic,
    Bbr,
    Vegas,
    Dctcp,
    Prague,
    Bbr3,
    External,
)
"""One model per algorithm, in the core's order (``contract()["cca_kinds"]``); add new ones
here: the kinds, the union and the shorthand follow."""

CCA_KINDS: tuple[str, ...] = tuple(m.model_fields["kind"].default for m in CCA_MODELS)


def _cca_shorthand(v: Any) -> Any:
    """``cca = "cubic"`` means ``cca = { kind = "cubic" }``; any other value that is not a
    table is refused with the kinds allowed."""
    if isinstance(v, str) and v in CCA_KINDS:
        return {"kind": v}
    if isinstance(v, dict | BaseModel):
        return v
    allowed = ", ".join(f"'{k}'" for k in CCA_KINDS[:-1]) + f" or '{CCA_KINDS[-1]}'"
    raise PydanticCustomError("literal_error", "must be one of {expected}", {"expected": allowed})


Cca = Annotated[
    functools.reduce(operator.or_, CCA_MODELS),
    Field(discriminator="kind"),
    BeforeValidator(_cca_shorthand),
]
"""Any congestion control (the union of :data:`CCA_MODELS`)."""
