//! The redactor's tests: each kind's true positives and look-alikes, idempotence, JSON,
//! extra patterns.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;

use regex::Regex;
use serde_json::{json, Map, Value};

use super::builtin::BUILTIN;
use super::redactor::CUSTOM;
use super::*;

// Synthetic values only. Prefixes are split with `concat!` so that secret scanners
// reading this file do not take the test values for leaked credentials.
const OPENAI: &str = concat!("sk-", "proj-", "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z");
const OPENAI_LEGACY: &str = concat!("sk-", "T3stT3stT3stT3stT3stT3stT3stT3stT3stT3stT3stT3st");
const ANTHROPIC: &str = concat!("sk-", "ant-", "api03-Synthetic0Key0For0Tests0Only-AAAA");
const AWS_KEY_ID: &str = "AKIAIOSFODNN7EXAMPLE";
const AWS_SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const JWT: &str = concat!(
    "eyJ",
    "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.",
    "eyJ",
    "zdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IlRlc3QifQ.",
    "c2lnbmF0dXJlLW9mLWEtdGVzdC10b2tlbg"
);
const GITHUB: &str = concat!("gh", "p_", "0123456789abcdefghijABCDEFGHIJ012345");
const GITHUB_PAT: &str = concat!(
    "github_",
    "pat_",
    "11AAAAAAA0000000000000_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVW"
);
const SLACK: &str = concat!(
    "xo",
    "xb-",
    "1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
);
const SLACK_HOOK_PATH: &str = concat!("T0000", "0000/B0000", "0000/XXXXXXXXXXXXXXXXXXXXXXXX");
const GOOGLE: &str = concat!("AI", "za", "SyD-Synthetic_Key_For_Tests_0123456");
const STRIPE: &str = concat!("sk", "_live_", "51Synthetic0Test0Value0AbCdEf");
const PRIVATE_KEY: &str = "-----BEGIN RSA PRIVATE KEY-----\n\
    MIIEowIBAAKCAQEAsyntheticsyntheticsyntheticsyntheticsynthetic\n\
    c3ludGhldGljIHRlc3Qga2V5IGJvZHkgbm90IGEgcmVhbCBrZXk=\n\
    -----END RSA PRIVATE KEY-----";

fn r() -> Redactor {
    Redactor::builtin()
}

/// `input` redacts to `expected`, and `expected` is left as it is (idempotence).
#[track_caller]
fn redacts(input: &str, expected: &str) {
    let redactor = r();
    let once = redactor.redact_str(input);
    assert!(matches!(once, Cow::Owned(_)), "{input:?} was not redacted");
    assert_eq!(once, expected, "redacting {input:?}");
    assert!(redactor.is_match(input), "{input:?}");
    assert!(
        matches!(redactor.redact_str(&once), Cow::Borrowed(_)),
        "{once:?} redacted again"
    );
    assert!(!redactor.is_match(&once), "{once:?}");
}

#[track_caller]
fn untouched(input: &str) {
    let redactor = r();
    assert!(
        matches!(redactor.redact_str(input), Cow::Borrowed(_)),
        "{input:?} was redacted to {:?}",
        redactor.redact_str(input)
    );
    assert!(!redactor.is_match(input), "{input:?}");
}

#[test]
fn builtin_table_compiles() {
    for b in BUILTIN {
        Regex::new(b.pattern).unwrap_or_else(|e| panic!("{}: {e}", b.kind));
    }
    assert_eq!(r().table.patterns.len(), BUILTIN.len());
    let kinds: HashSet<&str> = BUILTIN.iter().map(|b| b.kind).collect();
    assert_eq!(kinds.len(), BUILTIN.len(), "kinds are unique");
}

#[test]
fn the_marker_names_the_kind() {
    assert_eq!(marker("aws-access-key"), "[REDACTED:aws-access-key]");
}

#[test]
fn no_marker_matches_the_table() {
    for b in BUILTIN.iter().map(|b| b.kind).chain([CUSTOM]) {
        let m = marker(b);
        untouched(&m);
        // Also where each pattern's context is.
        untouched(&format!("Authorization: Bearer {m}"));
        untouched(&format!("https://user:{m}@example.com/"));
        untouched(&format!("aws_secret_access_key = {m}"));
        untouched(&format!("https://hooks.slack.com/services/{m}"));
    }
}

#[test]
fn openai_keys() {
    redacts(OPENAI, "[REDACTED:openai-key]");
    redacts(
        &format!("OPENAI_API_KEY={OPENAI_LEGACY}\n"),
        "OPENAI_API_KEY=[REDACTED:openai-key]\n",
    );
    redacts(
        &format!(
            "key \"{}\" rotated",
            concat!("sk-", "svcacct-", "Zz9_Yy8-Xx7_Ww6-Vv5Uu4")
        ),
        "key \"[REDACTED:openai-key]\" rotated",
    );
    untouched("sk-1");
    untouched("task-12345678901234567890123");
    untouched("disk-usage-report-for-the-whole-cluster");
    untouched("we use sk-learn for this");
    untouched("sk-learn-is-a-python-library-for-ml");
}

#[test]
fn anthropic_keys_win_over_openai() {
    redacts(ANTHROPIC, "[REDACTED:anthropic-key]");
    redacts(
        &format!("x-api-key: {ANTHROPIC}"),
        "x-api-key: [REDACTED:anthropic-key]",
    );
    untouched("sk-ant-colony-simulation-project");
    untouched("sk-ant-1");
}

#[test]
fn aws_access_key_ids() {
    redacts(AWS_KEY_ID, "[REDACTED:aws-access-key]");
    redacts(
        "AWS_ACCESS_KEY_ID=ASIAY34FZKBOKMUTVV7A",
        "AWS_ACCESS_KEY_ID=[REDACTED:aws-access-key]",
    );
    redacts(
        &format!("{{\"AccessKeyId\":\"{AWS_KEY_ID}\"}}"),
        "{\"AccessKeyId\":\"[REDACTED:aws-access-key]\"}",
    );
    untouched("AKIAEXAMPLE");
    untouched("akiaiosfodnn7example");
    // Longer than a key id: some other identifier.
    untouched("AKIAIOSFODNN7EXAMPLE0");
    untouched("XAKIAIOSFODNN7EXAMPLE");
}

#[test]
fn aws_secret_keys_only_where_named() {
    let m = "[REDACTED:aws-secret-key]";
    redacts(
        &format!("aws_secret_access_key = {AWS_SECRET}"),
        &format!("aws_secret_access_key = {m}"),
    );
    redacts(
        &format!("export AWS_SECRET_ACCESS_KEY={AWS_SECRET}\n"),
        &format!("export AWS_SECRET_ACCESS_KEY={m}\n"),
    );
    redacts(
        &format!("{{\"SecretAccessKey\": \"{AWS_SECRET}\", \"x\": 1}}"),
        &format!("{{\"SecretAccessKey\": \"{m}\", \"x\": 1}}"),
    );
    redacts(
        &format!(r#"{{\"SecretAccessKey\":\"{AWS_SECRET}\"}}"#),
        &format!(r#"{{\"SecretAccessKey\":\"{m}\"}}"#),
    );
    redacts(
        &format!("secret_key: '{AWS_SECRET}'"),
        &format!("secret_key: '{m}'"),
    );
    redacts(
        &format!("aws configure set aws_secret_access_key {AWS_SECRET}"),
        &format!("aws configure set aws_secret_access_key {m}"),
    );
    untouched(AWS_SECRET);
    untouched("commit 0123456789abcdef0123456789abcdef01234567");
    untouched("0123456789abcdef0123456789abcdef01234567");
    // 41 characters is not a secret access key.
    untouched(&format!("secret_key = {AWS_SECRET}A"));
    untouched("the secret key is in the vault");
}

#[test]
fn bearer_tokens_keep_the_word() {
    redacts(
        "Authorization: Bearer abcdef0123456789ABCDEF",
        "Authorization: Bearer [REDACTED:bearer-token]",
    );
    redacts(
        "curl -H 'authorization: bearer 123e4567-e89b-12d3-a456-426614174000'",
        "curl -H 'authorization: bearer [REDACTED:bearer-token]'",
    );
    redacts(
        "BEARER dGVzdC10b2tlbi0xMjM0NTY3OA==",
        "BEARER [REDACTED:bearer-token]",
    );
    // A JWT after Bearer is named as the JWT.
    redacts(&format!("Bearer {JWT}"), "Bearer [REDACTED:jwt]");
    untouched("the bearer of this letter");
    untouched("bearer authentication-mechanisms are described in RFC 6750");
    untouched("Bearer short");
}

#[test]
fn jwts() {
    redacts(JWT, "[REDACTED:jwt]");
    redacts(
        &format!("id_token={JWT}&state=x"),
        "id_token=[REDACTED:jwt]&state=x",
    );
    untouched("eyJ");
    untouched("eyJ.eyJ.abc");
    untouched("version 1.2.3 and 10.20.30.40");
    untouched("eyJhbGciOiJIUzI1NiJ9 alone is a header");
}

#[test]
fn private_key_blocks() {
    redacts(PRIVATE_KEY, "[REDACTED:private-key]");
    redacts(
        &format!("key:\n{PRIVATE_KEY}\nthanks"),
        "key:\n[REDACTED:private-key]\nthanks",
    );
    for label in ["EC ", "OPENSSH ", "DSA ", "ENCRYPTED ", ""] {
        redacts(
            &format!(
                "-----BEGIN {label}PRIVATE KEY-----\nMIIBsynthetic==\n-----END {label}PRIVATE KEY-----"
            ),
            "[REDACTED:private-key]",
        );
    }
    redacts(
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBsynthetic\n-----END PGP PRIVATE KEY BLOCK-----",
        "[REDACTED:private-key]",
    );
    // In a JSON string, with escaped newlines.
    redacts(
        r#"{"key":"-----BEGIN PRIVATE KEY-----\nMIIEvsynthetic\n-----END PRIVATE KEY-----\n"}"#,
        r#"{"key":"[REDACTED:private-key]\n"}"#,
    );
    // Truncated: everything after BEGIN goes.
    redacts(
        "start\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA",
        "start\n[REDACTED:private-key]",
    );
    untouched("-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOC\n-----END PUBLIC KEY-----");
    untouched("-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE\n-----END CERTIFICATE-----");
    untouched("a PRIVATE KEY is something you keep to yourself");
}

#[test]
fn passwords_in_urls() {
    redacts(
        "postgres://admin:s3cr3t-P4ss@db.example.com:5432/app",
        "postgres://admin:[REDACTED:url-password]@db.example.com:5432/app",
    );
    redacts(
        "redis://:hunter2hunter2@cache.internal:6379",
        "redis://:[REDACTED:url-password]@cache.internal:6379",
    );
    redacts(
        "git clone https://bot:p@ss@git.example.com/repo.git",
        "git clone https://bot:[REDACTED:url-password]@git.example.com/repo.git",
    );
    redacts(
        "see http://u:pw@[::1]:8080/ and https://example.com/",
        "see http://u:[REDACTED:url-password]@[::1]:8080/ and https://example.com/",
    );
    untouched("https://example.com:8080/path");
    untouched("https://example.com:8080/path?from=a@b.c");
    untouched("mailto:a@b.c");
    untouched("user@host");
    untouched("ssh://git@github.com/owner/repo.git");
    untouched("https://user@example.com/");
    untouched("http://[::1]:8080/x@y");
}

#[test]
fn github_tokens() {
    redacts(GITHUB, "[REDACTED:github-token]");
    redacts(
        &format!(
            "token: {}",
            concat!("gh", "s_", "abcdefghijklmnopqrstuvwxyz0123456789AB")
        ),
        "token: [REDACTED:github-token]",
    );
    redacts(GITHUB_PAT, "[REDACTED:github-token]");
    untouched("ghp_short");
    untouched(concat!("gh", "p_", "0123456789abcdefghijABCDEFGHIJ01234"));
    untouched("github_pat_short");
}

#[test]
fn slack_tokens_and_webhooks() {
    redacts(SLACK, "[REDACTED:slack-token]");
    redacts(
        &format!(
            "SLACK_TOKEN={}",
            concat!("xo", "xp-", "0000000000-1111111111-abcdef")
        ),
        "SLACK_TOKEN=[REDACTED:slack-token]",
    );
    redacts(
        &format!("post to https://hooks.slack.com/services/{SLACK_HOOK_PATH} now"),
        "post to https://hooks.slack.com/services/[REDACTED:slack-token] now",
    );
    untouched("xox");
    untouched("tic-tac-toe: xox, oxo");
    untouched("xoxo-hugs-and-kisses");
    untouched("https://hooks.slack.com/services/");
}

#[test]
fn google_api_keys() {
    redacts(GOOGLE, "[REDACTED:google-api-key]");
    redacts(
        &format!("https://maps.example/api?key={GOOGLE}&q=x"),
        "https://maps.example/api?key=[REDACTED:google-api-key]&q=x",
    );
    untouched("AIza");
    untouched(concat!("AI", "za", "SyD-Synthetic_Key_For_Tests_012345"));
    untouched(&format!("{GOOGLE}7"));
}

#[test]
fn stripe_keys() {
    redacts(STRIPE, "[REDACTED:stripe-key]");
    redacts(
        &format!(
            "STRIPE_KEY={}",
            concat!("rk", "_live_", "000000000000000000000000abc")
        ),
        "STRIPE_KEY=[REDACTED:stripe-key]",
    );
    untouched("sk_live_short");
    untouched("sk_test_51Synthetic0Test0Value0AbCdEf");
    untouched("pk_live_51Synthetic0Test0Value0AbCdEf");
}

#[test]
fn ordinary_ids_are_left_alone() {
    untouched("task 123e4567-e89b-12d3-a456-426614174000 in context ctx-42");
    untouched("sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
    untouched("0123456789abcdef0123456789abcdef01234567 is HEAD");
    // base64 of ordinary text.
    untouched("VGhlIHF1aWNrIGJyb3duIGZveCBqdW1wcyBvdmVyIHRoZSBsYXp5IGRvZy4=");
    untouched("héllo wörld, ünïcode is fine: 你好");
}

#[test]
fn several_kinds_in_one_text() {
    redacts(
        &format!("id {AWS_KEY_ID} key {OPENAI} jwt {JWT}."),
        "id [REDACTED:aws-access-key] key [REDACTED:openai-key] jwt [REDACTED:jwt].",
    );
}

#[test]
fn redacting_twice_changes_nothing() {
    let all = [
        OPENAI,
        ANTHROPIC,
        AWS_KEY_ID,
        &format!("aws_secret_access_key={AWS_SECRET}"),
        &format!("Bearer {GITHUB}"),
        JWT,
        PRIVATE_KEY,
        "ftp://me:pw12345@files.example",
        GITHUB_PAT,
        SLACK,
        &format!("https://hooks.slack.com/services/{SLACK_HOOK_PATH}"),
        GOOGLE,
        STRIPE,
    ]
    .join("\n");
    let once = r().redact_str(&all).into_owned();
    assert_ne!(once, all);
    let twice = r().redact_str(&once);
    assert!(matches!(twice, Cow::Borrowed(_)), "{twice}");
    assert_eq!(twice, once);
}

#[test]
fn a_long_text_without_secrets_is_borrowed() {
    let paragraph = "The bearer of this task asked for a summary of disk-usage on \
        host-7 (task-0042, commit 0123456789abcdef0123456789abcdef01234567); see \
        https://example.com:8080/report?id=123e4567-e89b-12d3-a456-426614174000 or \
        mail ops@example.com. Version 1.2.3 ships sk-learn 1.5. ";
    let text = paragraph.repeat(40);
    assert!(text.len() > 4096);
    assert!(matches!(r().redact_str(&text), Cow::Borrowed(_)));
    assert!(!r().is_match(&text));
}

#[test]
fn json_values_and_keys() {
    let mut value = json!({
        "message": {
            "parts": [
                {"text": format!("my key is {AWS_KEY_ID}")},
                {"data": {"nested": [1, true, null, format!("Bearer {GITHUB}")]}},
            ],
        },
        GITHUB: "a credential as a key",
        "Credentials": {
            "AccessKeyId": AWS_KEY_ID,
            "SecretAccessKey": AWS_SECRET,
            "Expiration": "2030-01-01T00:00:00Z",
        },
        "plain": "nothing here",
    });
    assert!(r().redact_json(&mut value));
    assert_eq!(
        value,
        json!({
            "message": {
                "parts": [
                    {"text": "my key is [REDACTED:aws-access-key]"},
                    {"data": {"nested": [1, true, null, "Bearer [REDACTED:github-token]"]}},
                ],
            },
            "[REDACTED:github-token]": "a credential as a key",
            "Credentials": {
                "AccessKeyId": "[REDACTED:aws-access-key]",
                "SecretAccessKey": "[REDACTED:aws-secret-key]",
                "Expiration": "2030-01-01T00:00:00Z",
            },
            "plain": "nothing here",
        })
    );
    // Idempotent, and a 40-character value under an ordinary name stays.
    assert!(!r().redact_json(&mut value));
    let mut sha = json!({"commit": "0123456789abcdef0123456789abcdef01234567"});
    assert!(!r().redact_json(&mut sha));
}

#[test]
fn colliding_renamed_keys_keep_every_value() {
    let other = concat!("gh", "o_", "ZYXWVUTSRQPONMLKJIHGFEDCBA9876543210zz");
    let mut value = json!({
        GITHUB: 1,
        other: 2,
        "[REDACTED:github-token]": 3,
    });
    assert!(r().redact_json(&mut value));
    let map = value.as_object().unwrap();
    assert_eq!(map.len(), 3);
    assert_eq!(
        map["[REDACTED:github-token]"], 3,
        "the existing key keeps its value"
    );
    let mut renamed: Vec<i64> = ["[REDACTED:github-token] (2)", "[REDACTED:github-token] (3)"]
        .iter()
        .map(|k| map[*k].as_i64().unwrap())
        .collect();
    renamed.sort_unstable();
    assert_eq!(renamed, [1, 2]);
}

#[test]
fn extra_patterns_from_the_environment() {
    let value = "\n  ticket-[0-9]{6}  \r\n\nemployee=(?P<secret>E[0-9]{5})\n";
    let redactor = Redactor::from_env_value(Some(value)).unwrap();
    assert_eq!(
        redactor.redact_str("see ticket-123456 for employee=E12345"),
        "see [REDACTED:custom] for employee=[REDACTED:custom]"
    );
    // The built-in table still applies.
    assert_eq!(redactor.redact_str(AWS_KEY_ID), "[REDACTED:aws-access-key]");
    assert!(matches!(
        redactor.redact_str("ticket-12 employee=X"),
        Cow::Borrowed(_)
    ));
    // Unset or blank: the built-in table alone.
    for none in [None, Some(""), Some("\n \n")] {
        let builtin = Redactor::from_env_value(none).unwrap();
        assert!(Arc::ptr_eq(&builtin.table, &r().table));
    }
    assert_eq!(
        Redactor::with_extra(&["internal-[a-z]{8}".to_owned()])
            .unwrap()
            .redact_str("an internal-abcdefgh id"),
        "an [REDACTED:custom] id"
    );
}

#[test]
fn an_extra_pattern_matching_nothing_redacts_nothing() {
    let redactor = Redactor::with_extra(&["x*".to_owned()]).unwrap();
    assert!(matches!(redactor.redact_str("abc"), Cow::Borrowed(_)));
    assert!(!redactor.is_match("abc"));
}

#[test]
fn a_bad_extra_pattern_names_its_index() {
    let err = Redactor::from_env_value(Some("fine-[0-9]+\n\nbroken(")).unwrap_err();
    let RedactError::BadPattern {
        index,
        pattern,
        reason,
    } = &err;
    assert_eq!(*index, 1);
    assert_eq!(pattern, "broken(");
    assert!(!reason.is_empty());
    assert!(
        err.to_string()
            .starts_with("redaction pattern 1 (\"broken(\")"),
        "{err}"
    );
}

#[test]
fn redactors_are_cheap_clones_of_one_table() {
    let a = Redactor::default();
    let b = a.clone();
    assert!(Arc::ptr_eq(&a.table, &b.table));
}

#[test]
fn many_keys_redacted_to_one_marker_keep_every_value_under_its_own_key() {
    // Each key is an access key id: all redact to the same marker.
    let members: Map<String, Value> = (0..5000)
        .map(|i| (format!("AKIA{:016}", i), Value::from(i)))
        .collect();
    let mut value = Value::Object(members);
    assert!(Redactor::builtin().redact_json(&mut value));
    let object = value.as_object().unwrap();
    assert_eq!(object.len(), 5000, "no value lost");
    assert!(object.contains_key("[REDACTED:aws-access-key]"));
    assert!(object.contains_key("[REDACTED:aws-access-key] (5000)"));
    assert!(object
        .keys()
        .all(|k| k.starts_with("[REDACTED:aws-access-key]")));
}

#[test]
fn a_json_log_line_stays_json() {
    let r = Redactor::builtin();
    // A URL without a password, and a later field with an `@`: nothing between them
    // is a password.
    let line = r#"{"fields":{"base_url":"http://localhost:11434"},"span":{"participant":"alice@example.com","op":"SendMessage"}}"#;
    assert!(matches!(r.redact_str(line), Cow::Borrowed(_)));
    // A password is redacted inside its own string, the line still parses.
    let line = r#"{"url":"postgres://admin:hunter2-x@db:5432/app","op":"x"}"#;
    let redacted = r.redact_str(line);
    let v: Value = serde_json::from_str(&redacted).expect("still JSON");
    assert_eq!(
        v["url"],
        "postgres://admin:[REDACTED:url-password]@db:5432/app"
    );
    assert_eq!(v["op"], "x");
    // A private key block cut short in a JSON string ends at the string's quote.
    let line = r#"{"text":"-----BEGIN PRIVATE KEY-----
MIIEvQIBADANBgkq","op":"x"}"#;
    let v: Value = serde_json::from_str(&r.redact_str(line)).expect("still JSON");
    assert_eq!(v["text"], "[REDACTED:private-key]");
    assert_eq!(v["op"], "x");
}
