"""The stream-fed functions' filters (resume, notifier), read from template.yaml (their
only copy), and a
matcher for the part of Lambda's event-filtering syntax it uses.

Lambda applies a FilterCriteria pattern to each stream record (`eventName`, `dynamodb`
with `Keys`/`NewImage`/`OldImage` in DynamoDB JSON, ...) and passes the record on if any
pattern matches. The rules modelled here (EventBridge pattern semantics):

* a pattern object matches if every key matches (AND); a missing key in the record is
  "no value" all the way down;
* a list of matchers matches if any matches (OR), against a leaf, a JSON scalar; if the
  record's value is a list, any of its elements may match;
* a scalar matcher is equality; `{"exists": true|false}`, `{"prefix": "..."}` and
  `{"anything-but": scalar or [scalars]}` are the operators understood;
* an object where a leaf was expected is not a leaf: only `exists: false` matches it. So
  `{"gsi2pk": [{"exists": false}]}` would pass an item that HAS gsi2pk (its value is
  `{"S": ...}`, an object); the test must be on the leaf, `{"gsi2pk": {"S": [...]}}`.

Anything else (numeric, cidr, $or, wildcards) raises, so a pattern using more than this
cannot silently pass the tests.

Used by test_template.py (the filter against sample records). The stream tool
(tests/lambda_watch/stream_tool.py) reads the same pattern from template.yaml.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
RESUME_BINARY = "resume"

_MISSING = object()
_OPERATORS = {"exists", "prefix", "anything-but"}


def _load(template: Path | dict | None) -> dict:
    if isinstance(template, dict):
        return template
    from cfnlint.decode import cfn_yaml  # understands !Ref, !GetAtt, !Sub

    return cfn_yaml.load(str(template or TEMPLATE))


def stream_event(binary: str, template: Path | dict | None = None) -> tuple[str, dict]:
    """(logical id, properties) of the one `Type: DynamoDB` event of the function that
    builds `binary`."""
    t = _load(template)
    for res in t["Resources"].values():
        if res.get("Type") != "AWS::Serverless::Function":
            continue
        if res.get("Metadata", {}).get("BuildProperties", {}).get("Binary") != binary:
            continue
        events = [(name, e["Properties"]) for name, e in res["Properties"].get("Events", {}).items()
                  if e.get("Type") == "DynamoDB"]
        assert len(events) == 1, f"the {binary} function has {len(events)} DynamoDB events"
        return events[0]
    raise AssertionError(f"no function builds the {binary} binary in template.yaml")


def filter_patterns(binary: str, template: Path | dict | None = None) -> list[dict]:
    """The filter patterns of `binary`'s event source mapping, parsed."""
    _, props = stream_event(binary, template)
    filters = props["FilterCriteria"]["Filters"]
    return [json.loads(f["Pattern"]) for f in filters]


def resume_stream_event(template: Path | dict | None = None) -> tuple[str, dict]:
    return stream_event(RESUME_BINARY, template)


def resume_filter_patterns(template: Path | dict | None = None) -> list[dict]:
    return filter_patterns(RESUME_BINARY, template)


def _leaf_matches(matcher: Any, value: Any) -> bool:
    is_leaf = value is not _MISSING and not isinstance(value, dict)
    if isinstance(matcher, dict):
        if len(matcher) != 1 or next(iter(matcher)) not in _OPERATORS:
            raise ValueError(f"filter operator not understood here: {matcher}")
        op, arg = next(iter(matcher.items()))
        if op == "exists":
            if not isinstance(arg, bool):
                raise ValueError(f"exists takes true or false: {matcher}")
            return is_leaf == arg
        if not is_leaf:
            return False
        if op == "prefix":
            if not isinstance(arg, str):
                raise ValueError(f"prefix takes a string: {matcher}")
            return isinstance(value, str) and value.startswith(arg)
        # anything-but: a scalar or a list of scalars the value must not equal
        banned = arg if isinstance(arg, list) else [arg]
        if any(isinstance(b, (dict, list)) for b in banned):
            raise ValueError(f"anything-but takes scalars here: {matcher}")
        return value not in banned
    if isinstance(matcher, list):
        raise ValueError(f"a matcher cannot be a list: {matcher}")
    return is_leaf and value == matcher and type(value) is type(matcher)


def _matches(pattern: Any, value: Any) -> bool:
    if isinstance(pattern, dict):
        if not pattern:
            raise ValueError("an empty pattern object")
        if value is not _MISSING and not isinstance(value, dict):
            value = _MISSING  # a scalar has no fields: each of them is missing
        return all(_matches(p, _MISSING if value is _MISSING else value.get(k, _MISSING))
                   for k, p in pattern.items())
    if isinstance(pattern, list):
        if not pattern:
            raise ValueError("an empty list of matchers matches nothing")
        candidates = value if isinstance(value, list) and value else [value]
        return any(_leaf_matches(m, v) for m in pattern for v in candidates)
    raise ValueError(f"a pattern value must be an object or a list of matchers: {pattern!r}")


def matches(pattern: dict, record: dict) -> bool:
    """Whether one filter pattern passes a stream record."""
    if not isinstance(pattern, dict):
        raise ValueError("a filter pattern is a JSON object")
    return _matches(pattern, record)


def passes(patterns: list[dict], record: dict) -> bool:
    """Whether Lambda passes the record on: any of the patterns matches it."""
    return any(matches(p, record) for p in patterns)
