//! The floors of `common/src/lib.rs`, checked: every `crate::…` path in `common/src`
//! (a `use`, a grouped `use crate::{…}`, or a path written inline) may name only a module
//! on a lower floor than the file's own. An import that points up or sideways fails the
//! test, named by file, line and the floor it may not reach; so does an import circle
//! between modules, and a file over [`MAX_FILE_LINES`] lines.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Past this a file holds more than one concept.
const MAX_FILE_LINES: usize = 800;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The protocol crate's sources: its modules are floors of the same table.
fn protocol_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("protocol/src")
}

/// Floor number of each top-level module, from the table at the top of `lib.rs`: rows
/// `//! | <n> <name> | `mod`, `mod` | what it owns |`.
fn floors(lib: &str) -> BTreeMap<String, (u32, String)> {
    let mut floors = BTreeMap::new();
    for line in lib.lines() {
        let Some(row) = line.strip_prefix("//! |") else {
            continue;
        };
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let Some((number, name)) = cells[0].split_once(' ') else {
            continue;
        };
        let Ok(number) = number.parse::<u32>() else {
            continue;
        };
        for module in cells[1].split(',') {
            let module = module.trim().trim_matches('`').to_owned();
            let previous = floors.insert(module.clone(), (number, name.trim().to_owned()));
            assert!(previous.is_none(), "`{module}` is on two floors");
        }
    }
    floors
}

/// The top-level modules `lib.rs` declares, or re-exports from the protocol crate
/// (`pub use protocol::{a2a, ext};`).
fn declared(lib: &str) -> BTreeSet<String> {
    let mut modules = BTreeSet::new();
    for line in lib.lines().map(str::trim) {
        let line = line.strip_prefix("pub ").unwrap_or(line);
        if let Some(module) = line.strip_prefix("mod ").and_then(|l| l.strip_suffix(';')) {
            modules.insert(module.to_owned());
        } else if let Some(used) = line.strip_prefix("use protocol::") {
            let used = used.trim_end_matches(';').trim_matches(['{', '}']);
            modules.extend(used.split(',').map(|m| m.trim().to_owned()));
        }
    }
    modules
}

/// `source` with comments, string literals and char literals blanked (newlines kept, so
/// line numbers hold).
fn code_only(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    let blank = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
            }
        } else if c == 'r' && matches!(next, Some('"') | Some('#')) && !ident_before(&chars, i) {
            // A raw string: r"…", r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                match chars.get(j) {
                    None => break,
                    Some('"') if (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) => {
                        j += 1 + hashes;
                        break;
                    }
                    Some(&other) => {
                        blank(&mut out, other);
                        j += 1;
                    }
                }
            }
            i = j;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                if let Some(&ch) = chars.get(i) {
                    blank(&mut out, ch);
                }
                i += 1;
            }
            i += 1;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}'), or a lifetime ('a).
            if next == Some('\\') {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_before(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

/// Every top-level module a `crate::` (or `protocol::`) path in `code` names, with its
/// line.
fn crate_paths(code: &str) -> Vec<(usize, String)> {
    let mut found = crate_paths_after(code, "crate::");
    found.extend(crate_paths_after(code, "protocol::"));
    found.sort();
    found
}

fn crate_paths_after(code: &str, root: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    let mut from = 0;
    while let Some(at) = code[from..].find(root) {
        let start = from + at;
        from = start + root.len();
        if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
            continue;
        }
        let line = code[..start].matches('\n').count() + 1;
        let rest = code[from..].trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut item = String::new();
            let mut items = Vec::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 1 => items.push(std::mem::take(&mut item)),
                    _ => {}
                }
                if depth == 0 {
                    items.push(std::mem::take(&mut item));
                    break;
                }
                if depth == 1 && c != ',' {
                    item.push(c);
                } else if depth > 1 && c != '{' {
                    // Inside a nested group: the first segment is already taken.
                }
            }
            for item in items {
                if let Some(module) = first_segment(&item) {
                    found.push((line, module));
                }
            }
        } else if let Some(module) = first_segment(rest) {
            found.push((line, module));
        }
    }
    found
}

fn first_segment(path: &str) -> Option<String> {
    let ident: String = path
        .trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!ident.is_empty() && ident != "self").then_some(ident)
}

fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// Strongly connected groups of more than one module (Tarjan's algorithm).
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, v: &'a str) {
        let i = w.index.len();
        w.index.insert(v, i);
        w.low.insert(v, i);
        w.stack.push(v);
        w.on_stack.insert(v);
        for u in w.edges.get(v).into_iter().flatten() {
            let u = u.as_str();
            if !w.index.contains_key(u) {
                visit(w, u);
                let low = w.low[v].min(w.low[u]);
                w.low.insert(v, low);
            } else if w.on_stack.contains(u) {
                let low = w.low[v].min(w.index[u]);
                w.low.insert(v, low);
            }
        }
        if w.low[v] == w.index[v] {
            let mut group = Vec::new();
            while let Some(u) = w.stack.pop() {
                w.on_stack.remove(u);
                group.push(u.to_owned());
                if u == v {
                    break;
                }
            }
            if group.len() > 1 {
                group.sort();
                w.found.push(group);
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !walk.index.contains_key(v.as_str()) {
            visit(&mut walk, v);
        }
    }
    walk.found
}

#[test]
fn every_import_points_down_and_every_file_is_short() {
    let src = src();
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    let floors = floors(&lib);
    let declared = declared(&lib);
    let placed: BTreeSet<String> = floors.keys().cloned().collect();
    assert_eq!(
        declared, placed,
        "every module lib.rs declares is on exactly one floor of its table"
    );

    let mut files = Vec::new();
    rust_files(&src, &mut files);
    rust_files(&protocol_src(), &mut files);
    files.sort();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut wrong: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    let mut long = BTreeSet::new();
    for file in &files {
        let (rel, shown) = match file.strip_prefix(&src) {
            Ok(rel) => (rel, format!("common/src/{}", rel.display())),
            Err(_) => {
                let rel = file.strip_prefix(protocol_src()).expect("under a src");
                (rel, format!("common/protocol/src/{}", rel.display()))
            }
        };
        let source = std::fs::read_to_string(file).expect("read source");
        if source.lines().count() > MAX_FILE_LINES {
            long.insert(shown.clone());
        }
        let Some(first) = rel.components().next() else {
            continue;
        };
        let top = first.as_os_str().to_string_lossy();
        let top = top.trim_end_matches(".rs").to_owned();
        if top == "lib" {
            continue;
        }
        let (floor, floor_name) = &floors[&top];
        for (line, module) in crate_paths(&code_only(&source)) {
            if module == top || !floors.contains_key(&module) {
                continue;
            }
            edges.entry(top.clone()).or_default().insert(module.clone());
            let (to, to_name) = &floors[&module];
            if to >= floor {
                let how = if to == floor { "sideways" } else { "up" };
                wrong
                    .entry((top.clone(), module.clone()))
                    .or_default()
                    .push(format!(
                        "{shown}:{line}: `{top}` (floor {floor} {floor_name}) may not import \
                     `{module}` (floor {to} {to_name}): {how}"
                    ));
            }
        }
    }

    let found = circles(&edges);
    let upward: usize = wrong.values().map(Vec::len).sum();
    println!(
        "{} floors, {} imports that point up or sideways ({} module pairs), {} import circles, \
         {} files over {MAX_FILE_LINES} lines",
        floors.values().map(|f| f.0).collect::<BTreeSet<_>>().len(),
        upward,
        wrong.len(),
        found.len(),
        long.len()
    );
    for circle in &found {
        println!("circle: {}", circle.join(" <-> "));
    }
    let mut failures: Vec<String> = wrong.into_values().flatten().collect();
    failures.extend(
        found
            .iter()
            .map(|c| format!("import circle: {}", c.join(" <-> "))),
    );
    failures.extend(
        long.iter()
            .map(|path| format!("{path}: over {MAX_FILE_LINES} lines")),
    );
    assert!(failures.is_empty(), "\n{}\n", failures.join("\n"));
}

#[test]
fn the_reader_sees_through_comments_strings_and_groups() {
    let code = code_only(
        "use crate::a2a::Task; // crate::ops\nlet s = \"crate::store\";\nuse crate::{\n    \
         engine::{lease, x},\n    push,\n};\nlet c = 'x'; fn f<'a>() {} r#\"crate::ui\"#; \
         my_crate::models; crate::agent::run()",
    );
    let paths = crate_paths(&code);
    assert_eq!(
        paths,
        vec![
            (1, "a2a".to_owned()),
            (3, "engine".to_owned()),
            (3, "push".to_owned()),
            (7, "agent".to_owned()),
        ]
    );
}
