"""The engine: a scan's configuration (:mod:`.config`, :mod:`.config_file`) and the scan itself
(:mod:`.pipeline`): probes → generator → detectors → evaluation, every attempt stored as it finishes,
phase 4 per probe, resumable."""

from redline.engine.config import ScanConfig
from redline.engine.config_file import ConfigError, build_scan_config, load_config, parse_gen_opts
from redline.engine.pipeline import RESUME_GENERATOR_OPTIONS, ScanError, StoredAttempts, build_probes, scan

__all__ = [
    "RESUME_GENERATOR_OPTIONS",
    "ConfigError",
    "ScanConfig",
    "ScanError",
    "StoredAttempts",
    "build_probes",
    "build_scan_config",
    "load_config",
    "parse_gen_opts",
    "scan",
]
