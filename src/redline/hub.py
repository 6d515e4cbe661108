"""The Hugging Face hub, seen from a machine that may be offline.

A model id that is neither a local folder nor in the local cache can only be loaded when the hub
answers. :func:`hub_reachable` asks with a short TCP connection, so an offline machine gets a
one-line error at once instead of the libraries' own retries (tens of seconds).
"""

from __future__ import annotations

import os
import socket

__all__ = ["hub_reachable", "in_hf_cache"]


def in_hf_cache(model_id: str) -> bool:
    """Whether ``model_id``'s config is in the local Hugging Face cache."""
    try:
        from huggingface_hub import try_to_load_from_cache  # optional: only with local models
    except ImportError:
        return False
    try:
        found = try_to_load_from_cache(model_id, "config.json")
    except Exception:
        return False
    return isinstance(found, str)


def hub_reachable(timeout: float = 1.5) -> bool:
    """Whether the Hugging Face hub answers a TCP connection (never when offline mode is set)."""
    if os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE"):
        return False
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    host = endpoint.split("//", 1)[-1].split("/", 1)[0].split(":", 1)[0]
    try:
        with socket.create_connection((host, 443), timeout=timeout):
            return True
    except OSError:
        return False
