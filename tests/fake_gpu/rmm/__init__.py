"""A stand-in for RMM on machines without a GPU: the resources the room's caps use, with their
accounting (what each adaptor holds, its limit), and allocations that fail as RMM's do. Only
the room's tests put it on ``sys.path``; the GPU tier runs the real one."""

from . import mr

__all__ = ["mr"]
