def rmm_cupy_allocator(nbytes: int) -> object:
    raise NotImplementedError("no CuPy without a GPU")
