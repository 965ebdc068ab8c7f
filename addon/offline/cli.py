"""Checking captured LLM traffic offline, and turning it into redacted test fixtures.

    scripts/check PATH         what each request breaks, what the proxy would change, what still fails
    scripts/export PATH DIR    redacted fixtures, one file per exchange, with the repairs they expect
    scripts/report PATH -o OUT.html   one self-contained HTML page: conversations, repairs, answers, diagnoses

(both run `python -m llm_reasoning_proxy.cli`).

PATH is a mitmproxy flow file (`mitmdump -w`), a HAR file, or an exported fixture directory (the report also
reads the proxy's event log).
Exit status: 1 when a request would still fail through the proxy (check), 2 when PATH cannot be
read, 3 when the tool could not follow some exchange (JSON nested too deeply to parse, say: each is
named in one line, and the others are checked or exported all the same), else 0.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .check import check_flows, render
from .fixtures import Expectation, build_fixtures, fixture_to_flow, write_fixture_dir
from .inputs import UnreadableInput, load_flows

WOULD_FAIL, UNREADABLE_INPUT, NOT_CHECKED = 1, 2, 3


def _check(args: argparse.Namespace) -> int:
    checks = check_flows(load_flows(args.path), placeholder=args.placeholder)
    sys.stdout.write(render(checks, diffs=not args.no_diff))
    if any(check.fails_after_repair for check in checks):
        return WOULD_FAIL
    return NOT_CHECKED if any(check.beyond_tool for check in checks) else 0


def _export(args: argparse.Namespace) -> int:
    left_out: list[str] = []
    fixtures = build_fixtures(load_flows(args.path), placeholders=args.placeholders, left_out=left_out)
    # What the addon does to each exported request now is what the fixture expects from now on.
    checks = check_flows([fixture_to_flow(f) for f in fixtures])
    for fixture, check in zip(fixtures, checks, strict=True):
        fixture.expect = Expectation(
            repairs=[action.describe() for action in check.actions],
            fails_after_repair=[violation.describe() for violation in check.remaining],
        )
    written = write_fixture_dir(fixtures, args.out, source=args.path.name, overwrite=args.force)
    print(f"wrote {len(fixtures)} exchange(s) to {args.out} ({len(written)} files)")
    unchecked = [check for check in checks if check.beyond_tool]
    for check in unchecked:
        kept = "exported as text" if isinstance(fixtures[check.number - 1].request.body, str) else "exported as it is"
        print(f"exchange #{check.number}: {check.unreadable}; {kept}", file=sys.stderr)
    for reason in left_out:
        print(f"not exported: {reason}", file=sys.stderr)
    return NOT_CHECKED if unchecked or left_out else 0


def _report(args: argparse.Namespace) -> int:
    from .report import write_report

    written = write_report(args.path, args.out, include_opaque=args.include_opaque, title=args.title)
    print(
        f"wrote {args.out}: {written.exchanges} exchange(s) in {written.conversations} conversation(s), "
        f"{written.messages} distinct message(s), {written.size:,} bytes, in {written.seconds:.1f} s"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="llm-flows", description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check", help="check captured traffic against the providers' rules")
    check.add_argument("path", type=Path, help="flow file, HAR file or fixture directory")
    check.add_argument("--no-diff", action="store_true", help="leave the request diffs out of the report")
    check.add_argument(
        "--placeholder",
        default="off",
        help='what to assume for the Gemini 3 signature placeholder (llm_signature_placeholder); default "off"',
    )
    check.set_defaults(run=_check)
    export = commands.add_parser("export", help="export captured traffic as redacted fixtures")
    export.add_argument("path", type=Path, help="flow file, HAR file or fixture directory")
    export.add_argument("out", type=Path, help="the fixture directory to write, e.g. flows/my-case")
    export.add_argument("--placeholders", action="store_true", help="replace opaque values by same-length placeholders")
    export.add_argument("--force", action="store_true", help="overwrite a fixture directory that exists")
    export.set_defaults(run=_export)
    report = commands.add_parser("report", help="write one self-contained HTML page of captured traffic")
    report.add_argument("path", type=Path, help="flow file, HAR file, fixture directory or the proxy's event log")
    report.add_argument("-o", "--out", type=Path, required=True, help="the HTML file to write")
    report.add_argument("--title", help="the page's title (default: the input's name)")
    report.add_argument(
        "--include-opaque",
        action="store_true",
        help="write opaque reasoning values (signatures, encrypted content) in full; by default only their length "
        "and a short hash, which is all a person can read of them",
    )
    report.set_defaults(run=_report)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except UnreadableInput as e:
        print(f"error: {e}", file=sys.stderr)
        return UNREADABLE_INPUT


if __name__ == "__main__":
    sys.exit(main())
