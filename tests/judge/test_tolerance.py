"""Below the gate's tolerance, or a hole (kgit/judge/tolerance.py), on the memory schema's CSV."""

from __future__ import annotations

from kgit.judge.tolerance import below_tolerance

HEADER = "label,M,N,Check,Forward GB/s,out_snr,dx_snr,dw_snr\n"


def _csv(*rows: str) -> bytes:
    return (HEADER + "".join(f"{row}\n" for row in rows)).encode()


REFERENCE = _csv("a,4,300,PASS,1.0,144.0,141.2,141.0", "b,2,1000,PASS,1.0,143.0,140.0,139.0")


def test_an_eps_sized_change_is_below_tolerance() -> None:
    # `+ eps` -> `- eps`: about 1e-6 relative (120 dB), 24 dB under the kernel's own fp32 error.
    eps = _csv("a,4,300,PASS,1.0,120.1,141.2,141.0", "b,2,1000,PASS,1.0,119.5,140.0,139.0")
    assert below_tolerance(eps, REFERENCE) is True
    # A bf16 kernel (52 dB of rounding) hides a change of its own size.
    bf16 = _csv("a,4,300,PASS,1.0,52.0,50.0,50.0")
    assert below_tolerance(_csv("a,4,300,PASS,1.0,49.0,50.0,50.0"), bf16) is True


def test_a_pass_that_loses_much_more_is_a_hole() -> None:
    # An off-by-one read moving a mean by 0.2%: the harness's fp32 threshold passes it.
    off_by_one = _csv("a,4,300,PASS,1.0,54.0,141.2,141.0", "b,2,1000,PASS,1.0,143.0,140.0,139.0")
    assert below_tolerance(off_by_one, REFERENCE) is False
    # 1e-4 relative (80 dB): what an fp32 gate at rtol 1e-4 would just pass; more than 1e-5.
    assert below_tolerance(_csv("a,4,300,PASS,1.0,80.0,141.2,141.0"), REFERENCE) is False
    assert below_tolerance(_csv("a,4,300,FAIL,nan,nan,nan,nan"), REFERENCE) is False


def test_nothing_to_compare_says_so() -> None:
    eps = _csv("a,4,300,PASS,1.0,125.1,141.2,141.0")
    assert below_tolerance(eps, None) is None
    assert below_tolerance(eps, _csv("other,1,1,PASS,1.0,144.0,141.0,141.0")) is None
    no_snr = b"label,Check,Forward GB/s\na,PASS,1.0\n"
    assert below_tolerance(no_snr, no_snr) is None
