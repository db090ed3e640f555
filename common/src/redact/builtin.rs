//! The built-in table: one named pattern (kind) per credential shape, most specific
//! first, with the comments that say what each takes in and keeps out.

/// The names under which an AWS secret access key is assigned (`aws_secret_access_key`,
/// `AWS_SECRET_ACCESS_KEY`, `SecretAccessKey`, `secret_key`, `aws_secret`), shared by the
/// text pattern and the JSON member check so they agree.
macro_rules! aws_secret_name {
    () => {
        r"(?i:secret[_-]?(?:access[_-]?)?key|aws[_-]?secret)"
    };
}
pub(super) use aws_secret_name;

/// One row of the built-in table.
pub(super) struct Builtin {
    pub(super) kind: &'static str,
    /// The whole match is replaced, or only the group named `secret` when it took part.
    pub(super) pattern: &'static str,
    /// A further test of the replaced text, for bounds a regex cannot say.
    pub(super) check: Option<fn(&str) -> bool>,
}

// `(?-u:\b)` is an ASCII word boundary: Unicode `\b` makes the fast regex engines give up
// on non-ASCII text, and every message goes through this table.
/// The built-in table. More specific kinds come first: when two patterns match the same
/// text, the earlier one names it (an Anthropic key is also `sk-`-shaped; a JWT after
/// `Bearer` is reported as a JWT).
pub(super) const BUILTIN: &[Builtin] = &[
    // PEM private keys (PKCS#1/#8, EC, DSA, OpenSSH, encrypted, PGP): the whole block,
    // armour lines included, across lines. A block whose END line is missing (a truncated
    // paste or log line) is redacted to the end of the text (or of the JSON string it is
    // in: a `"`) rather than left half-shown.
    // Public keys and certificates say PUBLIC KEY / CERTIFICATE and are left alone.
    Builtin {
        kind: "private-key",
        pattern: r#"(?s)-----BEGIN (?:(?:RSA|EC|OPENSSH|DSA|ENCRYPTED) )?PRIVATE KEY-----(?:.*?-----END (?:(?:RSA|EC|OPENSSH|DSA|ENCRYPTED) )?PRIVATE KEY-----|[^"]*)|-----BEGIN PGP PRIVATE KEY BLOCK-----(?:.*?-----END PGP PRIVATE KEY BLOCK-----|[^"]*)"#,
        check: None,
    },
    // Anthropic API keys: `sk-ant-` (e.g. `sk-ant-api03-…`) and 20 or more key characters.
    // Before openai-key, which matches the same text.
    Builtin {
        kind: "anthropic-key",
        pattern: r"(?-u:\b)sk-ant-[A-Za-z0-9_-]{20,}",
        check: Some(not_words),
    },
    // OpenAI keys: `sk-` and 20 or more key characters, which takes in `sk-proj-…`,
    // `sk-svcacct-…` and `sk-admin-…`. The leading word boundary keeps out `task-…` and
    // `disk-…`; the length keeps out `sk-1`; `not_words` keeps out hyphenated prose that
    // happens to start with `sk-` (`sk-learn-…`).
    Builtin {
        kind: "openai-key",
        pattern: r"(?-u:\b)sk-[A-Za-z0-9_-]{20,}",
        check: Some(not_words),
    },
    // Stripe live secret and restricted keys: `sk_live_` / `rk_live_` and 24 or more
    // alphanumerics. Test-mode and publishable keys are not secrets of a live account.
    Builtin {
        kind: "stripe-key",
        pattern: r"(?-u:\b)[sr]k_live_[A-Za-z0-9]{24,}",
        check: None,
    },
    // GitHub tokens: classic ones are a `gh?_` prefix and 36 alphanumerics (more are
    // taken: the prefix alone is distinctive), fine-grained ones `github_pat_` and 22 or
    // more (in fact 82) characters. `ghp_short` is too short.
    Builtin {
        kind: "github-token",
        pattern: r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
        check: None,
    },
    // Slack tokens (`xoxb-`, `xoxp-`, `xoxa-`, `xoxo-`, `xoxs-`, `xoxr-` and 10 or more
    // characters; `not_words` keeps out prose such as `xoxo-hugs-and-kisses`), and
    // incoming-webhook URLs, whose path after `/services/` is the credential: the host is
    // kept so a reader still sees that a Slack webhook was there.
    Builtin {
        kind: "slack-token",
        pattern: r"(?-u:\b)xox[abposr]-[A-Za-z0-9-]{10,}|https://hooks\.slack\.com/services/(?P<secret>T[A-Za-z0-9]+/B[A-Za-z0-9]+/[A-Za-z0-9]+)",
        check: Some(not_words),
    },
    // Google API keys: `AIza` and exactly 35 characters. The character after is consumed
    // (the regex crate has no look-ahead), so a longer run of key characters is not a key.
    Builtin {
        kind: "google-api-key",
        pattern: r"(?-u:\b)(?P<secret>AIza[A-Za-z0-9_-]{35})(?:[^A-Za-z0-9_-]|$)",
        check: None,
    },
    // AWS access key ids: a long-term (`AKIA`), temporary (`ASIA`) or other documented
    // prefix and 16 upper-case alphanumerics, a whole word: `AKIAEXAMPLE` is too short and
    // key ids are never lower case.
    Builtin {
        kind: "aws-access-key",
        pattern: r"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?-u:\b)",
        check: None,
    },
    // AWS secret access keys: 40 base64 characters look like many other things (a git
    // commit id is 40 hex digits), so only where they are assigned to a name that says so:
    // `aws_secret_access_key = …`, `AWS_SECRET_ACCESS_KEY=…`, `"SecretAccessKey": "…"`
    // (also with JSON-escaped quotes), `secret_key: …`, `aws configure set
    // aws_secret_access_key …`. Only the value is replaced; exactly 40 characters (the one
    // after is consumed, for want of look-ahead).
    Builtin {
        kind: "aws-secret-key",
        pattern: concat!(
            aws_secret_name!(),
            r#"(?:\\?["'])?[ \t]*(?:=>|[:= \t])[ \t]*(?:\\?["'])?(?P<secret>[A-Za-z0-9/+=]{40})(?:[^A-Za-z0-9/+=]|$)"#
        ),
        check: None,
    },
    // JWTs (and so most OAuth access and ID tokens): a header and a payload that are both
    // base64url of a JSON object (`{"` encodes as `eyJ`) and a signature. Two `eyJ`
    // segments keep out version numbers and anything else with dots.
    Builtin {
        kind: "jwt",
        pattern: r"(?-u:\b)eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        check: None,
    },
    // Bearer tokens: the token after `Bearer` (any case), 16 or more token68 characters
    // (RFC 7235); the word is kept. `not_words` keeps out prose such as "bearer
    // authentication-mechanisms"; "the bearer of this letter" is too short anyway.
    Builtin {
        kind: "bearer-token",
        pattern: r"(?-u:\b)(?i:bearer)[ \t]+(?P<secret>[A-Za-z0-9._~+/=-]{16,})",
        check: Some(not_words),
    },
    // Passwords in URLs: `scheme://user:password@host`; scheme, user and host are kept. The
    // user has no `:` and the password runs to the last `@` before the path, so a port
    // (`https://example.com:8080/path`) is not a password, and `mailto:a@b.c` or
    // `user@host` have no `://user:`. Neither may hold `[` or `]` (they are escaped in a
    // URL's user info), which keeps the marker itself out.
    Builtin {
        kind: "url-password",
        pattern: r#"://[^\s:/?#@\[\]"',{}]*:(?P<secret>[^\s/?#\[\]"',{}\\]+)@[^\s/?#@"]"#,
        check: None,
    },
];

/// False for text made of words: every `-`, `_` or `.` separated part is letters, upper
/// case only at its start (`sk-learn-tutorial`, `Authentication-Required`). Generated keys
/// and tokens mix in digits or capitals, so this drops prose that fits a pattern's shape.
fn not_words(text: &str) -> bool {
    !text.split(['-', '_', '.']).all(|part| {
        let mut chars = part.chars();
        chars
            .next()
            .is_none_or(|c| c.is_ascii_alphabetic() && chars.all(|c| c.is_ascii_lowercase()))
    })
}
