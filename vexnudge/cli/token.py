"""``vexnudge token``: print a signed, expiring student token (or the page URL).

Needs ``TOKEN_SECRET`` (the same value the gateway runs with, at least 32
bytes).  The token grants one student's stream and chat until it expires
(at most ``TOKEN_MAX_TTL_S``); hand it to that student only (e.g. as the
``--url`` link).
"""

from __future__ import annotations

import argparse
import sys
import time
from urllib.parse import quote

from topology.settings import Settings


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "token",
        help="print a signed student token for the gateway",
        description="Sign a token for STUDENT (the studentID; it is stripped and lower-cased) "
        "with TOKEN_SECRET. The gateway accepts it until it expires.",
    )
    parser.add_argument("student", metavar="STUDENT", help="the student's id")
    parser.add_argument(
        "--ttl", default="12h", help="lifetime: seconds or 90s, 30m, 12h, 7d (default 12h; at most TOKEN_MAX_TTL_S)"
    )
    parser.add_argument(
        "--url", action="store_true", help="print the student page URL with the token instead of the bare token"
    )
    parser.set_defaults(handler=run)


def page_base(settings: Settings) -> str:
    """The base URL students open: GATEWAY_PUBLIC_URL, else http://host:port."""
    if settings.gateway_public_url:
        return settings.gateway_public_url.rstrip("/")
    host = settings.gateway_host
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{settings.gateway_port}"


def run(args: argparse.Namespace, settings: Settings) -> int:
    from delivery.gateway import tokens

    secret = settings.token_secret.get_secret_value() if settings.token_secret is not None else None
    problem = tokens.weak_secret("TOKEN_SECRET", secret)
    if problem is not None or secret is None:
        print(
            f"vexnudge token: {problem}; set it to the gateway's secret (make one with {tokens.MAKE_SECRET})",
            file=sys.stderr,
        )
        return 2
    try:
        ttl = tokens.parse_ttl(args.ttl)
        token = tokens.issue(
            secret.encode(), args.student, ttl_s=ttl, now=time.time(), max_ttl_s=settings.token_max_ttl_s
        )
    except ValueError as exc:
        print(f"vexnudge token: {exc}", file=sys.stderr)
        return 2
    print(f"{page_base(settings)}/student?token={quote(token, safe='')}" if args.url else token)
    return 0
