"""Index maps behind the pictures, one module per operation, from the formulas the kernels use.

"Output (i, j) reads these input cells" and back, "column l of X_unroll holds these cells" and
back, "these patches cover pixel (y, x)", "padded cell (i, j) copies input (y, x)" and back.
All are small NumPy arrays computed without running any kernel, from gpuops.index_math, so a
picture can never disagree with the kernel.
"""
