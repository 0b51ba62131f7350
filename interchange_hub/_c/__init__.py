"""ctypes over the C ABIs, one module per specification (after nanoarrow's ``c_*``).

``capsule`` (PyCapsule calls, memory, keep-alive), ``arrow_device`` (the Arrow C Device
data interface), ``dlpack`` (DLPack), ``cuda`` (the one CUDA driver call).
"""
