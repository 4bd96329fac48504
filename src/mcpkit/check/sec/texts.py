"""Security lint of the text a host gives its model: tool poisoning and hidden characters.

A host puts every tool, prompt and resource description (and the server's instructions)
into the model's context, so a server can talk to the model behind the user's back ("tool
poisoning", Invariant Labs' advisory of April 2025; the spec's tools page: descriptions and
annotations are untrusted unless the server is trusted). These rules look for the telltale
forms of that, each a narrow pattern so that ordinary descriptions stay clean (precision
over recall; every pattern has benign look-alikes in the tests that must not fire):

* ``SEC.model-directives``: hidden-instruction blocks (``<IMPORTANT>``, ``<system>``,
  ``[INST]``, HTML comments), "ignore previous instructions", "do not tell the user".
* ``SEC.sensitive-files``: an instruction to read, send or include a credential or
  home-directory secret file (``~/.ssh/id_rsa``, ``~/.aws/credentials``, the host's own
  MCP configuration, ...); a ``.pub`` key is not a secret.
* ``SEC.conversation-exfiltration``: an instruction to pass the conversation, the chat
  history or the system prompt into a call.
* ``SEC.invisible-characters``: zero-width, bidirectional-control and Unicode tag
  characters, which a user reviewing the text does not see but the model reads.
* ``SEC.homoglyphs``: a word mixing Latin letters with Cyrillic or Greek look-alikes
  (``notes`` spelt with a Cyrillic o), the trick behind look-alike tool names and descriptions.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from typing import Any

from ..lint.common import Outcome, name_list, quantity, shorten
from .common import SecInput, definition_texts, excerpt

Match = tuple[str, str, str]
"""(where, what was found, excerpt around it)."""

_DIRECTIVES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a hidden-instruction block", re.compile(
        r"<\s*/?\s*(?:important|system|instructions?|secret|hidden|admin|sudo)\s*>"
        r"|\[/?(?:INST|SYSTEM)\]|<\|im_start\|>|<!--", re.IGNORECASE)),
    ("an order to ignore earlier instructions", re.compile(
        r"\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+)?"
        r"(?:previous|prior|above|earlier|preceding|other|original|system)\s+"
        r"(?:instructions?|prompts?|directions|guidelines|directives)\b", re.IGNORECASE)),
    ("an order to keep something from the user", re.compile(
        r"\b(?:do\s+not|don't|never|must\s+not)\s+(?:tell|inform|mention|reveal|notify|alert"
        r"|disclose)\s+(?:this\s+|that\s+|it\s+|anything\s+)?(?:to\s+)?the\s+user\b"
        r"|\bwithout\s+(?:telling|informing|notifying|alerting)\s+the\s+user\b"
        r"|\bthe\s+user\s+(?:must|should)\s+not\s+(?:know|see|be\s+told|notice)\b",
        re.IGNORECASE)),
)

_HOME = r"(?:~|\$HOME|%USERPROFILE%|/home/[\w.-]+|/Users/[\w.-]+|/root)"
_SECRET_FILE = re.compile(
    r"(?:" + _HOME + r"/)?\.ssh/id_(?:rsa|dsa|ecdsa|ed25519)(?:_sk)?(?!\.pub)\b"
    r"|\.aws/credentials\b|\.netrc\b|\.pgpass\b|\.git-credentials\b|\.docker/config\.json\b"
    r"|\.kube/config\b|\.gnupg/|\.config/gcloud/|/etc/shadow\b|\bwallet\.dat\b"
    r"|claude_desktop_config\.json|\.cursor/mcp\.json|\.claude\.json"
    r"|" + _HOME + r"/\.env\b",
    re.IGNORECASE)
_ASK = re.compile(r"\b(?:read|cat|include|attach|pass|send|upload|copy|provide|forward|append"
                  r"|paste|share|print|output|insert|put)\b", re.IGNORECASE)
_NEGATED = re.compile(r"\b(?:never|not|no|don't|doesn't|won't|cannot|can't)\b[\w\s]{0,20}$",
                      re.IGNORECASE)

_CONVERSATION = re.compile(
    r"\b(?:send|include|pass|forward|upload|post|attach|copy|append|put|provide|insert)\b"
    r"[^.;:!?\n]{0,40}?\b(?:(?:the\s+|your\s+)?(?:entire|full|whole|complete)\s+conversation"
    r"|conversation\s+(?:history|so\s+far|transcript|log)|chat\s+(?:history|transcript|log)"
    r"|(?:all\s+)?(?:previous|prior|earlier)\s+messages|(?:your\s+|the\s+)system\s+prompt"
    r"|your\s+(?:instructions|context\s+window))\b",
    re.IGNORECASE)

_INVISIBLE = re.compile(
    "[\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u00ad\u180e"
    "\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\U000e0000-\U000e007f]")

_LOOKALIKES = frozenset(
    # Cyrillic that renders as Latin: a e o p c y x i j s d q w h l A B E K M H O P C T X I J S G
    "\u0430\u0435\u043e\u0440\u0441\u0443\u0445\u0456\u0458\u0455\u0501\u051b"
    "\u051d\u04bb\u04cf\u0410\u0412\u0415\u041a\u041c\u041d\u041e\u0420\u0421"
    "\u0422\u0425\u0406\u0408\u0405\u050c"
    # Greek that renders as Latin: a e o p t v u x i k A B E Z H I K M N O P T Y X
    "\u03b1\u03b5\u03bf\u03c1\u03c4\u03bd\u03c5\u03c7\u03b9\u03ba\u0391\u0392"
    "\u0395\u0396\u0397\u0399\u039a\u039c\u039d\u039f\u03a1\u03a4\u03a5\u03a7")
_WORD = re.compile(r"\w+")


def _scan(texts: Iterable[tuple[str, str]],
          find: Callable[[str], Iterable[tuple[str, int, int]]]) -> list[Match]:
    """Every ``find`` hit in ``texts``, one (the first) per text."""
    out = []
    for where, text in texts:
        for what, start, end in find(text):
            out.append((where, what, excerpt(text, start, end)))
            break
    return out


def _outcome(hits: list[Match], total: int, found: str, fix: str, clean: str) -> Outcome:
    if total == 0:
        return "n/a", "No definitions or instructions to judge.", ""
    if not hits:
        return "pass", f"{clean} in {quantity(total, 'text')} of definitions and instructions.", ""
    shown = [f"{where} ({what})" for where, what, _ in hits]
    evidence: dict[str, Any] = {}
    for where, what, text in hits[:8]:
        evidence[where] = f"{what}: {text}"
    return "fail", f"{found} in {len(hits)} of {total} texts: {name_list(shown)}. {fix}", evidence


def _texts(data: SecInput) -> list[tuple[str, str]]:
    return list(definition_texts(data))


def _check_directives(data: SecInput) -> Outcome:
    """Hidden-instruction blocks, orders to ignore earlier instructions and orders to keep
    something from the user, anywhere in definitions or instructions."""
    texts = _texts(data)

    def find(text: str) -> Iterable[tuple[str, int, int]]:
        for what, pattern in _DIRECTIVES:
            if (m := pattern.search(text)) is not None:
                yield what, m.start(), m.end()
    return _outcome(_scan(texts, find), len(texts), "Directives aimed at the model",
                    "A definition tells the host's model what to do behind the user's back "
                    "(tool poisoning); do not install this server, or remove the text.",
                    "No hidden blocks or orders to the model")


def _check_sensitive_files(data: SecInput) -> Outcome:
    """A credential or home-directory secret file named in the same sentence as, and after,
    a verb asking for its contents (read, send, include, pass, ...) that is not negated
    (\"never reads ~/.ssh/id_rsa\" is fine)."""
    texts = _texts(data)

    def find(text: str) -> Iterable[tuple[str, int, int]]:
        for m in _SECRET_FILE.finditer(text):
            sentence_start = max(text.rfind(c, 0, m.start()) for c in ".!?\n") + 1
            before = text[sentence_start:m.start()]
            for ask in _ASK.finditer(before):
                if not _NEGATED.search(before[:ask.start()]):
                    yield f"asks for {shorten(m.group(0), 40)!r}", m.start(), m.end()
                    return
    return _outcome(_scan(texts, find), len(texts), "Requests for credential files",
                    "No tool needs the model to read the user's keys or credentials; this is "
                    "how poisoned tools steal them. Do not install this server.",
                    "No requests for credential files")


def _check_conversation(data: SecInput) -> Outcome:
    """An order to pass the conversation, its history or the system prompt on: a verb such
    as send/include/pass/forward and, within 40 characters of the same clause, the whole
    conversation, the chat history, earlier messages or the system prompt."""
    texts = _texts(data)

    def find(text: str) -> Iterable[tuple[str, int, int]]:
        if (m := _CONVERSATION.search(text)) is not None:
            yield f"asks for {shorten(m.group(0), 50)!r}", m.start(), m.end()
    return _outcome(_scan(texts, find), len(texts), "Requests for the conversation",
                    "A tool that asks the model for the conversation or the system prompt "
                    "can send them anywhere; do not install this server.",
                    "No requests for the conversation")


def _char_name(ch: str) -> str:
    return f"U+{ord(ch):04X} {unicodedata.name(ch, 'TAG CHARACTER')}"


def _check_invisible(data: SecInput) -> Outcome:
    """Zero-width characters (U+200B-U+200D, U+2060-U+2064, U+FEFF, soft hyphen),
    bidirectional controls (U+202A-U+202E, U+2066-U+2069, U+200E/F, U+061C) and Unicode tag
    characters (U+E0000-U+E007F, which smuggle ASCII past a human reader)."""
    texts = _texts(data)

    def find(text: str) -> Iterable[tuple[str, int, int]]:
        found = _INVISIBLE.findall(text)
        if found:
            m = _INVISIBLE.search(text)
            assert m is not None
            kinds = sorted({_char_name(c) for c in found})
            yield (f"{len(found)} of {', '.join(kinds[:3])}", m.start(), m.end())
    hits = [(w, what, ascii(t)) for w, what, t in _scan(texts, find)]
    return _outcome(hits, len(texts), "Invisible or bidirectional characters",
                    "The model reads what the user reviewing the server cannot see; remove "
                    "them (a legitimate text never needs them).",
                    "No invisible or bidirectional characters")


def _check_homoglyphs(data: SecInput) -> Outcome:
    """A word with at least two Latin letters and at least one Cyrillic or Greek letter that
    renders like a Latin one (Cyrillic a e o p c y x, Greek omicron, alpha, nu, rho, ...).
    Whole Cyrillic or Greek words, a lone Greek letter before a unit (mu-s) and accented
    Latin are fine."""
    texts = _texts(data)

    def find(text: str) -> Iterable[tuple[str, int, int]]:
        for m in _WORD.finditer(text):
            word = m.group(0)
            fake = [c for c in word if c in _LOOKALIKES]
            if not fake:
                continue
            latin = sum(1 for c in word if c.isascii() and c.isalpha())
            if latin >= 2:
                yield (f"{word!r} mixes Latin with {_char_name(fake[0])}", m.start(), m.end())
                return
    return _outcome(_scan(texts, find), len(texts), "Look-alike letters",
                    "A word that mixes scripts looks like one thing to the user and is another "
                    "to the host (a look-alike of a trusted tool name); use one script per "
                    "word.", "No words mixing Latin with look-alike letters")


CHECKS: dict[str, Callable[[SecInput], Outcome]] = {
    "SEC.model-directives": _check_directives,
    "SEC.sensitive-files": _check_sensitive_files,
    "SEC.conversation-exfiltration": _check_conversation,
    "SEC.invisible-characters": _check_invisible,
    "SEC.homoglyphs": _check_homoglyphs,
}
"""The ``SEC.*`` rules of this module -> their checks."""
