//! The settings table (`common::config::settings::SETTINGS`) against what documents and
//! reads it:
//!
//! - `common/docs/configuration.md`'s table (`| flag | variable | default | meaning |`)
//!   lists exactly the settings harness-local reads, each with its flag and its local
//!   default; `functions/README.md`'s "Function configuration" table exactly those the
//!   functions read, each with its Lambda default;
//! - every `HARNESS_*` name in the source of `common/src` and `functions/*/src`, in the
//!   docs (`README.md`, `common/docs`, `functions/README.md`) and in `template.yaml` is a
//!   setting (the function template's, one the functions read), and so is every variable
//!   read by a name written in the source (`env::var("…")`, `service_endpoint("…")`);
//! - harness-local's flags take their names from the table (`long = settings::X.long()`,
//!   `env = settings::X.env`, the same `X`), and every `--flag` its source mentions is one.
//!
//! harness-local's own test holds its clap arguments (flags, variables, defaults) to the
//! table too.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::config::settings::{self, Read, Setting, SETTINGS};

/// `HARNESS_*` names in the source that are not settings, each with why.
const NOT_SETTINGS: &[(&str, &str)] = &[(
    "HARNESS_TEST_NO_SUCH_KEY",
    "common/src/models/mod.rs: a test's API key variable, never set",
)];

/// `--flags` harness-local's source may mention that are not settings: its subcommands'.
const NOT_SETTING_FLAGS: &[&str] = &["ttl-seconds"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_owned()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn shown(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// One row of a documentation table.
#[derive(Debug)]
struct Row {
    /// Where: `file:line`.
    at: String,
    /// The flag without its dashes, if the table has a flag column and the row one.
    flag: Option<String>,
    /// The variables the row documents (one, or several sharing a row).
    envs: Vec<String>,
    default: String,
}

/// A markdown table row's cells, split on `|` outside code spans.
fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    let mut cells = vec![String::new()];
    let mut code = false;
    for c in inner.chars() {
        match c {
            '`' => {
                code = !code;
                cells.last_mut().expect("a cell").push(c);
            }
            '|' if !code => cells.push(String::new()),
            _ => cells.last_mut().expect("a cell").push(c),
        }
    }
    cells.into_iter().map(|c| c.trim().to_owned()).collect()
}

/// The code spans of `text`.
fn code_spans(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// The rows of the first table after line `from` whose header is `header`.
fn table(path: &Path, text: &str, from: usize, header: &str) -> Vec<Row> {
    let lines: Vec<&str> = text.lines().collect();
    let head = (from..lines.len())
        .find(|&i| lines[i].trim() == header)
        .unwrap_or_else(|| panic!("{}: no table `{header}`", shown(path)));
    let columns = cells(header);
    let column = |name: &str| columns.iter().position(|c| c == name);
    let (flag, variable, default) = (
        column("flag"),
        column("variable").expect("a variable column"),
        column("default").expect("a default column"),
    );
    let mut rows = Vec::new();
    for (i, line) in lines.iter().enumerate().skip(head + 2) {
        if !line.trim_start().starts_with('|') {
            break;
        }
        let cells = cells(line);
        let at = format!("{}:{}", shown(path), i + 1);
        assert_eq!(cells.len(), columns.len(), "{at}: {} cells", cells.len());
        let flag = flag.and_then(|f| {
            let spans = code_spans(&cells[f]);
            assert!(spans.len() <= 1, "{at}: one flag a row");
            spans.first().map(|s| {
                s.strip_prefix("--")
                    .unwrap_or_else(|| panic!("{at}: a flag is `--name`"))
                    .to_owned()
            })
        });
        let envs = code_spans(&cells[variable]);
        assert!(!envs.is_empty(), "{at}: no variable");
        rows.push(Row {
            at,
            flag,
            envs,
            default: cells[default].clone(),
        });
    }
    rows
}

fn normalized(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `rows` document exactly the settings `read` says an entry point reads, with their
/// flags (when the table has that column) and defaults.
fn check_table(
    what: &str,
    rows: &[Row],
    flags: bool,
    read: impl Fn(&Setting) -> Read,
    failures: &mut Vec<String>,
) {
    let mut documented = BTreeSet::new();
    for row in rows {
        for env in &row.envs {
            documented.insert(env.as_str());
            let Some(setting) = settings::by_env(env) else {
                failures.push(format!(
                    "{}: `{env}` is documented but is not in common::config::settings",
                    row.at
                ));
                continue;
            };
            let Read::Default(default) = read(setting) else {
                failures.push(format!(
                    "{}: `{env}` is documented but the settings table says {what} does not \
                     read it",
                    row.at
                ));
                continue;
            };
            if flags && row.flag.as_deref() != setting.flag {
                failures.push(format!(
                    "{}: `{env}`'s flag is {:?} here, {:?} in the settings table",
                    row.at, row.flag, setting.flag
                ));
            }
            if normalized(&row.default) != normalized(default) {
                failures.push(format!(
                    "{}: `{env}`'s default is `{}` here, `{default}` in the settings table",
                    row.at, row.default
                ));
            }
        }
    }
    for setting in SETTINGS {
        if read(setting).is_read() && !documented.contains(setting.env) {
            failures.push(format!(
                "`{}` ({what}) is in the settings table but not in its documentation table",
                setting.env
            ));
        }
    }
}

fn local_doc() -> (PathBuf, String) {
    let path = root().join("common/docs/configuration.md");
    let text = read(&path);
    (path, text)
}

fn functions_doc() -> (PathBuf, String) {
    let path = root().join("functions/README.md");
    let text = read(&path);
    (path, text)
}

#[test]
fn the_documentation_tables_list_exactly_the_settings() {
    let mut failures = Vec::new();
    let (path, text) = local_doc();
    let rows = table(&path, &text, 0, "| flag | variable | default | meaning |");
    check_table("harness-local", &rows, true, |s| s.local, &mut failures);

    let (path, text) = functions_doc();
    let section = text
        .lines()
        .position(|l| l.trim() == "## Function configuration")
        .expect("functions/README.md: a Function configuration section");
    let rows = table(&path, &text, section, "| variable | default | meaning |");
    check_table("the functions", &rows, false, |s| s.lambda, &mut failures);
    assert!(failures.is_empty(), "\n{}\n", failures.join("\n"));
}

fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// The Rust sources of `common/src` and every `functions/*/src`.
fn sources() -> Vec<PathBuf> {
    let root = root();
    let mut files = Vec::new();
    rust_files(&root.join("common/src"), &mut files);
    for function in std::fs::read_dir(root.join("functions")).expect("functions/") {
        let src = function.expect("a directory entry").path().join("src");
        if src.is_dir() {
            rust_files(&src, &mut files);
        }
    }
    files.sort();
    files
}

/// Every `HARNESS_*` name in `text`, with its line.
fn harness_names(text: &str) -> Vec<(usize, String)> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut found = Vec::new();
    for (i, _) in text.match_indices("HARNESS_") {
        if text[..i].chars().next_back().is_some_and(ident) {
            continue;
        }
        let name: String = text[i..]
            .chars()
            .take_while(|&c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            .collect();
        let name = name.trim_end_matches('_');
        if name.len() > "HARNESS".len()
            && !text[i + name.len()..].starts_with(|c: char| c.is_ascii_lowercase())
        {
            found.push((text[..i].matches('\n').count() + 1, name.to_owned()));
        }
    }
    found
}

/// The string literal arguments of every call `call("…")` in `text`, with their lines.
fn literal_arguments(text: &str, call: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let opening = format!("{call}(\"");
    for (i, _) in text.match_indices(&opening) {
        let rest = &text[i + opening.len()..];
        if let Some(end) = rest.find('"') {
            found.push((text[..i].matches('\n').count() + 1, rest[..end].to_owned()));
        }
    }
    found
}

#[test]
fn every_variable_the_source_names_or_reads_is_a_setting() {
    let mut failures = Vec::new();
    let mut excused = BTreeSet::new();
    let excuses: BTreeMap<&str, &str> = NOT_SETTINGS.iter().copied().collect();
    for file in sources() {
        let text = read(&file);
        for (line, name) in harness_names(&text) {
            if excuses.contains_key(name.as_str()) {
                excused.insert(name);
            } else if settings::by_env(&name).is_none() {
                failures.push(format!(
                    "{}:{line}: `{name}` is not in common::config::settings",
                    shown(&file)
                ));
            }
        }
        let read_by_name = ["env::var", "env::var_os", "env_nonempty"]
            .into_iter()
            .flat_map(|call| literal_arguments(&text, call))
            .chain(
                literal_arguments(&text, "service_endpoint")
                    .into_iter()
                    .map(|(line, service)| (line, format!("AWS_ENDPOINT_URL_{service}"))),
            );
        for (line, name) in read_by_name {
            if settings::by_env(&name).is_none() && !excuses.contains_key(name.as_str()) {
                failures.push(format!(
                    "{}:{line}: reads `{name}`, which is not in common::config::settings",
                    shown(&file)
                ));
            }
        }
    }
    for (name, why) in NOT_SETTINGS {
        if !excused.contains(*name) {
            failures.push(format!(
                "NOT_SETTINGS: `{name}` ({why}) is no longer in the source: take it out"
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}\n", failures.join("\n"));
}

#[test]
fn every_variable_the_docs_and_the_template_name_is_a_setting() {
    let root = root();
    let mut docs = vec![root.join("README.md"), root.join("functions/README.md")];
    for entry in std::fs::read_dir(root.join("common/docs")).expect("common/docs") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            docs.push(path);
        }
    }
    docs.sort();
    let mut failures = Vec::new();
    for doc in &docs {
        for (line, name) in harness_names(&read(doc)) {
            if settings::by_env(&name).is_none() {
                failures.push(format!(
                    "{}:{line}: `{name}` is not in common::config::settings",
                    shown(doc)
                ));
            }
        }
    }
    let template = root.join("template.yaml");
    for (line, name) in harness_names(&read(&template)) {
        if !settings::by_env(&name).is_some_and(|s| s.lambda.is_read()) {
            failures.push(format!(
                "template.yaml:{line}: `{name}` is not a setting the functions read"
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}\n", failures.join("\n"));
}

/// The `#[arg(...)]` attributes of harness-local's `Args`, with their lines.
fn args_attributes(text: &str) -> Vec<(usize, String)> {
    let start = text.find("struct Args {").expect("harness-local's Args");
    let end = start + text[start..].find("\n}\n").expect("the end of Args");
    let mut found = Vec::new();
    let mut from = start;
    while let Some(at) = text[from..end].find("#[arg(") {
        let open = from + at;
        let close = open + text[open..].find(")]").expect("the end of an attribute");
        found.push((
            text[..open].matches('\n').count() + 1,
            text[open..close + 2].to_owned(),
        ));
        from = close;
    }
    found
}

/// `settings::NAME` in `attribute` after `key = `, if that is how it is written.
fn setting_of<'a>(attribute: &'a str, key: &str, suffix: &str) -> Option<&'a str> {
    let at = attribute.find(&format!("{key} = settings::"))?;
    let rest = &attribute[at + key.len() + " = settings::".len()..];
    let name = rest.split(suffix).next()?;
    name.chars()
        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        .then_some(name)
}

#[test]
fn harness_local_names_its_flags_through_the_table() {
    let path = root().join("functions/local/src/main.rs");
    let text = read(&path);
    let mut failures = Vec::new();
    let attributes = args_attributes(&text);
    assert!(!attributes.is_empty(), "no #[arg(...)] in Args");
    let mut named = BTreeSet::new();
    for (line, attribute) in &attributes {
        let long = setting_of(attribute, "long", ".long()");
        let env = setting_of(attribute, "env", ".env");
        match (long, env) {
            (Some(long), Some(env)) if long == env => {
                // The constants are named after their variables: `TABLE` is `HARNESS_TABLE`.
                let variable = format!("HARNESS_{long}");
                match settings::by_env(&variable) {
                    Some(setting) if setting.flag.is_some() => {
                        named.insert(variable);
                    }
                    _ => failures.push(format!(
                        "functions/local/src/main.rs:{line}: `settings::{long}` is not a \
                         setting with a flag"
                    )),
                }
            }
            _ => failures.push(format!(
                "functions/local/src/main.rs:{line}: a flag takes `long = settings::X.long()` \
                 and `env = settings::X.env` from the settings table: {attribute}"
            )),
        }
    }
    for setting in SETTINGS {
        if setting.flag.is_some() && !named.contains(setting.env) {
            failures.push(format!(
                "`{}` has a flag in the settings table but harness-local declares none",
                setting.env
            ));
        }
    }
    let mentioned: BTreeSet<&str> = text
        .match_indices("--")
        .filter_map(|(i, _)| {
            let rest = &text[i + 2..];
            let end = rest
                .find(|c: char| !(c.is_ascii_lowercase() || c == '-'))
                .unwrap_or(rest.len());
            let flag = rest[..end].trim_end_matches('-');
            (!flag.is_empty() && rest.starts_with(|c: char| c.is_ascii_lowercase())).then_some(flag)
        })
        .collect();
    for flag in mentioned {
        if settings::by_flag(flag).is_none() && !NOT_SETTING_FLAGS.contains(&flag) {
            failures.push(format!(
                "functions/local/src/main.rs mentions `--{flag}`, which is not a flag of the \
                 settings table"
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}\n", failures.join("\n"));
}
