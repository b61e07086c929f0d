"""The GPU catalog: the virtual GPUs timewarp emulates, read from ``catalog/gpus.toml``.

Standard library only (Python >= 3.11): ``predictors/gen_catalog.py`` imports this file at build time, before
the package is installed, to write the C table the shim serves device properties from.

Resolution of an entry: its ``base`` entry (recursively) is copied, then the entry's own keys and tables
override it. CUdevice_attribute values that report a cudaDeviceProp field (``[property_attributes]``) or a
top-level key (``[key_attributes]``) are recomputed from the resolved values, so the property and the
attribute views cannot disagree. ``get(name)`` accepts catalog keys and aliases, case-insensitively.
"""
from __future__ import annotations

import functools
import hashlib
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

__all__ = [
    "CATALOG_PATH", "Catalog", "CatalogError", "GpuSpec", "UnknownGpuError", "default_key", "get", "keys", "load",
]

CATALOG_PATH = Path(__file__).resolve().with_name("catalog") / "gpus.toml"

# The first 8 bytes of every emulated GPU's UUID spell "timewarp", so that a UUID seen in a log is never
# mistaken for a real card's; 4 bytes from the catalog key follow, then 4 bytes of device index.
UUID_MAGIC = b"timewarp"

# Keys of a [gpu.X] table that hold tables or bookkeeping rather than overridable values.
_TABLES = ("props", "attrs", "rates", "nvml")
_META = ("base", "source", "description", "sources", "accuracy")
_RATE_KEYS = (
    "bf16_flops", "fp16_flops", "fp8_flops", "fp32_flops", "hbm_bytes_per_s", "pcie_bytes_per_s", "launch_floor_s",
    "peak_bf16_flops", "peak_fp8_flops", "peak_fp32_flops", "peak_hbm_bytes_per_s",
)


class CatalogError(ValueError):
    """The catalog file is inconsistent (a bug in gpus.toml, reported with the entry and key at fault)."""


class UnknownGpuError(CatalogError, KeyError):
    """--gpu named no catalog entry. The message lists the known GPUs."""

    def __str__(self) -> str:  # KeyError would print the repr of its argument
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class GpuSpec:
    """One resolved catalog entry."""

    key: str
    description: str
    source: str
    props: Mapping[str, Any]          # cudaDeviceProp field -> value (int, str or list of int)
    attrs: Mapping[int, int]          # CUdevice_attribute id -> value, for every id the card answers
    n_attrs: int                      # length of the attribute arrays: attribute_id_max + 1
    rates: Mapping[str, float]
    nvml: Mapping[str, Any]
    sm_clock_mhz: int
    mem_clock_mhz: int
    power_limit_w: float
    nvml_total_mem: int
    context_reserved: int
    board_part: str
    vbios: str
    sources: Mapping[str, str] = field(default_factory=dict)
    accuracy: str = ""                # what its predictions were checked against, and the error to expect

    # -- the facts most callers want
    @property
    def name(self) -> str:
        return self.props["name"]

    @property
    def cc(self) -> tuple[int, int]:
        return (self.props["major"], self.props["minor"])

    @property
    def sm_count(self) -> int:
        return self.props["multiProcessorCount"]

    @property
    def total_mem(self) -> int:
        """cudaDeviceProp.totalGlobalMem, bytes."""
        return self.props["totalGlobalMem"]

    @property
    def free_mem_after_init(self) -> int:
        """What cudaMemGetInfo reports free right after context creation."""
        return self.total_mem - self.context_reserved

    @property
    def uuid_prefix(self) -> str:
        """First 12 UUID bytes, as 24 hex digits; the last 4 bytes are the device index (big-endian)."""
        return (UUID_MAGIC + hashlib.sha256(self.key.encode()).digest()[:4]).hex()

    def uuid(self, device: int = 0) -> bytes:
        return bytes.fromhex(self.uuid_prefix) + device.to_bytes(4, "big")

    def attr_valid(self, attr_id: int) -> bool:
        return attr_id in self.attrs


@dataclass(frozen=True)
class Catalog:
    path: Path
    gpus: Mapping[str, GpuSpec]
    aliases: Mapping[str, str]        # lower-case alias or key -> key
    default: str
    attribute_ids: Mapping[str, int]  # CUdevice_attribute name (no prefix) -> id, current names only
    system: Mapping[str, Any]

    def keys(self) -> list[str]:
        return list(self.gpus)

    def resolve_key(self, name: str) -> str:
        key = self.aliases.get(name.strip().lower())
        if key is None:
            raise UnknownGpuError(f"unknown GPU {name!r}; known GPUs: {self.describe_known()}")
        return key

    def get(self, name: str | None = None) -> GpuSpec:
        return self.gpus[self.resolve_key(name or self.default)]

    def describe_known(self) -> str:
        parts = []
        for key in self.gpus:
            others = sorted(a for a, k in self.aliases.items() if k == key and a != key.lower())
            parts.append(f"{key} ({', '.join(others)})" if others else key)
        return ", ".join(parts)


# ------------------------------------------------------------------------------------------------ loading
def _attr_id(name: str, ids: Mapping[str, int], aliases: Mapping[str, str], where: str) -> int:
    name = name.removeprefix("CU_DEVICE_ATTRIBUTE_")
    name = aliases.get(name, name)
    if name not in ids:
        raise CatalogError(f"{where}: unknown CUdevice_attribute {name!r}")
    return ids[name]


def _fact_table(doc: dict, ids: Mapping[str, int], aliases: Mapping[str, str]) -> list[tuple[str, int | None, int]]:
    """(cudaDeviceProp field, array index or None, attribute id) for every [property_attributes] pair."""
    facts = []
    for prop, attr in doc.get("property_attributes", {}).items():
        if isinstance(attr, list):
            for i, a in enumerate(attr):
                facts.append((prop, i, _attr_id(a, ids, aliases, f"property_attributes.{prop}")))
        else:
            facts.append((prop, None, _attr_id(attr, ids, aliases, f"property_attributes.{prop}")))
    return facts


def _check_sources(key: str, own: dict) -> None:
    sources = own.get("sources", {})
    missing = []
    for k, v in own.items():
        if k in _META:
            continue
        if k in _TABLES:
            missing += [f"{k}.{sub}" for sub in v if f"{k}.{sub}" not in sources]
        elif k not in sources:
            missing.append(k)
    if missing:
        raise CatalogError(f"gpu.{key}: overrides without a source note in [gpu.{key}.sources]: {', '.join(missing)}")


def _resolve_raw(key: str, raw: dict, stack: tuple[str, ...] = ()) -> dict:
    """Merge an entry over its base chain (tables merged key by key)."""
    if key in stack:
        raise CatalogError(f"gpu.{key}: base cycle {' -> '.join(stack + (key,))}")
    if key not in raw:
        raise CatalogError(f"gpu.{stack[-1]}: base {key!r} is not in the catalog")
    own = raw[key]
    base_key = own.get("base")
    if base_key is None:
        return {k: (dict(v) if isinstance(v, dict) else v) for k, v in own.items()}
    merged = _resolve_raw(base_key, raw, stack + (key,))
    for k, v in own.items():
        if k in ("base", "sources"):
            continue
        if k in _TABLES:
            unknown = [sub for sub in v if sub not in merged.get(k, {}) and k != "attrs"
                       and not (k == "rates" and sub in _RATE_KEYS)]
            if unknown:
                raise CatalogError(f"gpu.{key}.{k}: unknown keys {', '.join(unknown)} (not in base {base_key})")
            merged.setdefault(k, {}).update(v)
        elif k not in merged and k not in _META:
            raise CatalogError(f"gpu.{key}: unknown key {k!r} (not in base {base_key})")
        else:
            merged[k] = v
    return merged


def _build(key: str, doc: dict, ids: Mapping[str, int], aliases: Mapping[str, str],
           facts: list[tuple[str, int | None, int]]) -> GpuSpec:
    raw = doc["gpu"]
    own = raw[key]
    is_root = "base" not in own
    m = _resolve_raw(key, raw)
    props = m.get("props", {})
    n_attrs = int(doc["attribute_id_max"]) + 1
    fact_ids = {a for _, _, a in facts}
    key_attrs = {_attr_id(n, ids, aliases, f"key_attributes.{n}"): spec
                 for n, spec in doc.get("key_attributes", {}).items()}

    # Attributes: the root's probe values, then each derived level's own attrs, which may only set what no
    # property carries (the rest is recomputed from the properties below).
    attrs: dict[int, int] = {}
    unsupported: set[int] = set()
    for level in _chain(key, raw):
        lown = raw[level]
        level_is_root = "base" not in lown
        if "unsupported_attrs" in lown:
            unsupported = {_attr_id(n, ids, aliases, f"gpu.{level}.unsupported_attrs")
                           for n in lown["unsupported_attrs"]}
        for name, value in lown.get("attrs", {}).items():
            aid = _attr_id(name, ids, aliases, f"gpu.{level}.attrs")
            if not level_is_root and (aid in fact_ids or aid in key_attrs):
                raise CatalogError(
                    f"gpu.{level}.attrs.{name}: this attribute reports a property; override the property instead "
                    f"(see [property_attributes] / [key_attributes])")
            attrs[aid] = int(value)
            if not level_is_root:
                unsupported.discard(aid)
        for aid in unsupported:
            attrs.pop(aid, None)

    # Derived attributes, and on the root the check that the probe's two views agree.
    mismatches = []
    for prop, idx, aid in facts:
        if prop not in props:
            raise CatalogError(f"gpu.{key}: property {prop!r} (named in [property_attributes]) has no value")
        value = props[prop] if idx is None else props[prop][idx]
        if is_root and attrs.get(aid) != value:
            mismatches.append(f"{prop}{'' if idx is None else f'[{idx}]'}={value} vs attribute {aid}={attrs.get(aid)}")
        attrs[aid] = int(value)
    for aid, spec in key_attrs.items():
        if spec.get("key") not in m:
            raise CatalogError(f"gpu.{key}: key {spec.get('key')!r} (named in [key_attributes]) has no value")
        value = int(m[spec["key"]] * spec.get("scale", 1))
        if is_root and attrs.get(aid) != value:
            mismatches.append(f"{spec['key']} -> attribute {aid}: {value} vs {attrs.get(aid)}")
        attrs[aid] = value
    if mismatches:
        raise CatalogError(f"gpu.{key}: property and attribute values disagree: {'; '.join(mismatches)}")
    bad = [aid for aid in attrs if not 0 <= aid < n_attrs]
    if bad:
        raise CatalogError(f"gpu.{key}: attribute ids {bad} beyond attribute_id_max")

    if not is_root:
        _check_sources(key, own)
    rates = dict(m.get("rates", {}))
    missing = [r for r in _RATE_KEYS if r not in rates]
    if missing:
        raise CatalogError(f"gpu.{key}.rates: missing {', '.join(missing)}")
    try:
        return GpuSpec(
            key=key,
            description=m.get("description", props.get("name", key)),
            source=m.get("source", ""),
            props=props,
            attrs=dict(sorted(attrs.items())),
            n_attrs=n_attrs,
            rates={k: float(v) for k, v in rates.items()},
            nvml=dict(m.get("nvml", {})),
            sm_clock_mhz=int(m["sm_clock_mhz"]),
            mem_clock_mhz=int(m["mem_clock_mhz"]),
            power_limit_w=float(m["power_limit_w"]),
            nvml_total_mem=int(m["nvml_total_mem"]),
            context_reserved=int(m["context_reserved"]),
            board_part=str(m["board_part"]),
            vbios=str(m["vbios"]),
            sources=dict(own.get("sources", {})),
            accuracy=str(own.get("accuracy", "")),   # the entry's own: a derived card was checked apart
        )
    except KeyError as e:
        raise CatalogError(f"gpu.{key}: missing key {e.args[0]!r}") from None


def _chain(key: str, raw: dict) -> list[str]:
    """[root, ..., key] along the base links."""
    chain = [key]
    while "base" in raw[chain[-1]]:
        base = raw[chain[-1]]["base"]
        if base in chain:
            raise CatalogError(f"gpu.{key}: base cycle {' -> '.join(chain + [base])}")
        if base not in raw:
            raise CatalogError(f"gpu.{chain[-1]}: base {base!r} is not in the catalog")
        chain.append(base)
    return chain[::-1]


def load(path: str | Path | None = None) -> Catalog:
    """Read and resolve a catalog file (the packaged one by default; that one is cached)."""
    if path is None:
        return _load_default()
    return _load(Path(path))


@functools.lru_cache(maxsize=1)
def _load_default() -> Catalog:
    return _load(CATALOG_PATH)


def _load(path: Path) -> Catalog:
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except FileNotFoundError:
        raise CatalogError(f"GPU catalog not found: {path}") from None
    except tomllib.TOMLDecodeError as e:
        raise CatalogError(f"{path}: {e}") from None
    if doc.get("schema") != 1:
        raise CatalogError(f"{path}: unsupported schema {doc.get('schema')!r}")
    ids = {k: int(v) for k, v in doc.get("attribute_ids", {}).items()}
    attr_aliases = dict(doc.get("attribute_aliases", {}))
    facts = _fact_table(doc, ids, attr_aliases)
    gpus = {key: _build(key, doc, ids, attr_aliases, facts) for key in doc.get("gpu", {})}
    aliases = {k.lower(): k for k in gpus}
    for alias, key in doc.get("aliases", {}).items():
        if key not in gpus:
            raise CatalogError(f"{path}: alias {alias!r} names unknown GPU {key!r}")
        if aliases.get(alias.lower(), key) != key:
            raise CatalogError(f"{path}: alias {alias!r} is ambiguous")
        aliases[alias.lower()] = key
    default = doc.get("default", next(iter(gpus), ""))
    if default not in gpus:
        raise CatalogError(f"{path}: default GPU {default!r} is not in the catalog")
    return Catalog(path=path, gpus=gpus, aliases=aliases, default=default, attribute_ids=ids,
                   system=dict(doc.get("system", {})))


# ------------------------------------------------------------------------------------------------ shortcuts
def get(name: str | None = None) -> GpuSpec:
    """The resolved entry for a catalog key or alias (case-insensitive); the default GPU for None.

    Raises UnknownGpuError, whose message lists the known GPUs, for a name that is neither."""
    return load().get(name)


def keys() -> list[str]:
    return load().keys()


def default_key() -> str:
    return load().default
