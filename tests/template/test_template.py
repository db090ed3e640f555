"""Checks of the SAM template (template.yaml) that run offline, without AWS or Docker.

1. cfn-lint (which expands the SAM transform) reports no error and no warning.
2. Every function in the template is a crate of the workspace, and every crate under
   functions/ (except functions/local, the local server) is in the template.
3. The table is the one the DynamoDB store creates for tests (keys, index, TTL).
4. Routing, streaming, environment and IAM follow spec/serverless-stack.md as the
   template's comments explain.

Run: ~/.cache/harness/venv/bin/python -m pytest -q tests/template
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from pathlib import Path

import pytest
from cfnlint.api import lint
from cfnlint.decode import cfn_yaml

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
FUNCTIONS_DIR = ROOT / "functions"
# Crates under functions/ that are not Lambda functions.
NOT_LAMBDAS = {"local"}

# Binary -> HTTP API routes (method, path). Each REST route also exists under /{tenant}.
BUFFERED = {
    "send-message": [("POST", "/message:send")],
    "get-task": [("GET", "/tasks/{id}")],
    "list-tasks": [("GET", "/tasks")],
    # `/tasks/{id}:cancel` cannot be a route (variables are whole segments).
    "cancel-task": [("POST", "/tasks/{id}")],
    "create-push-config": [("POST", "/tasks/{id}/pushNotificationConfigs")],
    "get-push-config": [("GET", "/tasks/{id}/pushNotificationConfigs/{configId}")],
    "list-push-configs": [("GET", "/tasks/{id}/pushNotificationConfigs")],
    "delete-push-config": [("DELETE", "/tasks/{id}/pushNotificationConfigs/{configId}")],
    "get-extended-agent-card": [("GET", "/extendedAgentCard")],
}
UNTENANTED = {"agent-card": [("GET", "/.well-known/agent-card.json")]}
STREAMING = {"send-streaming-message", "subscribe-to-task", "jsonrpc"}

# Binary -> the DynamoDB actions it may use on the table, and on the gsi1 index.
# BatchWriteItem: a finished task's events get their expiry (TTL) in one batch.
TABLE_RW = {"dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem",
            "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem", "dynamodb:BatchWriteItem"}
PERMISSIONS = {
    "send-message": (TABLE_RW, {"dynamodb:Query"}),
    "send-streaming-message": (TABLE_RW, {"dynamodb:Query"}),
    "jsonrpc": (TABLE_RW, {"dynamodb:Query"}),
    "get-task": ({"dynamodb:GetItem"}, set()),
    "list-tasks": (set(), {"dynamodb:Query"}),
    "cancel-task": ({"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:ConditionCheckItem",
                     "dynamodb:Query", "dynamodb:BatchWriteItem"}, set()),
    "subscribe-to-task": ({"dynamodb:GetItem", "dynamodb:Query"}, set()),
    "create-push-config": ({"dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem",
                            "dynamodb:ConditionCheckItem"}, set()),
    "get-push-config": ({"dynamodb:GetItem"}, set()),
    "list-push-configs": ({"dynamodb:GetItem", "dynamodb:Query"}, set()),
    "delete-push-config": ({"dynamodb:GetItem", "dynamodb:DeleteItem"}, set()),
    "agent-card": (set(), set()),
    "get-extended-agent-card": (set(), set()),
}
SPEC_FUNCTIONS = set(BUFFERED) | set(UNTENANTED) | STREAMING

ENV = {
    "HARNESS_TABLE", "HARNESS_STORE", "HARNESS_PUBLIC_URL", "HARNESS_AGENT",
    "HARNESS_REQUIRED_EXTENSIONS", "HARNESS_REST_CONTENT_TYPE",
    "HARNESS_PUSH_ALLOW_PRIVATE_URLS", "HARNESS_AUDIT_RETENTION_DAYS", "HARNESS_MODEL",
    "RUST_LOG",
}


@pytest.fixture(scope="module")
def template() -> dict:
    # cfn-lint's decoder understands the short forms (!Ref, !GetAtt, !Sub).
    return cfn_yaml.load(str(TEMPLATE))


@pytest.fixture(scope="module")
def functions(template) -> dict[str, dict]:
    """Binary name -> the AWS::Serverless::Function resource."""
    out = {}
    for logical_id, res in template["Resources"].items():
        if res.get("Type") != "AWS::Serverless::Function":
            continue
        meta = res.get("Metadata", {})
        assert meta.get("BuildMethod") == "rust-cargolambda", logical_id
        binary = meta.get("BuildProperties", {}).get("Binary")
        assert binary, f"{logical_id} has no Metadata.BuildProperties.Binary"
        assert binary not in out, f"binary {binary} is built by two functions"
        out[binary] = res
    return out


def table(template) -> dict:
    tables = [r for r in template["Resources"].values() if r["Type"] == "AWS::DynamoDB::Table"]
    assert len(tables) == 1, "expected exactly one AWS::DynamoDB::Table"
    return tables[0]


def workspace_members() -> list[str]:
    manifest = tomllib.loads((ROOT / "Cargo.toml").read_text())
    return manifest["workspace"]["members"]


def crate_binaries(crate: Path) -> set[str]:
    """Names of the binaries a crate builds (its [[bin]]s, else its package name)."""
    manifest = tomllib.loads((crate / "Cargo.toml").read_text())
    bins = {b["name"] for b in manifest.get("bin", []) if "name" in b}
    return bins or {manifest["package"]["name"]}


def lambda_crates() -> list[Path]:
    if not FUNCTIONS_DIR.is_dir():
        return []
    return sorted(p for p in FUNCTIONS_DIR.iterdir()
                  if p.is_dir() and p.name not in NOT_LAMBDAS)


# ------------------------------------------------------------------------ 1. cfn-lint

def test_cfn_lint_reports_nothing():
    matches = lint(TEMPLATE.read_text(), regions=["us-east-1"])
    problems = [m for m in matches if m.rule.id[0] in "EW"]
    assert not problems, "\n".join(
        f"{m.rule.id} line {m.linenumber}: {m.message}" for m in problems)


# ------------------------------------------------------ 2. template <-> workspace

def test_template_has_every_function_of_the_spec(functions):
    assert SPEC_FUNCTIONS <= set(functions), sorted(SPEC_FUNCTIONS - set(functions))


@pytest.mark.parametrize("binary", sorted(SPEC_FUNCTIONS))
def test_function_is_a_workspace_crate(binary, functions):
    assert binary in functions
    crate = FUNCTIONS_DIR / binary
    assert (crate / "Cargo.toml").is_file(), f"functions/{binary}/Cargo.toml is missing"
    assert binary in crate_binaries(crate), \
        f"functions/{binary} builds {sorted(crate_binaries(crate))}, not {binary}"
    member = f"functions/{binary}"
    assert any(fnmatch.fnmatch(member, m.rstrip("/")) for m in workspace_members()), \
        f"{member} is not in the root Cargo.toml workspace members"


def test_template_functions_all_exist_in_workspace(functions):
    # Also covers functions added to the template later (worker, sweeper, ...).
    missing = [b for b in functions
               if not (FUNCTIONS_DIR / b / "Cargo.toml").is_file()
               or b not in crate_binaries(FUNCTIONS_DIR / b)]
    assert not missing, f"in template.yaml but not a crate under functions/: {missing}"


def test_every_lambda_crate_is_in_the_template(functions):
    built = set(functions)
    missing = [c.name for c in lambda_crates() if not crate_binaries(c) & built]
    assert not missing, f"crates under functions/ missing from template.yaml: {missing}"


def test_template_functions_share_the_workspace_root(template, functions):
    globals_fn = template.get("Globals", {}).get("Function", {})
    for binary, res in functions.items():
        code_uri = res["Properties"].get("CodeUri", globals_fn.get("CodeUri"))
        assert code_uri in (".", "./"), f"{binary}: CodeUri {code_uri!r} is not the workspace root"


# ------------------------------------------------------------------------ 3. table

def test_table_matches_the_store(template):
    t = table(template)
    assert t.get("DeletionPolicy") == "Retain"
    assert t.get("UpdateReplacePolicy") == "Retain"
    p = t["Properties"]
    assert p["BillingMode"] == "PAY_PER_REQUEST"
    assert {(a["AttributeName"], a["AttributeType"]) for a in p["AttributeDefinitions"]} == {
        ("pk", "S"), ("sk", "S"), ("gsi1pk", "S"), ("gsi1sk", "S")}
    assert [(k["AttributeName"], k["KeyType"]) for k in p["KeySchema"]] == [
        ("pk", "HASH"), ("sk", "RANGE")]
    [gsi] = p["GlobalSecondaryIndexes"]
    assert gsi["IndexName"] == "gsi1"
    assert [(k["AttributeName"], k["KeyType"]) for k in gsi["KeySchema"]] == [
        ("gsi1pk", "HASH"), ("gsi1sk", "RANGE")]
    assert gsi["Projection"]["ProjectionType"] == "ALL"
    assert p["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert p["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert p["StreamSpecification"]["StreamViewType"] == "NEW_AND_OLD_IMAGES"


def test_store_code_creates_the_same_table():
    """The names the template uses are the ones DynamoStore::create_table uses."""
    source = (ROOT / "common" / "src" / "store" / "dynamodb.rs").read_text()
    assert re.search(r'INDEX\s*:\s*&str\s*=\s*"gsi1"', source)
    assert re.search(r'TTL_ATTRIBUTE\s*:\s*&str\s*=\s*"expires_at"', source)
    for attr in ("pk", "sk", "gsi1pk", "gsi1sk"):
        assert f'"{attr}"' in source, f"{attr} not found in the DynamoDB store"


# -------------------------------------------------------- 4. routes, env, IAM

def http_routes(res) -> set[tuple[str, str]]:
    return {(e["Properties"]["Method"].upper(), e["Properties"]["Path"])
            for e in res["Properties"].get("Events", {}).values()
            if e["Type"] == "HttpApi"}


@pytest.mark.parametrize("binary", sorted(BUFFERED) + sorted(UNTENANTED))
def test_buffered_routes(binary, functions):
    res = functions[binary]
    routes = BUFFERED.get(binary) or UNTENANTED[binary]
    expected = set(routes)
    if binary in BUFFERED:
        expected |= {(m, "/{tenant}" + p) for m, p in routes}
    assert http_routes(res) == expected
    assert "FunctionUrlConfig" not in res["Properties"]
    assert res["Properties"].get("Timeout", 30) == 30


@pytest.mark.parametrize("binary", sorted(STREAMING))
def test_streaming_functions_use_a_function_url(binary, functions):
    props = functions[binary]["Properties"]
    assert props["FunctionUrlConfig"] == {"AuthType": "NONE", "InvokeMode": "RESPONSE_STREAM"}
    assert not http_routes(functions[binary]), "HTTP API buffers: no route to a streaming function"
    assert props["Timeout"] == 900


def test_no_two_routes_collide(functions):
    seen: dict[tuple[str, str], str] = {}
    for binary, res in functions.items():
        for route in http_routes(res):
            assert route not in seen, f"{route} routed to {seen[route]} and {binary}"
            seen[route] = binary


def test_globals(template):
    fn = template["Globals"]["Function"]
    assert fn["Runtime"] == "provided.al2023"
    assert fn["Architectures"] == ["arm64"]
    assert fn["Handler"] == "bootstrap"
    assert fn["MemorySize"] == 256
    assert fn["Timeout"] == 30
    env = fn["Environment"]["Variables"]
    assert ENV <= set(env), sorted(ENV - set(env))
    assert env["HARNESS_STORE"] == "dynamodb"
    assert env["HARNESS_PUSH_ALLOW_PRIVATE_URLS"] == "false"
    assert env["RUST_LOG"] == "info"
    params = template["Parameters"]
    assert params["PublicUrl"]["Default"] == ""
    assert params["Agent"]["Default"] == "conformance"
    assert params["RequiredExtensions"]["Default"] == ""
    assert params["RestContentType"]["Default"] == "json"
    assert str(params["AuditRetentionDays"]["Default"]) == "30"
    assert params["Model"]["Default"] == ""


def policy_actions(res, table_id: str) -> tuple[set[str], set[str]]:
    """(actions on the table, actions on its gsi1 index); fails on any other resource."""
    on_table, on_index = set(), set()
    for policy in res["Properties"].get("Policies", []):
        assert isinstance(policy, dict) and "Statement" in policy, \
            f"only inline statements, not managed or SAM policy templates: {policy}"
        for st in policy["Statement"]:
            assert st["Effect"] == "Allow"
            actions = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
            assert all("*" not in a for a in actions), actions
            resources = st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]
            for r in resources:
                if r == {"Fn::GetAtt": [table_id, "Arn"]}:
                    on_table |= set(actions)
                elif r == {"Fn::Sub": "${%s.Arn}/index/gsi1" % table_id}:
                    on_index |= set(actions)
                else:
                    pytest.fail(f"unexpected resource {r}")
    return on_table, on_index


@pytest.mark.parametrize("binary", sorted(PERMISSIONS))
def test_least_privilege(binary, template, functions):
    [table_id] = [k for k, r in template["Resources"].items()
                  if r["Type"] == "AWS::DynamoDB::Table"]
    assert policy_actions(functions[binary], table_id) == PERMISSIONS[binary]


def test_outputs(template):
    values = [o["Value"] for o in template["Outputs"].values()]
    flat = repr(values)
    assert "HttpApi" in flat and "execute-api" in flat
    for fn in ("SendStreamingMessageFunctionUrl", "SubscribeToTaskFunctionUrl",
               "JsonRpcFunctionUrl"):
        assert {"Fn::GetAtt": [fn, "FunctionUrl"]} in values, fn
    [table_id] = [k for k, r in template["Resources"].items()
                  if r["Type"] == "AWS::DynamoDB::Table"]
    assert {"Ref": table_id} in values
