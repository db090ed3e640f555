"""Checks of the SAM template (template.yaml) that run offline, without AWS or Docker.

1. cfn-lint (which expands the SAM transform) reports no error and no warning.
2. Every function in the template is a crate of the workspace, and every crate under
   functions/ (except functions/local, the local server) is in the template.
3. The table is the one the DynamoDB store creates for tests (keys, indexes, TTL, stream).
4. Routing, streaming, environment and IAM follow spec/serverless-stack.md as the
   template's comments explain; the default deployment requires a bearer token on every
   route (the HTTP API's JWT authorizer) and every Function URL (the functions' own check).
5. The event-driven functions: resume (the table's stream, through a filter that passes
   only runnable, unleased task items; batch item failures, retries, an on-failure queue)
   and the sweeper (a schedule). They have no HTTP route.
6. The notifier (push notifications): the stream through a filter that passes only new
   log events of tasks with webhooks and new webhook configs (checked on a real capture);
   the push key as a secret parameter a rule requires while push is on.

Run: ~/.cache/harness/venv/bin/python -m pytest -q tests/template
"""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from pathlib import Path

import pytest
from cfnlint.api import lint
from cfnlint.decode import cfn_yaml

import event_filter

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
# The agent-card function also serves the web inbox's static assets.
UNTENANTED = {"agent-card": [("GET", "/.well-known/agent-card.json"), ("GET", "/ui"),
                             ("GET", "/ui/{asset+}")],
              # A remote agent's webhook: the link's token is the credential.
              "remote-callback": [("POST", "/remote/callback/{reference}")]}
# A personal channel's answer link is a send: send-message takes it, with no tenant and no
# authorizer (the signed token in its body is the credential).
ANSWER_ROUTE = ("POST", "/ui/answer")
STREAMING = {"send-streaming-message", "subscribe-to-task", "jsonrpc"}
# Invoked by AWS, not by clients: no HTTP route, no Function URL.
EVENT_FUNCTIONS = {"resume", "sweeper", "notifier"}

# Binary -> the DynamoDB actions it may use on the table, on the gsi1 index and on the
# gsi2 index (the sweeper's; a third element, empty when left out).
# BatchWriteItem: a finished task's events get their expiry (TTL) in one batch; UpdateItem:
# its push configs' (updated, as deliveries update their cursors), and a task's count of
# push configs.
# UpdateItem: a task's count of push configs (a send may attach one), which keeps its limit.
TABLE_RW = {"dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem",
            "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem", "dynamodb:BatchWriteItem"}
PERMISSIONS = {
    "send-message": (TABLE_RW, set()),
    "send-streaming-message": (TABLE_RW, set()),
    # ListTasks: the caller's partition of gsi1, then the page's heads and history.
    "jsonrpc": (TABLE_RW | {"dynamodb:BatchGetItem"}, {"dynamodb:Query"}),
    # The head, then the history it is asked for (a Query of the task's parts).
    "get-task": ({"dynamodb:GetItem", "dynamodb:Query"}, set()),
    "list-tasks": ({"dynamodb:BatchGetItem", "dynamodb:Query"}, {"dynamodb:Query"}),
    "cancel-task": ({"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:ConditionCheckItem",
                     "dynamodb:UpdateItem",
                     "dynamodb:Query", "dynamodb:BatchWriteItem"}, set()),
    "subscribe-to-task": ({"dynamodb:GetItem", "dynamodb:Query"}, set()),
    # BatchWriteItem: a head an older build wrote whole has its lists written out as parts.
    "create-push-config": ({"dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem",
                            "dynamodb:ConditionCheckItem", "dynamodb:UpdateItem",
                            "dynamodb:BatchWriteItem"}, set()),
    # A task's head reads its long status message (a part) with a Query.
    "get-push-config": ({"dynamodb:GetItem", "dynamodb:Query"}, set()),
    "list-push-configs": ({"dynamodb:GetItem", "dynamodb:Query"}, set()),
    "delete-push-config": ({"dynamodb:GetItem", "dynamodb:Query", "dynamodb:DeleteItem",
                            "dynamodb:UpdateItem"}, set()),
    "agent-card": (set(), set()),
    # The task (head and parts) and its wake-up (a conditional write of the head).
    "remote-callback": ({"dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem",
                         "dynamodb:UpdateItem", "dynamodb:ConditionCheckItem",
                         "dynamodb:BatchWriteItem"}, set()),
    "get-extended-agent-card": (set(), set()),
    # A drive: load, claim (lease), commits with events, the events' TTL at the end,
    # sub-tasks and parents' wake-ups, push configs, audit. No ListTasks, no deletes.
    "resume": ({"dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem",
                "dynamodb:ConditionCheckItem", "dynamodb:BatchWriteItem"}, set()),
    # A task's configs and log (Query), its delivery cursors (conditional PutItem).
    "notifier": ({"dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem",
                  "dynamodb:UpdateItem"}, set()),
    # The expired leases and unanswered wake-ups (Queries on gsi2), then per task a load
    # (head and parts), a conditional commit, and a woken parent's.
    "sweeper": ({"dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem",
                 "dynamodb:ConditionCheckItem", "dynamodb:BatchWriteItem"}, set(),
                {"dynamodb:Query"}),
}
SPEC_FUNCTIONS = set(BUFFERED) | set(UNTENANTED) | STREAMING | EVENT_FUNCTIONS

ENV = {
    "HARNESS_AUTH", "HARNESS_JWKS_URL", "HARNESS_JWT_ISSUER", "HARNESS_JWT_AUDIENCE",
    "HARNESS_IDENTITY_CLAIM", "HARNESS_OIDC_DISCOVERY_URL",
    "HARNESS_TABLE", "HARNESS_STORE", "HARNESS_PUBLIC_URL", "HARNESS_AGENT",
    "HARNESS_REQUIRED_EXTENSIONS", "HARNESS_REST_CONTENT_TYPE",
    "HARNESS_PUSH_ALLOW_PRIVATE_URLS", "HARNESS_AUDIT_RETENTION_DAYS", "HARNESS_MODEL",
    "HARNESS_AGENT_ID", "HARNESS_DEFAULT_PARTICIPANT", "HARNESS_LEASE_SECONDS", "RUST_LOG",
    "HARNESS_PUSH_NOTIFICATIONS", "HARNESS_PUSH_KEY", "HARNESS_TASK_RETENTION_DAYS",
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


def table_id(template) -> str:
    [logical_id] = [k for k, r in template["Resources"].items()
                    if r["Type"] == "AWS::DynamoDB::Table"]
    return logical_id


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


def test_sam_build_resolves_features_over_the_functions_alone(functions):
    # `sam build` runs `cargo lambda build --release --arm64 --bin <Binary>` at the root,
    # which resolves features over the default members: the functions, and nothing that
    # turns on the embedded store (harness-local, the tests) or leaves a function out.
    manifest = tomllib.loads((ROOT / "Cargo.toml").read_text())
    default = manifest["workspace"].get("default-members", [])
    assert sorted(default) == sorted(f"functions/{c.name}" for c in lambda_crates())
    assert set(functions) <= {b for c in lambda_crates() for b in crate_binaries(c)}
    assert manifest["workspace"]["dependencies"]["common"].get("default-features") is False
    for crate in lambda_crates():
        deps = tomllib.loads((crate / "Cargo.toml").read_text())["dependencies"]
        assert "features" not in deps["common"], f"{crate.name} turns on common features"


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
        ("pk", "S"), ("sk", "S"), ("gsi1pk", "S"), ("gsi1sk", "S"), ("gsi2pk", "S"), ("gsi2sk", "S")}
    assert [(k["AttributeName"], k["KeyType"]) for k in p["KeySchema"]] == [
        ("pk", "HASH"), ("sk", "RANGE")]
    indexes = {g["IndexName"]: g for g in p["GlobalSecondaryIndexes"]}
    assert set(indexes) == {"gsi1", "gsi2"}
    gsi1 = indexes["gsi1"]
    assert [(k["AttributeName"], k["KeyType"]) for k in gsi1["KeySchema"]] == [
        ("gsi1pk", "HASH"), ("gsi1sk", "RANGE")]
    assert gsi1["Projection"]["ProjectionType"] == "ALL"
    assert p["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert p["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True


def test_table_has_the_sweepers_sparse_index(template):
    """gsi2 holds leased tasks (by lease expiry) and tasks waiting on a wake-up (by when it
    was written) only; the sweeper only needs the keys (pk is the task)."""
    gsi2 = {g["IndexName"]: g for g in table(template)["Properties"]["GlobalSecondaryIndexes"]}["gsi2"]
    assert [(k["AttributeName"], k["KeyType"]) for k in gsi2["KeySchema"]] == [
        ("gsi2pk", "HASH"), ("gsi2sk", "RANGE")]
    assert gsi2["Projection"] == {"ProjectionType": "KEYS_ONLY"}


def test_table_has_the_stream_the_resume_function_reads(template):
    # The filter looks at NewImage: the view must carry new images.
    spec = table(template)["Properties"]["StreamSpecification"]
    assert spec == {"StreamViewType": "NEW_AND_OLD_IMAGES"}


def dynamodb_store_source() -> str:
    """The DynamoDB store's source, every file of its folder."""
    folder = ROOT / "common" / "src" / "store" / "dynamodb"
    return "\n".join(f.read_text() for f in sorted(folder.glob("*.rs")))


def test_store_code_creates_the_same_table():
    """The names the template uses are the ones DynamoStore::create_table uses."""
    source = dynamodb_store_source()
    assert re.search(r'INDEX\s*:\s*&str\s*=\s*"gsi1"', source)
    assert re.search(r'SWEEP_INDEX\s*:\s*&str\s*=\s*"gsi2"', source)
    assert re.search(r'TTL_ATTRIBUTE\s*:\s*&str\s*=\s*"expires_at"', source)
    for attr in ("pk", "sk", "gsi1pk", "gsi1sk", "gsi2pk", "gsi2sk"):
        assert f'"{attr}"' in source, f"{attr} not found in the DynamoDB store"


def test_store_code_writes_what_the_resume_filter_reads():
    """The task item carries `wake` as the number 1 (N "1" in the stream) under sk "TASK":
    the two things the filter tests."""
    source = dynamodb_store_source()
    assert re.search(r'\("sk"\.into\(\),\s*s\("TASK"\)\)', source)
    assert re.search(r'"wake"\.into\(\),\s*n\(1\)', source)


# -------------------------------------------------------- 4. routes, env, IAM

def of_type(template, type_: str) -> dict[str, dict]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == type_}


def binaries(template) -> dict[str, str]:
    """Logical id -> binary, of every function."""
    return {k: r["Metadata"]["BuildProperties"]["Binary"]
            for k, r in of_type(template, "AWS::Serverless::Function").items()}


def api_routes(template) -> dict[tuple[str, str], tuple[str, dict]]:
    """(method, path) -> (the binary its integration invokes, the route's properties)."""
    binary_of = binaries(template)
    out = {}
    for route in of_type(template, "AWS::ApiGatewayV2::Route").values():
        props = route["Properties"]
        assert props["ApiId"] == {"Ref": "HttpApi"}
        target = props["Target"]["Fn::Sub"]
        integration = template["Resources"][target.removeprefix("integrations/${").rstrip("}")]
        assert integration["Type"] == "AWS::ApiGatewayV2::Integration"
        assert integration["Properties"]["IntegrationType"] == "AWS_PROXY"
        assert integration["Properties"]["PayloadFormatVersion"] == "2.0"
        [fn, attr] = integration["Properties"]["IntegrationUri"]["Fn::GetAtt"]
        assert attr == "Arn"
        method, path = props["RouteKey"].split(" ", 1)
        assert (method, path) not in out, f"{method} {path} routed twice"
        out[(method, path)] = (binary_of[fn], props)
    return out


def http_routes(template, binary) -> set[tuple[str, str]]:
    return {k for k, (b, _) in api_routes(template).items() if b == binary}


@pytest.mark.parametrize("binary", sorted(BUFFERED) + sorted(UNTENANTED))
def test_buffered_routes(binary, template, functions):
    res = functions[binary]
    routes = BUFFERED.get(binary) or UNTENANTED[binary]
    expected = set(routes)
    if binary in BUFFERED:
        expected |= {(m, "/{tenant}" + p) for m, p in routes}
    if binary == "send-message":
        expected.add(ANSWER_ROUTE)
    assert http_routes(template, binary) == expected
    assert "FunctionUrlConfig" not in res["Properties"]
    assert res["Properties"].get("Timeout", 30) == 30
    assert "Events" not in res["Properties"], "routes are declared on the HTTP API"


def test_api_gateway_may_invoke_each_routed_function_through_this_api_only(template, functions):
    routed = {b for b, _ in api_routes(template).values()}
    binary_of = binaries(template)
    granted = set()
    for perm in of_type(template, "AWS::Lambda::Permission").values():
        props = perm["Properties"]
        assert props["Principal"] == "apigateway.amazonaws.com"
        assert props["Action"] == "lambda:InvokeFunction"
        assert props["SourceArn"]["Fn::Sub"].endswith(":${HttpApi}/*"), props
        granted.add(binary_of[props["FunctionName"]["Ref"]])
    assert granted == routed


@pytest.mark.parametrize("binary", sorted(STREAMING))
def test_streaming_functions_use_a_function_url(binary, template, functions):
    props = functions[binary]["Properties"]
    assert props["FunctionUrlConfig"] == {"AuthType": "NONE", "InvokeMode": "RESPONSE_STREAM"}
    assert not http_routes(template, binary), \
        "HTTP API buffers: no route to a streaming function"
    assert props["Timeout"] == 900


def test_no_two_routes_collide(template, functions):
    # api_routes refuses a route declared twice.
    assert len(api_routes(template)) == \
        2 * len(BUFFERED) + sum(map(len, UNTENANTED.values())) + 1


def test_event_functions_have_no_http_entry(template, functions):
    for binary in EVENT_FUNCTIONS:
        res = functions[binary]
        assert not http_routes(template, binary), \
            f"{binary} is invoked by AWS, not routed"
        assert "FunctionUrlConfig" not in res["Properties"], binary


# ------------------------------------------------------------------ authentication

def resolve(value, conditions: dict[str, bool]):
    """`value` with every Fn::If decided by `conditions`."""
    if isinstance(value, dict):
        if list(value) == ["Fn::If"]:
            name, yes, no = value["Fn::If"]
            return resolve(yes if conditions[name] else no, conditions)
        return {k: resolve(v, conditions) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, conditions) for v in value]
    return value


def default_conditions(template) -> dict[str, bool]:
    return conditions_for(template)


def test_the_default_deployment_requires_a_token_on_every_route(template, functions):
    """Every route but the agent card has the JWT authorizer under the defaults; the
    authorizer reads the Authorization header and checks the configured (or the user
    pool's) issuer and audience."""
    conditions = default_conditions(template)
    assert conditions["Verified"], "jwt is the default"
    routes = api_routes(template)
    for (method, path), (binary, props) in routes.items():
        props = resolve(props, conditions)
        if binary in UNTENANTED or (method, path) == ANSWER_ROUTE:
            assert props["AuthorizationType"] == "NONE", "the card is public"
            assert "AuthorizerId" not in props
        else:
            assert props["AuthorizationType"] == "JWT", f"{method} {path}"
            assert props["AuthorizerId"] == {"Ref": "HttpApiJwtAuthorizer"}, f"{method} {path}"
    authorizer = template["Resources"]["HttpApiJwtAuthorizer"]
    assert authorizer["Condition"] == "Verified"
    props = authorizer["Properties"]
    assert props["AuthorizerType"] == "JWT"
    assert props["IdentitySource"] == ["$request.header.Authorization"]
    jwt = resolve(props["JwtConfiguration"], conditions)
    assert jwt == {"Issuer": {"Ref": "JwtIssuer"}, "Audience": [{"Ref": "JwtAudience"}]}
    pooled = resolve(props["JwtConfiguration"], {**conditions, "WithUserPool": True})
    assert "${UserPool}" in pooled["Issuer"]["Fn::Sub"]
    assert pooled["Audience"] == [{"Ref": "UserPoolClient"}]
    # With none, no route has the authorizer.
    none = {**conditions, "Verified": False, "WithUserPool": False}
    assert all(resolve(p, none)["AuthorizationType"] == "NONE" for _, p in routes.values())


def test_every_function_url_verifies_tokens_by_default(template, functions):
    """A Function URL has no gateway in front: its function verifies the token itself
    (HARNESS_AUTH, jwt by default), with the same settings as every other function."""
    conditions = default_conditions(template)
    env = resolve(template["Globals"]["Function"]["Environment"]["Variables"], conditions)
    assert env["HARNESS_AUTH"] == {"Ref": "AuthMode"}
    assert env["HARNESS_JWKS_URL"] == {"Ref": "JwksUrl"}
    assert env["HARNESS_JWT_ISSUER"] == {"Ref": "JwtIssuer"}
    assert env["HARNESS_JWT_AUDIENCE"] == {"Ref": "JwtAudience"}
    assert env["HARNESS_IDENTITY_CLAIM"] == {"Ref": "IdentityClaim"}
    urls = [b for b, res in functions.items() if "FunctionUrlConfig" in res["Properties"]]
    assert set(urls) == STREAMING
    for binary, res in functions.items():
        own = res["Properties"].get("Environment", {}).get("Variables", {})
        assert not {k for k in own if k.startswith("HARNESS_") and
                    ("AUTH" in k or "JW" in k or "IDENTITY" in k or "PARTICIPANT" in k)}, \
            f"{binary} overrides how identity is checked"
    pooled = resolve(template["Globals"]["Function"]["Environment"]["Variables"],
                     {**conditions, "WithUserPool": True})
    assert pooled["HARNESS_JWKS_URL"]["Fn::Sub"].endswith("/.well-known/jwks.json")
    assert pooled["HARNESS_JWT_AUDIENCE"] == {"Ref": "UserPoolClient"}


def test_self_asserted_identity_needs_an_explicit_parameter(template):
    params = template["Parameters"]
    assert params["AuthMode"]["Default"] == "jwt"
    assert params["AuthMode"]["AllowedValues"] == ["jwt", "none"]
    assert "anyone who can reach the URLs" in params["AuthMode"]["Description"]
    assert params["CreateUserPool"]["Default"] == "false"
    assert params["IdentityClaim"]["Default"] == "sub"
    rules = template["Rules"]
    rule = rules["IdentityProviderWhileVerified"]
    named = repr(rule["Assertions"])
    assert all(p in named for p in ("JwtIssuer", "JwtAudience", "JwksUrl")), named
    assert rules["NoDefaultParticipantWithJwt"]["RuleCondition"] == {
        "Fn::Equals": [{"Ref": "AuthMode"}, "jwt"]}


def test_the_user_pool_admits_no_self_sign_up(template):
    pool = template["Resources"]["UserPool"]
    assert pool["Condition"] == "WithUserPool"
    assert pool["Properties"]["AdminCreateUserConfig"]["AllowAdminCreateUserOnly"] is True
    client = template["Resources"]["UserPoolClient"]["Properties"]
    assert client["GenerateSecret"] is False


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
    assert params["Agent"]["Default"] == "llm"
    assert params["RequiredExtensions"]["Default"] == ""
    assert params["RestContentType"]["Default"] == "json"
    assert str(params["AuditRetentionDays"]["Default"]) == "30"
    assert env["HARNESS_LEASE_SECONDS"] == {"Ref": "LeaseSeconds"}
    assert params["LeaseSeconds"]["Type"] == "Number"
    assert str(params["LeaseSeconds"]["Default"]) == "300"


def test_reply_deadlines_are_parameters(template):
    """Reply deadlines (issue 52): the default and the maximum are parameters held to the
    harness's own syntax; an empty default leaves the variable out (no deadline)."""
    import re

    params = template["Parameters"]
    env = template["Globals"]["Function"]["Environment"]["Variables"]
    assert env["HARNESS_REPLY_WITHIN"] == {
        "Fn::If": ["HasReplyWithin", {"Ref": "ReplyWithin"}, {"Ref": "AWS::NoValue"}]
    }
    assert env["HARNESS_REPLY_WITHIN_MAX"] == {"Ref": "ReplyWithinMax"}
    assert params["ReplyWithin"]["Default"] == ""
    assert params["ReplyWithinMax"]["Default"] == "30d"
    default = re.compile(params["ReplyWithin"]["AllowedPattern"])
    most = re.compile(params["ReplyWithinMax"]["AllowedPattern"])
    for good in ["90s", "45m", "2h", "3d"]:
        assert default.fullmatch(good) and most.fullmatch(good), good
    assert default.fullmatch("") and not most.fullmatch("")
    for bad in ["5 weeks", "2w", "1.5h", "-1s", "h", "0s", "05m"]:
        assert not default.fullmatch(bad) and not most.fullmatch(bad), bad


def test_traces_are_off_unless_a_collector_is_given(template):
    """Traces (issue 50): the functions export to the OTLP endpoint a parameter names, with
    the headers another may hold (hidden), the ADOT collector layer optional; empty, the
    variables are left out and no function traces."""
    params = template["Parameters"]
    assert params["OtlpEndpoint"]["Default"] == ""
    assert params["OtlpHeaders"]["Default"] == ""
    assert params["OtlpHeaders"]["NoEcho"] is True
    assert params["OtelCaptureContent"]["Default"] == "false"
    assert params["AdotLayerArn"]["Default"] == ""
    fn = template["Globals"]["Function"]
    env = fn["Environment"]["Variables"]
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == {
        "Fn::If": ["Traced", {"Ref": "OtlpEndpoint"}, {"Ref": "AWS::NoValue"}]}
    assert env["OTEL_EXPORTER_OTLP_HEADERS"] == {
        "Fn::If": ["HasOtlpHeaders", {"Ref": "OtlpHeaders"}, {"Ref": "AWS::NoValue"}]}
    assert env["HARNESS_OTEL_CAPTURE_CONTENT"] == {"Ref": "OtelCaptureContent"}
    assert fn["Layers"] == {
        "Fn::If": ["HasAdotLayer", [{"Ref": "AdotLayerArn"}], {"Ref": "AWS::NoValue"}]}
    conditions = template["Conditions"]
    assert conditions["Traced"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "OtlpEndpoint"}, ""]}]}


def policy_actions(res, table_id: str) -> tuple[set[str], set[str], set[str]]:
    """(actions on the table, on its gsi1 index, on its gsi2 index); fails on any other
    resource."""
    on_table, on_index, on_gsi2 = set(), set(), set()
    for policy in res["Properties"].get("Policies", []):
        assert isinstance(policy, dict) and "Statement" in policy, \
            f"only inline statements, not managed or SAM policy templates: {policy}"
        for st in policy["Statement"]:
            if "Fn::If" in st:
                # Conditional statements are the model's only (test_model_permissions_*
                # checks them per parameter choice): no table action hides in one.
                for branch in st["Fn::If"][1:]:
                    if branch != {"Ref": "AWS::NoValue"}:
                        actions = branch["Action"]
                        actions = actions if isinstance(actions, list) else [actions]
                        assert all(a.split(":")[0] in ("bedrock", "secretsmanager")
                                   for a in actions), branch
                continue
            assert st["Effect"] == "Allow"
            actions = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
            assert all("*" not in a for a in actions), actions
            if "Condition" in st:
                assert st == AUDIT_STATEMENT(table_id), st
                continue
            resources = st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]
            for r in resources:
                if r == {"Fn::GetAtt": [table_id, "Arn"]}:
                    on_table |= set(actions)
                elif r == {"Fn::Sub": "${%s.Arn}/index/gsi1" % table_id}:
                    on_index |= set(actions)
                elif r == {"Fn::Sub": "${%s.Arn}/index/gsi2" % table_id}:
                    on_gsi2 |= set(actions)
                else:
                    pytest.fail(f"unexpected resource {r}")
    return on_table, on_index, on_gsi2


def AUDIT_STATEMENT(table_id: str) -> dict:
    """Every function that answers clients may audit a refusal: a row under AUDIT# and its
    participant's hourly count under QUOTA#, and nothing else through this statement."""
    return {"Effect": "Allow", "Action": ["dynamodb:PutItem", "dynamodb:UpdateItem"],
            "Resource": {"Fn::GetAtt": [table_id, "Arn"]},
            "Condition": {"ForAllValues:StringLike": {
                "dynamodb:LeadingKeys": ["AUDIT#*", "QUOTA#*"]}}}


@pytest.mark.parametrize("binary", sorted(PERMISSIONS))
def test_every_function_that_answers_clients_may_audit_a_refusal(binary, template, functions):
    """A refused request (say, one naming the harness's own id) is audited by whichever
    function answered it; without this statement the row is refused by IAM in AWS."""
    statements = [st for policy in functions[binary]["Properties"].get("Policies", [])
                  for st in policy["Statement"]]
    audits = [st for st in statements if "Condition" in st and "Fn::If" not in st]
    # The card is public; the callback takes remote agents' webhooks, no participant's.
    answers_clients = binary not in EVENT_FUNCTIONS | {"agent-card", "remote-callback"}
    assert audits == ([AUDIT_STATEMENT(table_id(template))] if answers_clients else [])


def test_every_function_has_its_permissions_listed(functions):
    assert set(PERMISSIONS) == set(functions)


@pytest.mark.parametrize("binary", sorted(PERMISSIONS))
def test_least_privilege(binary, template, functions):
    expected = PERMISSIONS[binary]
    expected = (*expected, set()) if len(expected) == 2 else expected
    assert policy_actions(functions[binary], table_id(template)) == expected


def test_outputs(template):
    values = [o["Value"] for o in template["Outputs"].values()]
    flat = repr(values)
    assert "HttpApi" in flat and "execute-api" in flat
    for fn in ("SendStreamingMessageFunctionUrl", "SubscribeToTaskFunctionUrl",
               "JsonRpcFunctionUrl"):
        assert {"Fn::GetAtt": [fn, "FunctionUrl"]} in values, fn
    assert template["Outputs"]["A2aUrl"]["Value"] == {"Fn::Sub": "https://${FrontDoor.DomainName}"}
    assert {"Ref": table_id(template)} in values


# ------------------------------------------------- 5. resume (stream) and sweeper

def events_of(res, event_type: str) -> list[dict]:
    return [e["Properties"] for e in res["Properties"].get("Events", {}).values()
            if e["Type"] == event_type]


def test_resume_reads_the_tables_stream(template, functions):
    res = functions["resume"]
    [props] = events_of(res, "DynamoDB")
    assert set(e["Type"] for e in res["Properties"]["Events"].values()) == {"DynamoDB"}
    assert props["Stream"] == {"Fn::GetAtt": [table_id(template), "StreamArn"]}
    assert props["StartingPosition"] == "LATEST"
    assert 1 <= props["BatchSize"] <= 10
    # The whole invocation may drive tasks; a drive hands over before the deadline.
    assert res["Properties"]["Timeout"] == 900


def test_resume_reports_batch_item_failures_and_gives_up(template, functions):
    """A failed drive is retried on its own (batch item failures, bisection), a bounded
    number of times, and what is given up on goes to a queue the function may send to."""
    [props] = events_of(functions["resume"], "DynamoDB")
    assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert props["BisectBatchOnFunctionError"] is True
    # -1 (the default) retries until the record expires from the stream: 24 hours of a
    # shard stuck behind one record.
    assert 0 <= props["MaximumRetryAttempts"] <= 10
    # Below the stream's 24-hour retention, so a given-up batch can still be read back.
    assert 60 <= props["MaximumRecordAgeInSeconds"] < 24 * 3600
    on_failure = props["DestinationConfig"]["OnFailure"]
    # `Type: SQS` makes SAM grant the function sqs:SendMessage on the destination.
    assert on_failure["Type"] == "SQS"
    dest = on_failure["Destination"]
    assert isinstance(dest, dict) and list(dest) == ["Fn::GetAtt"], dest
    queue_id, attr = dest["Fn::GetAtt"]
    assert attr == "Arn"
    assert template["Resources"][queue_id]["Type"] == "AWS::SQS::Queue"


def test_resume_filter_is_read_from_the_template(template):
    patterns = event_filter.resume_filter_patterns(template)
    assert patterns == event_filter.resume_filter_patterns()  # the same file
    assert len(patterns) == 1
    [pattern] = patterns
    # Lambda filters DynamoDB records on these keys only.
    assert set(pattern) <= {"eventName", "dynamodb"}


def task_image(task_id: str = "t1", **extra) -> dict:
    """A task item's NewImage as the stream shows it (see task_item in store/dynamodb/items.rs)."""
    return {
        "pk": {"S": f"TASK#{task_id}"},
        "sk": {"S": "TASK"},
        "gsi1pk": {"S": "T#"},
        "gsi1sk": {"S": f"0000001767225600000#{task_id}"},
        "context_id": {"S": "c1"},
        "state": {"N": "1"},
        "version": {"N": "1"},
        "last_seq": {"N": "1"},
        "record": {"S": "{}"},
        **extra,
    }


WAKE = {"wake": {"N": "1"}}
LEASED = {"gsi2pk": {"S": "LEASED"}, "gsi2sk": {"S": "000001767225900000"}}
WOKEN = {"gsi2pk": {"S": "WOKEN"}, "gsi2sk": {"S": "000001767225600000"}}


def record(event_name: str, new_image: dict | None, old_image: dict | None = None) -> dict:
    """A stream record as Lambda filters it."""
    dynamodb = {
        "ApproximateCreationDateTime": 1767225600,
        "Keys": {"pk": (new_image or old_image)["pk"], "sk": (new_image or old_image)["sk"]},
        "SequenceNumber": "100000000000000000001",
        "SizeBytes": 200,
        "StreamViewType": "NEW_AND_OLD_IMAGES",
    }
    if new_image is not None:
        dynamodb["NewImage"] = new_image
    if old_image is not None:
        dynamodb["OldImage"] = old_image
    return {
        "eventID": "e1",
        "eventName": event_name,
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": "us-east-1",
        "dynamodb": dynamodb,
        "eventSourceARN": "arn:aws:dynamodb:us-east-1:123456789012:table/t/stream/x",
    }


PASSES = {
    # returnImmediately in Lambda: the intake write leaves the new task runnable, unleased.
    "new runnable task": record("INSERT", task_image(**WAKE)),
    # A sub-task ended, a hand-over near the deadline, the sweep: a write sets wake.
    "task made runnable": record("MODIFY", task_image(**WAKE), task_image()),
    "lease given up, still runnable": record("MODIFY", task_image(**WAKE), task_image(**LEASED)),
    # The sweep rings a wake-up again: the task stays in its index, as WOKEN.
    "wake-up rung again": record("MODIFY", task_image(**WAKE, **WOKEN), task_image(**WAKE, **WOKEN)),
    # A sub-task ended owing its parents their wake-up (state 3: COMPLETED).
    "ended, parents owed": record("MODIFY", task_image(state={"N": "3"}, **WAKE, **WOKEN)),
}
REJECTS = {
    # Every write of a drive holds the lease; the store writes `wake` only for a wake-up.
    "leased task": record("MODIFY", task_image(**LEASED), task_image(**WAKE)),
    "new task taken inline": record("INSERT", task_image(**LEASED)),
    # Terminal, or waiting for input: nothing to run.
    "task without wake": record("MODIFY", task_image(), task_image(**LEASED)),
    "wake of another value": record("MODIFY", task_image(wake={"N": "0"})),
    "wake as a string": record("MODIFY", task_image(wake={"S": "1"})),
    "removed task": record("REMOVE", None, task_image(**WAKE)),
    "event item": record("INSERT", {"pk": {"S": "TASK#t1"}, "sk": {"S": "EV#00000000000000000001"},
                                    "event": {"S": "{}"}, **WAKE}),
    "message item": record("INSERT", {"pk": {"S": "IN#T#alice#m1"}, "sk": {"S": "MSG"},
                                      "task_id": {"S": "t1"}}),
    "push config item": record("INSERT", {"pk": {"S": "TASK#t1"}, "sk": {"S": "PUSH#p1"},
                                          "config": {"S": "{}"}}),
    "audit quota item": record("INSERT", {"pk": {"S": "QUOTA#alice"}, "sk": {"S": "493000"},
                                          "rows_used": {"N": "1"},
                                          "expires_at": {"N": "1767225600"}}),
    "audit item": record("INSERT", {"pk": {"S": "TASK#t1"}, "sk": {"S": "AUDIT#1"},
                                    "expires_at": {"N": "1767225600"}}),
}


@pytest.mark.parametrize("name", sorted(PASSES))
def test_resume_filter_passes(name, template):
    assert event_filter.passes(event_filter.resume_filter_patterns(template), PASSES[name])


@pytest.mark.parametrize("name", sorted(REJECTS))
def test_resume_filter_rejects(name, template):
    assert not event_filter.passes(event_filter.resume_filter_patterns(template), REJECTS[name])


def test_exists_false_must_be_on_a_leaf():
    """The evaluator's `exists: false` works as Lambda's: on an attribute itself (an object
    in DynamoDB JSON) it holds whether or not the item has it; a pattern must name the leaf."""
    naive = {"dynamodb": {"NewImage": {"gsi2pk": [{"exists": False}]}}}
    assert event_filter.matches(naive, REJECTS["leased task"])
    leaf = {"dynamodb": {"NewImage": {"gsi2pk": {"S": [{"exists": False}]}}}}
    assert not event_filter.matches(leaf, REJECTS["leased task"])
    assert event_filter.matches(leaf, PASSES["new runnable task"])


def test_filter_evaluator_refuses_what_it_does_not_model():
    with pytest.raises(ValueError):
        event_filter.matches({"dynamodb": {"NewImage": {"state": {"N": [{"numeric": [">", 1]}]}}}},
                             PASSES["new runnable task"])


def test_sweeper_runs_on_a_schedule(functions):
    res = functions["sweeper"]
    assert set(e["Type"] for e in res["Properties"]["Events"].values()) == {"Schedule"}
    [props] = events_of(res, "Schedule")
    assert props["Schedule"] == "rate(1 minute)"
    assert props.get("Enabled", True) is True
    assert res["Properties"]["Timeout"] <= 300


def test_lease_seconds_bounds(template):
    """A lease must outlast the longest gap between a drive's commits (a model call), or
    the sweep hands a live drive's task to a second one (whose commits then conflict);
    below the sweep's period it buys nothing. A drive runs in one invocation (900 s at
    most), so a longer lease only delays the recovery of one that was cut off."""
    p = template["Parameters"]["LeaseSeconds"]
    assert p["Type"] == "Number"
    assert 60 <= int(p["MinValue"]) <= int(p["Default"]) <= int(p["MaxValue"]) <= 900


def test_the_api_is_throttled_and_concurrency_can_be_reserved(template):
    """Issue 19: every request has a bounded cost, so the front doors are bounded too:
    the HTTP API's stage throttles every route, and a parameter reserves (caps) each
    function's concurrency, the only bound on the Function URLs and their streams."""
    stage = next(r for r in template["Resources"].values()
                 if r["Type"] == "AWS::ApiGatewayV2::Stage")
    settings = stage["Properties"]["DefaultRouteSettings"]
    assert settings["ThrottlingRateLimit"] == {"Ref": "ApiRateLimit"}
    assert settings["ThrottlingBurstLimit"] == {"Ref": "ApiBurstLimit"}
    params = template["Parameters"]
    for name in ("ApiRateLimit", "ApiBurstLimit"):
        assert params[name]["Type"] == "Number" and int(params[name]["Default"]) >= 1
    reserved = params["ReservedConcurrency"]
    assert (reserved["Type"], int(reserved["Default"])) == ("Number", 0)
    assert template["Conditions"]["Reserved"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "ReservedConcurrency"}, 0]}]}
    assert template["Globals"]["Function"]["ReservedConcurrentExecutions"] == {
        "Fn::If": ["Reserved", {"Ref": "ReservedConcurrency"}, {"Ref": "AWS::NoValue"}]}


# ------------------------------------------------- 6. the notifier (push notifications)

CAPTURE = ROOT / "common" / "tests" / "fixtures" / "dynamodb-stream-push-capture.json"


def test_push_key_is_a_secret_parameter_required_while_push_is_on(template):
    params = template["Parameters"]
    assert params["PushNotifications"]["Default"] == "true"
    assert params["PushKey"]["NoEcho"] is True
    assert params["PushKey"]["Default"] == ""
    env = template["Globals"]["Function"]["Environment"]["Variables"]
    assert env["HARNESS_PUSH_KEY"] == {"Ref": "PushKey"}
    assert env["HARNESS_PUSH_NOTIFICATIONS"] == {"Ref": "PushNotifications"}
    rule = template["Rules"]["PushKeyWhilePushIsOn"]
    assert rule["RuleCondition"] == {"Fn::Equals": [{"Ref": "PushNotifications"}, "true"]}
    [assertion] = rule["Assertions"]
    assert assertion["Assert"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "PushKey"}, ""]}]}
    # The optional customer managed key encrypts the environment (and so PushKey).
    assert template["Globals"]["Function"]["KmsKeyArn"] == {
        "Fn::If": ["PushKeyInKms", {"Ref": "PushKeyKmsKeyArn"}, {"Ref": "AWS::NoValue"}]}


def test_notifier_reads_the_tables_stream_and_gives_up_into_a_queue(template, functions):
    res = functions["notifier"]
    [props] = events_of(res, "DynamoDB")
    assert props["Stream"] == {"Fn::GetAtt": [table_id(template), "StreamArn"]}
    assert props["StartingPosition"] == "LATEST"
    assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert props["BisectBatchOnFunctionError"] is True
    assert 0 <= props["MaximumRetryAttempts"] <= 10
    assert 60 <= props["MaximumRecordAgeInSeconds"] <= 24 * 3600
    on_failure = props["DestinationConfig"]["OnFailure"]
    assert on_failure["Type"] == "SQS"
    queue_id, attr = on_failure["Destination"]["Fn::GetAtt"]
    assert attr == "Arn" and template["Resources"][queue_id]["Type"] == "AWS::SQS::Queue"
    # Three attempts of a 10 s webhook timeout per event fit many times over.
    assert res["Properties"]["Timeout"] >= 60


def capture_records() -> list[dict]:
    return json.loads(CAPTURE.read_text())["Records"]


def test_notifier_filter_passes_exactly_what_the_handler_delivers_for(template):
    """On the real capture (see common/tests/push_notifier.rs): the new log events of a
    task with webhooks (EV#, INSERT, push) and the new config (PUSH#, INSERT); not the
    task, the message, nor the MODIFYs that set expiries and move delivery cursors."""
    patterns = event_filter.filter_patterns("notifier", template)
    passed = [(r["eventName"], r["dynamodb"]["Keys"]["sk"]["S"])
              for r in capture_records() if event_filter.passes(patterns, r)]
    assert passed == [("INSERT", "EV#00000000000000000000"), ("INSERT", "PUSH#hook-1"),
                      ("INSERT", "EV#00000000000000000001")]


NOTIFIER_REJECTS = {
    "event of a task without webhooks": record("INSERT", {
        "pk": {"S": "TASK#t1"}, "sk": {"S": "EV#00000000000000000001"}, "event": {"S": "{}"}}),
    "event with push false": record("INSERT", {
        "pk": {"S": "TASK#t1"}, "sk": {"S": "EV#00000000000000000001"}, "event": {"S": "{}"},
        "push": {"BOOL": False}}),
    "runnable task": record("INSERT", task_image(**WAKE)),
    "config cursor moved": record("MODIFY", {
        "pk": {"S": "TASK#t1"}, "sk": {"S": "PUSH#p1"}, "config": {"S": "{}"}}),
}


@pytest.mark.parametrize("name", sorted(NOTIFIER_REJECTS))
def test_notifier_filter_rejects(name, template):
    patterns = event_filter.filter_patterns("notifier", template)
    assert not event_filter.passes(patterns, NOTIFIER_REJECTS[name])


def test_resume_filter_ignores_every_push_record(template):
    patterns = event_filter.resume_filter_patterns(template)
    passed = [r["dynamodb"]["Keys"]["sk"]["S"] for r in capture_records()
              if event_filter.passes(patterns, r)]
    assert passed == [], "the captured task was driven inline (leased), never woken"


# ------------------------------------------------------ 7. the model and the front door

def conditions_for(template, **overrides) -> dict[str, bool]:
    """Every condition of the template, evaluated with the parameters' defaults and
    `overrides`."""
    params = {k: str(v.get("Default", "")) for k, v in template["Parameters"].items()}
    params.update(overrides)
    conds = template["Conditions"]
    out: dict[str, bool] = {}

    def value(node):
        if isinstance(node, dict) and list(node) == ["Ref"]:
            return params[node["Ref"]]
        assert isinstance(node, (str, int)), node
        return str(node)

    def ev(node) -> bool:
        (fn, arg), = node.items()
        if fn == "Fn::Equals":
            return value(arg[0]) == value(arg[1])
        if fn == "Fn::Not":
            return not ev(arg[0])
        if fn == "Fn::And":
            return all(ev(a) for a in arg)
        if fn == "Fn::Or":
            return any(ev(a) for a in arg)
        if fn == "Condition":
            return cond(arg)
        raise AssertionError(f"unmodelled condition function {fn}")

    def cond(name: str) -> bool:
        if name not in out:
            out[name] = ev(conds[name])
        return out[name]

    for name in conds:
        cond(name)
    return out


def drop_novalue(value):
    """`value` without the entries an Fn::If turned into AWS::NoValue."""
    novalue = {"Ref": "AWS::NoValue"}
    if isinstance(value, dict):
        return {k: drop_novalue(v) for k, v in value.items() if v != novalue}
    if isinstance(value, list):
        return [drop_novalue(v) for v in value if v != novalue]
    return value


def model_statements(res, conditions) -> list[dict]:
    out = []
    for policy in drop_novalue(resolve(res["Properties"].get("Policies", []), conditions)):
        for st in policy["Statement"]:
            actions = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
            if any(a.split(":")[0] in ("bedrock", "secretsmanager") for a in actions):
                out.append(st)
    return out


# Converse is allowed by bedrock:InvokeModel, ConverseStream (the streamed answer) by
# bedrock:InvokeModelWithResponseStream.
INVOKE = ["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"]
PROFILE_ARN = ("arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:"
               "inference-profile/${BedrockInferenceProfile}.${ModelId}")


def test_the_default_deployment_runs_the_llm_agent_on_bedrock(template):
    params = template["Parameters"]
    assert params["Agent"]["Default"] == "llm"
    assert params["ModelProvider"]["Default"] == "bedrock"
    assert params["ModelId"]["Default"].startswith("anthropic.claude-")
    assert params["BedrockInferenceProfile"]["Default"] == "global"
    conditions = conditions_for(template)
    env = resolve(template["Globals"]["Function"]["Environment"]["Variables"], conditions)
    assert env["HARNESS_AGENT"] == {"Ref": "Agent"}
    assert env["HARNESS_MODEL"] == {
        "Fn::Sub": "bedrock:${BedrockInferenceProfile}.${ModelId}"}
    # Without a profile, the model itself; another provider, its own name.
    none = resolve(template["Globals"]["Function"]["Environment"]["Variables"],
                   conditions_for(template, BedrockInferenceProfile="none"))
    assert none["HARNESS_MODEL"] == {"Fn::Sub": "${ModelProvider}:${ModelId}"}
    assert "HARNESS_MODEL_API_KEY_SECRET" not in env


def test_model_permissions_by_default_are_invoke_on_the_profile_and_its_models_only(
        template, functions):
    conditions = conditions_for(template)
    statements = model_statements(functions["resume"], conditions)
    assert statements == [
        {"Effect": "Allow", "Action": INVOKE,
         "Resource": {"Fn::Sub": PROFILE_ARN}},
        {"Effect": "Allow", "Action": INVOKE,
         "Resource": [
             {"Fn::Sub": "arn:${AWS::Partition}:bedrock:*::foundation-model/${ModelId}"},
             {"Fn::Sub": "arn:${AWS::Partition}:bedrock:::foundation-model/${ModelId}"}],
         # The models only through this profile: never invoked directly.
         "Condition": {"StringEquals": {"bedrock:InferenceProfileArn": {"Fn::Sub": PROFILE_ARN}}}},
    ], statements
    # A geography's profile: its regions' models, no region-less ARN.
    eu = model_statements(functions["resume"],
                          conditions_for(template, BedrockInferenceProfile="eu"))
    assert eu[1]["Resource"] == [
        {"Fn::Sub": "arn:${AWS::Partition}:bedrock:*::foundation-model/${ModelId}"}]
    # No profile: the model in this region, nothing else.
    direct = model_statements(functions["resume"],
                              conditions_for(template, BedrockInferenceProfile="none"))
    assert direct == [{"Effect": "Allow", "Action": INVOKE, "Resource": {
        "Fn::Sub": "arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/${ModelId}"}}]
    # Only the function that drives tasks calls the model.
    for binary, res in functions.items():
        if binary != "resume":
            assert model_statements(res, conditions) == [], binary
    # The conformance agent calls no model: no model permission at all.
    conformance = conditions_for(template, Agent="conformance")
    assert all(model_statements(res, conformance) == [] for res in functions.values())
    # The model id is part of the ARNs: no wildcard can get in.
    assert params_pattern_accepts(template, "ModelId", "anthropic.claude-haiku-4-5-20251001-v1:0")
    assert not params_pattern_accepts(template, "ModelId", "*")
    assert not params_pattern_accepts(template, "ModelId", "anthropic.*")


def test_a_hosted_provider_reads_its_key_from_the_secret_and_only_the_resume_function_may(
        template, functions):
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:harness-key-AbCdEf"
    for provider in ("openai", "anthropic"):
        conditions = conditions_for(template, ModelProvider=provider, ModelApiKeySecretArn=arn)
        assert model_statements(functions["resume"], conditions) == [
            {"Effect": "Allow", "Action": "secretsmanager:GetSecretValue",
             "Resource": {"Ref": "ModelApiKeySecretArn"}}]
        env = drop_novalue(resolve(
            functions["resume"]["Properties"]["Environment"]["Variables"], conditions))
        assert env == {"HARNESS_MODEL_API_KEY_SECRET": {"Ref": "ModelApiKeySecretArn"}}
        glob = resolve(template["Globals"]["Function"]["Environment"]["Variables"], conditions)
        assert glob["HARNESS_MODEL"] == {"Fn::Sub": "${ModelProvider}:${ModelId}"}
        for binary, res in functions.items():
            if binary == "resume":
                continue
            assert model_statements(res, conditions) == [], binary
            own = res["Properties"].get("Environment", {}).get("Variables", {})
            assert "HARNESS_MODEL_API_KEY_SECRET" not in own, binary
    # No key in the template or the environment: a rule requires the secret instead.
    flat = repr(template["Globals"]) + repr(template["Parameters"])
    assert "OPENAI_API_KEY" not in flat and "ANTHROPIC_API_KEY" not in flat
    rule = template["Rules"]["ModelKeyForHostedProviders"]
    assert "ModelApiKeySecretArn" in repr(rule["Assertions"])
    assert params_pattern_accepts(template, "ModelApiKeySecretArn", arn)
    assert not params_pattern_accepts(template, "ModelApiKeySecretArn", "sk-the-key-itself")
    # A partial ARN (no random suffix) would not match the policy's resource.
    assert not params_pattern_accepts(
        template, "ModelApiKeySecretArn",
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:harness-key")


def params_pattern_accepts(template, name: str, value: str) -> bool:
    return re.fullmatch(template["Parameters"][name]["AllowedPattern"], value) is not None


# The front door's behaviours in order: (path pattern, origin).
FRONT_DOOR_ROUTES = [
    ("*:subscribe", "subscribe"), ("*/message:stream", "stream"), ("*/message:send", "api"),
    ("*/tasks", "api"), ("*/tasks/*", "api"), ("*/extendedAgentCard", "api"),
    ("/.well-known/*", "api"), ("/remote/*", "api"), ("/ui*", "api"),
]
ORIGIN_FUNCTION = {"stream": "send-streaming-message", "subscribe": "subscribe-to-task",
                   "jsonrpc": "jsonrpc"}


def front_door(template) -> dict:
    [dist] = of_type(template, "AWS::CloudFront::Distribution").values()
    return dist["Properties"]["DistributionConfig"]


def cloudfront_match(pattern: str, path: str) -> bool:
    """CloudFront's path pattern: `*` any characters (slashes too), `?` one; the whole
    path must match."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, path) is not None


def route_of(template, path: str) -> str:
    config = front_door(template)
    for behaviour in config["CacheBehaviors"]:
        if cloudfront_match(behaviour["PathPattern"], path):
            return behaviour["TargetOriginId"]
    return config["DefaultCacheBehavior"]["TargetOriginId"]


def test_the_card_names_the_one_front_door_for_both_bindings(template, functions):
    """No function is told another URL than the one the request came to: the card
    functions derive both interfaces from X-Forwarded-Host, which the distribution's
    viewer-request function sets from the client's Host."""
    env = template["Globals"]["Function"]["Environment"]["Variables"]
    assert env["HARNESS_PUBLIC_URL"] == {"Ref": "PublicUrl"}
    assert template["Parameters"]["PublicUrl"]["Default"] == ""
    for binary, res in functions.items():
        own = res["Properties"].get("Environment", {}).get("Variables", {})
        assert "HARNESS_JSONRPC_URL" not in own and "HARNESS_PUBLIC_URL" not in own, binary
    [fn] = of_type(template, "AWS::CloudFront::Function").values()
    code = fn["Properties"]["FunctionCode"]
    assert "request.headers['x-forwarded-host'] = { value: request.headers.host.value }" in code
    config = front_door(template)
    behaviours = [config["DefaultCacheBehavior"], *config["CacheBehaviors"]]
    for b in behaviours:
        assert b["FunctionAssociations"] == [{
            "EventType": "viewer-request",
            "FunctionARN": {"Fn::GetAtt": ["FrontDoorHostFunction",
                                           "FunctionMetadata.FunctionARN"]}}]


def test_every_a2a_route_goes_through_the_front_door_to_its_function(template, functions):
    config = front_door(template)
    assert [(b["PathPattern"], b["TargetOriginId"]) for b in config["CacheBehaviors"]] \
        == FRONT_DOOR_ROUTES
    for tenant in ("", "/acme"):
        cases = {
            f"{tenant}/message:send": "api", f"{tenant}/message:stream": "stream",
            f"{tenant}/tasks": "api", f"{tenant}/tasks/abc": "api",
            f"{tenant}/tasks/abc:cancel": "api", f"{tenant}/tasks/abc:subscribe": "subscribe",
            f"{tenant}/tasks/abc/pushNotificationConfigs": "api",
            f"{tenant}/tasks/abc/pushNotificationConfigs/c1": "api",
            f"{tenant}/extendedAgentCard": "api",
        }
        for path, origin in cases.items():
            assert route_of(template, path) == origin, path
    assert route_of(template, "/.well-known/agent-card.json") == "api"
    assert route_of(template, "/") == "jsonrpc"
    # Every HTTP API route is reachable through the door, by the origin that serves it.
    for (method, path), (binary, _) in api_routes(template).items():
        concrete = path.replace("{tenant}", "acme").replace("{id}", "abc") \
            .replace("{asset+}", "app.js") \
            .replace("{configId}", "c1")
        assert route_of(template, concrete) == "api", (method, path)


def test_every_streaming_route_behind_the_front_door_is_a_streaming_integration(
        template, functions):
    config = front_door(template)
    origins = {o["Id"]: o for o in config["Origins"]}
    assert origins["api"]["DomainName"] == {
        "Fn::Sub": "${HttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}"}
    logical = {b: k for k, res in template["Resources"].items()
               if res.get("Type") == "AWS::Serverless::Function"
               for b in [res["Metadata"]["BuildProperties"]["Binary"]]}
    for origin, binary in ORIGIN_FUNCTION.items():
        assert origins[origin]["DomainName"] == {"Fn::Select": [2, {"Fn::Split": [
            "/", {"Fn::GetAtt": [f"{logical[binary]}Url", "FunctionUrl"]}]}]}, origin
        # Response streaming: the function URL streams what the function writes.
        assert functions[binary]["Properties"]["FunctionUrlConfig"]["InvokeMode"] \
            == "RESPONSE_STREAM", binary
        assert origins[origin]["CustomOriginConfig"]["OriginReadTimeout"] == 60
    for o in origins.values():
        assert o["CustomOriginConfig"]["OriginProtocolPolicy"] == "https-only"
    caching_disabled = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad"
    all_but_host = "b689b0a8-53d0-40ab-baf2-68738e2966ac"
    policies = template["Mappings"]["FrontDoor"]["Policies"]
    assert policies == {"CachingDisabled": caching_disabled,
                        "AllViewerExceptHostHeader": all_but_host}
    for b in [config["DefaultCacheBehavior"], *config["CacheBehaviors"]]:
        # Nothing cached, nothing compressed (which would buffer a stream), every verb
        # and header (Authorization included) passed on, and HTTPS only.
        assert b["CachePolicyId"] == {"Fn::FindInMap": ["FrontDoor", "Policies", "CachingDisabled"]}
        assert b["OriginRequestPolicyId"] == {
            "Fn::FindInMap": ["FrontDoor", "Policies", "AllViewerExceptHostHeader"]}
        assert b["Compress"] is False
        assert set(b["AllowedMethods"]) == {"GET", "HEAD", "OPTIONS", "PUT", "PATCH", "POST",
                                            "DELETE"}
        assert b["ViewerProtocolPolicy"] == "https-only"
    # A blocking JSON-RPC send answers before the front door gives up on its origin.
    wait = functions["jsonrpc"]["Properties"]["Environment"]["Variables"][
        "HARNESS_MAX_BLOCKING_WAIT_SECONDS"]
    assert int(wait) < origins["jsonrpc"]["CustomOriginConfig"]["OriginReadTimeout"]
    # The SSE keep-alive comes well inside the origin read timeout.
    server = (ROOT / "common/src/server/mod.rs").read_text()
    assert "KeepAlive::default()" in server  # axum's default interval: 15 s


# ------------------------------------------------------------------ 8. checkov skips

def test_every_checkov_skip_says_why(template):
    """tests/run runs checkov on the template and requires 0 failed checks; a check is
    skipped only inline, on its resource, with the reason."""
    skipped = 0
    for logical_id, res in template["Resources"].items():
        for skip in res.get("Metadata", {}).get("checkov", {}).get("skip", []):
            assert re.fullmatch(r"CKV2?_AWS_\d+", skip["id"]), (logical_id, skip)
            assert len(skip.get("comment", "").split()) >= 8, (logical_id, skip)
            skipped += 1
    assert skipped > 0


# The functions that send participants the requests addressed to them (the drive's help
# requests and sub-tasks, the /task command's tasks), and send-message, which also takes
# their answers.
ANNOUNCERS = {"send-message", "send-streaming-message", "jsonrpc", "resume"}


def test_personal_channels_are_read_from_their_secret_by_the_functions_that_use_them(
        template, functions):
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:harness-channels-AbCdEf"
    grant = {"Effect": "Allow", "Action": "secretsmanager:GetSecretValue",
             "Resource": {"Ref": "PersonalChannelsSecretArn"}}
    on = conditions_for(template, PersonalChannelsSecretArn=arn)
    off = conditions_for(template)
    assert on["HasPersonalChannels"] and not off["HasPersonalChannels"]
    for binary, res in functions.items():
        own = res["Properties"].get("Environment", {}).get("Variables", {})
        for conditions in (on, off):
            granted = grant in model_statements(res, conditions)
            env = drop_novalue(resolve(own, conditions))
            reads = env.get("HARNESS_PERSONAL_CHANNELS_SECRET") == \
                {"Ref": "PersonalChannelsSecretArn"}
            expected = binary in ANNOUNCERS and conditions is on
            assert granted == expected and reads == expected, (binary, conditions is on)
    rule = template["Rules"]["PersonalChannelsNeedPushAndPublicUrl"]
    assert "PushNotifications" in repr(rule) and "PublicUrl" in repr(rule)
    assert params_pattern_accepts(template, "PersonalChannelsSecretArn", arn)
    assert not params_pattern_accepts(
        template, "PersonalChannelsSecretArn", "https://hooks.example/secret")


# The functions that delegate to remote agents (resume), cancel their tasks (cancel-task,
# jsonrpc) or take their callbacks (remote-callback).
DELEGATORS = {"resume", "cancel-task", "jsonrpc", "remote-callback"}


def test_remote_agents_are_read_from_their_secret_by_the_functions_that_call_them(
        template, functions):
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:harness-agents-AbCdEf"
    grant = {"Effect": "Allow", "Action": "secretsmanager:GetSecretValue",
             "Resource": {"Ref": "RemoteAgentsSecretArn"}}
    on = conditions_for(template, RemoteAgentsSecretArn=arn)
    off = conditions_for(template)
    assert on["HasRemoteAgents"] and not off["HasRemoteAgents"]
    for binary, res in functions.items():
        own = res["Properties"].get("Environment", {}).get("Variables", {})
        for conditions in (on, off):
            granted = grant in model_statements(res, conditions)
            env = drop_novalue(resolve(own, conditions))
            reads = env.get("HARNESS_AGENTS_SECRET") == {"Ref": "RemoteAgentsSecretArn"}
            expected = binary in DELEGATORS and conditions is on
            assert granted == expected and reads == expected, (binary, conditions is on)
    rule = template["Rules"]["RemoteAgentsNeedPushAndPublicUrl"]
    assert "PushNotifications" in repr(rule) and "PublicUrl" in repr(rule)
    assert params_pattern_accepts(template, "RemoteAgentsSecretArn", arn)


def test_mcp_servers_are_read_from_their_secret_by_the_resume_function_only(
        template, functions):
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:harness-mcp-AbCdEf"
    grant = {"Effect": "Allow", "Action": "secretsmanager:GetSecretValue",
             "Resource": {"Ref": "McpServersSecretArn"}}
    on = conditions_for(template, McpServersSecretArn=arn)
    off = conditions_for(template)
    for binary, res in functions.items():
        own = res["Properties"].get("Environment", {}).get("Variables", {})
        for conditions in (on, off):
            granted = grant in model_statements(res, conditions)
            env = drop_novalue(resolve(own, conditions))
            reads = env.get("HARNESS_MCP_SECRET") == {"Ref": "McpServersSecretArn"}
            expected = binary == "resume" and conditions is on
            assert granted == expected and reads == expected, (binary, conditions is on)
