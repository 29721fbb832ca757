"""Task-prefix colours: distinct for every prefix a view draws, "other" beyond the palette, and
the same in every view of a cluster (the scheduler keeps them)."""

from __future__ import annotations

from types import SimpleNamespace

from gpudask_jupyter.monitor.scheduler_probe import colour_slots
from gpudask_jupyter.monitor.taskstream import prefix_color
from gpudask_jupyter.schema.frame import OTHER_COLOR, PALETTE

#: the 22 prefixes one run of a notebook-04-like pipeline showed at once (two pairs of them
#: shared a colour when colours cycled by the scheduler's order)
PREFIXES = [f"p{i}" for i in range(20)] + ["min", "repartitiontofewer"]


def test_no_two_prefixes_in_view_share_a_colour_and_the_rest_are_other() -> None:
    scheduler = SimpleNamespace()
    slots = colour_slots(scheduler, PREFIXES, 100.0, len(PALETTE), 3600.0)
    colours = [prefix_color(slots[p]) for p in PREFIXES]
    named = [c for c in colours if c != OTHER_COLOR]
    assert len(named) == len(PALETTE) == len(set(named))
    assert colours[-2:] == [OTHER_COLOR, OTHER_COLOR]
    # a second view, polling later with fewer tasks in its window, gets the same colours
    later = colour_slots(scheduler, ["min", "p3"], 101.0, len(PALETTE), 3600.0)
    assert prefix_color(later["p3"]) == colours[3] and later["min"] == -1


def test_a_slot_freed_by_a_prefix_gone_past_the_lease_goes_to_a_new_one() -> None:
    scheduler = SimpleNamespace()
    colour_slots(scheduler, PREFIXES[:20], 0.0, 20, 60.0)
    slots = colour_slots(scheduler, ["p5", "new"], 30.0, 20, 60.0)
    assert slots["new"] == -1  # every slot used within the lease
    # p0 to p19 but p5 not seen for the lease: their slots are free again; p5 keeps its own
    slots = colour_slots(scheduler, ["p5", "later"], 95.0, 20, 60.0)
    assert slots["p5"] == 5
    assert slots["later"] == 0
    assert "p0" not in slots
