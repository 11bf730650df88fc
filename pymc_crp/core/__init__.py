"""The numeric core: NumPy and numba only (no PyMC, PyTensor or ArviZ).

Partition priors and their label sweeps (:mod:`.partition_math`, :mod:`.label_sweep`,
:mod:`.aux_label_sweep`), conjugate and collapsed kernels (:mod:`.conjugate_math`,
:mod:`.categorical_math`, :mod:`.mvnormal_math`, :mod:`.normal_mixture_math`,
:mod:`.split_merge`), partial orders and their linear extensions (:mod:`.posets`,
:mod:`.linext_kernels`, :mod:`.linext_sampling`, :mod:`.linext_support`, :mod:`.poset_validation`,
:mod:`.poset_examples`), ranked lists and their likelihood cache (:mod:`.lists`) and the
latent-utility updates (:mod:`.utility_gibbs`, :mod:`.column_moves`, :mod:`.utility_hierarchy`).
The rule is checked by ``tests/test_layers.py``.
"""
