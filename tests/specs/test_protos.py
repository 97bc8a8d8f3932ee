"""The protos under specs/proto compile (protoc + grpc + mypy-protobuf) and keep the upstream
wire contract: package and method names, field numbers, wire bytes and proto3 JSON names.

Expected bytes are built here from the upstream field numbers with a tiny encoder, independent
of the generated descriptors, so a wrong field number or type in a .proto fails a test.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from concurrent import futures
from importlib import resources
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import grpc
import pytest
from google.protobuf import any_pb2, duration_pb2, json_format, struct_pb2, wrappers_pb2
from grpc_tools import protoc  # type: ignore[import-untyped]

PROTO_ROOT = Path(__file__).resolve().parents[2] / "specs" / "proto"
WELL_KNOWN_INCLUDE = Path(str(resources.files("grpc_tools") / "_proto"))
BIN_DIR = Path(sys.executable).parent

# Top-level Python packages the generated code lives in. They are stashed from sys.modules while
# the test imports its own freshly generated copies, and restored afterwards.
GENERATED_ROOTS = ("envoy", "ratelimit", "google.rpc")

MODULES = {
    "rls": "envoy.service.ratelimit.v3.rls_pb2",
    "rls_grpc": "envoy.service.ratelimit.v3.rls_pb2_grpc",
    "common": "envoy.extensions.common.ratelimit.v3.ratelimit_pb2",
    "unit": "envoy.type.v3.ratelimit_unit_pb2",
    "semver": "envoy.type.v3.semantic_version_pb2",
    "base": "envoy.config.core.v3.base_pb2",
    "discovery": "envoy.service.discovery.v3.discovery_pb2",
    "ads": "envoy.service.discovery.v3.ads_pb2",
    "ads_grpc": "envoy.service.discovery.v3.ads_pb2_grpc",
    "status": "google.rpc.status_pb2",
    "rls_conf": "ratelimit.config.ratelimit.v3.rls_conf_pb2",
    "rls_conf_ds": "ratelimit.service.ratelimit.v3.rls_conf_ds_pb2",
    "rls_conf_ds_grpc": "ratelimit.service.ratelimit.v3.rls_conf_ds_pb2_grpc",
}

RLS_CONFIG_TYPE_URL = "type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig"


def _proto_files() -> list[str]:
    return sorted(p.relative_to(PROTO_ROOT).as_posix() for p in PROTO_ROOT.rglob("*.proto"))


def _plugin(name: str) -> str:
    path = BIN_DIR / name
    if not path.exists():
        pytest.fail(f"{name} not found next to {sys.executable}: install mypy-protobuf")
    return str(path)


def compile_protos(out: Path) -> None:
    """Run protoc with the grpc and mypy-protobuf plugins on every proto into `out`."""
    args = [
        "grpc_tools.protoc",
        f"-I{PROTO_ROOT}",
        f"-I{WELL_KNOWN_INCLUDE}",
        f"--python_out={out}",
        f"--grpc_python_out={out}",
        f"--mypy_out={out}",
        f"--mypy_grpc_out={out}",
        f"--plugin=protoc-gen-mypy={_plugin('protoc-gen-mypy')}",
        f"--plugin=protoc-gen-mypy_grpc={_plugin('protoc-gen-mypy_grpc')}",
        *_proto_files(),
    ]
    assert protoc.main(args) == 0, "protoc failed (see captured stderr)"


def _is_generated(name: str) -> bool:
    return any(name == root or name.startswith(root + ".") for root in GENERATED_ROOTS)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    """The generated modules, compiled into a temporary directory and imported from there."""
    out = tmp_path_factory.mktemp("proto_out")
    compile_protos(out)
    stashed = {name: mod for name, mod in sys.modules.items() if _is_generated(name)}
    for name in stashed:
        del sys.modules[name]
    sys.path.insert(0, str(out))
    importlib.invalidate_caches()
    try:
        modules: dict[str, Any] = {
            key: importlib.import_module(name) for key, name in MODULES.items()
        }
        yield SimpleNamespace(out=out, **modules)
    finally:
        sys.path.remove(str(out))
        for name in [name for name in sys.modules if _is_generated(name)]:
            del sys.modules[name]
        sys.modules.update(stashed)
        importlib.invalidate_caches()


# --- a minimal protobuf encoder for expected bytes -------------------------------------------


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def vint(number: int, value: int) -> bytes:
    """A varint field (wire type 0): int32/uint32/uint64/bool/enum."""
    return _varint(number << 3) + _varint(value)


def ld(number: int, payload: bytes | str) -> bytes:
    """A length-delimited field (wire type 2): string, bytes, sub-message."""
    data = payload.encode() if isinstance(payload, str) else payload
    return _varint(number << 3 | 2) + _varint(len(data)) + data


# --- names, packages, services ----------------------------------------------------------------


def test_every_proto_file_is_compiled_with_stubs(generated: SimpleNamespace) -> None:
    files = _proto_files()
    assert "envoy/service/ratelimit/v3/rls.proto" in files
    for rel in files:
        stem = generated.out / rel.removesuffix(".proto")
        for suffix in ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py", "_pb2_grpc.pyi"):
            assert Path(f"{stem}{suffix}").is_file(), f"{rel}: no {suffix}"


def test_package_of_each_file_mirrors_its_directory(generated: SimpleNamespace) -> None:
    for key in MODULES:
        if key.endswith("_grpc"):
            continue
        file_descriptor = getattr(generated, key).DESCRIPTOR
        directory = file_descriptor.name.rsplit("/", 1)[0]
        assert file_descriptor.package == directory.replace("/", "."), file_descriptor.name


def test_rate_limit_service_method(generated: SimpleNamespace) -> None:
    service = generated.rls.DESCRIPTOR.services_by_name["RateLimitService"]
    assert service.full_name == "envoy.service.ratelimit.v3.RateLimitService"
    method = service.methods_by_name["ShouldRateLimit"]
    assert method.input_type.full_name == "envoy.service.ratelimit.v3.RateLimitRequest"
    assert method.output_type.full_name == "envoy.service.ratelimit.v3.RateLimitResponse"
    assert not method.client_streaming and not method.server_streaming


class _RecordingChannel:
    """Stands in for a grpc.Channel and records the method paths a generated stub binds."""

    def __init__(self) -> None:
        self.paths: list[tuple[str, str]] = []

    def _record(self, kind: str) -> Callable[..., object]:
        def bind(path: str, *args: object, **kwargs: object) -> object:
            self.paths.append((kind, path))
            return object()

        return bind

    def __getattr__(self, kind: str) -> Callable[..., object]:
        return self._record(kind)


def test_generated_stubs_bind_the_upstream_paths(generated: SimpleNamespace) -> None:
    channel = _RecordingChannel()
    generated.rls_grpc.RateLimitServiceStub(channel)
    generated.ads_grpc.AggregatedDiscoveryServiceStub(channel)
    generated.rls_conf_ds_grpc.RateLimitConfigDiscoveryServiceStub(channel)
    assert channel.paths == [
        ("unary_unary", "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"),
        (
            "stream_stream",
            "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources",
        ),
        (
            "stream_stream",
            "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources",
        ),
        (
            "stream_stream",
            "/ratelimit.service.ratelimit.v3.RateLimitConfigDiscoveryService/StreamRlsConfigs",
        ),
        (
            "unary_unary",
            "/ratelimit.service.ratelimit.v3.RateLimitConfigDiscoveryService/FetchRlsConfigs",
        ),
    ]


def test_should_rate_limit_over_a_real_channel(generated: SimpleNamespace) -> None:
    rls, rls_grpc, common = generated.rls, generated.rls_grpc, generated.common
    seen: list[bytes] = []

    class Servicer:  # duck-typed RateLimitServiceServicer (the generated base is only an ABC)
        def ShouldRateLimit(self, request: Any, context: Any) -> Any:
            seen.append(request.SerializeToString())
            return rls.RateLimitResponse(
                overall_code=rls.RateLimitResponse.OVER_LIMIT,
                statuses=[rls.RateLimitResponse.DescriptorStatus(code=rls.RateLimitResponse.OK)],
            )

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    rls_grpc.add_RateLimitServiceServicer_to_server(Servicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            request = rls.RateLimitRequest(
                domain="d",
                descriptors=[
                    common.RateLimitDescriptor(
                        entries=[common.RateLimitDescriptor.Entry(key="k", value="v")]
                    )
                ],
            )
            # The path as a plain client would call it, without the generated stub.
            call = channel.unary_unary(
                "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit",
                request_serializer=rls.RateLimitRequest.SerializeToString,
                response_deserializer=rls.RateLimitResponse.FromString,
            )
            response = call(request, timeout=5)
            stub_response = rls_grpc.RateLimitServiceStub(channel).ShouldRateLimit(
                request, timeout=5
            )
    finally:
        server.stop(grace=None)
    assert response.overall_code == rls.RateLimitResponse.OVER_LIMIT
    assert stub_response == response
    assert seen == [request.SerializeToString()] * 2


# --- field numbers ------------------------------------------------------------------------------

# Upstream field numbers (envoy data-plane-api and envoyproxy/ratelimit), by message full name.
# Every field of the declared messages is listed, so an added, renamed or renumbered field fails.
FIELD_NUMBERS: dict[str, dict[str, int]] = {
    "envoy.service.ratelimit.v3.RateLimitRequest": {
        "domain": 1,
        "descriptors": 2,
        "hits_addend": 3,
    },
    "envoy.service.ratelimit.v3.RateLimitResponse": {
        "overall_code": 1,
        "statuses": 2,
        "response_headers_to_add": 3,
        "request_headers_to_add": 4,
        "raw_body": 5,
        "dynamic_metadata": 6,
        "quota": 7,
    },
    "envoy.service.ratelimit.v3.RateLimitResponse.RateLimit": {
        "name": 3,
        "requests_per_unit": 1,
        "unit": 2,
    },
    "envoy.service.ratelimit.v3.RateLimitResponse.Quota": {
        "requests": 1,
        "valid_until": 2,
        "id": 3,
    },
    "envoy.service.ratelimit.v3.RateLimitResponse.DescriptorStatus": {
        "code": 1,
        "current_limit": 2,
        "limit_remaining": 3,
        "duration_until_reset": 4,
        "quota": 5,
    },
    "envoy.extensions.common.ratelimit.v3.RateLimitDescriptor": {
        "entries": 1,
        "limit": 2,
        "hits_addend": 3,
    },
    "envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.Entry": {"key": 1, "value": 2},
    "envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.RateLimitOverride": {
        "requests_per_unit": 1,
        "unit": 2,
    },
    "envoy.config.core.v3.HeaderValue": {"key": 1, "value": 2, "raw_value": 3},
    "envoy.config.core.v3.Locality": {"region": 1, "zone": 2, "sub_zone": 3},
    "envoy.config.core.v3.BuildVersion": {"version": 1, "metadata": 2},
    "envoy.config.core.v3.Extension": {
        "name": 1,
        "category": 2,
        "type_descriptor": 3,
        "version": 4,
        "disabled": 5,
        "type_urls": 6,
    },
    "envoy.config.core.v3.Node": {
        "id": 1,
        "cluster": 2,
        "metadata": 3,
        "locality": 4,
        "user_agent_name": 6,
        "user_agent_version": 7,
        "user_agent_build_version": 8,
        "extensions": 9,
        "client_features": 10,
    },
    "envoy.config.core.v3.Metadata": {"filter_metadata": 1, "typed_filter_metadata": 2},
    "envoy.config.core.v3.ControlPlane": {"identifier": 1},
    "envoy.type.v3.SemanticVersion": {"major_number": 1, "minor_number": 2, "patch": 3},
    "envoy.service.discovery.v3.DiscoveryRequest": {
        "version_info": 1,
        "node": 2,
        "resource_names": 3,
        "type_url": 4,
        "response_nonce": 5,
        "error_detail": 6,
        "resource_locators": 7,
    },
    "envoy.service.discovery.v3.DiscoveryResponse": {
        "version_info": 1,
        "resources": 2,
        "canary": 3,
        "type_url": 4,
        "nonce": 5,
        "control_plane": 6,
    },
    "envoy.service.discovery.v3.DeltaDiscoveryRequest": {
        "node": 1,
        "type_url": 2,
        "resource_names_subscribe": 3,
        "resource_names_unsubscribe": 4,
        "initial_resource_versions": 5,
        "response_nonce": 6,
        "error_detail": 7,
        "resource_locators_subscribe": 8,
        "resource_locators_unsubscribe": 9,
    },
    "envoy.service.discovery.v3.DeltaDiscoveryResponse": {
        "system_version_info": 1,
        "resources": 2,
        "type_url": 4,
        "nonce": 5,
        "removed_resources": 6,
        "control_plane": 7,
        "removed_resource_names": 8,
    },
    "envoy.service.discovery.v3.ResourceLocator": {"name": 1, "dynamic_parameters": 2},
    "envoy.service.discovery.v3.ResourceName": {"name": 1, "dynamic_parameter_constraints": 2},
    "envoy.service.discovery.v3.Resource": {
        "version": 1,
        "resource": 2,
        "name": 3,
        "aliases": 4,
        "ttl": 6,
        "cache_control": 7,
        "resource_name": 8,
        "metadata": 9,
    },
    "envoy.service.discovery.v3.Resource.CacheControl": {"do_not_cache": 1},
    "envoy.service.discovery.v3.DynamicParameterConstraints": {
        "constraint": 1,
        "or_constraints": 2,
        "and_constraints": 3,
        "not_constraints": 4,
    },
    "envoy.service.discovery.v3.DynamicParameterConstraints.SingleConstraint": {
        "key": 1,
        "value": 2,
        "exists": 3,
    },
    "envoy.service.discovery.v3.DynamicParameterConstraints.ConstraintList": {"constraints": 1},
    "google.rpc.Status": {"code": 1, "message": 2, "details": 3},
    "ratelimit.config.ratelimit.v3.RateLimitConfig": {"name": 1, "domain": 2, "descriptors": 3},
    "ratelimit.config.ratelimit.v3.RateLimitDescriptor": {
        "key": 1,
        "value": 2,
        "rate_limit": 3,
        "descriptors": 4,
        "shadow_mode": 5,
        "detailed_metric": 6,
        "quota_mode": 7,
        "metadata": 8,
    },
    "ratelimit.config.ratelimit.v3.RateLimitPolicy": {
        "unit": 1,
        "requests_per_unit": 2,
        "unlimited": 3,
        "name": 4,
        "replaces": 5,
    },
    "ratelimit.config.ratelimit.v3.RateLimitReplace": {"name": 1},
}

ENUM_VALUES: dict[str, dict[str, int]] = {
    "envoy.service.ratelimit.v3.RateLimitResponse.Code": {"UNKNOWN": 0, "OK": 1, "OVER_LIMIT": 2},
    "envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit": {
        "UNKNOWN": 0,
        "SECOND": 1,
        "MINUTE": 2,
        "HOUR": 3,
        "DAY": 4,
        "MONTH": 5,
        "YEAR": 6,
        "WEEK": 7,
    },
    "envoy.type.v3.RateLimitUnit": {
        "UNKNOWN": 0,
        "SECOND": 1,
        "MINUTE": 2,
        "HOUR": 3,
        "DAY": 4,
        "MONTH": 5,
        "YEAR": 6,
    },
    "ratelimit.config.ratelimit.v3.RateLimitUnit": {
        "UNKNOWN": 0,
        "SECOND": 1,
        "MINUTE": 2,
        "HOUR": 3,
        "DAY": 4,
        "MONTH": 5,
        "YEAR": 6,
        "WEEK": 7,
    },
}


def _pool(generated: SimpleNamespace) -> Any:
    return generated.rls.DESCRIPTOR.pool


@pytest.mark.parametrize("message", sorted(FIELD_NUMBERS))
def test_field_numbers_match_upstream(generated: SimpleNamespace, message: str) -> None:
    descriptor = _pool(generated).FindMessageTypeByName(message)
    actual = {field.name: field.number for field in descriptor.fields}
    assert actual == FIELD_NUMBERS[message]


@pytest.mark.parametrize("enum", sorted(ENUM_VALUES))
def test_enum_values_match_upstream(generated: SimpleNamespace, enum: str) -> None:
    descriptor = _pool(generated).FindEnumTypeByName(enum)
    assert {value.name: value.number for value in descriptor.values} == ENUM_VALUES[enum]


def test_field_types_that_matter_on_the_wire(generated: SimpleNamespace) -> None:
    pool = _pool(generated)

    def field(message: str, name: str) -> Any:
        return pool.FindMessageTypeByName(message).fields_by_name[name]

    hits = field("envoy.extensions.common.ratelimit.v3.RateLimitDescriptor", "hits_addend")
    assert hits.message_type.full_name == "google.protobuf.UInt64Value"
    override_unit = field(
        "envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.RateLimitOverride", "unit"
    )
    assert override_unit.enum_type.full_name == "envoy.type.v3.RateLimitUnit"
    headers = field("envoy.service.ratelimit.v3.RateLimitResponse", "response_headers_to_add")
    assert headers.message_type.full_name == "envoy.config.core.v3.HeaderValue"
    assert field("envoy.service.ratelimit.v3.RateLimitRequest", "hits_addend").type == (
        hits.TYPE_UINT32
    )
    quota = pool.FindMessageTypeByName("envoy.service.ratelimit.v3.RateLimitResponse.Quota")
    assert [f.name for f in quota.oneofs_by_name["expiration_specifier"].fields] == ["valid_until"]
    node = pool.FindMessageTypeByName("envoy.config.core.v3.Node")
    assert [f.name for f in node.oneofs_by_name["user_agent_version_type"].fields] == [
        "user_agent_version",
        "user_agent_build_version",
    ]
    error_detail = field("envoy.service.discovery.v3.DiscoveryRequest", "error_detail")
    assert error_detail.message_type.full_name == "google.rpc.Status"


# --- serialisation ------------------------------------------------------------------------------


def _request(generated: SimpleNamespace) -> Any:
    rls, common, unit = generated.rls, generated.common, generated.unit
    Descriptor = common.RateLimitDescriptor
    return rls.RateLimitRequest(
        domain="foo",
        descriptors=[
            Descriptor(
                entries=[Descriptor.Entry(key="k", value="v")],
                hits_addend=wrappers_pb2.UInt64Value(value=0),
            ),
            Descriptor(
                entries=[Descriptor.Entry(key="a", value="")],
                limit=Descriptor.RateLimitOverride(requests_per_unit=10, unit=unit.MINUTE),
                hits_addend=wrappers_pb2.UInt64Value(value=5),
            ),
        ],
        hits_addend=3,
    )


def test_request_wire_bytes(generated: SimpleNamespace) -> None:
    request = _request(generated)
    expected = (
        ld(1, "foo")
        + ld(2, ld(1, ld(1, "k") + ld(2, "v")) + ld(3, b""))
        + ld(2, ld(1, ld(1, "a")) + ld(2, vint(1, 10) + vint(2, 2)) + ld(3, vint(1, 5)))
        + vint(3, 3)
    )
    assert request.SerializeToString() == expected
    # reference/ratelimit.md §9: bytes verified against envoy-data-plane for the first descriptor.
    del request.descriptors[1]
    assert request.SerializeToString().hex() == "0a03666f6f120a0a060a016b1201761a001803"


def test_request_round_trip_keeps_wrapper_presence(generated: SimpleNamespace) -> None:
    request = _request(generated)
    parsed = generated.rls.RateLimitRequest.FromString(request.SerializeToString())
    assert parsed == request
    first, second = parsed.descriptors
    assert first.HasField("hits_addend") and first.hits_addend.value == 0
    assert second.HasField("limit") and second.limit.requests_per_unit == 10
    assert second.limit.unit == generated.unit.MINUTE
    assert second.hits_addend.value == 5
    assert [(e.key, e.value) for e in second.entries] == [("a", "")]
    assert not generated.common.RateLimitDescriptor().HasField("hits_addend")


def _response(generated: SimpleNamespace) -> Any:
    rls, base = generated.rls, generated.base
    Response = rls.RateLimitResponse
    return Response(
        overall_code=Response.OVER_LIMIT,
        statuses=[
            Response.DescriptorStatus(
                code=Response.OVER_LIMIT,
                current_limit=Response.RateLimit(
                    name="r", requests_per_unit=1, unit=Response.RateLimit.WEEK
                ),
                limit_remaining=4,
                duration_until_reset=duration_pb2.Duration(seconds=26),
            )
        ],
        response_headers_to_add=[base.HeaderValue(key="x", value="1")],
        raw_body=b"no",
        quota=Response.Quota(requests=1, id="q"),
    )


def test_response_wire_bytes(generated: SimpleNamespace) -> None:
    status = (
        vint(1, 2) + ld(2, vint(1, 1) + vint(2, 7) + ld(3, "r")) + vint(3, 4) + ld(4, vint(1, 26))
    )
    expected = (
        vint(1, 2)
        + ld(2, status)
        + ld(3, ld(1, "x") + ld(2, "1"))
        + ld(5, b"no")
        + ld(7, vint(1, 1) + ld(3, "q"))
    )
    response = _response(generated)
    assert response.SerializeToString() == expected
    assert generated.rls.RateLimitResponse.FromString(expected) == response


def _compact(text: str) -> str:
    return json.dumps(json.loads(text), separators=(",", ":"))


def test_response_json_uses_lower_camel_names_as_upstream(generated: SimpleNamespace) -> None:
    Response = generated.rls.RateLimitResponse
    response = Response(
        overall_code=Response.OVER_LIMIT,
        statuses=[
            Response.DescriptorStatus(
                code=Response.OVER_LIMIT,
                current_limit=Response.RateLimit(
                    requests_per_unit=1, unit=Response.RateLimit.MINUTE
                ),
                limit_remaining=0,
                duration_until_reset=duration_pb2.Duration(seconds=26),
            )
        ],
    )
    # reference/ratelimit.md §1.8, example output of the Go server's /json endpoint.
    assert _compact(json_format.MessageToJson(response)) == (
        '{"overallCode":"OVER_LIMIT","statuses":[{"code":"OVER_LIMIT",'
        '"currentLimit":{"requestsPerUnit":1,"unit":"MINUTE"},"durationUntilReset":"26s"}]}'
    )
    assert _compact(json_format.MessageToJson(Response(overall_code=Response.OK))) == (
        '{"overallCode":"OK"}'
    )


def test_request_json_names_and_uint64_wrapper(generated: SimpleNamespace) -> None:
    rls = generated.rls
    as_json = json.loads(json_format.MessageToJson(_request(generated)))
    assert as_json == {
        "domain": "foo",
        "descriptors": [
            {"entries": [{"key": "k", "value": "v"}], "hitsAddend": "0"},
            {
                "entries": [{"key": "a"}],
                "limit": {"requestsPerUnit": 10, "unit": "MINUTE"},
                "hitsAddend": "5",
            },
        ],
        "hitsAddend": 3,
    }
    camel = json_format.Parse(
        '{"domain":"d","hitsAddend":2,"descriptors":[{"entries":[{"key":"k","value":"v"}],'
        '"limit":{"requestsPerUnit":3,"unit":2},"hitsAddend":"0"}]}',
        rls.RateLimitRequest(),
    )
    original = json_format.Parse(
        '{"domain":"d","hits_addend":2,"descriptors":[{"entries":[{"key":"k","value":"v"}],'
        '"limit":{"requests_per_unit":3,"unit":"MINUTE"},"hits_addend":0}]}',
        rls.RateLimitRequest(),
    )
    assert camel == original
    assert camel.descriptors[0].HasField("hits_addend")
    with pytest.raises(json_format.ParseError):
        json_format.Parse('{"domain":"d","bogus":1}', rls.RateLimitRequest())


# --- xDS ----------------------------------------------------------------------------------------


def _rls_config(generated: SimpleNamespace) -> Any:
    conf = generated.rls_conf
    metadata = struct_pb2.Struct()
    metadata.update({"a": "b"})
    return conf.RateLimitConfig(
        name="n",
        domain="d",
        descriptors=[
            conf.RateLimitDescriptor(
                key="k",
                rate_limit=conf.RateLimitPolicy(unit=conf.WEEK, requests_per_unit=3),
                shadow_mode=True,
                detailed_metric=True,
                quota_mode=True,
                metadata=metadata,
            ),
            conf.RateLimitDescriptor(
                key="s",
                descriptors=[
                    conf.RateLimitDescriptor(
                        key="t",
                        rate_limit=conf.RateLimitPolicy(
                            unlimited=True,
                            name="p",
                            replaces=[conf.RateLimitReplace(name="q")],
                        ),
                    )
                ],
            ),
        ],
    )


def test_rls_config_wire_bytes(generated: SimpleNamespace) -> None:
    struct_a_b = ld(1, ld(1, "a") + ld(2, ld(3, "b")))  # Struct{fields{"a": string_value "b"}}
    first = (
        ld(1, "k")
        + ld(3, vint(1, 7) + vint(2, 3))
        + vint(5, 1)
        + vint(6, 1)
        + vint(7, 1)
        + ld(8, struct_a_b)
    )
    policy = vint(3, 1) + ld(4, "p") + ld(5, ld(1, "q"))
    second = ld(1, "s") + ld(4, ld(1, "t") + ld(3, policy))
    expected = ld(1, "n") + ld(2, "d") + ld(3, first) + ld(3, second)
    assert _rls_config(generated).SerializeToString() == expected


def test_rls_config_travels_in_a_discovery_response(generated: SimpleNamespace) -> None:
    discovery, conf = generated.discovery, generated.rls_conf
    config = _rls_config(generated)
    packed = any_pb2.Any()
    packed.Pack(config)
    assert packed.type_url == RLS_CONFIG_TYPE_URL
    response = discovery.DiscoveryResponse(
        version_info="v1",
        resources=[packed],
        type_url=RLS_CONFIG_TYPE_URL,
        nonce="n1",
        control_plane=generated.base.ControlPlane(identifier="cp"),
    )
    parsed = discovery.DiscoveryResponse.FromString(response.SerializeToString())
    unpacked = conf.RateLimitConfig()
    assert parsed.resources[0].Unpack(unpacked)
    assert unpacked == config
    assert unpacked.descriptors[0].rate_limit.unit == conf.WEEK
    assert conf.RateLimitUnit.Name(unpacked.descriptors[0].rate_limit.unit) == "WEEK"
    assert (parsed.version_info, parsed.nonce, parsed.type_url) == ("v1", "n1", RLS_CONFIG_TYPE_URL)


def test_rls_config_parses_from_json(generated: SimpleNamespace) -> None:
    conf = generated.rls_conf
    parsed = json_format.Parse(
        '{"name":"foo-1","domain":"foo","descriptors":[{"key":"k1","value":"v1",'
        '"rateLimit":{"unit":"MINUTE","requestsPerUnit":3},"shadowMode":true,'
        '"descriptors":[{"key":"k2","rateLimit":{"unlimited":true}}]}]}',
        conf.RateLimitConfig(),
    )
    top = parsed.descriptors[0]
    assert (parsed.name, parsed.domain, top.key, top.value) == ("foo-1", "foo", "k1", "v1")
    assert (top.rate_limit.unit, top.rate_limit.requests_per_unit) == (conf.MINUTE, 3)
    assert top.shadow_mode and top.descriptors[0].rate_limit.unlimited


def test_discovery_request_ack_and_nack(generated: SimpleNamespace) -> None:
    discovery, base, status = generated.discovery, generated.base, generated.status
    metadata = struct_pb2.Struct()
    metadata.update({"k": "v"})
    request = discovery.DiscoveryRequest(
        version_info="1",
        node=base.Node(id="default", metadata=metadata),
        type_url=RLS_CONFIG_TYPE_URL,
        response_nonce="x",
        error_detail=status.Status(code=3, message="e"),
    )
    node = ld(1, "default") + ld(3, ld(1, ld(1, "k") + ld(2, ld(3, "v"))))
    expected = (
        ld(1, "1")
        + ld(2, node)
        + ld(4, RLS_CONFIG_TYPE_URL)
        + ld(5, "x")
        + ld(6, vint(1, 3) + ld(2, "e"))
    )
    assert request.SerializeToString() == expected
    parsed = discovery.DiscoveryRequest.FromString(expected)
    assert parsed.HasField("error_detail") and parsed.error_detail.message == "e"
    ack = discovery.DiscoveryRequest(version_info="1", response_nonce="x")
    assert not ack.HasField("error_detail")
    delta = discovery.DeltaDiscoveryResponse(
        resources=[discovery.Resource(name="r", version="1", resource=any_pb2.Any())],
        removed_resources=["gone"],
        nonce="n",
    )
    assert discovery.DeltaDiscoveryResponse.FromString(delta.SerializeToString()) == delta


# --- typing -------------------------------------------------------------------------------------

_TYPED_CLIENT = """
    from __future__ import annotations

    import grpc
    from google.protobuf import wrappers_pb2

    from envoy.extensions.common.ratelimit.v3 import ratelimit_pb2
    from envoy.service.discovery.v3 import discovery_pb2
    from envoy.service.ratelimit.v3 import rls_pb2, rls_pb2_grpc


    def remaining(channel: grpc.Channel) -> int:
        descriptor = ratelimit_pb2.RateLimitDescriptor(
            entries=[ratelimit_pb2.RateLimitDescriptor.Entry(key="k", value="v")],
            hits_addend=wrappers_pb2.UInt64Value(value=2),
        )
        request = rls_pb2.RateLimitRequest(domain="d", descriptors=[descriptor])
        response = rls_pb2_grpc.RateLimitServiceStub(channel).ShouldRateLimit(request)
        return response.statuses[0].limit_remaining


    def nonce(response: discovery_pb2.DiscoveryResponse) -> str:
        return response.nonce
"""

_MISTYPED_CLIENT = """
    from envoy.service.ratelimit.v3 import rls_pb2

    request = rls_pb2.RateLimitRequest(domian="d")
"""


def test_generated_stubs_type_check_strict(generated: SimpleNamespace, tmp_path: Path) -> None:
    good = tmp_path / "typed_client.py"
    good.write_text(textwrap.dedent(_TYPED_CLIENT))
    bad = tmp_path / "mistyped_client.py"
    bad.write_text(textwrap.dedent(_MISTYPED_CLIENT))
    config = tmp_path / "mypy.ini"
    config.write_text(f"[mypy]\nstrict = True\nmypy_path = {generated.out}\n")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(config),
            "--cache-dir",
            str(tmp_path / "mypy_cache"),
            "--namespace-packages",
            "--explicit-package-bases",
            str(good),
            str(bad),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1, result.stdout + result.stderr
    assert errors[0].startswith("mistyped_client.py:4:")
    assert '"domian"' in errors[0]


def _module_names(module: ModuleType) -> set[str]:
    return {name for name in dir(module) if not name.startswith("_")}


def test_discovery_messages_exist(generated: SimpleNamespace) -> None:
    assert {
        "DiscoveryRequest",
        "DiscoveryResponse",
        "DeltaDiscoveryRequest",
        "DeltaDiscoveryResponse",
        "Resource",
        "ResourceLocator",
        "ResourceName",
        "DynamicParameterConstraints",
    } <= _module_names(generated.discovery)
    ads = generated.ads.DESCRIPTOR.services_by_name["AggregatedDiscoveryService"]
    sotw = ads.methods_by_name["StreamAggregatedResources"]
    assert sotw.client_streaming and sotw.server_streaming
    assert sotw.input_type.full_name == "envoy.service.discovery.v3.DiscoveryRequest"
    assert sotw.output_type.full_name == "envoy.service.discovery.v3.DiscoveryResponse"
