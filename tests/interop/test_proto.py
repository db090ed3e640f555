"""The vendored proto is the pinned a2a-sdk's: no drift between our gRPC binding and the
official SDK's.

common/protocol/proto/a2a.proto (from which common/protocol/build.rs generates the
`lf.a2a.v1` service harness-local serves) is compiled with the SDK's own grpcio-tools to
a FileDescriptorSet and compared with the descriptor the SDK's generated
`a2a.types.a2a_pb2` was built from: every message, enum and the service, field by field
with their options (the `google.api.http` routes, `field_behavior`). Left out: the file's
options (each language's package names, which the SDK's copy sets differently) and
source info (comments, line numbers).
"""

from __future__ import annotations

import difflib

from importlib import resources
from pathlib import Path

from google.api import annotations_pb2, client_pb2, field_behavior_pb2  # noqa: F401 - option extensions
from google.protobuf import descriptor_pb2, text_format
from grpc_tools import protoc

from a2a.types import a2a_pb2


PROTO_DIR = Path(__file__).resolve().parents[2] / 'common' / 'protocol' / 'proto'


def vendored_descriptor(tmp_path: Path) -> descriptor_pb2.FileDescriptorProto:
    out = tmp_path / 'a2a.pb'
    well_known = resources.files('grpc_tools') / '_proto'
    rc = protoc.main([
        'protoc', f'-I{PROTO_DIR}', f'-I{well_known}', '--include_imports',
        f'--descriptor_set_out={out}', 'a2a.proto',
    ])
    assert rc == 0, f'protoc failed on {PROTO_DIR / "a2a.proto"} ({rc})'
    files = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file
    ours = [f for f in files if f.package == 'lf.a2a.v1']
    assert len(ours) == 1, [f.name for f in files]
    return ours[0]


def sdk_descriptor() -> descriptor_pb2.FileDescriptorProto:
    theirs = descriptor_pb2.FileDescriptorProto()
    a2a_pb2.DESCRIPTOR.CopyToProto(theirs)
    return theirs


def comparable(file: descriptor_pb2.FileDescriptorProto) -> descriptor_pb2.FileDescriptorProto:
    kept = descriptor_pb2.FileDescriptorProto()
    kept.CopyFrom(file)
    kept.ClearField('options')
    kept.ClearField('source_code_info')
    return kept


def by_name(items) -> dict[str, str]:
    return {item.name: text_format.MessageToString(item) for item in items}


def test_the_vendored_proto_is_the_pinned_sdks_service_and_messages(tmp_path: Path):
    ours, theirs = vendored_descriptor(tmp_path), sdk_descriptor()
    assert (ours.name, ours.package, ours.syntax) == (theirs.name, theirs.package, theirs.syntax)
    assert list(ours.dependency) == list(theirs.dependency)
    for kind in ('message_type', 'enum_type', 'service'):
        mine, sdk = by_name(getattr(ours, kind)), by_name(getattr(theirs, kind))
        assert sorted(mine) == sorted(sdk), (
            f'{kind}: only ours {sorted(set(mine) - set(sdk))}, '
            f'only the SDK\'s {sorted(set(sdk) - set(mine))}'
        )
        for name in mine:
            assert mine[name] == sdk[name], f'{kind} {name} differs (ours -, the SDK\'s +):\n' + (
                '\n'.join(difflib.unified_diff(
                    mine[name].splitlines(), sdk[name].splitlines(), lineterm='', n=2)))
    # Nothing else in the file (extensions, edition, ...) differs either.
    assert comparable(ours) == comparable(theirs)
