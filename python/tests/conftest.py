"""Shared fixtures: the repository's committed tiny checkpoints
(tests/fixtures, made by transformers; no torch needed here) and the
`ipuc` binary for the CLI round trips."""

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"

#: One tiny checkpoint per family, with transformers' outputs beside it.
TOWERS = {
    "siglip": FIXTURES / "siglip" / "full-f32",
    "clip": FIXTURES / "towers" / "clip-vision-f32",
    "vit": FIXTURES / "towers" / "vit-f32",
    "dinov2": FIXTURES / "towers" / "dinov2-bf16",
}

#: Small and quick to plan, as tests/tests/towers_hf.rs compiles them.
PLANNING = {"planning_tiles": 64, "planning_beam_width": 8}


def ipuc_binary():
    """The CLI: $IPUC_BIN (CI sets it to the release build), else `ipuc`
    on PATH, else the repository's target/release/ipuc."""
    given = os.environ.get("IPUC_BIN")
    if given:
        return given
    found = shutil.which("ipuc")
    if found:
        return found
    built = ROOT / "target" / "release" / "ipuc"
    return str(built) if built.exists() else None


@pytest.fixture(scope="session")
def ipuc_bin():
    path = ipuc_binary()
    if path is None:
        if os.environ.get("IPUC_REQUIRE_CLI"):
            pytest.fail("IPUC_REQUIRE_CLI is set but no ipuc binary was found (IPUC_BIN)")
        pytest.skip("no ipuc binary (set IPUC_BIN or install it: cargo install --path host)")
    return path


@pytest.fixture(scope="session")
def packages():
    """Each family's tiny checkpoint compiled once for the session."""
    import ipuc

    cache = {}

    def get(family):
        if family not in cache:
            cache[family] = ipuc.compile(checkpoint=TOWERS[family], **PLANNING)
        return cache[family]

    return get
