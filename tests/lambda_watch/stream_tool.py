#!/usr/bin/env python3
"""Feed a table's DynamoDB stream to a stream-fed function (resume, or notifier with
`--function notifier`) under `cargo lambda watch`.

In AWS, an event source mapping reads the table's stream, drops the records its
FilterCriteria rejects, and invokes the resume function synchronously with the rest, in
batches of `{"Records": [...]}`; with `ReportBatchItemFailures` the function answers
`{"batchItemFailures": [{"itemIdentifier": "<SequenceNumber>"}]}` and the mapping retries
from the earliest failed record. Nothing does that locally: this tool stands in for it.

It reads the stream of a table on DynamoDB Local (boto3 `dynamodbstreams`: DescribeStream,
GetShardIterator, GetRecords), turns each record into the shape Lambda delivers
(`eventID`, `eventName`, `eventVersion`, `eventSource`, `awsRegion`, `dynamodb` as
GetRecords gives it with `ApproximateCreationDateTime` in epoch seconds, `eventSourceARN`),
keeps the records that pass the filter of the resume function's event source mapping in
template.yaml (read with cfn-lint's YAML loader; `DEFAULT_PATTERN` while the template has
none), and POSTs each batch to the emulator's Invoke API,
`http://127.0.0.1:<port>/2015-03-31/functions/resume/invocations`. Records the function
reports in `batchItemFailures` (or a whole batch, when the invocation itself fails) are
sent again, from the earliest failed record on, up to `--retries` times; then they are
given up, as after the mapping's MaximumRetryAttempts, and the tool exits with status 1.

Modes:
* once (the default): drain what the stream holds now, then exit;
* `--follow`: keep polling (every `--interval` seconds) until stopped: SIGTERM stops it
  once the page of records in hand is handled; Ctrl-C (SIGINT) stops it at once, and the
  next run sends the batch in hand again (delivery is at least once, as in AWS);
* `--dump`: print the events instead of invoking anything (with `--no-filter`, every
  record: how the Rust fixtures `common/tests/fixtures/dynamodb-stream-*.json` were made);
* `--drop-task ID`: lose the records of that task's items (as a mapping that gave up on
  them), to see the sweeper ring its wake-up again.

Where to start: from the stream's beginning (TRIM_HORIZON; `--latest` skips what is there
already, as the template's StartingPosition LATEST), or, with `--checkpoint FILE`, after
the last record a previous run handled (the file keeps the last sequence number of each
shard, as the mapping's checkpoint does). Batch size and retries are the mapping's
(BatchSize, MaximumRetryAttempts) unless given.

    python tests/lambda_watch/stream_tool.py --table harness-dev --invoke-port 9000
    python tests/lambda_watch/stream_tool.py --table harness-dev --invoke-port 9000 --follow
    # webhooks: the notifier's own mapping (run it beside the resume one)
    python tests/lambda_watch/stream_tool.py --table harness-dev --invoke-port 9000 \
        --function notifier --checkpoint .notifier-checkpoint --follow

Arguments fall back to the environment: `AWS_ENDPOINT_URL_DYNAMODB` (default
http://127.0.0.1:8000), `HARNESS_TABLE`, `HARNESS_RESUME_INVOKE_URL` (or
`--invoke-port`), `AWS_REGION`. DynamoDB Local checks no credentials; `test`/`test` are
used unless AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY are set.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import json
import os
import signal
import sys
import time
import urllib.error
import urllib.request

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any


ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / 'template.yaml'
# The function fed by default; `--function` names another (its binary name).
FUNCTION = 'resume'
# What the resume mapping's filter is (template.yaml is the authority when it has one):
# task items whose write was a wake-up (`wake`).
DEFAULT_PATTERN: dict[str, Any] = {
    'eventName': ['INSERT', 'MODIFY'],
    'dynamodb': {'NewImage': {'sk': {'S': ['TASK']}, 'wake': {'N': ['1']}}},
}
# Lambda's default batch size for DynamoDB streams.
DEFAULT_BATCH_SIZE = 100
# Retries of failed records when the template sets no (or an unlimited) MaximumRetryAttempts.
DEFAULT_RETRIES = 3
# DynamoDB Streams returns at most 1000 records per GetRecords.
GET_RECORDS_LIMIT = 1000


# --------------------------------------------------------------------------- the filter


class _Missing:
    """A field the record does not have (what `{"exists": false}` asks for)."""

    def __repr__(self) -> str:
        return 'MISSING'


MISSING = _Missing()


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float, Decimal)):
        return float(value)
    return None


def _numeric(value: Any, conditions: list[Any]) -> bool:
    x = _number(value)
    if x is None:
        return False
    ops: dict[str, Callable[[float, float], bool]] = {
        '=': lambda a, b: a == b,
        '<': lambda a, b: a < b,
        '<=': lambda a, b: a <= b,
        '>': lambda a, b: a > b,
        '>=': lambda a, b: a >= b,
    }
    for op, bound in zip(conditions[::2], conditions[1::2]):
        if not ops[op](x, float(bound)):
            return False
    return True


def _condition(cond: Any, value: Any) -> bool:
    """One entry of a pattern's value list against one value of the record."""
    if isinstance(cond, dict):
        [(op, arg)] = cond.items()
        if op == 'exists':
            return (value is not MISSING) == bool(arg)
        if value is MISSING:
            return False
        if op == 'prefix':
            return isinstance(value, str) and value.startswith(arg)
        if op == 'suffix':
            return isinstance(value, str) and value.endswith(arg)
        if op == 'equals-ignore-case':
            return isinstance(value, str) and value.lower() == str(arg).lower()
        if op == 'anything-but':
            if isinstance(arg, dict):
                return not _condition(arg, value)
            banned = arg if isinstance(arg, list) else [arg]
            return value not in banned
        if op == 'numeric':
            return _numeric(value, arg)
        raise ValueError(f'unsupported filter operator {op!r}')
    if value is MISSING:
        return False
    return cond == value


def _leaf(conditions: list[Any], value: Any) -> bool:
    """A list of conditions against a leaf; a record's array matches if any element does.
    Matching works on leaves only: an object where the pattern expects a leaf is no
    value (so `{"gsi2pk": [{"exists": false}]}` would pass an item that has `gsi2pk`,
    whose value is `{"S": ...}`: the pattern must name the leaf, `{"gsi2pk": {"S": ...}}`)."""
    values = value if isinstance(value, list) else [value]
    values = [MISSING if isinstance(v, dict) else v for v in values] or [MISSING]
    return any(_condition(c, v) for c in conditions for v in values)


def matches(pattern: Any, value: Any) -> bool:
    """Lambda event filtering (the EventBridge pattern syntax): every key of the pattern
    must match; a list is the leaf's allowed values or conditions; a missing field
    matches only `{"exists": false}`."""
    if isinstance(pattern, dict):
        for key, sub in pattern.items():
            inner = value.get(key, MISSING) if isinstance(value, dict) else MISSING
            if not matches(sub, inner):
                return False
        return True
    if isinstance(pattern, list):
        return _leaf(pattern, value)
    raise ValueError(f'a filter pattern leaf must be a list, not {pattern!r}')


def passes(patterns: list[dict[str, Any]], record: dict[str, Any]) -> bool:
    """A record passes the mapping's FilterCriteria when any one of its filters matches."""
    return any(matches(p, record) for p in patterns)


# --------------------------------------------------------------------------- the template


@dataclass
class Mapping:
    """What the tool takes from the function's event source mapping."""

    patterns: list[dict[str, Any]]
    batch_size: int = DEFAULT_BATCH_SIZE
    retries: int = DEFAULT_RETRIES
    source: str = 'built-in default'


def _pattern(raw: Any) -> dict[str, Any]:
    if isinstance(raw, str):
        return json.loads(raw)
    if isinstance(raw, dict):
        return json.loads(json.dumps(raw))
    raise ValueError(f'a filter Pattern is a JSON string, not {raw!r}')


def _names(value: Any, resource: str) -> bool:
    """A FunctionName that refers to `resource` (`!Ref`, `!GetAtt`, a name)."""
    if isinstance(value, str):
        return value == resource
    if isinstance(value, dict):
        ref = value.get('Ref') or value.get('Fn::GetAtt')
        if isinstance(ref, list):
            ref = ref[0]
        if isinstance(ref, str):
            return ref.split('.')[0] == resource
    return False


def _resource_of(resources: dict[str, Any], function: str) -> str | None:
    """The logical id of the function that builds the `function` binary."""
    for logical_id, res in resources.items():
        binary = res.get('Metadata', {}).get('BuildProperties', {}).get('Binary')
        if res.get('Type') == 'AWS::Serverless::Function' and binary == function:
            return logical_id
    return None


def mapping_from_template(path: Path = TEMPLATE, function: str = FUNCTION) -> Mapping | None:
    """The filter (and batch size) of `function`'s stream mapping: from the
    `Type: DynamoDB` event of the function that builds that binary, or an
    `AWS::Lambda::EventSourceMapping` naming it. None when the template declares none."""
    from cfnlint.decode import cfn_yaml

    template = cfn_yaml.load(str(path))
    resources = template.get('Resources', {})
    resource = _resource_of(resources, function)
    if resource is None:
        return None
    found: list[dict[str, Any]] = []
    for event in (resources[resource].get('Properties', {}).get('Events') or {}).values():
        if event.get('Type') == 'DynamoDB':
            found.append(event.get('Properties', {}))
    for res in resources.values():
        if res.get('Type') == 'AWS::Lambda::EventSourceMapping':
            props = res.get('Properties', {})
            if _names(props.get('FunctionName'), resource):
                found.append(props)
    if not found:
        return None
    if len(found) > 1:
        raise ValueError(f'{path}: {len(found)} stream mappings feed {resource}; expected one')
    props = found[0]
    filters = (props.get('FilterCriteria') or {}).get('Filters') or []
    patterns = [_pattern(f['Pattern']) for f in filters]
    retries = int(props.get('MaximumRetryAttempts', DEFAULT_RETRIES))
    # No FilterCriteria: every record goes to the function.
    return Mapping(
        patterns=patterns or [{}],
        batch_size=int(props.get('BatchSize', DEFAULT_BATCH_SIZE)),
        # -1 is "until the record expires" in AWS: too long for a local tool.
        retries=retries if retries >= 0 else DEFAULT_RETRIES,
        source=f'{path} ({resource})',
    )


def resume_mapping(path: Path = TEMPLATE) -> Mapping:
    """The template's mapping when it has one, else the built-in default."""
    return function_mapping(path, FUNCTION)


def function_mapping(path: Path, function: str) -> Mapping:
    """`function`'s mapping in the template; the resume function has a built-in default."""
    if path.is_file():
        mapping = mapping_from_template(path, function)
        if mapping is not None:
            return mapping
    if function != FUNCTION:
        raise ValueError(f'{path}: no stream mapping feeds the {function} function')
    return Mapping(patterns=[DEFAULT_PATTERN])


# --------------------------------------------------------------------------- the stream


def _jsonable(value: Any) -> Any:
    """boto3's parsed values back as JSON: binary attributes in base64, as in events."""
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def _epoch_seconds(value: Any) -> int | float:
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        seconds = value.timestamp()
    else:
        seconds = float(value)
    return int(seconds) if seconds == int(seconds) else seconds


def lambda_record(record: dict[str, Any], stream_arn: str) -> dict[str, Any]:
    """A GetRecords record as the event source mapping hands it to the function."""
    change = _jsonable({k: v for k, v in record['dynamodb'].items()})
    if 'ApproximateCreationDateTime' in record['dynamodb']:
        change['ApproximateCreationDateTime'] = _epoch_seconds(
            record['dynamodb']['ApproximateCreationDateTime']
        )
    out = {
        'eventID': record['eventID'],
        'eventName': record['eventName'],
        'eventVersion': record['eventVersion'],
        'eventSource': record.get('eventSource', 'aws:dynamodb'),
        'awsRegion': record['awsRegion'],
        'dynamodb': change,
        'eventSourceARN': stream_arn,
    }
    if record.get('userIdentity'):
        out['userIdentity'] = _jsonable(record['userIdentity'])
    return out


@dataclass
class Stream:
    """A table's stream, read shard by shard (parents first), from a checkpoint."""

    client: Any
    arn: str
    checkpoint: dict[str, str] = field(default_factory=dict)

    def shards(self) -> list[dict[str, Any]]:
        shards: list[dict[str, Any]] = []
        start: str | None = None
        while True:
            kwargs: dict[str, Any] = {'StreamArn': self.arn}
            if start:
                kwargs['ExclusiveStartShardId'] = start
            desc = self.client.describe_stream(**kwargs)['StreamDescription']
            shards.extend(desc.get('Shards', []))
            start = desc.get('LastEvaluatedShardId')
            if not start:
                break
        # Parents before children, so each item's records stay in order.
        ids = {s['ShardId'] for s in shards}
        ordered, done = [], set()
        pending = list(shards)
        while pending:
            rest = []
            for s in pending:
                parent = s.get('ParentShardId')
                if parent in ids and parent not in done:
                    rest.append(s)
                else:
                    ordered.append(s)
                    done.add(s['ShardId'])
            if len(rest) == len(pending):
                ordered.extend(rest)
                break
            pending = rest
        return ordered

    def _iterator(self, shard_id: str) -> str | None:
        kwargs: dict[str, Any] = {'StreamArn': self.arn, 'ShardId': shard_id}
        last = self.checkpoint.get(shard_id)
        if last:
            kwargs.update(ShardIteratorType='AFTER_SEQUENCE_NUMBER', SequenceNumber=last)
        else:
            kwargs.update(ShardIteratorType='TRIM_HORIZON')
        return self.client.get_shard_iterator(**kwargs).get('ShardIterator')

    def read(self) -> Iterator[tuple[str, list[dict[str, Any]]]]:
        """(shard id, records as Lambda gets them) for each non-empty GetRecords page of
        what the stream holds now, past the checkpoint. The caller advances the
        checkpoint (`done`) once it has handled a page."""
        for shard in self.shards():
            shard_id = shard['ShardId']
            iterator = self._iterator(shard_id)
            while iterator:
                page = self.client.get_records(ShardIterator=iterator, Limit=GET_RECORDS_LIMIT)
                records = page.get('Records', [])
                if not records:
                    break
                yield shard_id, [lambda_record(r, self.arn) for r in records]
                iterator = page.get('NextShardIterator')

    def done(self, shard_id: str, records: list[dict[str, Any]]) -> None:
        if records:
            self.checkpoint[shard_id] = records[-1]['dynamodb']['SequenceNumber']


def stream_arn(dynamodb: Any, table: str) -> str:
    arn = dynamodb.describe_table(TableName=table)['Table'].get('LatestStreamArn')
    if not arn:
        raise SystemExit(f'table {table} has no stream (template.yaml enables one)')
    return arn


# --------------------------------------------------------------------------- the invocation


class InvokeError(Exception):
    pass


def invoke(url: str, event: dict[str, Any], timeout: float) -> dict[str, Any]:
    """One synchronous Invoke; the function's answer, or InvokeError when the function
    failed (the emulator's X-Amz-Function-Error, or a non-2xx status)."""
    req = urllib.request.Request(
        url,
        data=json.dumps(event).encode(),
        headers={'Content-Type': 'application/json'},
        method='POST',
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            body = resp.read()
            if resp.headers.get('X-Amz-Function-Error'):
                raise InvokeError(f'function error: {body[:500]!r}')
    except urllib.error.HTTPError as e:
        raise InvokeError(f'HTTP {e.code}: {e.read()[:500]!r}') from e
    except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
        raise InvokeError(f'cannot invoke {url}: {e}') from e
    if not body.strip():
        return {}
    try:
        answer = json.loads(body)
    except ValueError as e:
        raise InvokeError(f'not JSON: {body[:500]!r}') from e
    return answer if isinstance(answer, dict) else {}


def _first_failure(batch: list[dict[str, Any]], answer: dict[str, Any]) -> int | None:
    """Index of the earliest record the answer reports failed; None when all succeeded.
    An identifier that names no record of the batch fails the whole batch (as in AWS)."""
    failures = answer.get('batchItemFailures') or []
    if not failures:
        return None
    seqs = [r['dynamodb']['SequenceNumber'] for r in batch]
    index = []
    for f in failures:
        ident = f.get('itemIdentifier') if isinstance(f, dict) else None
        if ident not in seqs:
            return 0
        index.append(seqs.index(ident))
    return min(index)


@dataclass
class Report:
    invocations: int = 0
    delivered: int = 0
    skipped: int = 0
    retried: int = 0
    dropped: int = 0
    given_up: list[str] = field(default_factory=list)


def deliver(
    batch: list[dict[str, Any]],
    url: str,
    retries: int,
    timeout: float,
    report: Report,
    log: Callable[[str], None],
) -> None:
    """Invokes the function with a batch; re-sends from the earliest failed record on,
    up to `retries` times, then gives those records up."""
    attempt = 0
    while batch:
        report.invocations += 1
        try:
            answer = invoke(url, {'Records': batch}, timeout)
            failed = _first_failure(batch, answer)
            reason = f'batchItemFailures {answer.get("batchItemFailures")}'
        except InvokeError as e:
            failed, reason = 0, str(e)
        if failed is None:
            report.delivered += len(batch)
            return
        report.delivered += failed
        batch = batch[failed:]
        if attempt >= retries:
            seqs = [r['dynamodb']['SequenceNumber'] for r in batch]
            log(f'giving up on {len(batch)} record(s) after {attempt} retries: {reason}')
            report.given_up.extend(seqs)
            return
        attempt += 1
        report.retried += 1
        log(f'retry {attempt}/{retries} from {batch[0]["dynamodb"]["SequenceNumber"]}: {reason}')
        time.sleep(min(0.2 * 2**attempt, 2.0))


def _chunks(items: list[Any], size: int) -> Iterable[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def drain(
    stream: Stream,
    mapping: Mapping | None,
    url: str | None,
    batch_size: int,
    retries: int,
    timeout: float,
    report: Report,
    log: Callable[[str], None],
    dump: Callable[[dict[str, Any]], None] | None = None,
    stopping: Callable[[], bool] = lambda: False,
    handled: Callable[[], None] = lambda: None,
    drop: Callable[[dict[str, Any]], bool] = lambda _: False,
) -> None:
    """Everything the stream holds now: filtered (unless `mapping` is None), batched, and
    invoked (or dumped). After each GetRecords page, the checkpoint moves past it
    (`handled` is told) and the drain ends early if `stopping`. Records that pass the
    filter but `drop` picks are lost, as records a mapping gave up on."""
    for shard_id, records in stream.read():
        passing = [r for r in records if mapping is None or passes(mapping.patterns, r)]
        report.skipped += len(records) - len(passing)
        kept = [r for r in passing if not drop(r)]
        report.dropped += len(passing) - len(kept)
        passing = kept
        for batch in _chunks(passing, batch_size):
            if dump is not None:
                dump({'Records': batch})
                report.delivered += len(batch)
            else:
                assert url is not None
                deliver(batch, url, retries, timeout, report, log)
        stream.done(shard_id, records)
        handled()
        if stopping():
            return


# --------------------------------------------------------------------------- the command


def _load_checkpoint(path: Path | None, arn: str) -> dict[str, str]:
    if path is None or not path.is_file():
        return {}
    data = json.loads(path.read_text() or '{}')
    # A checkpoint of another stream (a re-created table) does not apply.
    return dict(data.get('shards', {})) if data.get('stream') == arn else {}


def _save_checkpoint(path: Path | None, arn: str, checkpoint: dict[str, str]) -> None:
    if path is not None:
        path.write_text(json.dumps({'stream': arn, 'shards': checkpoint}, indent=2) + '\n')


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description='Feed a DynamoDB Local table stream to a stream-fed function under '
        '`cargo lambda watch`, as the event source mapping does in AWS.'
    )
    p.add_argument('--endpoint', default=os.environ.get('AWS_ENDPOINT_URL_DYNAMODB', 'http://127.0.0.1:8000'),
                   help='DynamoDB (Local) endpoint [AWS_ENDPOINT_URL_DYNAMODB]')
    p.add_argument('--table', default=os.environ.get('HARNESS_TABLE'), help='table name [HARNESS_TABLE]')
    p.add_argument('--region', default=os.environ.get('AWS_REGION', 'us-east-1'))
    p.add_argument('--function', default=FUNCTION,
                   help='the stream-fed function (its binary name): resume (default) or notifier')
    target = p.add_mutually_exclusive_group()
    target.add_argument('--invoke-url', default=os.environ.get('HARNESS_RESUME_INVOKE_URL'),
                        help='the Invoke URL of the function [HARNESS_RESUME_INVOKE_URL]')
    target.add_argument('--invoke-port', type=int,
                        help='the `cargo lambda watch` port: invokes '
                        'http://127.0.0.1:PORT/2015-03-31/functions/<function>/invocations')
    p.add_argument('--template', type=Path, default=TEMPLATE, help='where the mapping filter is read')
    p.add_argument('--no-filter', action='store_true', help='pass every record (with --dump: capture)')
    p.add_argument('--batch-size', type=int, help="records per invocation (default: the mapping's, or 100)")
    p.add_argument('--retries', type=int,
                   help="retries of failed records (default: the mapping's MaximumRetryAttempts, or 3)")
    p.add_argument('--timeout', type=float, default=900.0,
                   help='longest wait for one invocation, s (the first one may build the function)')
    p.add_argument('--checkpoint', type=Path, help='file keeping where the last run stopped')
    p.add_argument('--latest', action='store_true',
                   help='without a checkpoint, skip what the stream holds already (StartingPosition '
                   'LATEST, as template.yaml; the default is TRIM_HORIZON: every record kept)')
    p.add_argument('--follow', action='store_true', help='keep polling until interrupted')
    p.add_argument('--interval', type=float, default=1.0, help='seconds between polls with --follow')
    p.add_argument('--dump', action='store_true', help='print the events as JSON instead of invoking')
    p.add_argument('--drop-task', metavar='TASK_ID', action='append', default=[],
                   help="lose the records of this task's item (a wake-up the mapping gave up on)")
    p.add_argument('--quiet', action='store_true')
    args = p.parse_args(argv)
    if not args.table:
        p.error('--table (or HARNESS_TABLE) is required')
    if args.invoke_port:
        args.invoke_url = (f'http://127.0.0.1:{args.invoke_port}/2015-03-31/functions/'
                           f'{args.function}/invocations')
    if not args.dump and not args.invoke_url:
        p.error('--invoke-port or --invoke-url (or HARNESS_RESUME_INVOKE_URL) is required unless --dump')
    return args


def main(argv: list[str] | None = None) -> int:
    import boto3

    args = parse_args(argv)

    def log(msg: str) -> None:
        if not args.quiet:
            print(f'stream_tool: {msg}', file=sys.stderr, flush=True)

    session = boto3.session.Session(
        aws_access_key_id=os.environ.get('AWS_ACCESS_KEY_ID', 'test'),
        aws_secret_access_key=os.environ.get('AWS_SECRET_ACCESS_KEY', 'test'),
        region_name=args.region,
    )
    dynamodb = session.client('dynamodb', endpoint_url=args.endpoint)
    streams = session.client('dynamodbstreams', endpoint_url=args.endpoint)
    arn = stream_arn(dynamodb, args.table)
    mapping = None if args.no_filter else function_mapping(args.template, args.function)
    if mapping is not None:
        log(f'filter from {mapping.source}: {json.dumps(mapping.patterns)}')
    batch_size = args.batch_size or (mapping.batch_size if mapping else DEFAULT_BATCH_SIZE)
    retries = args.retries if args.retries is not None else (
        mapping.retries if mapping else DEFAULT_RETRIES)
    stream = Stream(streams, arn, _load_checkpoint(args.checkpoint, arn))
    if args.latest and not stream.checkpoint:
        # Past everything there is now: nothing delivered.
        drain(stream, None, None, batch_size, 0, args.timeout, Report(), log, dump=lambda _: None)
    report = Report()
    dump = (lambda event: print(json.dumps(event, indent=2), flush=True)) if args.dump else None

    # SIGTERM: stop once the page in hand is handled, its checkpoint saved.
    stop: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _frame: stop.append(signum))

    def save() -> None:
        _save_checkpoint(args.checkpoint, arn, stream.checkpoint)

    lost = {f'TASK#{task_id}' for task_id in args.drop_task}

    def dropped(record: dict[str, Any]) -> bool:
        return record['dynamodb']['Keys']['pk'].get('S') in lost

    try:
        while not stop:
            drain(stream, mapping, args.invoke_url, batch_size, retries, args.timeout,
                  report, log, dump, stopping=lambda: bool(stop), handled=save, drop=dropped)
            save()
            if not args.follow:
                break
            until = time.monotonic() + args.interval
            while not stop and time.monotonic() < until:
                time.sleep(min(0.1, args.interval))
    except KeyboardInterrupt:
        # At once: the page in hand is sent again next time (delivery is at least once).
        save()
    log(
        f'{report.delivered} record(s) delivered in {report.invocations} invocation(s), '
        f'{report.skipped} filtered out, {report.dropped} dropped, {report.retried} retried, '
        f'{len(report.given_up)} given up'
    )
    return 1 if report.given_up else 0


if __name__ == '__main__':
    sys.exit(main())
