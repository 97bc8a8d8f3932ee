"""``agents-admin``: manage API keys on the database the server uses (same settings).

::

    agents-admin create-key --name ci --scope '*'
    agents-admin create-key --name team-a --agent invoice-extractor --agent agt_… --can-create
    agents-admin list-keys
    agents-admin revoke-key 3f9a0c1d2e4b5a69
    agents-admin promote aex_… --name acme-2026-04    # see handlers/agents/domain/promotion.py
    agents-admin demote aex_…

``create-key`` prints the secret once (``secret: sk_…``); only its hash is stored. Exit status:
0 done, 1 unknown key or unreachable database, 2 invalid arguments or settings.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from functools import partial

from sqlalchemy.exc import SQLAlchemyError

from handlers.agents.domain.keys import create_key, list_keys, revoke_key
from handlers.agents.domain.promotion import (
    PROMOTION_COMMANDS,
    add_promotion_commands,
    run_promotion_command,
)
from handlers.agents.settings import Settings, SettingsError
from handlers.agents.storage.migrate import open_database

__all__ = ["main"]

_REF = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _ref(text: str) -> str:
    if not _REF.match(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not an id or slug ([A-Za-z0-9_-]{{1,64}})")
    return text


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agents-admin", description="Manage the API keys of the agents service."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    create = commands.add_parser("create-key", help="issue a key and print its secret once")
    create.add_argument("--name", required=True, help="what the key is for")
    create.add_argument(
        "--scope", choices=["*"], help="'*': every agent and workflow (else use --agent)"
    )
    create.add_argument(
        "--agent", action="append", default=[], type=_ref, metavar="SLUG_OR_ID",
        help="an agent the key may use (repeatable)",
    )  # fmt: skip
    create.add_argument(
        "--workflow", action="append", default=[], type=_ref, metavar="SLUG_OR_ID",
        help="a workflow the key may use (repeatable)",
    )  # fmt: skip
    create.add_argument(
        "--can-create", action="store_true", help="the key may create agents (added to its scope)"
    )
    commands.add_parser("list-keys", help="list every key (never the secrets)")
    revoke = commands.add_parser("revoke-key", help="revoke a key (idempotent)")
    revoke.add_argument("key_id", metavar="ID")
    add_promotion_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``agents-admin``."""
    parser = _parser()
    args = parser.parse_args(argv)
    name = args.command
    if name == "create-key":
        if args.scope and (args.agent or args.workflow):
            parser.error("--scope '*' already covers every agent and workflow: drop --agent")
        if not (args.scope or args.agent or args.workflow or args.can_create):
            parser.error("a key needs a scope: --scope '*', --agent, --workflow or --can-create")
        if len(args.name) > 200 or not args.name.strip():
            parser.error("--name must be 1 to 200 characters")
    try:
        settings = Settings.from_env()
    except SettingsError as error:
        print(f"agents-admin: {error}", file=sys.stderr)
        return 2
    try:
        database = open_database(settings)
    except SQLAlchemyError as error:
        print(f"agents-admin: cannot open the database: {error}".splitlines()[0], file=sys.stderr)
        return 1
    try:
        if name in PROMOTION_COMMANDS:
            return run_promotion_command(database, args)
        if name == "create-key":
            issued = database.write_sync(
                partial(
                    create_key,
                    name=args.name,
                    scope_all=args.scope == "*",
                    agents=args.agent,
                    workflows=args.workflow,
                    can_create_agents=args.can_create,
                )
            )
            scope = "*" if args.scope else ", ".join(args.agent + args.workflow) or "(none)"
            print(f"id: {issued.id}")
            print(f"name: {issued.name}")
            print(f"scope: {scope}")
            print(f"can create agents: {'yes' if args.can_create else 'no'}")
            print(f"secret: {issued.secret}")
            print("Store the secret now: it is not shown again.", file=sys.stderr)
            return 0
        if name == "list-keys":
            keys = database.read_sync(list_keys)
            print("ID\tNAME\tSCOPE\tCAN_CREATE\tCREATED\tREVOKED")
            for key in keys:
                revoked = key.revoked_at.isoformat() if key.revoked_at else "-"
                print(
                    f"{key.id}\t{key.name}\t{key.scope}\t{'yes' if key.can_create_agents else 'no'}"
                    f"\t{key.created_at.isoformat()}\t{revoked}"
                )
            return 0
        revoked_at = database.write_sync(partial(revoke_key, key_id=args.key_id))
        if revoked_at is None:
            print(f"agents-admin: no key with id {args.key_id!r}", file=sys.stderr)
            return 1
        print(f"revoked {args.key_id} at {revoked_at.isoformat()}")
        return 0
    finally:
        database.dispose()


if __name__ == "__main__":
    sys.exit(main())
