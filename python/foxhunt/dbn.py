"""foxhunt.read_dbn: a DBN file (v1-v3, plain or zstd) as numpy structured arrays, one per
record type, with DBN's field names (databento's: ts_event, price, bid_px_00, ...). Records
are decoded by foxhunt's own reader (src/data/dbn.h), so the same files and errors as
``fxt inspect`` and ``fxt ingest``."""

from __future__ import annotations

import os
from typing import Dict, NamedTuple, Union

import numpy as np

from . import _foxhunt

_HEADER = [("length", "u1"), ("rtype", "u1"), ("publisher_id", "<u2"),
           ("instrument_id", "<u4"), ("ts_event", "<u8")]
_MBP_BODY = [("price", "<i8"), ("size", "<u4"), ("action", "S1"), ("side", "S1"),
             ("flags", "u1"), ("depth", "u1"), ("ts_recv", "<u8"), ("ts_in_delta", "<i4"),
             ("sequence", "<u4")]


def _levels(n: int) -> list:
    fields = []
    for i in range(n):
        fields += [(f"bid_px_{i:02d}", "<i8"), (f"ask_px_{i:02d}", "<i8"),
                   (f"bid_sz_{i:02d}", "<u4"), (f"ask_sz_{i:02d}", "<u4"),
                   (f"bid_ct_{i:02d}", "<u4"), (f"ask_ct_{i:02d}", "<u4")]
    return fields


# Packed layouts (the #pragma pack(1) structs of src/data/dbn.h), by rtype.
DTYPES: Dict[int, np.dtype] = {
    0x00: np.dtype(_HEADER + _MBP_BODY),                    # trades, 48 bytes
    0x01: np.dtype(_HEADER + _MBP_BODY + _levels(1)),       # mbp-1 / tbbo, 80
    0x0A: np.dtype(_HEADER + _MBP_BODY + _levels(10)),      # mbp-10, 368
    0xA0: np.dtype(_HEADER + [("order_id", "<u8"), ("price", "<i8"), ("size", "<u4"),
                              ("flags", "u1"), ("channel_id", "u1"), ("action", "S1"),
                              ("side", "S1"), ("ts_recv", "<u8"), ("ts_in_delta", "<i4"),
                              ("sequence", "<u4")]),        # mbo, 56
}
assert [DTYPES[k].itemsize for k in (0x00, 0x01, 0x0A, 0xA0)] == [48, 80, 368, 56]

_DEFINITION_FIELDS = [("instrument_id", "<u4"), ("ts_event", "<u8"), ("ts_recv", "<u8"),
                      ("min_price_increment", "<i8"), ("display_factor", "<i8"),
                      ("unit_of_measure_qty", "<i8"), ("expiration", "<i8"),
                      ("contract_multiplier", "<i4")]
_DEFINITION_TEXT = ["raw_symbol", "currency", "unit_of_measure", "exchange", "asset", "group",
                    "security_type", "instrument_class"]


class DbnFile(NamedTuple):
    """``metadata``: the DBN metadata as a dict; ``records``: schema name ("mbp-10", "mbp-1",
    "tbbo", "trades", "mbo", "definition") -> structured array; ``skipped``: rtype -> count of
    records of other types (advanced over, not decoded)."""
    metadata: dict
    records: Dict[str, np.ndarray]
    skipped: Dict[int, int]

    def __getitem__(self, key):  # file["mbp-10"] as a shortcut for file.records["mbp-10"]
        if isinstance(key, str):
            return self.records[key]
        return tuple.__getitem__(self, key)


def _definitions(defs: list) -> np.ndarray:
    text_len = {k: max([1] + [len(d[k]) for d in defs]) for k in _DEFINITION_TEXT}
    dtype = np.dtype(_DEFINITION_FIELDS + [(k, f"U{text_len[k]}") for k in _DEFINITION_TEXT])
    return np.array([tuple(d[name] for name in dtype.names) for d in defs], dtype=dtype)


def read_dbn(path: Union[str, os.PathLike], dbn_version: int = 0) -> DbnFile:
    """Reads a whole DBN file. ``dbn_version`` is needed only for ``.dbn.frag`` streams
    (records without metadata). Prices are int64 in 1e-9 units, INT64_MAX on empty levels."""
    metadata, raw, defs, skipped = _foxhunt._read_dbn(os.fspath(path), int(dbn_version))
    records: Dict[str, np.ndarray] = {}
    for rtype, buf in raw.items():
        if rtype == 0x01:
            name = "tbbo" if metadata.get("schema") == "tbbo" else "mbp-1"
        else:
            name = {0x00: "trades", 0x0A: "mbp-10", 0xA0: "mbo"}[rtype]
        records[name] = buf.view(DTYPES[rtype])
    if defs:
        records["definition"] = _definitions(defs)
    return DbnFile(metadata, records, skipped)
