"""Whole campaigns on real open-source Triton kernels, in their own repository layouts, on CPU.

Liger-Kernel's softmax (a src/ layout, a bare `pytest` reading pyproject.toml's testpaths, two
launch paths chosen by the row width) and SwiGLU (a package at the root, `pytest -q tests`, a
pytest.ini), each copied into a fresh repository and taken through init, baseline and one
round by the CLI with every default on; Triton's interpreter runs the kernels
(TRITON_INTERPRET=1). See campaigns.py; `bench/realworld.py` runs the same on a GPU.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.realworld.campaigns import SOFTMAX, SWIGLU, RealCampaign, play


@pytest.mark.slow
@pytest.mark.parametrize("campaign", [SOFTMAX, SWIGLU], ids=lambda c: c.folder)
def test_a_real_kernel_campaign_reaches_a_verdict(tmp_path: Path, campaign: RealCampaign) -> None:
    played = play(campaign, tmp_path, gpu=False)
    # The gate's folder and pytest's settings were frozen whole: a round cannot loosen them.
    assert set(played.frozen.split(", ")) >= {"tests", campaign.gate_config}, played
    # The project's own tests gated the baseline, then the gate audit ran them on mutants.
    assert played.audit.startswith("gate audit: "), played
    assert played.rounds[0][0] == 1 and played.rounds[1:] == [(2, played.verdict)], played
    assert played.why, played  # the verdict says how the aggregate moved, with its interval
