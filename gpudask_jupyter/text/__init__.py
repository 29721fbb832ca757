"""How the package writes for people: sizes and durations (:mod:`.units`), tables that show as
text in a terminal and as HTML in a notebook (:mod:`.table`)."""
