"""Platform API keys: shown once, stored only as a hash.

A key reads ``gk_<key id>_<secret>``. The key id finds the platform; the SHA-256 of the whole
key is compared in constant time with the stored hash. The secret is 256 random bits, so a
plain hash (no slow KDF) is enough: there is nothing to brute-force.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

PREFIX = "gk"
INSTRUCTOR_PREFIX = "ik"  # instructors' keys, for the login form
_KEY_ID = re.compile(r"[0-9a-f]{16}")  # what new_key makes: nothing else reaches the database


@dataclass(frozen=True)
class NewKey:
    key: str  # give to the platform once; never stored
    key_id: str
    key_hash: str


def new_key(prefix: str = PREFIX) -> NewKey:
    key_id = secrets.token_hex(8)
    key = f"{prefix}_{key_id}_{secrets.token_urlsafe(32)}"
    return NewKey(key, key_id, hash_key(key))


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def key_id_of(key: str, prefix: str = PREFIX) -> str | None:
    """The key id of a well-formed key, or None: a key id is 16 hex digits, so a NUL, a huge or
    a non-ASCII "key" is refused before any lookup."""
    parts = key.split("_", 2)
    if len(parts) != 3 or parts[0] != prefix or not parts[2] or len(key) > 200:
        return None
    return parts[1] if _KEY_ID.fullmatch(parts[1]) else None


def matches(key: str, key_hash: str) -> bool:
    return hmac.compare_digest(hash_key(key), key_hash)
