"""Kernel-duration models, the GPU catalog (catalog.py, catalog/gpus.toml) and calibration data."""
