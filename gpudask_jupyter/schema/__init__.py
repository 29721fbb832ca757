"""What Python and the TypeScript views share, described once, in Python.

:mod:`.frame` is the Frame the monitor sends to both views. ``scripts/generate_ts.py`` writes the
TypeScript (``labextension/src/view/*.generated.ts``) from these modules, and
``tests/cpu/test_schema.py`` fails when the committed files differ from what it writes.
"""
