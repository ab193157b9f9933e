"""Kneron (KL730): the format table with its provenance and the layouts (:mod:`.kl730`), the
report reader (:mod:`.reported`), the node descriptor and its quantization (:mod:`.quant`) and
the vendor unit (:mod:`.unit`).
"""
