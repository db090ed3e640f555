"""Checks of the repository's Markdown that run offline, with the standard library only.

1. Every relative link in every Markdown file (git ls-files '*.md', plus new files not yet
   added that .gitignore does not ignore) resolves: inline links `[text](target)`, images,
   reference definitions `[label]: target`, and full or collapsed references `[text][label]`
   naming a definition. `http(s)://`, `mailto:` and other URLs with a scheme are not
   fetched. A target's path must exist relative to the file that links to it (or to the
   repository's root for `/path`); a `#anchor` on a Markdown file, or alone for the file
   itself, must be a heading of that file under GitHub's slug rules (lowercase, punctuation
   but `-` and `_` dropped, each space a `-`, a repeated heading `-1`, `-2`, ...; inline code
   and link syntax reduced to their text) or an explicit `<a name=...>`/`id=...`. Links
   inside fenced code blocks and inline code spans are not links.
2. README.md is a front door: at most 300 lines, and right after its title the two-command
   block, `cargo run --profile local -p harness-local` then `./tests/run`.

Run: python3 -m pytest -q tests/docs
"""

from __future__ import annotations

import re
import subprocess
import unicodedata
from functools import lru_cache
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Generated or vendored trees whose Markdown is not ours to link-check.
EXCLUDED_PREFIXES = (
    "common/fuzz/corpus/",
    "common/fuzz/artifacts/",
    "target/",
    "node_modules/",
)

README_MAX_LINES = 300
README_COMMANDS = (
    "cargo run --profile local -p harness-local",
    "./tests/run",
)


def markdown_files() -> list[str]:
    """Every Markdown file of the repository, relative to its root, in sorted order."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", "*.md"],
            cwd=ROOT,
            check=True,
            capture_output=True,
        ).stdout.decode()
        paths = {p for p in listed.split("\0") if p}
    except (OSError, subprocess.CalledProcessError):
        # Not a git checkout (an exported tree): every .md file but the excluded trees.
        paths = {str(p.relative_to(ROOT)) for p in ROOT.rglob("*.md")}
    return sorted(
        p
        for p in paths
        if not p.startswith(EXCLUDED_PREFIXES)
        and "/node_modules/" not in p
        and (ROOT / p).is_file()  # a tracked file deleted in the working tree is not checked
    )


# ---------------------------------------------------------------- reading Markdown

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.S)
HTML_ANCHOR = re.compile(r"<a\s[^>]*?\b(?:name|id)\s*=\s*[\"']([^\"']+)[\"']", re.I)
REFERENCE_DEF = re.compile(r"^ {0,3}\[([^\]]+)\]:[ \t]*(<[^>]*>|\S+)", re.M)
INLINE_LINK = re.compile(
    r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]"  # [text], one level of nested brackets
    r"\(\s*(<[^>]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)"  # (target, or <target>
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)"  # an optional title)
)
FULL_REFERENCE = re.compile(r"(?<![\]\\])\[((?:[^\[\]]|\[[^\[\]]*\])+)\]\[([^\[\]]*)\]")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def outside_code_blocks(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every line outside fenced code blocks."""
    lines: list[tuple[int, str]] = []
    fence: str | None = None
    for number, line in enumerate(text.split("\n"), start=1):
        m = FENCE.match(line)
        if fence is None:
            if m:
                fence = m.group(1)
                continue
            lines.append((number, line))
        elif m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and (
            line.strip() == m.group(1)
        ):
            fence = None
    return lines


def without_code_spans(text: str) -> str:
    """The text with each inline code span replaced by a bracket-free placeholder of the
    same line count, so nothing inside backticks reads as a link."""
    return CODE_SPAN.sub(lambda m: "CODE" + "\n" * m.group(0).count("\n"), text)


def heading_text(raw: str) -> str:
    """A heading's text as GitHub renders it: code spans, links, images, emphasis markers
    and HTML tags reduced to their text."""
    text = CODE_SPAN.sub(lambda m: m.group(2).strip(), raw)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # [text](url) -> text
    text = re.sub(r"!?\[([^\]]*)\]\[[^\]]*\]", r"\1", text)  # [text][ref] -> text
    text = re.sub(r"<[^>]+>", "", text)  # HTML tags
    return text.strip()


def slug(text: str) -> str:
    """GitHub's anchor for a heading's text (before duplicate suffixes)."""
    kept = []
    for ch in text.lower():
        category = unicodedata.category(ch)
        if ch in " -_" or category[0] in "LNM" or category == "Pc":
            kept.append(ch)
    return "".join(kept).replace(" ", "-")


@lru_cache(maxsize=None)
def anchors(path: Path) -> frozenset[str]:
    """Every anchor a Markdown file defines: its headings' slugs (with GitHub's -1, -2
    suffixes for repeats) and explicit HTML anchors."""
    found: list[str] = []
    seen: dict[str, int] = {}

    def add(text: str) -> None:
        base = slug(heading_text(text))
        if base in seen:
            seen[base] += 1
            found.append(f"{base}-{seen[base]}")
        else:
            seen[base] = 0
            found.append(base)

    lines = outside_code_blocks(path.read_text(encoding="utf-8"))
    previous: tuple[int, str] | None = None
    for number, line in lines:
        m = ATX_HEADING.match(line)
        if m:
            add(m.group(2) or "")
        elif (
            previous is not None
            and previous[0] == number - 1
            and previous[1].strip()
            and SETEXT_UNDERLINE.match(line)
            and not ATX_HEADING.match(previous[1])
            and not previous[1].lstrip().startswith(("|", "-", "*", ">"))
        ):
            add(previous[1].strip())
        for name in HTML_ANCHOR.findall(line):
            found.append(name)
        previous = (number, line)
    return frozenset(found)


def links(path: Path) -> list[tuple[int, str]]:
    """(line number, target) of every link in a Markdown file, outside code."""
    lines = outside_code_blocks(path.read_text(encoding="utf-8"))
    # Rejoin the lines outside code blocks (keeping their numbers) so a link whose text
    # wraps onto the next line is still one link.
    text_lines: list[str] = []
    numbers: list[int] = []
    for number, line in lines:
        text_lines.append(line)
        numbers.append(number)
    text = without_code_spans("\n".join(text_lines))

    def line_of(offset: int) -> int:
        return numbers[text.count("\n", 0, offset)]

    found: list[tuple[int, str]] = []
    definitions: dict[str, str] = {}
    for m in REFERENCE_DEF.finditer(text):
        target = m.group(2).strip("<>")
        definitions[normalise_label(m.group(1))] = target
        found.append((line_of(m.start()), target))
    for m in INLINE_LINK.finditer(text):
        found.append((line_of(m.start()), m.group(2).strip("<>")))
    for m in FULL_REFERENCE.finditer(text):
        label = normalise_label(m.group(2) or m.group(1))
        if label not in definitions:
            found.append((line_of(m.start()), f"[undefined reference: {label}]"))
    return found


def normalise_label(label: str) -> str:
    return " ".join(label.split()).casefold()


def problem(md: Path, target: str) -> str | None:
    """Why a link's target does not resolve, or None when it does (or is not checked)."""
    if target.startswith("[undefined reference:"):
        return "a reference with no definition"
    if not target or SCHEME.match(target) or target.startswith("//"):
        return None  # an empty target, or a URL (http, https, mailto, ...): not checked
    path_part, _, fragment = target.partition("#")
    path_part = unquote(path_part.split("?", 1)[0])
    if path_part:
        base = ROOT if path_part.startswith("/") else md.parent
        resolved = (base / path_part.lstrip("/")).resolve()
        try:
            resolved.relative_to(ROOT)
        except ValueError:
            return "the target is outside the repository"
        if not resolved.exists():
            return "no such file or directory"
    else:
        resolved = md
    if fragment and resolved.is_file() and resolved.suffix.lower() == ".md":
        anchor = unquote(fragment)
        if anchor not in anchors(resolved):
            return f"no heading with the anchor #{anchor} in {resolved.relative_to(ROOT)}"
    return None


# ---------------------------------------------------------------- the tests

MARKDOWN = markdown_files()


def test_there_are_markdown_files_to_check():
    assert "README.md" in MARKDOWN, MARKDOWN


@pytest.mark.parametrize("name", MARKDOWN)
def test_every_relative_link_resolves(name: str):
    md = ROOT / name
    broken = [
        f"{name}:{line}: ({target}): {why}"
        for line, target in links(md)
        if (why := problem(md, target)) is not None
    ]
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_the_readme_is_at_most_300_lines():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def test_the_readme_starts_with_the_two_commands():
    lines = [l for l in (ROOT / "README.md").read_text(encoding="utf-8").splitlines()]
    content = [l for l in lines if l.strip()]
    assert content[0].startswith("# "), "README.md starts with its title"
    assert FENCE.match(content[1]), "the title is followed by a code block"
    block = []
    for line in content[2:]:
        if FENCE.match(line):
            break
        block.append(line)
    else:
        pytest.fail("the first code block is not closed")
    commands = [l.split("#", 1)[0].strip() for l in block]
    assert commands == list(README_COMMANDS), block


# ---------------------------------------------------------------- the checker's own rules


@pytest.mark.parametrize(
    "heading, anchor",
    [
        ("Test the functions locally with `cargo lambda watch`", "test-the-functions-locally-with-cargo-lambda-watch"),
        ("Participants, channels and help requests", "participants-channels-and-help-requests"),
        ("A2A 1.0, both bindings", "a2a-10-both-bindings"),
        ("Waiting costs nothing; crashes heal", "waiting-costs-nothing-crashes-heal"),
        ("The original harness's tests", "the-original-harnesss-tests"),
        ("Identity and permissions (issue 16)", "identity-and-permissions-issue-16"),
        ("See [the docs](docs/x.md) — now", "see-the-docs--now"),
        ("snake_case and  two spaces", "snake_case-and--two-spaces"),
    ],
)
def test_slugs_follow_githubs_rules(heading: str, anchor: str):
    assert slug(heading_text(heading)) == anchor


def test_repeated_headings_get_numbered_anchors(tmp_path: Path):
    md = tmp_path / "x.md"
    md.write_text("# A\n\n## Notes\n\n```\n## Notes\n```\n\n## Notes\n\n## Notes\n")
    assert anchors(md) == {"a", "notes", "notes-1", "notes-2"}


def test_links_in_code_are_not_links(tmp_path: Path):
    md = tmp_path / "x.md"
    md.write_text(
        "see [a](a.md) and `[b](b.md)`\n\n```md\n[c](c.md)\n```\n\n"
        "[wrapped\ntext](d.md#e) [ref][r] [r]\n\n[r]: f.md\n"
    )
    assert [t for _, t in links(md)] == ["f.md", "a.md", "d.md#e"]
