"""Every call this package makes into a private part of another library, one module per library.

Private names change without notice between releases. Keeping each such call in its library's
module, with what it relies on listed (each module's ``needs()``) and probed once a process
(:mod:`.probes`), means a release that changes one is met where it is used: the package falls back
or says so in one sentence naming the library and its release, instead of refusing release
numbers it has not seen. ``python -m gpudask_jupyter.compat`` lists what the installed libraries
lack.

Nothing here imports any of the libraries at its own import; this module only gathers the
functions for their callers (``compat.run_on_scheduler``).
"""

from __future__ import annotations

from .cudf import (
    allows_duplicate_labels,
    as_column,
    builds_from_plc,
    categorical_codes_dtype,
    categorical_parts,
    column_astype,
    column_fillna,
    column_from_device,
    column_from_plc,
    column_has_nulls,
    column_isnull,
    column_of,
    column_slice,
    column_to_pandas,
    column_values,
    concatenate_plc,
    frame_columns,
    frame_from_columns,
    frame_labels,
    index_from_column,
    nans_to_nulls,
    plc_of,
    series_from_column,
    string_parts,
    string_plc_column,
    with_validity,
)
from .dask import (
    dask_meta,
    persisted_frame,
)
from .dask_cuda import (
    CLUSTER_ENVIRON,
    cuda_worker_nannies,
    set_device_spill_limit,
)
from .dask_gateway import (
    close_gateway,
    close_gateway_cluster,
)
from .distributed import (
    FRAME_HEADER,
    PARENT_PID,
    executing_prefixes,
    fail_unrunnable,
    idle_since,
    keep_forkserver_preload,
    name_nanny,
    nanny_environ,
    offered_resources,
    open_comm,
    retire_workers,
    run_on_comm,
    run_on_scheduler,
    run_on_workers,
    security_settings,
    setting_before_import,
    starts_a_message,
    submit_on_scheduler,
    task_group_states,
    task_stream_plugin,
    unrunnable_restrictions,
    worker_count,
    worker_identities,
)
from .ipykernel import (
    route_replies,
    unwrap_shutdown,
    wrap_shutdown,
)
from .ipython import (
    show_structured_traceback,
)
from .pandas import (
    masked_parts,
)
from .probes import MODULES, usable
from .python import (
    FORK_SERVER_COMMAND,
    detach_resource_tracker,
    launch_fork_server,
    original_dir,
    parser_actions,
)

__all__ = [
    "CLUSTER_ENVIRON",
    "FORK_SERVER_COMMAND",
    "FRAME_HEADER",
    "MODULES",
    "PARENT_PID",
    "allows_duplicate_labels",
    "as_column",
    "builds_from_plc",
    "categorical_codes_dtype",
    "categorical_parts",
    "close_gateway",
    "close_gateway_cluster",
    "column_astype",
    "column_fillna",
    "column_from_device",
    "column_from_plc",
    "column_has_nulls",
    "column_isnull",
    "column_of",
    "column_slice",
    "column_to_pandas",
    "column_values",
    "concatenate_plc",
    "cuda_worker_nannies",
    "dask_meta",
    "detach_resource_tracker",
    "executing_prefixes",
    "fail_unrunnable",
    "frame_columns",
    "frame_from_columns",
    "frame_labels",
    "idle_since",
    "index_from_column",
    "keep_forkserver_preload",
    "launch_fork_server",
    "masked_parts",
    "name_nanny",
    "nanny_environ",
    "nans_to_nulls",
    "offered_resources",
    "open_comm",
    "original_dir",
    "parser_actions",
    "persisted_frame",
    "plc_of",
    "retire_workers",
    "route_replies",
    "run_on_comm",
    "run_on_scheduler",
    "run_on_workers",
    "security_settings",
    "series_from_column",
    "set_device_spill_limit",
    "setting_before_import",
    "show_structured_traceback",
    "starts_a_message",
    "string_parts",
    "string_plc_column",
    "submit_on_scheduler",
    "task_group_states",
    "task_stream_plugin",
    "unrunnable_restrictions",
    "unwrap_shutdown",
    "usable",
    "with_validity",
    "worker_count",
    "worker_identities",
    "wrap_shutdown",
]
